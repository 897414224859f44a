//! What the server sends, frame by frame: replies into their streams, the
//! connection's settings, windows, pings and GOAWAY.

use tokio::time::Instant;

use super::{Closed, Collect, ConnectionError, Continuation, Failure, State};
use crate::frame::{self, error, flag, kind, setting, Head};

impl State {
    /// Handle the whole frames at the start of `bytes`, read at `now`: how
    /// many bytes they took.
    pub(super) fn receive(&mut self, bytes: &[u8], now: Instant) -> Result<usize, ConnectionError> {
        let mut pos = 0;
        while bytes.len() - pos >= frame::HEAD {
            let head = Head::read(&bytes[pos..]);
            if head.len > frame::DEFAULT_MAX_FRAME {
                return Err(ConnectionError(
                    error::FRAME_SIZE_ERROR,
                    "a frame larger than the 16 KiB the client allows",
                ));
            }
            let end = pos + frame::HEAD + head.len;
            if end > bytes.len() {
                break;
            }
            self.frame(head, &bytes[pos + frame::HEAD..end], now)?;
            pos = end;
        }
        Ok(pos)
    }

    pub(super) fn frame(
        &mut self,
        head: Head,
        payload: &[u8],
        now: Instant,
    ) -> Result<(), ConnectionError> {
        let protocol = |why| ConnectionError(error::PROTOCOL_ERROR, why);
        if self.continuation.is_some() && head.kind != kind::CONTINUATION {
            return Err(protocol(
                "a frame other than CONTINUATION inside a header block",
            ));
        }
        let framed = (frame::HEAD + head.len) as u64;
        match head.kind {
            kind::DATA => {
                if head.stream == 0 {
                    return Err(protocol("DATA on stream 0"));
                }
                self.data(head, payload, now)
            }
            kind::HEADERS => {
                if head.stream == 0 {
                    return Err(protocol("HEADERS on stream 0"));
                }
                let mut block = unpad(head, payload)?;
                if head.flags & flag::PRIORITY != 0 {
                    block = block
                        .get(5..)
                        .ok_or(protocol("a HEADERS frame shorter than its priority"))?;
                }
                let end_stream = head.flags & flag::END_STREAM != 0;
                if head.flags & flag::END_HEADERS != 0 {
                    self.headers(head.stream, block, end_stream, framed, now)
                } else {
                    self.continuation = Some(Continuation {
                        stream: head.stream,
                        block: block.to_vec(),
                        end_stream,
                        framed,
                    });
                    Ok(())
                }
            }
            kind::CONTINUATION => {
                let mut continuation = self
                    .continuation
                    .take()
                    .ok_or(protocol("CONTINUATION without a header block to continue"))?;
                if continuation.stream != head.stream {
                    return Err(protocol("CONTINUATION of another stream's header block"));
                }
                // A head that never ends must not grow without bound: past
                // what the header list limit could take encoded, it is refused.
                let most = 4 * self.config.max_header_list as usize + frame::DEFAULT_MAX_FRAME;
                if continuation.block.len() + payload.len() > most {
                    return Err(protocol(
                        "a header block in CONTINUATIONs past what the header list limit allows",
                    ));
                }
                continuation.block.extend_from_slice(payload);
                continuation.framed += framed;
                if head.flags & flag::END_HEADERS != 0 {
                    let Continuation {
                        stream,
                        block,
                        end_stream,
                        framed,
                    } = continuation;
                    self.headers(stream, &block, end_stream, framed, now)
                } else {
                    self.continuation = Some(continuation);
                    Ok(())
                }
            }
            kind::RST_STREAM => {
                if head.stream == 0 {
                    return Err(protocol("RST_STREAM on stream 0"));
                }
                let code = word(payload)?;
                if let Some(&key) = self.ids.get(&head.stream) {
                    let stream = &mut self.streams[key];
                    stream.record.input += framed;
                    stream.record.end = Some(now);
                    self.close_stream(key, Err(Failure::Reset(code)));
                }
                Ok(())
            }
            kind::SETTINGS => {
                if head.stream != 0 {
                    return Err(protocol("SETTINGS on a stream"));
                }
                if head.flags & flag::ACK != 0 {
                    return Ok(());
                }
                self.settings(payload)
            }
            kind::PING => {
                if payload.len() != 8 {
                    return Err(ConnectionError(
                        error::FRAME_SIZE_ERROR,
                        "a PING not 8 bytes long",
                    ));
                }
                if head.flags & flag::ACK == 0 {
                    frame::put_head(&mut self.out, 8, kind::PING, flag::ACK, 0);
                    self.out.extend_from_slice(payload);
                }
                Ok(())
            }
            kind::GOAWAY => {
                if payload.len() < 8 {
                    return Err(ConnectionError(
                        error::FRAME_SIZE_ERROR,
                        "a GOAWAY shorter than 8 bytes",
                    ));
                }
                let last = word(&payload[..4])? & frame::MAX_WINDOW;
                let code = word(&payload[4..8])?;
                self.goaway(last, code);
                Ok(())
            }
            kind::WINDOW_UPDATE => {
                let increment = word(payload)? & frame::MAX_WINDOW;
                if head.stream == 0 {
                    if increment == 0 {
                        return Err(protocol("a WINDOW_UPDATE of 0 on the connection"));
                    }
                    self.send_window += i64::from(increment);
                    if self.send_window > i64::from(frame::MAX_WINDOW) {
                        return Err(ConnectionError(
                            error::FLOW_CONTROL_ERROR,
                            "the connection's send window past 2^31 - 1",
                        ));
                    }
                } else if let Some(&key) = self.ids.get(&head.stream) {
                    let stream = &mut self.streams[key];
                    stream.record.input += framed;
                    stream.send_window += i64::from(increment);
                    if increment == 0 || stream.send_window > i64::from(frame::MAX_WINDOW) {
                        let why = "a stream's WINDOW_UPDATE of 0, or its window past 2^31 - 1";
                        self.reset(key, error::PROTOCOL_ERROR, Failure::Malformed(why));
                    }
                }
                self.send_blocked();
                Ok(())
            }
            // Push is off: a promise breaks the protocol.
            kind::PUSH_PROMISE => Err(protocol("PUSH_PROMISE, with push disabled")),
            // PRIORITY, and types this client does not know, are ignored.
            _ => Ok(()),
        }
    }

