//! phantom's reply limits (`phantom_http_line`, `phantom_http_field`,
//! `phantom_http_field_num`, `phantom_http_entity`), in bytes.

use tank_config::ReplyLimits;

/// How much of a reply tank accepts before calling it broken (net code 71).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest status line, bytes.
    pub line: usize,
    /// Longest header line, bytes.
    pub field: usize,
    /// Most header lines.
    pub field_num: usize,
    /// Largest body, bytes.
    pub entity: u64,
}

impl Default for Limits {
    /// phantom's defaults, as the config's.
    fn default() -> Self {
        Limits::from(ReplyLimits::default())
    }
}

impl From<ReplyLimits> for Limits {
    /// The config's limits (read and checked there), as the reader uses them.
    fn from(limits: ReplyLimits) -> Self {
        Limits {
            line: usize::try_from(limits.line).unwrap_or(usize::MAX),
            field: usize::try_from(limits.field).unwrap_or(usize::MAX),
            field_num: limits.field_num as usize,
            entity: limits.entity,
        }
    }
}
