//! Packets: the protocol's framing, both ways. Each packet is a 3-byte
//! little-endian payload length, a sequence number, and the payload; a
//! payload of 16 MiB − 1 bytes or more is cut into chunks of that size, and
//! the chunk that is shorter (possibly empty) ends it. The sequence number
//! counts the packets of one exchange (a command and its reply) from 0.
//!
//! Two readers, for the two needs: a [`Splitter`] hands out only the head of
//! each packet (its length, sequence number and first bytes), which is all a
//! reply's framing needs, so a result set of any size streams through without
//! being held; an [`Assembler`] hands out whole payloads (a command, a
//! handshake), up to a bound.

/// A packet's header: its payload's length (3 bytes) and sequence number.
pub const HEADER: usize = 4;
/// The largest chunk: a payload this long or longer continues in the next packet.
pub const MAX_CHUNK: usize = 0xFF_FFFF;
/// The first bytes of a packet kept by a [`Splitter`]: enough for every
/// packet whose content framing reads (OK, EOF, ERR, a column count, a
/// prepared statement's OK).
pub const HEAD: usize = 48;

/// The head of one packet (a logical one: the first chunk's length and sequence number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketHead {
    /// The first chunk's payload length ([`MAX_CHUNK`] for a continued payload).
    pub len: usize,
    /// Its sequence number.
    pub seq: u8,
    head: [u8; HEAD],
    head_len: u8,
}

impl PacketHead {
    /// The payload's first bytes (all of it up to [`HEAD`] bytes).
    pub fn head(&self) -> &[u8] {
        &self.head[..usize::from(self.head_len)]
    }

    /// The payload's first byte (`None` for an empty payload).
    pub fn first(&self) -> Option<u8> {
        self.head().first().copied()
    }

    /// The head, borrowed.
    pub(crate) fn view(&self) -> Head<'_> {
        Head {
            len: self.len,
            seq: self.seq,
            head: self.head(),
        }
    }
}

/// A packet's head as a reply's framing reads it: a [`PacketHead`]'s, or one
/// read in place from a buffer that holds the whole packet.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Head<'a> {
    /// The first chunk's payload length.
    pub len: usize,
    /// Its sequence number.
    pub seq: u8,
    /// The payload's first bytes (up to [`HEAD`]).
    head: &'a [u8],
}

impl<'a> Head<'a> {
    /// The payload's first bytes (all of it up to [`HEAD`] bytes).
    pub fn head(&self) -> &'a [u8] {
        self.head
    }

    /// The payload's first byte (`None` for an empty payload).
    pub fn first(&self) -> Option<u8> {
        self.head.first().copied()
    }

    /// The packet at the start of `data` when `data` holds all of it and it
    /// is a single chunk: its length with the header, and its head. Reading
    /// it in place is what a [`Splitter`] would make of it, without the copy.
    pub fn whole(data: &'a [u8]) -> Option<(usize, Head<'a>)> {
        let header = data.get(..4)?;
        let len =
            usize::from(header[0]) | usize::from(header[1]) << 8 | usize::from(header[2]) << 16;
        if len == MAX_CHUNK {
            return None;
        }
        let payload = data.get(4..4 + len)?;
        Some((
            4 + len,
            Head {
                len,
                seq: header[3],
                head: &payload[..len.min(HEAD)],
            },
        ))
    }
}

/// Where a [`Splitter`] is within the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    /// Reading a chunk's header (this many bytes of it so far).
    Header(usize),
    /// In a chunk's payload: this many bytes left.
    Payload { left: usize },
}

/// Splits a byte stream into packet heads (see the module docs).
#[derive(Debug, Clone)]
pub struct Splitter {
    at: At,
    header: [u8; 4],
    /// The packet being read (its first chunk's header is in).
    current: Option<PacketHead>,
    /// The chunk being read is not the packet's last.
    continued: bool,
}

impl Default for Splitter {
    fn default() -> Self {
        Splitter {
            at: At::Header(0),
            header: [0; 4],
            current: None,
            continued: false,
        }
    }
}