    pub(super) fn data(
        &mut self,
        head: Head,
        payload: &[u8],
        now: Instant,
    ) -> Result<(), ConnectionError> {
        let len = payload.len() as u32;
        self.recv_unacked += len;
        if self.recv_unacked >= self.config.connection_window / 2 {
            frame::put_window_update(&mut self.out, 0, self.recv_unacked);
            self.recv_unacked = 0;
        }
        let data = unpad(head, payload)?;
        let Some(&key) = self.ids.get(&head.stream) else {
            return Ok(());
        };
        let max_body = self.config.max_body;
        let stream_window = self.config.stream_window;
        let stream = &mut self.streams[key];
        stream.record.input += (frame::HEAD + payload.len()) as u64;
        if !stream.headed {
            let why = "DATA before the reply's head";
            self.reset(key, error::PROTOCOL_ERROR, Failure::Malformed(why));
            return Ok(());
        }
        stream.body_len += data.len() as u64;
        if stream.body_len > max_body {
            let why = "a body past the entity limit";
            self.reset(key, error::CANCEL, Failure::Malformed(why));
            return Ok(());
        }
        match &mut stream.collect {
            Collect::Nothing => {}
            Collect::Text(text) => keep(text, data),
            Collect::Body(body) => body.extend_from_slice(data),
        }
        if head.flags & flag::END_STREAM != 0 {
            self.remote_end(key, now);
            return Ok(());
        }
        stream.recv_unacked += len;
        if stream.recv_unacked >= stream_window / 2 {
            frame::put_window_update(&mut self.out, stream.id, stream.recv_unacked);
            stream.recv_unacked = 0;
            stream.record.out += frame::WINDOW_UPDATE_LEN;
        }
        Ok(())
    }

