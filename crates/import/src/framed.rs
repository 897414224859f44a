//! Captures of a framed TCP protocol (`tank import --framing …`): each
//! connection's client stream cut into messages by the protocol's framing —
//! after a delimiter (Apiary's CountDB: JSON ended by a NUL byte), or after a
//! big-endian length prefix and the bytes it counts. A message is kept whole,
//! its delimiter or prefix included, and sent as it was by `tank_type =
//! none` with the same framing for its replies. The server's bytes are not
//! read.
//!
//! Which connections: those to `--server-port`, else each connection's
//! server as its SYN says (else a port that received SYNs, else the lower
//! port), as for HTTP. A connection captured from its middle starts after
//! its first delimiter (the bytes before are said and skipped); a
//! length-prefixed one cannot be cut without its start, and is skipped.

use tank_config::ReplyFraming;

use crate::twoway::{Conversation, Protocol, Request, Said, Skip};

/// The largest message read (a corrupt length prefix is not followed past it).
const MAX_MESSAGE: u64 = 64 << 20;

/// Which connections carry the framed protocol.
pub(crate) struct Framed {
    pub framing: ReplyFraming,
    pub server_port: Option<u16>,
}

impl Protocol for Framed {
    type Conversation = FramedConversation;

    fn serves(&self, port: u16) -> Option<bool> {
        self.server_port.map(|ours| ours == port)
    }

    fn open(&mut self, _server_port: u16, syn: bool) -> FramedConversation {
        FramedConversation {
            framing: self.framing.clone(),
            message: Vec::new(),
            at_us: None,
            matched: 0,
            synced: syn,
            skipped: 0,
        }
    }
}

/// One connection's client stream, cut into messages.
pub(crate) struct FramedConversation {
    framing: ReplyFraming,
    /// The message being read.
    message: Vec<u8>,
    /// Its first byte's capture time.
    at_us: Option<u64>,
    /// Delimiter: its bytes matched at the message's end.
    matched: usize,
    /// Whether the stream is at a message's start (a connection captured
    /// from its middle is not, until its first delimiter).
    synced: bool,
    skipped: u64,
}

impl FramedConversation {
    /// The length-prefixed message's whole length, once its prefix is in.
    fn prefixed_len(&self, width: u8) -> Option<u64> {
        let width = usize::from(width);
        let prefix = self.message.get(..width)?;
        let body = prefix.iter().fold(0u64, |n, &b| n << 8 | u64::from(b));
        Some(body.saturating_add(width as u64))
    }

    fn take_message(&mut self, said: &mut Said) {
        let bytes = std::mem::take(&mut self.message);
        if let Some(at_us) = self.at_us.take() {
            said.requests.push(Request {
                at_us,
                tag: Vec::new(),
                bytes,
            });
        }
        self.matched = 0;
    }
}

impl Conversation for FramedConversation {
    fn client(&mut self, bytes: &[u8], at_us: u64, said: &mut Said) -> Result<(), Skip> {
        match &self.framing {
            ReplyFraming::Close => Ok(()),
            ReplyFraming::Delimiter(delimiter) => {
                let delimiter = delimiter.clone();
                for &b in bytes {
                    if self.message.is_empty() {
                        self.at_us = Some(at_us);
                    }
                    self.message.push(b);
                    self.matched = if self.message.ends_with(&delimiter) {
                        delimiter.len()
                    } else {
                        0
                    };
                    if self.matched < delimiter.len() {
                        if self.message.len() as u64 > MAX_MESSAGE {
                            return Err(Skip::Rest(format!(
                                "a message of more than {MAX_MESSAGE} bytes without its \
                                 delimiter: is the framing right?"
                            )));
                        }
                        continue;
                    }
                    if self.synced {
                        self.take_message(said);
                    } else {
                        self.skipped += self.message.len() as u64;
                        said.warnings.push(format!(
                            "captured from its middle (no SYN): its first {} bytes, up to its \
                             first delimiter, are skipped",
                            self.skipped
                        ));
                        self.message.clear();
                        self.at_us = None;
                        self.synced = true;
                    }
                }
                Ok(())
            }
            &ReplyFraming::LengthPrefix(width) => {
                if !self.synced {
                    return Err(Skip::Rest(
                        "captured from its middle (no SYN): a length-prefixed stream cannot be \
                         cut into messages without its start"
                            .into(),
                    ));
                }
                let mut rest = bytes;
                while !rest.is_empty() {
                    if self.message.is_empty() {
                        self.at_us = Some(at_us);
                    }
                    let want = match self.prefixed_len(width) {
                        Some(len) if len - u64::from(width) > MAX_MESSAGE => {
                            return Err(Skip::Rest(format!(
                                "a message whose length prefix says {} bytes, above {MAX_MESSAGE}: \
                                 is the framing right?",
                                len - u64::from(width)
                            )))
                        }
                        Some(len) => len,
                        None => u64::from(width),
                    };
                    let take = (want - self.message.len() as u64).min(rest.len() as u64) as usize;
                    self.message.extend_from_slice(&rest[..take]);
                    rest = &rest[take..];
                    if self
                        .prefixed_len(width)
                        .is_some_and(|len| self.message.len() as u64 == len)
                    {
                        self.take_message(said);
                    }
                }
                Ok(())
            }
        }
    }

