//! tank-grpc: what `tank_type = grpc` needs besides HTTP/2 itself.
//!
//! - [`schema`]: the messages' descriptions, compiled in-process from `.proto`
//!   files (protox: no protoc at any time) or read from what a server's
//!   reflection service answered ([`reflection`] says what to ask and how to
//!   read the answers; the engine carries them over its HTTP/2 connection).
//! - [`call`]: Pandora's `grpc/json` ammo, one JSON object a line, compiled
//!   against the schema into the request the HTTP/2 gun sends: an
//!   HTTP/1-shaped `POST /pkg.Service/Method` whose body is the gRPC frame.
//!   So a gRPC call is an HTTP/2 request like any other on the wire; only
//!   how its outcome is read differs ([`status`]).
//! - [`status`]: gRPC's status codes, their names, and the HTTP code Pandora
//!   reports for each, which is what phout's proto code column holds.
//!
//! Everything here is checked before the first shot: a call the schema does
//! not have, a payload field that does not exist or has the wrong type, is an
//! error naming the ammo file and line.

#![warn(missing_docs)]

pub mod call;
pub mod reflection;
pub mod schema;
pub mod status;

pub use call::{CallLine, Compiled};
pub use schema::Schema;
pub use status::Status;
