//! An incremental HTTP/1.x response reader: fed bytes as they arrive, it says
//! when the response is complete, how it ended and whether the connection may
//! be reused. Bodies are counted, never kept.
//!
//! Framing follows RFC 9112: 1xx responses are skipped; HEAD requests and 204
//! and 304 responses have no body; then `Transfer-Encoding: chunked`, then
//! `Content-Length`, else the body runs to the end of the connection.
//!
//! This file is the state machine (head, body, done); `head.rs` reads heads
//! and `body.rs` frames bodies, as hyper splits its h1 role and decoder. It
//! is the gun's, on its hot path: every reply of an HTTP test goes through it.
//! (About 600 lines, two thirds of them the reader's tests: whole replies,
//! replies cut anywhere, mutated replies; they test the three files together.)

use crate::body::{BodyDecoder, BodyError};
use crate::head::{
    final_status_code, general_head, plain_head, scan_head, FramingError, HeadFacts,
};
use crate::limits::Limits;

/// Why a reply is broken (phantom reports these as net code 71, EPROTO).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    /// The status line or headers do not parse.
    #[error("malformed reply head: {0}")]
    Head(String),
    /// A limit from [`Limits`] was exceeded.
    #[error("reply exceeds {0}")]
    TooLarge(&'static str),
    /// The framing headers contradict each other or do not parse.
    #[error("malformed reply head: {0}")]
    Framing(FramingError),
    /// A chunked body that does not parse.
    #[error("malformed chunked body: {0}")]
    Chunked(BodyError),
    /// The connection ended before the reply did.
    #[error("connection closed in the middle of the reply")]
    Truncated,
}

impl ReplyError {
    /// A body's error as a reply's: over `max_line` is over
    /// `phantom_http_field`, over `max_body` over `phantom_http_entity`.
    #[cold]
    fn body(error: BodyError) -> ReplyError {
        match error {
            BodyError::TooLarge => ReplyError::TooLarge("phantom_http_entity"),
            BodyError::LineTooLong => ReplyError::TooLarge("phantom_http_field"),
            error => ReplyError::Chunked(error),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    Body(BodyDecoder),
    Done,
}

/// What a response amounted to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    /// The final status code.
    pub status: u16,
    /// Whether the connection may carry the next request.
    pub keep_alive: bool,
}

/// Reads one response (after any 1xx ones).
#[derive(Debug)]
pub struct ResponseReader {
    limits: Limits,
    head_request: bool,
    head: Vec<u8>,
    state: State,
    status: u16,
    keep_alive: bool,
}

impl ResponseReader {
    /// A reader for the reply to a request; `head_request` when the request
    /// was `HEAD` (its reply has no body).
    pub fn new(limits: Limits, head_request: bool) -> Self {
        ResponseReader {
            limits,
            head_request,
            head: Vec::new(),
            state: State::Head,
            status: 0,
            keep_alive: false,
        }
    }

    /// The reply, once [`Self::feed`] or [`Self::finish_at_eof`] said it is complete.
    pub fn reply(&self) -> Option<Reply> {
        (self.state == State::Done).then_some(Reply {
            status: self.status,
            keep_alive: self.keep_alive,
        })
    }

    /// The final reply's status code as far as it was read: set once its status
    /// line arrived, and kept when the reply breaks after it (over a limit, bad
    /// framing, cut short), so a broken reply still says what it was; 0 before.
    pub fn status_read(&self) -> u16 {
        self.status
    }