    fn server(&mut self, _bytes: &[u8], _at_us: u64, _said: &mut Said) -> Result<(), Skip> {
        Ok(())
    }

    fn server_lost(&mut self, _why: &str, _said: &mut Said) {}

    fn hold_us(&self) -> Option<u64> {
        self.at_us
    }

    fn cut(&mut self, _said: &mut Said) {
        // Nothing is held back: each message is handed out when whole.
    }

    fn close(&mut self, said: &mut Said) {
        if !self.message.is_empty() && self.synced {
            said.warnings.push(format!(
                "ends inside a message ({} bytes); that message is dropped",
                self.message.len()
            ));
        } else if !self.synced && self.skipped == 0 && !self.message.is_empty() {
            said.warnings.push(format!(
                "captured from its middle (no SYN), and none of its {} bytes is a delimiter: \
                 skipped",
                self.message.len()
            ));
        }
    }

    fn who(&self) -> Option<String> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(framing: ReplyFraming, syn: bool, pieces: &[&[u8]]) -> (Vec<Vec<u8>>, Vec<String>) {
        let mut protocol = Framed {
            framing,
            server_port: None,
        };
        let mut conversation = protocol.open(7000, syn);
        let mut said = Said::default();
        for (at, piece) in pieces.iter().enumerate() {
            if conversation.client(piece, at as u64, &mut said).is_err() {
                break;
            }
        }
        conversation.close(&mut said);
        let messages = said.requests.into_iter().map(|r| r.bytes).collect();
        (messages, said.warnings)
    }

    #[test]
    fn delimited_messages_are_cut_after_their_delimiter() {
        let (messages, warnings) = cut(
            ReplyFraming::Delimiter(vec![0]),
            true,
            &[b"{\"a\":1}\0{\"b\"", b":2}\0{\"c\""],
        );
        assert_eq!(messages, [b"{\"a\":1}\0".to_vec(), b"{\"b\":2}\0".to_vec()]);
        assert_eq!(
            warnings,
            ["ends inside a message (4 bytes); that message is dropped"]
        );
        let (messages, warnings) = cut(
            ReplyFraming::Delimiter(b"\r\n".to_vec()),
            false,
            &[b"tail\r\nGET a\r\n"],
        );
        assert_eq!(messages, [b"GET a\r\n".to_vec()]);
        assert!(warnings[0].contains("its first 6 bytes, up to its first delimiter"));
    }

    #[test]
    fn length_prefixed_messages_are_cut_after_their_count() {
        let (messages, _) = cut(
            ReplyFraming::LengthPrefix(2),
            true,
            &[b"\x00\x03ab", b"c\x00\x00\x00\x01", b"z"],
        );
        assert_eq!(
            messages,
            [
                b"\x00\x03abc".to_vec(),
                b"\x00\x00".to_vec(),
                b"\x00\x01z".to_vec()
            ]
        );
        let (messages, _) = cut(ReplyFraming::LengthPrefix(2), false, &[b"\x00\x01z"]);
        assert!(messages.is_empty());
    }
}
