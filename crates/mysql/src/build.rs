//! Payloads as a server writes them: OK, EOF, ERR, column definitions, rows,
//! a prepared statement's OK, the greeting. The gun never writes these; the
//! tests of every crate that reads MySQL do (a scripted server, a synthetic
//! capture), so the shapes are written once, here, beside the reader.

use crate::flags::{self, Caps, Status};
use crate::packet::put_lenenc;

/// An OK packet (header `0x00`; `0xFE` as a result set's terminator under
/// `CLIENT_DEPRECATE_EOF`) with `status`.
pub fn ok(header: u8, affected_rows: u64, status: Status) -> Vec<u8> {
    let mut out = vec![header];
    put_lenenc(&mut out, affected_rows);
    put_lenenc(&mut out, 0);
    out.extend_from_slice(&status.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

/// An EOF packet with `status`.
pub fn eof(status: Status) -> Vec<u8> {
    let mut out = vec![0xFE, 0, 0];
    out.extend_from_slice(&status.to_le_bytes());
    out
}

/// An ERR packet of error `code` with `message`.
pub fn err(code: u16, sql_state: &[u8; 5], message: &str) -> Vec<u8> {
    let mut out = vec![0xFF];
    out.extend_from_slice(&code.to_le_bytes());
    out.push(b'#');
    out.extend_from_slice(sql_state);
    out.extend_from_slice(message.as_bytes());
    out
}

/// A column definition (protocol 4.1) named `name`, of type VARCHAR.
pub fn column(name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for text in ["def", "", "", "", name, name] {
        put_lenenc(&mut out, text.len() as u64);
        out.extend_from_slice(text.as_bytes());
    }
    out.push(0x0C);
    out.extend_from_slice(&33u16.to_le_bytes());
    out.extend_from_slice(&255u32.to_le_bytes());
    out.push(0xFD);
    out.extend_from_slice(&0u16.to_le_bytes());
    out.push(0);
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

/// A text row of `values` (`None`: NULL).
pub fn text_row(values: &[Option<&[u8]>]) -> Vec<u8> {
    let mut out = Vec::new();
    for value in values {
        match value {
            None => out.push(0xFB),
            Some(bytes) => {
                put_lenenc(&mut out, bytes.len() as u64);
                out.extend_from_slice(bytes);
            }
        }
    }
    out
}

/// The OK to `COM_STMT_PREPARE`: the statement's id and counts.
pub fn prepare_ok(statement: u32, columns: u16, params: u16) -> Vec<u8> {
    let mut out = vec![0];
    out.extend_from_slice(&statement.to_le_bytes());
    out.extend_from_slice(&columns.to_le_bytes());
    out.extend_from_slice(&params.to_le_bytes());
    out.push(0);
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

/// A result set's packets (payloads) for `columns` and `rows` of text,
/// ending with `status`, framed as `deprecate_eof` says.
pub fn result_set(
    columns: &[&str],
    rows: &[Vec<Option<&[u8]>>],
    status: Status,
    deprecate_eof: bool,
) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut count = Vec::new();
    put_lenenc(&mut count, columns.len() as u64);
    out.push(count);
    out.extend(columns.iter().map(|name| column(name)));
    if !deprecate_eof {
        out.push(eof(0));
    }
    out.extend(rows.iter().map(|row| text_row(row)));
    out.push(if deprecate_eof {
        ok(0xFE, 0, status)
    } else {
        eof(status)
    });
    out
}

/// A greeting (HandshakeV10) from `version` with thread `thread`, offering
/// `caps` and `plugin` with the 20-byte `scramble`.
pub fn greeting(
    version: &str,
    thread: u32,
    caps: Caps,
    scramble: &[u8; 20],
    plugin: &str,
) -> Vec<u8> {
    let mut out = vec![10];
    out.extend_from_slice(version.as_bytes());
    out.push(0);
    out.extend_from_slice(&thread.to_le_bytes());
    out.extend_from_slice(&scramble[..8]);
    out.push(0);
    out.extend_from_slice(&(caps as u16).to_le_bytes());
    out.push(45);
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&((caps >> 16) as u16).to_le_bytes());
    out.push(21);
    out.extend_from_slice(&[0; 6]);
    // MariaDB's extended capabilities, when it says it is not plain MySQL.
    let extended = if caps & flags::LONG_PASSWORD == 0 {
        (caps >> 32) as u32
    } else {
        0
    };
    out.extend_from_slice(&extended.to_le_bytes());
    out.extend_from_slice(&scramble[8..]);
    out.push(0);
    out.extend_from_slice(plugin.as_bytes());
    out.push(0);
    out
}
