//! Which format a capture is, from its first bytes: a pcap magic number (µs
//! or ns timestamps, either byte order), a pcapng section header block, a
//! JSON object with `log.entries` (HAR), a MySQL slow query log's banner or
//! entry header (within its first lines: a rotated log starts mid-entry), else
//! an access log.

use tank_plan::words::count;

/// An input format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Classic pcap (libpcap, tcpdump -w).
    Pcap,
    /// pcapng (Wireshark, dumpcap, tcpdump -w on newer systems).
    Pcapng,
    /// An nginx or Apache access log (common or combined).
    Access,
    /// An HTTP Archive (HAR 1.2).
    Har,
    /// A MySQL or MariaDB slow query log.
    SlowLog,
}

impl Format {
    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            Format::Pcap => "pcap",
            Format::Pcapng => "pcapng",
            Format::Access => "access",
            Format::Har => "har",
            Format::SlowLog => "slowlog",
        }
    }
}

impl std::str::FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "pcap" => Ok(Format::Pcap),
            "pcapng" => Ok(Format::Pcapng),
            "access" => Ok(Format::Access),
            "har" => Ok(Format::Har),
            "slowlog" => Ok(Format::SlowLog),
            _ => Err(format!(
                "unknown format `{s}`; expected pcap, pcapng, access, har or slowlog"
            )),
        }
    }
}

/// Bytes [`detect`] wants to see (fewer at the end of a short file).
pub(crate) const HEAD: usize = 64 * 1024;

/// What `tank import` reads, for the error of a file that is none of it.
pub(crate) const EXPECTED: &str = "a pcap, pcapng or HAR file, or an nginx/Apache access log, \
                                   or a MySQL/MariaDB slow query log";

/// The error of `--format pcap` or `pcapng` (`format`) on a file whose first
/// bytes, `head`, are not its magic number, but look like `found`.
pub(crate) fn not_magic(format: Format, found: Format, head: &[u8]) -> String {
    let expected = match format {
        Format::Pcapng => "a pcapng section header block (0a 0d 0d 0a)",
        _ => "a pcap magic number (a1 b2 c3 d4 or a1 b2 3c 4d, either byte order)",
    };
    let magic: Vec<String> = head.iter().take(4).map(|b| format!("{b:02x}")).collect();
    let found_bytes = match head.len() {
        0..4 => format!(
            "only {}: {}",
            count(head.len() as u64, "byte"),
            magic.join(" ")
        ),
        _ => magic.join(" "),
    };
    // An access log is what detection falls back to: it says nothing.
    let looks = match found {
        Format::Access => String::new(),
        Format::Pcap => "; this is a pcap file (--format pcap)".into(),
        Format::Pcapng => "; this is a pcapng file (--format pcapng)".into(),
        Format::Har => "; this looks like a HAR file".into(),
        Format::SlowLog => "; this looks like a slow query log".into(),
    };
    format!("expected {expected}, found {found_bytes}{looks}")
}

/// Whether a file starting with `head` is gzip-compressed (magic 1f 8b):
/// no format read is, and read as an access log it would say nothing useful.
pub(crate) fn is_gzip(head: &[u8]) -> bool {
    head.starts_with(&[0x1f, 0x8b])
}

/// The format of a file starting with `head`.
pub(crate) fn detect(head: &[u8]) -> Format {
    const PCAP_MAGICS: [[u8; 4]; 4] = [
        [0xd4, 0xc3, 0xb2, 0xa1],
        [0xa1, 0xb2, 0xc3, 0xd4],
        [0x4d, 0x3c, 0xb2, 0xa1],
        [0xa1, 0xb2, 0x3c, 0x4d],
    ];
    match head.get(..4) {
        Some(magic) if PCAP_MAGICS.iter().any(|m| m == magic) => return Format::Pcap,
        Some([0x0a, 0x0d, 0x0d, 0x0a]) => return Format::Pcapng,
        _ => {}
    }
    if looks_like_har(head) {
        Format::Har
    } else if crate::mysql::slowlog::looks_like(head) {
        Format::SlowLog
    } else {
        Format::Access
    }
}

/// A JSON object whose first key is `log`, with an `entries` key soon after:
/// what every HAR writer produces. (A full parse would need the whole file.)
fn looks_like_har(head: &[u8]) -> bool {
    let text = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    let text = text.trim_ascii_start();
    let Some(rest) = text.strip_prefix(b"{") else {
        return false;
    };
    let rest = rest.trim_ascii_start();
    rest.starts_with(b"\"log\"") && memchr::memmem::find(rest, b"\"entries\"").is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_told_by_their_first_bytes() {
        assert_eq!(detect(&[0xd4, 0xc3, 0xb2, 0xa1, 2, 0]), Format::Pcap);
        assert_eq!(detect(&[0xa1, 0xb2, 0x3c, 0x4d]), Format::Pcap);
        assert_eq!(detect(&[0x0a, 0x0d, 0x0d, 0x0a, 0, 0]), Format::Pcapng);
        assert_eq!(
            detect(b"\xef\xbb\xbf {\n  \"log\": {\"version\": \"1.2\", \"entries\": []}}"),
            Format::Har
        );
        assert_eq!(detect(b"{\"other\": 1}"), Format::Access);
        assert_eq!(
            detect(b"1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.0\" 200 2326"),
            Format::Access
        );
        assert_eq!(detect(b""), Format::Access);
        assert_eq!(
            detect(b"/usr/sbin/mariadbd, Version: 10.11.6-MariaDB (Debian 12). started with:\n"),
            Format::SlowLog
        );
        assert_eq!(
            detect(b"# Time: 2024-01-02T03:04:05.123456Z\n"),
            Format::SlowLog
        );
    }

    #[test]
    fn a_slow_log_cut_within_an_entry_is_told_by_its_next_header() {
        // Rotated or `tail`-ed: the end of an entry, or an empty line, first.
        assert_eq!(
            detect(b"# administrator command: Quit;\n# Time: 090504  9:07:24\n"),
            Format::SlowLog
        );
        assert_eq!(
            detect(b"\n\n# User@Host: [SQL_SLAVE] @  []\n"),
            Format::SlowLog
        );
        let statement = "select 1\n".repeat(10);
        assert_eq!(
            detect(format!("{statement}# Time: 090504  9:07:24\n").as_bytes()),
            Format::Access
        );
    }

    #[test]
    fn a_wrong_magic_number_is_shown_with_the_one_expected() {
        assert_eq!(
            not_magic(Format::Pcap, Format::Access, &[0x3f, 0x8a, 0x11, 0x02, 9]),
            "expected a pcap magic number (a1 b2 c3 d4 or a1 b2 3c 4d, either byte order), \
             found 3f 8a 11 02"
        );
        assert_eq!(
            not_magic(Format::Pcapng, Format::Pcap, &[0xd4, 0xc3, 0xb2, 0xa1]),
            "expected a pcapng section header block (0a 0d 0d 0a), found d4 c3 b2 a1; this is \
             a pcap file (--format pcap)"
        );
        assert_eq!(
            not_magic(Format::Pcap, Format::Access, b"ab"),
            "expected a pcap magic number (a1 b2 c3 d4 or a1 b2 3c 4d, either byte order), \
             found only 2 bytes: 61 62"
        );
    }
}
