//! tank-engine: fires each queue of a test on time and measures every shot.
