//! Header blocks decoded with the connection's dynamic table.

use std::collections::VecDeque;

use super::{huffman, table};

/// Why a header block could not be decoded: the connection's HPACK state is
/// lost with it (a connection error, COMPRESSION_ERROR).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The block ends inside a field.
    Truncated,
    /// An index beyond both tables.
    Index,
    /// A Huffman string that does not decode.
    Huffman,
    /// An integer too large for any field or table.
    Integer,
    /// A table size update above the size the client allowed.
    TableSize,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Error::Truncated => "a header block ends inside a field",
            Error::Index => "a header index beyond the tables",
            Error::Huffman => "a Huffman string that does not decode",
            Error::Integer => "an integer too large",
            Error::TableSize => "a table size above the client's",
        })
    }
}

/// One field of the dynamic table: its name and value in one allocation.
struct Entry {
    bytes: Vec<u8>,
    name_len: usize,
}

impl Entry {
    fn name(&self) -> &[u8] {
        &self.bytes[..self.name_len]
    }

    fn value(&self) -> &[u8] {
        &self.bytes[self.name_len..]
    }

    /// Its size as the table counts it (RFC 7541 §4.1).
    fn size(&self) -> usize {
        self.bytes.len() + 32
    }
}

/// Strings the memo keeps: replies repeat their header values (a server's
/// name, a content type, the date within a second), and most servers
/// Huffman-code them, so a repeated value is looked up rather than decoded.
const MEMO_SLOTS: usize = 32;
/// The longest string the memo keeps.
const MEMO_MAX: usize = 128;

/// Huffman strings decoded lately, in slots by a hash of their bytes.
#[derive(Default)]
struct Memo {
    slots: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Memo {
    fn slot(raw: &[u8]) -> usize {
        let (first, last) = (raw.first().copied(), raw.last().copied());
        let mix = raw
            .len()
            .wrapping_mul(31)
            .wrapping_add(usize::from(first.unwrap_or(0)))
            .wrapping_add(usize::from(raw[raw.len() / 2]).wrapping_mul(7))
            .wrapping_add(usize::from(last.unwrap_or(0)).wrapping_mul(131));
        mix % MEMO_SLOTS
    }

    /// Append the decoding of `raw`, a Huffman string, to `out`.
    fn decode(&mut self, raw: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
        if raw.is_empty() || raw.len() > MEMO_MAX {
            return huffman::decode(raw, out).map_err(|_| Error::Huffman);
        }
        if self.slots.is_empty() {
            self.slots.resize_with(MEMO_SLOTS, Default::default);
        }
        let (seen, decoded) = &mut self.slots[Memo::slot(raw)];
        if seen.as_slice() == raw {
            out.extend_from_slice(decoded);
            return Ok(());
        }
        decoded.clear();
        huffman::decode(raw, decoded).map_err(|_| Error::Huffman)?;
        seen.clear();
        seen.extend_from_slice(raw);
        out.extend_from_slice(decoded);
        Ok(())
    }
}

/// A connection's decoding state: the dynamic table, newest entry first.
pub struct Decoder {
    entries: VecDeque<Entry>,
    /// Allocations of evicted entries, for the next ones.
    spare: Vec<Vec<u8>>,
    memo: Memo,
    size: usize,
    /// The table's size now, as the server last set it.
    max: usize,
    /// SETTINGS_HEADER_TABLE_SIZE as the client sent it: the most `max` may be.
    limit: usize,
    name: Vec<u8>,
    value: Vec<u8>,
}

impl Decoder {
    /// A decoder whose table holds at most `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Decoder {
            entries: VecDeque::new(),
            spare: Vec::new(),
            memo: Memo::default(),
            size: 0,
            max: limit,
            limit,
            name: Vec::new(),
            value: Vec::new(),
        }
    }

    /// Decode `block`, calling `field` with each field whose name `want`s;
    /// returns the header list's size (names and values, 32 more per field;
    /// a value not asked for counts as it was sent).
    pub fn decode(
        &mut self,
        block: &[u8],
        want: impl Fn(&[u8]) -> bool,
        mut field: impl FnMut(&[u8], &[u8]),
    ) -> Result<usize, Error> {
        let mut pos = 0;
        let mut list = 0;
        while let Some(&first) = block.get(pos) {
            if first & 0x80 != 0 {
                let index = int(block, &mut pos, 7)?;
                let (name, value) = self.get(index)?;
                list += name.len() + value.len() + 32;
                if want(name) {
                    field(name, value);
                }
            } else if first & 0xc0 == 0x40 {
                list += self.literal(block, &mut pos, 6, true, &want, &mut field)?;
            } else if first & 0xe0 == 0x20 {
                let max = int(block, &mut pos, 5)?;
                if max > self.limit {
                    return Err(Error::TableSize);
                }
                self.max = max;
                self.evict(0);
            } else {
                // Not indexed (0000) or never indexed (0001): alike to a client.
                list += self.literal(block, &mut pos, 4, false, &want, &mut field)?;
            }
        }
        Ok(list)
    }

    /// A literal field at `pos` whose name index has a `prefix`-bit prefix;
    /// `index` when the table keeps it. Returns its size in the list.
    fn literal(
        &mut self,
        block: &[u8],
        pos: &mut usize,
        prefix: u32,
        index: bool,
        want: &impl Fn(&[u8]) -> bool,
        field: &mut impl FnMut(&[u8], &[u8]),
    ) -> Result<usize, Error> {
        let name_index = int(block, pos, prefix)?;
        let mut name = std::mem::take(&mut self.name);
        name.clear();
        if name_index == 0 {
            let (coded, raw) = string(block, pos)?;
            self.unpack(coded, raw, &mut name)?;
        } else {
            name.extend_from_slice(self.get(name_index)?.0);
        }
        let (coded, raw) = string(block, pos)?;
        let size = if index || want(&name) {
            let mut value = std::mem::take(&mut self.value);
            value.clear();
            self.unpack(coded, raw, &mut value)?;
            if want(&name) {
                field(&name, &value);
            }
            if index {
                self.insert(&name, &value);
            }
            let size = name.len() + value.len() + 32;
            self.value = value;
            size
        } else {
            name.len() + raw.len() + 32
        };
        self.name = name;
        Ok(size)
    }

    fn get(&self, index: usize) -> Result<(&[u8], &[u8]), Error> {
        match index {
            0 => Err(Error::Index),
            1..=61 => Ok(table::STATIC[index - 1]),
            _ => self
                .entries
                .get(index - 62)
                .map(|e| (e.name(), e.value()))
                .ok_or(Error::Index),
        }
    }

    fn insert(&mut self, name: &[u8], value: &[u8]) {
        let size = name.len() + value.len() + 32;
        if size > self.max {
            // Larger than the table: it empties it and is not kept.
            self.spare.extend(self.entries.drain(..).map(|e| e.bytes));
            self.size = 0;
            return;
        }
        self.evict(size);
        let mut bytes = self.spare.pop().unwrap_or_default();
        bytes.clear();
        bytes.extend_from_slice(name);
        bytes.extend_from_slice(value);
        self.entries.push_front(Entry {
            bytes,
            name_len: name.len(),
        });
        self.size += size;
    }

    /// Drop the oldest entries until `room` more bytes fit.
    fn evict(&mut self, room: usize) {
        while self.size + room > self.max {
            match self.entries.pop_back() {
                Some(old) => {
                    self.size -= old.size();
                    self.spare.push(old.bytes);
                }
                None => break,
            }
        }
    }

    /// The dynamic table's size now, in the table's measure.
    pub fn table_size(&self) -> usize {
        self.size
    }
}

