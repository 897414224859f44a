//! tank-http1: the HTTP/1 wire layer every crate of tank shares, so that a
//! message is framed one way wherever it is read.
//!
//! * [`ResponseReader`]: the gun's incremental reply reader (1xx skipped, HEAD,
//!   204 and 304 bodiless, then chunked, `Content-Length` or to the close),
//!   within phantom's [`Limits`]. Its head is read by two paths that MUST
//!   agree: a one-pass reader for the usual head and httparse for the rest,
//!   held together by a differential proptest. This is tank's hot path: every
//!   reply of an HTTP test goes through it, so it keeps bytes on the wire
//!   exact and allocates nothing for a usual reply.
//! * [`Framing`]: what a head's `Connection`, `Transfer-Encoding` and
//!   `Content-Length` say, for requests as for replies.
//! * [`BodyDecoder`]: one incremental body decoder (`Content-Length`, chunked,
//!   or to the close) for requests and replies: `tank import` keeps a
//!   request's body by it, the gun counts a reply's.
//! * [`is_token`]: RFC 9110's token characters (methods, header names).
//! * [`Url`]: an `http://` or `https://` URL, on the `http` crate's `Uri`,
//!   for every place tank is given one (probe targets, monitoring sources,
//!   InfluxDB, origin pages).

#![warn(missing_docs)]

mod body;
mod head;
mod limits;
mod reply;
mod url;

pub use body::{BodyDecoder, BodyError};
pub use head::{is_token, Framing, FramingError};
pub use limits::Limits;
pub use reply::{Reply, ReplyError, ResponseReader};
pub use url::{Scheme, Url, UrlError};
