//! HPACK's Huffman code (RFC 7541 Appendix B).
//!
//! The code is canonical: ordering the symbols by code length, then by
//! value, gives consecutive codes. So only the lengths are written here, and
//! the codes, and the tables decoding them, are derived at compile time.
//! Decoding reads 8 bits at a time through a table for the codes of up to 8
//! bits (the letters, digits and punctuation most headers are made of), and
//! by length for the rest.

/// Each symbol's code length in bits: bytes 0..=255, then EOS (256).
const LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28,
    28, 28, 28, 28, 28, 28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5,
    5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6,
    6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23, 22,
    23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22,
    21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20,
    22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19,
    21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22,
    22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, 30,
];

/// The end-of-string symbol, which a string must never contain.
const EOS: usize = 256;
/// The longest code.
const MAX_LEN: usize = 30;

/// The symbols in canonical order, and per length the first code and where
/// its symbols start in that order.
struct Canonical {
    codes: [u32; 257],
    sorted: [u16; 257],
    /// Per length: the first code of that length.
    first: [u32; MAX_LEN + 1],
    /// Per length: the number of codes of that length.
    count: [u32; MAX_LEN + 1],
    /// Per length: the index in `sorted` of its first symbol.
    offset: [u32; MAX_LEN + 1],
}

const fn canonical() -> Canonical {
    let mut count = [0u32; MAX_LEN + 1];
    let mut s = 0;
    while s < 257 {
        count[LENGTHS[s] as usize] += 1;
        s += 1;
    }
    let mut first = [0u32; MAX_LEN + 1];
    let mut offset = [0u32; MAX_LEN + 1];
    let mut code = 0u32;
    let mut index = 0u32;
    let mut len = 1;
    while len <= MAX_LEN {
        first[len] = code;
        offset[len] = index;
        code = (code + count[len]) << 1;
        index += count[len];
        len += 1;
    }
    let mut codes = [0u32; 257];
    let mut sorted = [0u16; 257];
    let mut next = first;
    let mut placed = offset;
    let mut s = 0;
    while s < 257 {
        let len = LENGTHS[s] as usize;
        codes[s] = next[len];
        next[len] += 1;
        sorted[placed[len] as usize] = s as u16;
        placed[len] += 1;
        s += 1;
    }
    Canonical {
        codes,
        sorted,
        first,
        count,
        offset,
    }
}

const CANONICAL: Canonical = canonical();

/// By the next 8 bits: the symbol and its length when its code has at most
/// 8 bits, else length 0.
const SHORT: [(u8, u8); 256] = short();

const fn short() -> [(u8, u8); 256] {
    let mut table = [(0u8, 0u8); 256];
    let mut s = 0;
    while s < 256 {
        let len = LENGTHS[s] as usize;
        if len <= 8 {
            let base = (CANONICAL.codes[s] << (8 - len)) as usize;
            let mut fill = 0;
            while fill < (1 << (8 - len)) {
                table[base + fill] = (s as u8, len as u8);
                fill += 1;
            }
        }
        s += 1;
    }
    table
}

/// Why a Huffman string could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Invalid;

/// Decode `input`, appending the bytes to `out`.
pub fn decode(input: &[u8], out: &mut Vec<u8>) -> Result<(), Invalid> {
    out.reserve(input.len() * 8 / 5);
    // Bits not yet decoded, left-aligned in `acc`; `have` of them are real.
    let mut acc: u64 = 0;
    let mut have: u32 = 0;
    let mut bytes = input.iter();
    loop {
        while have <= 56 {
            match bytes.next() {
                Some(&b) => {
                    acc |= u64::from(b) << (56 - have);
                    have += 8;
                }
                None => break,
            }
        }
        if have == 0 {
            return Ok(());
        }
        let (symbol, len) = SHORT[(acc >> 56) as usize];
        let (symbol, len) = if len != 0 {
            (usize::from(symbol), u32::from(len))
        } else {
            long((acc >> 32) as u32)
        };
        if len > have {
            // The padding: fewer than 8 bits, all ones (the EOS code's start).
            let mask = !0u64 << (64 - have);
            return if have < 8 && acc & mask == mask {
                Ok(())
            } else {
                Err(Invalid)
            };
        }
        if symbol == EOS {
            return Err(Invalid);
        }
        out.push(symbol as u8);
        acc <<= len;
        have -= len;
    }
}