impl Splitter {
    /// Read from `data` up to the end of the next whole packet: the bytes
    /// taken, and the packet's head if one ended there. Call again with the
    /// rest; a packet cut by the end of `data` is completed by the next call.
    pub fn next(&mut self, data: &[u8]) -> (usize, Option<PacketHead>) {
        let mut used = 0;
        loop {
            match self.at {
                At::Header(have) => {
                    let take = (4 - have).min(data.len() - used);
                    self.header[have..have + take].copy_from_slice(&data[used..used + take]);
                    used += take;
                    if have + take < 4 {
                        self.at = At::Header(have + take);
                        return (used, None);
                    }
                    let len = usize::from(self.header[0])
                        | usize::from(self.header[1]) << 8
                        | usize::from(self.header[2]) << 16;
                    if self.current.is_none() {
                        self.current = Some(PacketHead {
                            len,
                            seq: self.header[3],
                            head: [0; HEAD],
                            head_len: 0,
                        });
                    }
                    self.continued = len == MAX_CHUNK;
                    self.at = At::Payload { left: len };
                }
                At::Payload { left } => {
                    let take = left.min(data.len() - used);
                    if let Some(packet) = self.current.as_mut() {
                        let have = usize::from(packet.head_len);
                        let keep = (HEAD - have).min(take);
                        packet.head[have..have + keep].copy_from_slice(&data[used..used + keep]);
                        packet.head_len += keep as u8;
                    }
                    used += take;
                    if take < left {
                        self.at = At::Payload { left: left - take };
                        return (used, None);
                    }
                    self.at = At::Header(0);
                    if !self.continued {
                        return (used, self.current.take());
                    }
                }
            }
            if used == data.len() && self.at == At::Header(0) {
                return (used, None);
            }
        }
    }

    /// Whether the splitter is between packets (no byte of one read yet).
    pub fn between_packets(&self) -> bool {
        self.at == At::Header(0) && self.current.is_none()
    }
}

/// A whole packet: its first chunk's sequence number and the whole payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    /// The first chunk's sequence number.
    pub seq: u8,
    /// The payload, its chunks joined.
    pub payload: Vec<u8>,
}

/// A packet larger than an [`Assembler`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLarge {
    /// Its payload's length so far.
    pub len: usize,
}

/// Joins a byte stream's packets into whole payloads, up to a bound.
#[derive(Debug, Clone)]
pub struct Assembler {
    max: usize,
    header: [u8; 4],
    have_header: usize,
    left: usize,
    in_payload: bool,
    continued: bool,
    packet: Option<Packet>,
}

impl Assembler {
    /// An assembler of payloads up to `max` bytes.
    pub fn new(max: usize) -> Self {
        Assembler {
            max,
            header: [0; 4],
            have_header: 0,
            left: 0,
            in_payload: false,
            continued: false,
            packet: None,
        }
    }

    /// Read from `data` up to the end of the next whole packet: the bytes
    /// taken, and the packet if one ended there; an error when it outgrows
    /// the bound (the stream cannot be followed further).
    pub fn next(&mut self, data: &[u8]) -> Result<(usize, Option<Packet>), TooLarge> {
        let mut used = 0;
        loop {
            if !self.in_payload {
                let take = (4 - self.have_header).min(data.len() - used);
                self.header[self.have_header..self.have_header + take]
                    .copy_from_slice(&data[used..used + take]);
                self.have_header += take;
                used += take;
                if self.have_header < 4 {
                    return Ok((used, None));
                }
                self.have_header = 0;
                let len = usize::from(self.header[0])
                    | usize::from(self.header[1]) << 8
                    | usize::from(self.header[2]) << 16;
                let packet = self.packet.get_or_insert_with(|| Packet {
                    seq: self.header[3],
                    payload: Vec::new(),
                });
                if packet.payload.len() + len > self.max {
                    return Err(TooLarge {
                        len: packet.payload.len() + len,
                    });
                }
                packet.payload.reserve(len);
                self.continued = len == MAX_CHUNK;
                self.left = len;
                self.in_payload = true;
            }
            let take = self.left.min(data.len() - used);
            if let Some(packet) = self.packet.as_mut() {
                packet.payload.extend_from_slice(&data[used..used + take]);
            }
            used += take;
            self.left -= take;
            if self.left > 0 {
                return Ok((used, None));
            }
            self.in_payload = false;
            if !self.continued {
                return Ok((used, self.packet.take()));
            }
            if used == data.len() {
                return Ok((used, None));
            }
        }
    }

    /// Bytes of a packet read so far and not yet handed out (0 between packets).
    pub fn partial_len(&self) -> usize {
        self.packet.as_ref().map_or(0, |p| p.payload.len()) + self.have_header
    }
}