    /// A header block for `stream_id`, whole: the reply's head or its
    /// trailers.
    pub(super) fn headers(
        &mut self,
        stream_id: u32,
        block: &[u8],
        end_stream: bool,
        framed: u64,
        now: Instant,
    ) -> Result<(), ConnectionError> {
        let compression = |_| {
            ConnectionError(
                error::COMPRESSION_ERROR,
                "a header block HPACK cannot decode",
            )
        };
        let Some(&key) = self.ids.get(&stream_id) else {
            // A stream given up, or ended: its block still feeds the table.
            self.decoder
                .decode(block, |_| false, |_, _| ())
                .map_err(compression)?;
            return Ok(());
        };
        let State {
            decoder,
            streams,
            lines,
            config,
            ..
        } = self;
        let stream = &mut streams[key];
        stream.record.input += framed;
        stream.record.head.get_or_insert(now);
        let text = matches!(stream.collect, Collect::Text(_));
        let mut status: Option<u16> = None;
        let mut bad_status = false;
        let mut content_length = None;
        lines.clear();
        let list = decoder
            .decode(
                block,
                |name| {
                    text || name == b":status"
                        || name == b"content-length"
                        || name == b"grpc-status"
                        || name == b"grpc-message"
                },
                |name, value| {
                    if name == b":status" {
                        match parse_status(value) {
                            Some(code) => status = Some(code),
                            None => bad_status = true,
                        }
                    } else if name == b"content-length" {
                        content_length = std::str::from_utf8(value)
                            .ok()
                            .and_then(|v| v.trim().parse::<u64>().ok());
                    } else if name == b"grpc-status" {
                        stream.grpc_status = Some(value.into());
                    } else if name == b"grpc-message" {
                        stream.grpc_message = Some(value.into());
                    }
                    if text && !name.starts_with(b":") {
                        lines.extend_from_slice(name);
                        lines.extend_from_slice(b": ");
                        lines.extend_from_slice(value);
                        lines.extend_from_slice(b"\r\n");
                    }
                },
            )
            .map_err(compression)?;
        if list > config.max_header_list as usize || bad_status {
            let why = if bad_status {
                "a :status that is not three digits"
            } else {
                "a head past the header list limit"
            };
            self.reset(key, error::PROTOCOL_ERROR, Failure::Malformed(why));
            return Ok(());
        }
        if stream.headed {
            // Trailers: they end the stream.
            if !end_stream || status.is_some() {
                let why = "trailers that do not end the stream, or carry a :status";
                self.reset(key, error::PROTOCOL_ERROR, Failure::Malformed(why));
                return Ok(());
            }
            if let Collect::Text(text) = &mut stream.collect {
                // On lines of their own after the body, as an HTTP/1.1 chunked
                // message's trailer section follows its last chunk.
                keep(text, b"\r\n");
                keep(text, lines);
            }
        } else {
            let Some(status) = status else {
                let why = "a reply head without :status";
                self.reset(key, error::PROTOCOL_ERROR, Failure::Malformed(why));
                return Ok(());
            };
            if (100..200).contains(&status) && !end_stream {
                // An interim head (100 Continue, 103): the final one follows.
                return Ok(());
            }
            stream.headed = true;
            stream.status = status;
            stream.content_length = content_length;
            if let Collect::Text(text) = &mut stream.collect {
                keep(text, b"HTTP/2 ");
                keep(text, status.to_string().as_bytes());
                keep(text, b"\r\n");
                keep(text, lines);
                keep(text, b"\r\n");
            }
        }
        if end_stream {
            self.remote_end(key, now);
        }
        Ok(())
    }

    /// The server ended stream `key` (END_STREAM): it ends whole, and a
    /// request still sending is cut short (RST_STREAM CANCEL).
    pub(super) fn remote_end(&mut self, key: usize, now: Instant) {
        let stream = &mut self.streams[key];
        stream.record.end = Some(now);
        if !stream.local_done {
            frame::put_reset(&mut self.out, stream.id, error::CANCEL);
            stream.record.out += frame::RESET_LEN;
        }
        // A body that is not the length its head said was cut (or padded):
        // malformed (RFC 9113 §8.1.1). A reply that has no body (to a HEAD,
        // a 204 or 304) may say the length of the one it stands for.
        let bodiless = stream.head_request || matches!(stream.status, 204 | 304);
        let cut = !bodiless
            && stream
                .content_length
                .is_some_and(|said| stream.body_len != said);
        let result = if cut {
            Err(Failure::Malformed(
                "a body whose length is not its content-length",
            ))
        } else {
            Ok(())
        };
        self.close_stream(key, result);
    }

