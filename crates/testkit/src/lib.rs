//! tank-testkit: what the property tests of several crates share, kept in one
//! place so a fix to it reaches them all. A dev-dependency only; nothing in a
//! release build links it.
//!
//! * [`mutation`]: the structured byte-mutation fuzzer (bytes flipped, snippets
//!   that matter to a syntax inserted, ranges cut or doubled). Valid seeds
//!   mutated a few times reach a parser's validation stage far more often than
//!   random bytes do, which is why the config, ammo and reply fuzz targets use it.

#![warn(missing_docs)]

pub mod mutation;