/// Append `payload` to `out` as packets numbered from `seq`; the next
/// sequence number is returned.
pub fn write(out: &mut Vec<u8>, mut seq: u8, payload: &[u8]) -> u8 {
    let mut rest = payload;
    loop {
        let len = rest.len().min(MAX_CHUNK);
        out.extend_from_slice(&(len as u32).to_le_bytes()[..3]);
        out.push(seq);
        out.extend_from_slice(&rest[..len]);
        seq = seq.wrapping_add(1);
        rest = &rest[len..];
        if len < MAX_CHUNK {
            return seq;
        }
    }
}

/// A cursor over a payload, reading the protocol's integers and strings.
/// Every read that runs past the end gives `None`.
#[derive(Debug, Clone, Copy)]
pub struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader at the start of `payload`.
    pub fn new(payload: &'a [u8]) -> Self {
        Reader { rest: payload }
    }

    /// What is left.
    pub fn rest(&self) -> &'a [u8] {
        self.rest
    }

    /// `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let (taken, rest) = self.rest.split_at_checked(n)?;
        self.rest = rest;
        Some(taken)
    }

    /// One byte.
    pub fn u8(&mut self) -> Option<u8> {
        self.bytes(1).map(|b| b[0])
    }

    /// A little-endian u16.
    pub fn u16(&mut self) -> Option<u16> {
        self.bytes(2).map(|b| u16::from_le_bytes([b[0], b[1]]))
    }

    /// A little-endian u32.
    pub fn u32(&mut self) -> Option<u32> {
        self.bytes(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A length-encoded integer (`None` for the NULL and ERR markers 0xFB, 0xFF).
    pub fn lenenc(&mut self) -> Option<u64> {
        let first = self.u8()?;
        let width = match first {
            0..=0xFA => return Some(u64::from(first)),
            0xFC => 2,
            0xFD => 3,
            0xFE => 8,
            _ => return None,
        };
        let bytes = self.bytes(width)?;
        let mut value = [0u8; 8];
        value[..width].copy_from_slice(bytes);
        Some(u64::from_le_bytes(value))
    }

    /// A length-encoded string.
    pub fn lenenc_bytes(&mut self) -> Option<&'a [u8]> {
        let len = usize::try_from(self.lenenc()?).ok()?;
        self.bytes(len)
    }

    /// A NUL-terminated string (the NUL is consumed, not returned).
    pub fn nul_terminated(&mut self) -> Option<&'a [u8]> {
        let end = self.rest.iter().position(|&b| b == 0)?;
        let text = &self.rest[..end];
        self.rest = &self.rest[end + 1..];
        Some(text)
    }

    /// A NUL-terminated string, or the rest when there is no NUL (a last
    /// field some servers leave unterminated).
    pub fn nul_terminated_or_rest(&mut self) -> &'a [u8] {
        match self.nul_terminated() {
            Some(text) => text,
            None => std::mem::take(&mut self.rest),
        }
    }
}

