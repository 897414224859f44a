//! Which format a capture is, from its first bytes: a pcap magic number (µs
//! or ns timestamps, either byte order), a pcapng section header block, a
//! JSON object with `log.entries` (HAR), else an access log.

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
}

impl Format {
    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            Format::Pcap => "pcap",
            Format::Pcapng => "pcapng",
            Format::Access => "access",
            Format::Har => "har",
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
            _ => Err(format!(
                "unknown format `{s}`; expected pcap, pcapng, access or har"
            )),
        }
    }
}

/// Bytes [`detect`] wants to see (fewer at the end of a short file).
pub(crate) const HEAD: usize = 64 * 1024;

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
    }
}
