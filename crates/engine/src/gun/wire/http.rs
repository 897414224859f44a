//! HTTP/1.x: the reply is framed by its head (Content-Length, chunked, or to
//! the close; no body for HEAD, 204 and 304; 1xx skipped) within phantom's
//! limits, its status is the proto code, and only idempotent requests are
//! sent again on a closed kept connection.

use crate::http::{is_head_request, is_idempotent_request, Limits, ResponseReader};

use super::Progress;

/// One HTTP reply being read.
pub(super) struct HttpReply {
    reader: ResponseReader,
}

impl HttpReply {
    /// The reply to `request`, read within `limits`.
    #[inline]
    pub(super) fn new(limits: Limits, request: &[u8]) -> Self {
        HttpReply {
            reader: ResponseReader::new(limits, is_head_request(request)),
        }
    }

    #[inline]
    pub(super) fn feed(&mut self, data: &[u8]) -> Progress {
        match self.reader.feed(data) {
            Ok(None) => Progress::More,
            Ok(Some(used)) => match self.reader.reply() {
                // Bytes past the reply's end would belong to no request: not kept.
                Some(reply) => Progress::Whole {
                    code: reply.status,
                    keep_alive: reply.keep_alive && used == data.len(),
                },
                None => Progress::Broken,
            },
            Err(_) => Progress::Broken,
        }
    }

    /// The stream ended: whole for a reply that runs to the close, else cut short.
    pub(super) fn at_end(&mut self) -> Option<u16> {
        self.reader.finish_at_eof().ok().map(|reply| reply.status)
    }

    /// The status line's code once read (0 before), kept when a reply breaks later.
    pub(super) fn code_so_far(&self) -> u16 {
        self.reader.status_read()
    }
}

/// Whether `request` may go out again: an idempotent method (RFC 9110).
pub(super) fn may_resend(request: &[u8]) -> bool {
    is_idempotent_request(request)
}