/// Append `value` as a length-encoded integer.
pub fn put_lenenc(out: &mut Vec<u8>, value: u64) {
    match value {
        0..=0xFA => out.push(value as u8),
        0xFB..=0xFFFF => {
            out.push(0xFC);
            out.extend_from_slice(&(value as u16).to_le_bytes());
        }
        0x1_0000..=0xFF_FFFF => {
            out.push(0xFD);
            out.extend_from_slice(&(value as u32).to_le_bytes()[..3]);
        }
        _ => {
            out.push(0xFE);
            out.extend_from_slice(&value.to_le_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn heads(stream: &[u8], cut: usize) -> Vec<(usize, u8, Vec<u8>)> {
        let mut splitter = Splitter::default();
        let mut out = Vec::new();
        for piece in stream.chunks(cut.max(1)) {
            let mut rest = piece;
            while !rest.is_empty() {
                let (used, packet) = splitter.next(rest);
                rest = &rest[used..];
                if let Some(p) = packet {
                    out.push((p.len, p.seq, p.head().to_vec()));
                }
            }
        }
        out
    }

    #[test]
    fn a_stream_splits_into_packets_wherever_it_is_cut() {
        let mut stream = Vec::new();
        write(&mut stream, 1, b"\x00\x00\x00\x02\x00\x00\x00");
        write(&mut stream, 2, b"");
        write(&mut stream, 3, &[7u8; 100]);
        for cut in [1, 2, 3, 5, 1000] {
            let got = heads(&stream, cut);
            assert_eq!(got.len(), 3, "cut {cut}");
            assert_eq!(got[0], (7, 1, b"\x00\x00\x00\x02\x00\x00\x00".to_vec()));
            assert_eq!(got[1], (0, 2, Vec::new()));
            assert_eq!((got[2].0, got[2].1, got[2].2.len()), (100, 3, HEAD));
        }
    }

    #[test]
    fn a_payload_of_16_mib_or_more_is_one_packet_of_several_chunks() {
        let payload = vec![b'x'; MAX_CHUNK + 10];
        let mut stream = Vec::new();
        let next = write(&mut stream, 0, &payload);
        assert_eq!(next, 2);
        assert_eq!(stream.len(), payload.len() + 8);
        write(&mut stream, 2, b"\xfe\x00\x00\x02\x00");
        let got = heads(&stream, 1 << 20);
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].0, got[0].1), (MAX_CHUNK, 0));
        assert_eq!((got[1].0, got[1].1), (5, 2));
        let mut assembler = Assembler::new(32 << 20);
        let (used, packet) = assembler.next(&stream).unwrap();
        assert_eq!(packet.unwrap().payload, payload);
        let (_, last) = assembler.next(&stream[used..]).unwrap();
        assert_eq!(last.unwrap().payload, b"\xfe\x00\x00\x02\x00");
        // Exactly one chunk's worth: an empty chunk ends it.
        let mut exact = Vec::new();
        assert_eq!(write(&mut exact, 0, &vec![0; MAX_CHUNK]), 2);
        assert_eq!(exact.len(), MAX_CHUNK + 8);
    }

    #[test]
    fn an_assembler_refuses_what_outgrows_its_bound() {
        let mut stream = Vec::new();
        write(&mut stream, 0, &[1; 100]);
        assert_eq!(
            Assembler::new(99).next(&stream).unwrap_err(),
            TooLarge { len: 100 }
        );
    }

    #[test]
    fn lenenc_round_trips_at_each_width() {
        for value in [
            0,
            250,
            251,
            0xFFFF,
            0x1_0000,
            0xFF_FFFF,
            0x100_0000,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_lenenc(&mut out, value);
            let mut reader = Reader::new(&out);
            assert_eq!(reader.lenenc(), Some(value));
            assert!(reader.rest().is_empty());
        }
        assert_eq!(Reader::new(&[0xFB]).lenenc(), None);
        assert_eq!(Reader::new(&[0xFC, 1]).lenenc(), None);
    }

    proptest! {
        #[test]
        fn splitter_and_assembler_agree_with_the_writer(
            payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 0..20),
            cut in 1usize..64,
        ) {
            let mut stream = Vec::new();
            for (i, p) in payloads.iter().enumerate() {
                write(&mut stream, i as u8, p);
            }
            let got = heads(&stream, cut);
            prop_assert_eq!(got.len(), payloads.len());
            for (i, (len, seq, head)) in got.iter().enumerate() {
                prop_assert_eq!(*len, payloads[i].len());
                prop_assert_eq!(*seq, i as u8);
                prop_assert_eq!(&head[..], &payloads[i][..payloads[i].len().min(HEAD)]);
            }
            let mut assembler = Assembler::new(1 << 20);
            let mut whole = Vec::new();
            for piece in stream.chunks(cut) {
                let mut rest = piece;
                while !rest.is_empty() {
                    let (used, packet) = assembler.next(rest).unwrap();
                    rest = &rest[used..];
                    whole.extend(packet.map(|p| p.payload));
                }
            }
            prop_assert_eq!(whole, payloads);
        }

        #[test]
        fn a_whole_packet_read_in_place_is_what_the_splitter_makes(
            payload in proptest::collection::vec(any::<u8>(), 0..200),
            seq in any::<u8>(),
            after in proptest::collection::vec(any::<u8>(), 0..8),
        ) {
            let mut data = Vec::new();
            write(&mut data, seq, &payload);
            let packet_len = data.len();
            data.extend_from_slice(&after);
            let (took, head) = Head::whole(&data).unwrap();
            let (used, split) = Splitter::default().next(&data);
            let split = split.unwrap();
            prop_assert_eq!(took, used);
            prop_assert_eq!((head.len, head.seq, head.head()), (split.len, split.seq, split.head()));
            // Cut anywhere short of its end, it is not whole.
            for cut in 0..packet_len {
                prop_assert!(Head::whole(&data[..cut]).is_none());
            }
        }

        #[test]
        fn readers_never_panic_on_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut reader = Reader::new(&bytes);
            let _ = reader.lenenc_bytes();
            let _ = reader.nul_terminated();
            let _ = reader.u32();
            let _ = reader.nul_terminated_or_rest();
            let mut splitter = Splitter::default();
            let _ = splitter.next(&bytes);
            let _ = Head::whole(&bytes);
        }
    }
}