    /// Feed the next bytes. Returns `Some(n)` when the reply completed after
    /// `n` of them (bytes after that are not part of it), `None` when more are needed.
    pub fn feed(&mut self, mut data: &[u8]) -> Result<Option<usize>, ReplyError> {
        let total = data.len();
        loop {
            match self.state {
                State::Done => return Ok(Some(total - data.len())),
                State::Head => {
                    let (used, complete) = match self.feed_head(data) {
                        Ok(fed) => fed,
                        Err(error) => {
                            self.keep_status_line(data);
                            return Err(error);
                        }
                    };
                    data = &data[used..];
                    // An incomplete head needs more bytes; a complete interim (1xx)
                    // head leaves us in Head for the final response's bytes.
                    if !complete {
                        return Ok(None);
                    }
                }
                State::Body(mut body) => {
                    let (used, done) = body
                        .decode(data, self.limits.field, self.limits.entity)
                        .map_err(ReplyError::body)?;
                    if !done {
                        // An unfinished body took every byte.
                        self.state = State::Body(body);
                        return Ok(None);
                    }
                    data = &data[used..];
                    self.state = State::Done;
                }
            }
        }
    }

    /// The connection closed: a body that runs to the close is complete; anything else is truncated.
    pub fn finish_at_eof(&mut self) -> Result<Reply, ReplyError> {
        match self.state {
            State::Body(body) if body.ends_at_close() => self.state = State::Done,
            State::Head => self.keep_status_line(&[]),
            _ => {}
        }
        self.reply().ok_or(ReplyError::Truncated)
    }

    /// A head failed (or was cut) after `data`, the bytes of this feed not yet
    /// used: keep the code of its status line, when that much of it arrived.
    fn keep_status_line(&mut self, data: &[u8]) {
        // An incomplete head collects in `self.head`; a head read whole is in `data`.
        let head = if self.head.is_empty() {
            data
        } else {
            &self.head
        };
        if let Some(code) = final_status_code(head) {
            self.status = code;
        }
    }

    /// Accumulate head bytes until the blank line; returns bytes used and
    /// whether a whole head was read.
    fn feed_head(&mut self, data: &[u8]) -> Result<(usize, bool), ReplyError> {
        if self.head.is_empty() {
            // The usual case: the whole head came in one read; parse it in place.
            if let Some((end, facts)) = plain_head(data, &self.limits) {
                self.take_head(facts?)?;
                return Ok((end, true));
            }
            if let Some(end) = scan_head(data, &self.limits)? {
                self.parse_head(&data[..end])?;
                return Ok((end, true));
            }
        }
        let start = self.head.len();
        self.head.extend_from_slice(data);
        let Some(end) = scan_head(&self.head, &self.limits)? else {
            return Ok((data.len(), false));
        };
        let head = std::mem::take(&mut self.head);
        let parsed = self.parse_head(&head[..end]);
        // Kept for a failed head's status line; cleared, the allocation serves
        // an interim (1xx) reply's successor.
        self.head = head;
        parsed?;
        self.head.clear();
        Ok((end - start, true))
    }

    /// Parse a whole head that [`scan_head`] found and checked.
    fn parse_head(&mut self, head: &[u8]) -> Result<(), ReplyError> {
        let facts = general_head(head, self.limits.field_num)?;
        self.take_head(facts)
    }