    pub(super) fn settings(&mut self, payload: &[u8]) -> Result<(), ConnectionError> {
        if payload.len() % 6 != 0 {
            return Err(ConnectionError(
                error::FRAME_SIZE_ERROR,
                "a SETTINGS frame whose length is not a multiple of 6",
            ));
        }
        let first = !self.settings_seen;
        self.settings_seen = true;
        let mut max_streams = None;
        for pair in payload.chunks_exact(6) {
            let id = u16::from_be_bytes([pair[0], pair[1]]);
            let value = u32::from_be_bytes([pair[2], pair[3], pair[4], pair[5]]);
            match id {
                setting::MAX_CONCURRENT_STREAMS => max_streams = Some(value as usize),
                setting::INITIAL_WINDOW_SIZE => {
                    if value > frame::MAX_WINDOW {
                        return Err(ConnectionError(
                            error::FLOW_CONTROL_ERROR,
                            "SETTINGS_INITIAL_WINDOW_SIZE past 2^31 - 1",
                        ));
                    }
                    let delta = i64::from(value) - self.initial_send_window;
                    self.initial_send_window = i64::from(value);
                    for (_, stream) in self.streams.iter_mut() {
                        stream.send_window += delta;
                    }
                }
                setting::MAX_FRAME_SIZE => {
                    if !(frame::DEFAULT_MAX_FRAME..1 << 24).contains(&(value as usize)) {
                        return Err(ConnectionError(
                            error::PROTOCOL_ERROR,
                            "SETTINGS_MAX_FRAME_SIZE out of its range",
                        ));
                    }
                    self.max_frame = value as usize;
                }
                // The client's requests use no dynamic table, push is
                // off, and a request is what the ammo says.
                setting::HEADER_TABLE_SIZE
                | setting::ENABLE_PUSH
                | setting::MAX_HEADER_LIST_SIZE => {}
                _ => {}
            }
        }
        match (max_streams, first) {
            (Some(n), _) => self.max_streams = n,
            // No limit said in the first SETTINGS: none (RFC 9113 §6.5.2).
            (None, true) => self.max_streams = usize::MAX,
            (None, false) => {}
        }
        frame::put_head(&mut self.out, 0, kind::SETTINGS, flag::ACK, 0);
        self.start_waiting();
        self.send_blocked();
        Ok(())
    }

    /// GOAWAY: streams above `last` were not processed and end; the
    /// connection takes no new ones.
    pub(super) fn goaway(&mut self, last: u32, code: u32) {
        self.goaway = Some((last, code));
        let unprocessed: Vec<usize> = self
            .ids
            .iter()
            .filter(|(&id, _)| id > last)
            .map(|(_, &key)| key)
            .collect();
        for key in unprocessed {
            self.close_stream(key, Err(Failure::Closed(Closed::GoAway(code))));
        }
        for key in std::mem::take(&mut self.waiting) {
            self.close_stream(key, Err(Failure::NotSent(Closed::GoAway(code))));
        }
    }
}

/// The payload of a frame that may be PADDED, without its padding.
fn unpad(head: Head, payload: &[u8]) -> Result<&[u8], ConnectionError> {
    if head.flags & flag::PADDED == 0 {
        return Ok(payload);
    }
    let padding = ConnectionError(error::PROTOCOL_ERROR, "padding longer than its frame");
    let (&pad, rest) = payload.split_first().ok_or(padding)?;
    rest.len()
        .checked_sub(usize::from(pad))
        .map(|len| &rest[..len])
        .ok_or(padding)
}

/// A payload that is one 32-bit word.
fn word(payload: &[u8]) -> Result<u32, ConnectionError> {
    let bytes: [u8; 4] = payload.try_into().map_err(|_| {
        ConnectionError(
            error::FRAME_SIZE_ERROR,
            "an RST_STREAM, WINDOW_UPDATE or GOAWAY of the wrong size",
        )
    })?;
    Ok(u32::from_be_bytes(bytes))
}

/// A `:status` value: three digits.
fn parse_status(value: &[u8]) -> Option<u16> {
    match value {
        [a, b, c] if value.iter().all(u8::is_ascii_digit) && *a != b'0' => {
            Some(u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0'))
        }
        _ => None,
    }
}

/// Append `data` to `text` as far as its capacity allows.
fn keep(text: &mut Vec<u8>, data: &[u8]) {
    let room = text.capacity().saturating_sub(text.len()).min(data.len());
    text.extend_from_slice(&data[..room]);
}
