//! HPACK (RFC 7541): header blocks decoded with the connection's dynamic
//! table, and a request's block encoded once, without it.
//!
//! A request's block is the same on every connection (it uses the static
//! table and literals only, Huffman-coded where that is shorter), so a shot
//! copies bytes encoded when its request was first seen. Replies are decoded
//! in full only as far as the caller wants: a value the caller does not ask
//! for, and the table does not keep, is skipped without Huffman decoding.

mod decode;
mod encode;
pub mod huffman;
mod table;

pub use decode::{Decoder, Error};
pub use encode::encode_field;

/// An integer with an `n`-bit prefix (RFC 7541 §5.1) whose first byte's
/// high bits are `flags`.
fn put_int(out: &mut Vec<u8>, flags: u8, n: u32, mut value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max as u8);
    value -= max;
    while value >= 128 {
        out.push((value % 128) as u8 | 0x80);
        value /= 128;
    }
    out.push(value as u8);
}