    /// Frame the reply by what its head says.
    fn take_head(&mut self, facts: HeadFacts) -> Result<(), ReplyError> {
        let status = facts.status;
        if (100..200).contains(&status) && status != 101 {
            // An interim response: the real one follows.
            return Ok(());
        }
        self.status = status;
        let framing = facts.framing;
        self.keep_alive = !framing.close && (facts.http_1_1 || framing.keep_alive_header);
        let no_body = self.head_request || status == 204 || status == 304 || status == 101;
        self.state = if no_body {
            State::Done
        } else if framing.chunked {
            State::Body(BodyDecoder::chunked())
        } else if let Some(length) = framing.length {
            if length > self.limits.entity {
                return Err(ReplyError::TooLarge("phantom_http_entity"));
            }
            if length == 0 {
                State::Done
            } else {
                State::Body(BodyDecoder::length(length))
            }
        } else {
            self.keep_alive = false;
            State::Body(BodyDecoder::eof())
        };
        if status == 101 {
            self.keep_alive = false;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn read_all(reply: &[u8], head_request: bool) -> Result<(Reply, usize), ReplyError> {
        let mut reader = ResponseReader::new(Limits::default(), head_request);
        match reader.feed(reply)? {
            Some(used) => Ok((reader.reply().expect("done"), used)),
            None => Ok((reader.finish_at_eof()?, reply.len())),
        }
    }

    #[test]
    fn content_length_body_keeps_alive_on_http_1_1() {
        let reply = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloEXTRA";
        assert_eq!(
            read_all(reply, false),
            Ok((
                Reply {
                    status: 200,
                    keep_alive: true
                },
                reply.len() - 5
            ))
        );
    }

    #[test]
    fn http_1_0_closes_unless_asked_to_keep_alive() {
        let (reply, _) = read_all(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false).unwrap();
        assert!(!reply.keep_alive);
        let (reply, _) = read_all(
            b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n",
            false,
        )
        .unwrap();
        assert!(reply.keep_alive);
        let (reply, _) = read_all(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            false,
        )
        .unwrap();
        assert!(!reply.keep_alive);
    }

    #[test]
    fn chunked_body_split_anywhere() {
        let reply = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n10\r\n0123456789abcdef\r\n0\r\nTrailer: a\r\n\r\n";
        for split in 0..reply.len() {
            let mut reader = ResponseReader::new(Limits::default(), false);
            let first = reader.feed(&reply[..split]).unwrap();
            let done = first.or_else(|| reader.feed(&reply[split..]).unwrap().map(|n| n + split));
            assert_eq!(done, Some(reply.len()), "split at {split}");
            assert_eq!(
                reader.reply(),
                Some(Reply {
                    status: 200,
                    keep_alive: true
                })
            );
        }
    }

    #[test]
    fn interim_responses_are_skipped_and_no_body_statuses_end_at_the_head() {
        let reply = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n";
        assert_eq!(read_all(reply, false).unwrap().0.status, 204);
        let (head, used) =
            read_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", true).unwrap();
        assert_eq!((head.status, used), (200, 40));
    }

    #[test]
    fn body_until_close_ends_at_eof_and_truncation_is_an_error() {
        let (reply, _) = read_all(b"HTTP/1.1 200 OK\r\n\r\nsome body", false).unwrap();
        assert_eq!(
            reply,
            Reply {
                status: 200,
                keep_alive: false
            }
        );
        assert_eq!(
            read_all(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort", false),
            Err(ReplyError::Truncated)
        );
        assert_eq!(
            read_all(b"HTTP/1.1 200 O", false),
            Err(ReplyError::Truncated)
        );
    }

    #[test]
    fn garbage_and_limits_are_reply_errors() {
        assert!(matches!(
            read_all(b"GARBAGE\r\n\r\n", false),
            Err(ReplyError::Head(_))
        ));
        let long_line = format!("HTTP/1.1 200 {}\r\n\r\n", "x".repeat(2000));
        assert_eq!(
            read_all(long_line.as_bytes(), false),
            Err(ReplyError::TooLarge("phantom_http_line"))
        );
        let big = b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n";
        assert_eq!(
            read_all(big, false),
            Err(ReplyError::TooLarge("phantom_http_entity"))
        );
        let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..200 {
            many.extend_from_slice(format!("X-{i}: y\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        assert_eq!(
            read_all(&many, false),
            Err(ReplyError::TooLarge("phantom_http_field_num"))
        );
    }

    /// Feed `pieces` one after another, then the end of the stream: the error
    /// that broke the reply, and the status it kept.
    fn broken(pieces: &[&[u8]], limits: Limits) -> (ReplyError, u16) {
        let mut reader = ResponseReader::new(limits, false);
        for piece in pieces {
            match reader.feed(piece) {
                Ok(None) => {}
                Ok(Some(_)) => panic!("the reply completed"),
                Err(error) => return (error, reader.status_read()),
            }
        }
        let error = reader.finish_at_eof().expect_err("the reply is broken");
        (error, reader.status_read())
    }

    #[test]
    fn a_reply_broken_after_its_status_line_keeps_the_status() {
        let small = Limits {
            entity: 10,
            ..Limits::default()
        };
        let entity = ReplyError::TooLarge("phantom_http_entity");
        // Over the entity limit: by Content-Length, counted in one read or over
        // several, chunked, and until the close.
        assert_eq!(
            broken(&[b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n"], small),
            (entity.clone(), 200)
        );
        assert_eq!(
            broken(
                &[b"HTTP/1.1 200 OK\r\nX-A: b\r\n\r\n", b"0123456", b"789abc"],
                small
            ),
            (entity.clone(), 200)
        );
        assert_eq!(
            broken(
                &[b"HTTP/1.1 206 P\r\nTransfer-Encoding: chunked\r\n\r\nb\r\n0123456789a"],
                small
            ),
            (entity, 206)
        );
        // Over the head's limits, whole or split, after an interim reply.
        let long_reason = format!("HTTP/1.1 404 {}\r\n\r\n", "x".repeat(2000));
        assert_eq!(
            broken(&[long_reason.as_bytes()], Limits::default()),
            (ReplyError::TooLarge("phantom_http_line"), 404)
        );
        let mut many = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 Busy\r\n".to_vec();
        for i in 0..200 {
            many.extend_from_slice(format!("X-{i}: y\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        let field_num = ReplyError::TooLarge("phantom_http_field_num");
        assert_eq!(
            broken(&[&many], Limits::default()),
            (field_num.clone(), 503)
        );
        let (start, rest) = many.split_at(40);
        assert_eq!(broken(&[start, rest], Limits::default()), (field_num, 503));
        let long_field = format!("HTTP/1.0 302 Found\r\nX: {}\r\n\r\n", "y".repeat(9000));
        assert_eq!(
            broken(&[long_field.as_bytes()], Limits::default()),
            (ReplyError::TooLarge("phantom_http_field"), 302)
        );
        // Bad framing, or cut short.
        assert_eq!(
            broken(
                &[b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"],
                Limits::default()
            )
            .1,
            200
        );
        assert_eq!(
            broken(
                &[b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort"],
                Limits::default()
            ),
            (ReplyError::Truncated, 200)
        );
        assert_eq!(
            broken(&[b"HTTP/1.1 503 Servi"], Limits::default()),
            (ReplyError::Truncated, 503)
        );
    }

    #[test]
    fn no_status_is_kept_before_a_final_status_line_arrived() {
        for pieces in [
            &[&b"GARBAGE\r\n\r\n"[..]][..],
            &[b"HTTP/1.1 20"],
            &[b"HTTP/1.1 2x0 OK\r\n\r\n"],
            &[b"HTTP/1.1 100 Continue\r\n\r\n"],
            &[b"HTTP/1.1 100 Continue\r\n", b"X: y"],
        ] {
            assert_eq!(broken(pieces, Limits::default()).1, 0, "{pieces:?}");
        }
    }

    /// Replies in every framing: length, chunked with extensions and trailers,
    /// interim 1xx, bodiless statuses, close-delimited, bare LF line ends.
    const SEEDS: [&[u8]; 6] = [
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n10\r\n0123456789abcdef\r\n0\r\nTrailer: a\r\n\r\n",
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n",
        b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n\r\nbody until close",
        b"HTTP/1.1 304 Not Modified\nContent-Length: 10\n\n",
        b"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\nX-A: b\r\n\r\nabcNEXT",
    ];

    /// Bytes that matter to framing, and numbers at the edges.
    const SNIPPETS: [&[u8]; 12] = [
        b"\r\n",
        b"\n",
        b"\r",
        b":",
        b" ",
        b"\0",
        b"HTTP/1.1 ",
        b"Content-Length: 99999999999999999999\r\n",
        b"Content-Length: 18446744073709551615\r\n",
        b"Transfer-Encoding: chunked\r\n",
        b"ffffffffffffffff\r\n",
        b"0\r\n\r\n",
    ];

    fn mutated_reply() -> impl Strategy<Value = Vec<u8>> {
        tank_testkit::mutation::mutated(&SEEDS, &SNIPPETS, 0..4)
    }

    /// How feeding `bytes` in pieces cut at `cuts` (then the end of the
    /// connection) ends: the reply and the bytes it took, or the error.
    fn outcome(
        bytes: &[u8],
        cuts: &[usize],
        head_request: bool,
    ) -> Result<(Reply, usize), ReplyError> {
        let mut cuts: Vec<usize> = cuts.iter().map(|c| (*c).min(bytes.len())).collect();
        cuts.sort_unstable();
        cuts.push(bytes.len());
        let mut reader = ResponseReader::new(Limits::default(), head_request);
        let mut from = 0;
        for cut in cuts {
            if let Some(used) = reader.feed(&bytes[from..cut])? {
                assert!(used <= cut - from, "used {used} of {} bytes", cut - from);
                let reply = reader.reply().expect("a complete reply");
                return Ok((reply, from + used));
            }
            from = cut;
        }
        Ok((reader.finish_at_eof()?, bytes.len()))
    }

    proptest! {

        #[test]
        fn never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300), split in 0usize..300) {
            let mut reader = ResponseReader::new(Limits::default(), false);
            let split = split.min(bytes.len());
            if let Ok(None) = reader.feed(&bytes[..split]) {
                let _ = reader.feed(&bytes[split..]);
            }
            let _ = reader.finish_at_eof();
        }

        #[test]
        fn a_mutated_reply_reads_the_same_whole_or_in_pieces(
            bytes in mutated_reply(),
            cuts in proptest::collection::vec(0usize..400, 0..4),
            head_request in proptest::bool::weighted(0.1),
        ) {
            let whole = outcome(&bytes, &[], head_request);
            prop_assert_eq!(&outcome(&bytes, &cuts, head_request), &whole);
            if let Ok((reply, _)) = whole {
                prop_assert!((100..=999).contains(&reply.status), "status {}", reply.status);
            }
        }

        #[test]
        fn content_length_bodies_of_any_size(len in 0usize..5000, chunk in 1usize..700) {
            let mut reply = format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\n\r\n").into_bytes();
            reply.extend(std::iter::repeat_n(b'z', len));
            let mut reader = ResponseReader::new(Limits::default(), false);
            let mut done = None;
            for (i, piece) in reply.chunks(chunk).enumerate() {
                if let Some(n) = reader.feed(piece).unwrap() {
                    done = Some(i * chunk + n);
                    break;
                }
            }
            prop_assert_eq!(done, Some(reply.len()));
        }

        #[test]
        fn a_reply_split_anywhere_reads_as_it_does_whole(
            interim in any::<bool>(),
            line_ends in prop_oneof![Just("\r\n"), Just("\n")],
            cuts in proptest::collection::vec(0usize..200, 0..4),
        ) {
            let mut reply = Vec::new();
            if interim {
                reply.extend_from_slice(format!("HTTP/1.1 100 Continue{line_ends}{line_ends}").as_bytes());
            }
            reply.extend_from_slice(
                format!("HTTP/1.1 404 Not Found{line_ends}Content-Length: 3{line_ends}X-A: b{line_ends}{line_ends}abcNEXT")
                    .as_bytes(),
            );
            let whole = read_all(&reply, false);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(reply.len())).collect();
            cuts.sort_unstable();
            cuts.push(reply.len());
            let mut reader = ResponseReader::new(Limits::default(), false);
            let (mut from, mut used) = (0, None);
            for cut in cuts {
                if let Some(n) = reader.feed(&reply[from..cut]).unwrap() {
                    used = Some(from + n);
                    break;
                }
                from = cut;
            }
            prop_assert_eq!(whole, Ok((reader.reply().unwrap(), used.unwrap())));
            prop_assert_eq!(used, Some(reply.len() - 4));
        }
    }
}
