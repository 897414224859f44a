//! phantom's reply limits (`phantom_http_line`, `phantom_http_field`,
//! `phantom_http_field_num`, `phantom_http_entity`), in bytes.

/// How much of a reply tank accepts before calling it broken (net code 71).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest status line, bytes.
    pub line: usize,
    /// Longest header line, bytes (also a chunk-size or trailer line).
    pub field: usize,
    /// Most header lines.
    pub field_num: usize,
    /// Largest body, bytes.
    pub entity: u64,
}

impl Default for Limits {
    /// phantom's defaults: a 1 KiB status line, 8 KiB header lines, 128
    /// headers, an 8 MiB body.
    fn default() -> Self {
        Limits {
            line: 1 << 10,
            field: 8 << 10,
            field_num: 128,
            entity: 8 << 20,
        }
    }
}
