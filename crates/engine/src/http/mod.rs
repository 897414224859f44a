//! HTTP/1.x reply handling for the gun: framing and phantom's limits.

pub mod limits;
pub mod response;

pub use limits::Limits;
pub use response::{Reply, ReplyError, ResponseReader};

/// Whether the raw request starts with `HEAD ` (its reply has no body).
pub fn is_head_request(request: &[u8]) -> bool {
    request.starts_with(b"HEAD ")
}
