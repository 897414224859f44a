//! Plain TCP (`tank_type = none`): the request's bytes go out verbatim and the
//! reply is everything the server sends until it closes. There is no proto
//! code (0), and a request is never sent again: the bytes' meaning is unknown,
//! and such connections carry one request each anyway.

use super::Progress;

/// A reply that runs to the close.
pub(super) struct TcpReply;

impl TcpReply {
    pub(super) fn feed(&mut self, _data: &[u8]) -> Progress {
        Progress::More
    }

    /// The server closed: the reply is whole.
    pub(super) fn at_end(&mut self) -> Option<u16> {
        Some(0)
    }
}
