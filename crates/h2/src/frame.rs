//! HTTP/2 frames (RFC 9113 §4, §6): the 9-byte header, and the few frames
//! a client writes.

/// The client's connection preface.
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// A frame header's length.
pub const HEAD: usize = 9;
/// SETTINGS_MAX_FRAME_SIZE's initial value: the largest frame either side
/// may send until the other allows more (the client never does).
pub const DEFAULT_MAX_FRAME: usize = 16_384;
/// The initial flow-control window of a stream and of the connection.
pub const DEFAULT_WINDOW: u32 = 65_535;
/// The largest window (2^31 - 1).
pub const MAX_WINDOW: u32 = (1 << 31) - 1;

/// Frame types.
pub mod kind {
    /// A stream's body bytes.
    pub const DATA: u8 = 0;
    /// A header block's first part: a request's or reply's head, or trailers.
    pub const HEADERS: u8 = 1;
    /// A stream's priority (deprecated; ignored).
    pub const PRIORITY: u8 = 2;
    /// A stream ended at once, with an error code.
    pub const RST_STREAM: u8 = 3;
    /// The sender's parameters, or their acknowledgement.
    pub const SETTINGS: u8 = 4;
    /// A server push (refused: the client turns push off).
    pub const PUSH_PROMISE: u8 = 5;
    /// A liveness check, answered with ACK.
    pub const PING: u8 = 6;
    /// The connection's end: the last stream processed, and why.
    pub const GOAWAY: u8 = 7;
    /// More flow-control window, for a stream or the connection.
    pub const WINDOW_UPDATE: u8 = 8;
    /// The rest of a header block.
    pub const CONTINUATION: u8 = 9;
}

/// Frame flags.
pub mod flag {
    /// DATA, HEADERS: the sender's last frame of the stream.
    pub const END_STREAM: u8 = 0x1;
    /// SETTINGS, PING: an acknowledgement.
    pub const ACK: u8 = 0x1;
    /// HEADERS, CONTINUATION: the header block's last frame.
    pub const END_HEADERS: u8 = 0x4;
    /// DATA, HEADERS: a pad length first, padding last.
    pub const PADDED: u8 = 0x8;
    /// HEADERS: five bytes of priority before the block.
    pub const PRIORITY: u8 = 0x20;
}

/// SETTINGS identifiers.
pub mod setting {
    /// The HPACK dynamic table the sender's decoder allows.
    pub const HEADER_TABLE_SIZE: u16 = 1;
    /// Whether the server may push (0: no).
    pub const ENABLE_PUSH: u16 = 2;
    /// The most streams the sender lets the other side open at once.
    pub const MAX_CONCURRENT_STREAMS: u16 = 3;
    /// Each new stream's flow-control window.
    pub const INITIAL_WINDOW_SIZE: u16 = 4;
    /// The largest frame payload the sender takes.
    pub const MAX_FRAME_SIZE: u16 = 5;
    /// The largest header list the sender takes.
    pub const MAX_HEADER_LIST_SIZE: u16 = 6;
}

/// Error codes (RFC 9113 §7).
pub mod error {
    /// A graceful end.
    pub const NO_ERROR: u32 = 0;
    /// The protocol was broken.
    pub const PROTOCOL_ERROR: u32 = 1;
    /// A window was overrun or overflowed.
    pub const FLOW_CONTROL_ERROR: u32 = 3;
    /// A frame of a size its type does not allow.
    pub const FRAME_SIZE_ERROR: u32 = 6;
    /// The server did not process the stream: it may be sent again.
    pub const REFUSED_STREAM: u32 = 7;
    /// The stream is no longer wanted.
    pub const CANCEL: u32 = 8;
    /// The HPACK state is lost.
    pub const COMPRESSION_ERROR: u32 = 9;
}

/// A frame's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// The payload's length.
    pub len: usize,
    /// Its type ([`kind`]).
    pub kind: u8,
    /// Its flags ([`flag`]).
    pub flags: u8,
    /// The stream (0: the connection), its reserved bit cleared.
    pub stream: u32,
}

impl Head {
    /// The header at the start of `bytes` (which holds at least [`HEAD`]).
    pub fn read(bytes: &[u8]) -> Head {
        Head {
            len: usize::from(bytes[0]) << 16 | usize::from(bytes[1]) << 8 | usize::from(bytes[2]),
            kind: bytes[3],
            flags: bytes[4],
            stream: u32::from_be_bytes([bytes[5], bytes[6], bytes[7], bytes[8]]) & MAX_WINDOW,
        }
    }
}

/// Append a frame header.
pub fn put_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let len = len as u32;
    out.extend_from_slice(&[(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
}

/// Append a SETTINGS frame with `pairs`.
pub fn put_settings(out: &mut Vec<u8>, pairs: &[(u16, u32)]) {
    put_head(out, pairs.len() * 6, kind::SETTINGS, 0, 0);
    for (id, value) in pairs {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
}

/// Append a WINDOW_UPDATE of `increment` for `stream`.
pub fn put_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    put_head(out, 4, kind::WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&increment.to_be_bytes());
}

/// Append a RST_STREAM of `stream` with `code`.
pub fn put_reset(out: &mut Vec<u8>, stream: u32, code: u32) {
    put_head(out, 4, kind::RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_be_bytes());
}

/// Append a GOAWAY naming `last` with `code`.
pub fn put_goaway(out: &mut Vec<u8>, last: u32, code: u32) {
    put_head(out, 8, kind::GOAWAY, 0, 0);
    out.extend_from_slice(&last.to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
}

/// The bytes of a RST_STREAM frame, header included.
pub const RESET_LEN: u64 = 13;
/// The bytes of a WINDOW_UPDATE frame, header included.
pub const WINDOW_UPDATE_LEN: u64 = 13;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn a_head_reads_as_written(len in 0usize..1 << 24, kind: u8, flags: u8, stream in 0u32..1 << 31) {
            let mut out = Vec::new();
            put_head(&mut out, len, kind, flags, stream);
            prop_assert_eq!(out.len(), HEAD);
            prop_assert_eq!(Head::read(&out), Head { len, kind, flags, stream });
        }
    }

    #[test]
    fn the_reserved_bit_is_ignored() {
        let head = Head::read(&[0, 0, 4, 8, 0, 0x80, 0, 0, 3]);
        assert_eq!(head.stream, 3);
    }
}
