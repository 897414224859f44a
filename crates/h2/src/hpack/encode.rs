//! A request's header fields as HPACK, without the dynamic table.

use super::{huffman, put_int, table};

/// Append the field `name: value` to `out`: indexed when the static table
/// has it whole, else a literal not indexed (with the name indexed when the
/// static table has the name), each string Huffman-coded when that is
/// shorter. `name` must be lowercase.
pub fn encode_field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    match table::find(name, value) {
        Some((index, true)) => put_int(out, 0x80, 7, index),
        Some((index, false)) => {
            put_int(out, 0x00, 4, index);
            put_string(out, value);
        }
        None => {
            out.push(0x00);
            put_string(out, name);
            put_string(out, value);
        }
    }
}

fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    let coded = huffman::encoded_len(s);
    if coded < s.len() {
        put_int(out, 0x80, 7, coded);
        huffman::encode(s, out);
    } else {
        put_int(out, 0x00, 7, s.len());
        out.extend_from_slice(s);
    }
}
