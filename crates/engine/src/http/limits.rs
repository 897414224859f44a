//! phantom's reply limits (`phantom_http_line`, `phantom_http_field`,
//! `phantom_http_field_num`, `phantom_http_entity`), in bytes.

use tank_config::QueueConfig;

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
    fn default() -> Self {
        Limits {
            line: 1024,
            field: 8 * 1024,
            field_num: 128,
            entity: 8 * 1024 * 1024,
        }
    }
}

impl Limits {
    /// The queue's limits; errors name the option and what was expected.
    pub fn from_queue(queue: &QueueConfig) -> Result<Self, String> {
        let size = |key: &str, text: &str| {
            parse_size(text)
                .ok_or_else(|| format!("{key} = `{text}`: expected a size like 512, 8K or 8M"))
        };
        Ok(Limits {
            line: usize::try_from(size("phantom_http_line", &queue.phantom_http_line)?)
                .unwrap_or(usize::MAX),
            field: usize::try_from(size("phantom_http_field", &queue.phantom_http_field)?)
                .unwrap_or(usize::MAX),
            field_num: queue.phantom_http_field_num as usize,
            entity: size("phantom_http_entity", &queue.phantom_http_entity)?,
        })
    }
}

/// `512`, `8K`, `8M`, `1G` (binary multiples, case-insensitive, optional `b`).
pub fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let lower = text.to_ascii_lowercase();
    let digits_end = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (digits, unit) = lower.split_at(digits_end);
    let multiplier: u64 = match unit.trim_end_matches('b') {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        _ => return None,
    };
    digits.parse::<u64>().ok()?.checked_mul(multiplier)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_use_binary_multiples() {
        assert_eq!(parse_size("1K"), Some(1024));
        assert_eq!(parse_size("8m"), Some(8 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("2kb"), Some(2048));
        assert_eq!(parse_size("K"), None);
        assert_eq!(parse_size("5x"), None);
    }
}
