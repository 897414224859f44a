//! tank's HTTP/2 client: a connection carrying many requests as streams,
//! built for a load generator's hot path.
//!
//! A request is encoded once ([`hpack::encode_field`] into a header block,
//! the same on every connection), so a shot copies bytes. Replies are
//! decoded only as far as the caller needs: the status, `grpc-status`, and
//! the whole head only when the reply is kept. Every stream's frames are
//! counted as they pass, and the moments its request left and its reply's
//! HEADERS and END_STREAM arrived are taken from the connection's own reads
//! and writes, which a general-purpose client does not show.
//!
//! - [`frame`]: the 9-byte frame header and the frames a client writes.
//! - [`hpack`]: header blocks (RFC 7541).
//! - [`start`]: a connection over any byte stream (TCP, TLS): a
//!   [`Connection`] handle that opens [`Stream`]s, and the [`Driver`] future
//!   that reads and writes the socket.

#![warn(missing_docs)]

mod conn;
pub mod frame;
pub mod hpack;

pub use conn::{
    start, Closed, Collect, Config, Connection, Driver, Failure, Record, Reply, Request, Stream,
};