/// A code of more than 8 bits from the next 32 (left-aligned): its symbol
/// and length.
fn long(window: u32) -> (usize, u32) {
    let c = &CANONICAL;
    let mut len = 9;
    while len <= MAX_LEN {
        let code = window >> (32 - len);
        let past = c.first[len] + c.count[len];
        if code < past {
            let index = c.offset[len] + (code - c.first[len]);
            return (usize::from(c.sorted[index as usize]), len as u32);
        }
        len += 1;
    }
    // 30 ones and more: EOS's code, which decode refuses.
    (EOS, MAX_LEN as u32)
}

/// The length of `input` Huffman-encoded, in bytes.
pub fn encoded_len(input: &[u8]) -> usize {
    let bits: usize = input
        .iter()
        .map(|&b| usize::from(LENGTHS[usize::from(b)]))
        .sum();
    bits.div_ceil(8)
}

/// Encode `input`, appending it to `out` (padded with ones).
pub fn encode(input: &[u8], out: &mut Vec<u8>) {
    let mut acc: u64 = 0;
    let mut have: u32 = 0;
    for &b in input {
        let len = u32::from(LENGTHS[usize::from(b)]);
        acc = (acc << len) | u64::from(CANONICAL.codes[usize::from(b)]);
        have += len;
        while have >= 8 {
            have -= 8;
            out.push((acc >> have) as u8);
        }
    }
    if have > 0 {
        let pad = 8 - have;
        out.push(((acc << pad) as u8) | ((1u8 << pad) - 1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// RFC 7541's examples (C.4 and C.6).
    const EXAMPLES: [(&str, &str); 8] = [
        ("www.example.com", "f1e3 c2e5 f23a 6ba0 ab90 f4ff"),
        ("no-cache", "a8eb 1064 9cbf"),
        ("custom-key", "25a8 49e9 5ba9 7d7f"),
        ("custom-value", "25a8 49e9 5bb8 e8b4 bf"),
        ("302", "6402"),
        ("private", "aec3 771a 4b"),
        (
            "Mon, 21 Oct 2013 20:13:21 GMT",
            "d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff",
        ),
        (
            "https://www.example.com",
            "9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3",
        ),
    ];

    #[test]
    fn the_rfc_examples_encode_and_decode() {
        for (text, code) in EXAMPLES {
            let mut encoded = Vec::new();
            encode(text.as_bytes(), &mut encoded);
            assert_eq!(encoded, hex(code), "{text}");
            assert_eq!(encoded_len(text.as_bytes()), encoded.len());
            let mut decoded = Vec::new();
            decode(&encoded, &mut decoded).unwrap();
            assert_eq!(decoded, text.as_bytes());
        }
    }

    #[test]
    fn the_code_is_complete_and_eos_is_thirty_ones() {
        assert_eq!(CANONICAL.codes[EOS], (1 << 30) - 1);
        // Kraft's sum of a complete code is exactly one.
        let sum: u64 = LENGTHS
            .iter()
            .map(|&l| 1u64 << (MAX_LEN - usize::from(l)))
            .sum();
        assert_eq!(sum, 1 << MAX_LEN);
    }

    #[test]
    fn bad_padding_and_eos_are_refused() {
        // 'a' is 00011 (5 bits): three bits of zero padding are not EOS's ones.
        assert_eq!(decode(&[0b0001_1000], &mut Vec::new()), Err(Invalid));
        // A whole byte of ones is padding longer than 7 bits.
        assert_eq!(decode(&[0b0001_1111, 0xff], &mut Vec::new()), Err(Invalid));
        // EOS itself.
        assert_eq!(
            decode(&[0xff, 0xff, 0xff, 0xff], &mut Vec::new()),
            Err(Invalid)
        );
        let mut ok = Vec::new();
        decode(&[0b0001_1111], &mut ok).unwrap();
        assert_eq!(ok, b"a");
    }

    proptest! {
        #[test]
        fn every_string_round_trips(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let mut encoded = Vec::new();
            encode(&bytes, &mut encoded);
            prop_assert_eq!(encoded.len(), encoded_len(&bytes));
            let mut decoded = Vec::new();
            decode(&encoded, &mut decoded).unwrap();
            prop_assert_eq!(decoded, bytes);
        }

        #[test]
        fn any_input_decodes_or_is_refused(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode(&bytes, &mut Vec::new());
        }
    }
}