/// An integer with an `n`-bit prefix at `pos` (RFC 7541 §5.1).
fn int(block: &[u8], pos: &mut usize, n: u32) -> Result<usize, Error> {
    let first = *block.get(*pos).ok_or(Error::Truncated)?;
    *pos += 1;
    let max = (1usize << n) - 1;
    let mut value = usize::from(first) & max;
    if value < max {
        return Ok(value);
    }
    let mut shift = 0;
    loop {
        let b = *block.get(*pos).ok_or(Error::Truncated)?;
        *pos += 1;
        if shift > 21 {
            return Err(Error::Integer);
        }
        value += usize::from(b & 0x7f) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
}

/// A string at `pos`: whether it is Huffman-coded, and its bytes as sent.
fn string<'a>(block: &'a [u8], pos: &mut usize) -> Result<(bool, &'a [u8]), Error> {
    let coded = block.get(*pos).ok_or(Error::Truncated)? & 0x80 != 0;
    let len = int(block, pos, 7)?;
    let end = pos.checked_add(len).ok_or(Error::Integer)?;
    let raw = block.get(*pos..end).ok_or(Error::Truncated)?;
    *pos = end;
    Ok((coded, raw))
}

impl Decoder {
    /// Append string `raw` to `out`, decoded when `coded` (Huffman).
    fn unpack(&mut self, coded: bool, raw: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
        if coded {
            self.memo.decode(raw, out)
        } else {
            out.extend_from_slice(raw);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::encode_field;
    use super::*;
    use proptest::prelude::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn all(decoder: &mut Decoder, block: &[u8]) -> Vec<(String, String)> {
        let mut fields = Vec::new();
        decoder
            .decode(
                block,
                |_| true,
                |n, v| {
                    fields.push((
                        String::from_utf8_lossy(n).into_owned(),
                        String::from_utf8_lossy(v).into_owned(),
                    ))
                },
            )
            .unwrap();
        fields
    }

    fn pairs(fields: &[(&str, &str)]) -> Vec<(String, String)> {
        fields
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    /// RFC 7541 C.3 (plain) and C.4 (Huffman): three requests on one connection.
    #[test]
    fn the_rfc_request_examples_decode_with_the_dynamic_table() {
        let plain = [
            "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
            "8286 84be 5808 6e6f 2d63 6163 6865",
            "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
        ];
        let huffman = [
            "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
            "8286 84be 5886 a8eb 1064 9cbf",
            "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
        ];
        let expected = [
            pairs(&[
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/"),
                (":authority", "www.example.com"),
            ]),
            pairs(&[
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/"),
                (":authority", "www.example.com"),
                ("cache-control", "no-cache"),
            ]),
            pairs(&[
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/index.html"),
                (":authority", "www.example.com"),
                ("custom-key", "custom-value"),
            ]),
        ];
        for blocks in [plain, huffman] {
            let mut decoder = Decoder::new(4096);
            for ((block, want), size) in blocks.iter().zip(&expected).zip([57, 110, 164]) {
                assert_eq!(&all(&mut decoder, &hex(block)), want);
                assert_eq!(decoder.table_size(), size);
            }
        }
    }

    #[test]
    fn a_small_table_evicts_the_oldest_and_a_size_update_is_bounded() {
        let mut decoder = Decoder::new(100);
        let mut block = Vec::new();
        // Literal with incremental indexing, new name: 0x40.
        for (n, v) in [("a", "1"), ("bb", "22")] {
            block.clear();
            block.push(0x40);
            block.extend([n.len() as u8]);
            block.extend(n.as_bytes());
            block.extend([v.len() as u8]);
            block.extend(v.as_bytes());
            all(&mut decoder, &block);
        }
        // 34 + 36 = 70 ≤ 100: both kept; index 62 is the newest.
        assert_eq!(all(&mut decoder, &[0xbe]), pairs(&[("bb", "22")]));
        assert_eq!(all(&mut decoder, &[0xbf]), pairs(&[("a", "1")]));
        // A size update to 40 keeps only the newest.
        all(&mut decoder, &[0x3f, 0x09]);
        assert_eq!(decoder.table_size(), 36);
        assert_eq!(
            decoder.decode(&[0xbf], |_| true, |_, _| ()),
            Err(Error::Index)
        );
        // Above the client's limit.
        assert_eq!(
            decoder.decode(&[0x3f, 0x46], |_| true, |_, _| ()),
            Err(Error::TableSize)
        );
    }

    #[test]
    fn values_not_asked_for_are_skipped_and_still_counted() {
        let mut block = Vec::new();
        encode_field(&mut block, b":status", b"200");
        encode_field(&mut block, b"server", b"nginx/1.22.1");
        encode_field(&mut block, b"x-long", &[b'q'; 300]);
        let mut decoder = Decoder::new(4096);
        let mut seen = Vec::new();
        let list = decoder
            .decode(
                &block,
                |n| n.starts_with(b":"),
                |n, v| seen.push((n.to_vec(), v.to_vec())),
            )
            .unwrap();
        assert_eq!(seen, [(b":status".to_vec(), b"200".to_vec())]);
        assert!(list >= 7 + 3 + 6 + 32 * 3 + 300 * 5 / 8, "{list}");
    }

    #[test]
    fn a_repeated_huffman_value_decodes_alike_and_a_colliding_one_is_not_confused() {
        let mut decoder = Decoder::new(4096);
        let mut block = Vec::new();
        encode_field(&mut block, b"date", b"Fri, 27 Nov 2026 03:50:01 GMT");
        encode_field(&mut block, b"date", b"Fri, 27 Nov 2026 03:50:02 GMT");
        encode_field(&mut block, b"date", b"Fri, 27 Nov 2026 03:50:01 GMT");
        let values: Vec<String> = all(&mut decoder, &block)
            .into_iter()
            .map(|(_, v)| v)
            .collect();
        assert_eq!(
            values,
            [
                "Fri, 27 Nov 2026 03:50:01 GMT",
                "Fri, 27 Nov 2026 03:50:02 GMT",
                "Fri, 27 Nov 2026 03:50:01 GMT"
            ]
        );
    }

    proptest! {
        #[test]
        fn encoded_fields_decode_as_they_were(
            fields in proptest::collection::vec(("[a-z:-]{1,20}", proptest::collection::vec(any::<u8>(), 0..300)), 0..12)
        ) {
            let mut block = Vec::new();
            for (name, value) in &fields {
                encode_field(&mut block, name.as_bytes(), value);
            }
            let mut decoder = Decoder::new(4096);
            let want: Vec<(Vec<u8>, Vec<u8>)> = fields.iter().map(|(n, v)| (n.as_bytes().to_vec(), v.clone())).collect();
            // Twice: the second time, repeated strings come from the memo.
            for _ in 0..2 {
                let mut seen = Vec::new();
                let list = decoder.decode(&block, |_| true, |n, v| seen.push((n.to_vec(), v.to_vec()))).unwrap();
                prop_assert_eq!(&seen, &want);
                prop_assert_eq!(list, fields.iter().map(|(n, v)| n.len() + v.len() + 32).sum::<usize>());
            }
        }

        #[test]
        fn any_block_decodes_or_is_refused(block in proptest::collection::vec(any::<u8>(), 0..200)) {
            let mut decoder = Decoder::new(4096);
            let _ = decoder.decode(&block, |_| true, |_, _| ());
            prop_assert!(decoder.table_size() <= 4096);
        }
    }
}
