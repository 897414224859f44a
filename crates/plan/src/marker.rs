//! Markers (tags) for missiles that have no tag in the ammo file: `autocases`
//! and `enum_ammo`, computed on the request bytes as the reference does.

use tank_config::Autocases;

use crate::ammo::show;

/// Computes the marker of untagged missiles.
#[derive(Debug, Clone)]
pub struct Marker {
    autocases: Autocases,
    enumerate: bool,
    next_index: u64,
}

impl Marker {
    /// A marker for `autocases`, optionally numbered (`enum_ammo`).
    pub fn new(autocases: Autocases, enumerate: bool) -> Self {
        Marker {
            autocases,
            enumerate,
            next_index: 0,
        }
    }

    /// Whether markers are numbered (`enum_ammo`): then each pass gives new ones.
    pub(crate) fn enumerates(&self) -> bool {
        self.enumerate
    }

    /// The index the next enumerated marker gets.
    pub(crate) fn next_index(&self) -> u64 {
        self.next_index
    }

    /// Write the marker of `missile` into `out` (replacing its contents).
    /// Fails when autocases needs a URI and the request line has none.
    pub fn mark(&mut self, missile: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        out.clear();
        match self.autocases {
            Autocases::Off => {}
            Autocases::Depth(depth) => uri_pieces(missile, out, Some(depth))?,
            Autocases::Uri => uri_pieces(missile, out, None)?,
            Autocases::Uniq => {
                out.extend_from_slice(uuid::Uuid::new_v4().simple().to_string().as_bytes())
            }
        }
        if self.enumerate {
            out.push(b'#');
            out.extend_from_slice(itoa::Buffer::new().format(self.next_index).as_bytes());
            self.next_index += 1;
        }
        Ok(())
    }
}

/// The path of a request's URI (the request line's second field, up to any
/// `?`), or `None` when the request line has no URI. Autocases markers are
/// made of it, and `tank import` tags requests with it.
pub fn uri_path(missile: &[u8]) -> Option<&[u8]> {
    let request_line = missile.split(|b| *b == b'\n').next().unwrap_or_default();
    let uri = request_line.splitn(3, |b| *b == b' ').nth(1)?;
    uri.split(|b| *b == b'?').next()
}

/// The URI path of the request line split on `/` and joined with `_`, keeping
/// the first `depth + 1` pieces (Python slice `[0:depth+1]`, so a negative
/// depth counts from the end) or all of them.
fn uri_pieces(missile: &[u8], out: &mut Vec<u8>, depth: Option<i64>) -> Result<(), String> {
    let path = uri_path(missile).ok_or_else(|| {
        let request_line = missile.split(|b| *b == b'\n').next().unwrap_or_default();
        format!(
            "autocases: the request line `{}` has no URI (expected `METHOD URI ...`)",
            show(request_line)
        )
    })?;
    let pieces: Vec<&[u8]> = path.split(|b| *b == b'/').collect();
    let keep = match depth {
        None => pieces.len(),
        Some(depth) => {
            let end = depth.saturating_add(1);
            if end >= 0 {
                usize::try_from(end).unwrap_or(usize::MAX).min(pieces.len())
            } else {
                pieces
                    .len()
                    .saturating_sub(usize::try_from(end.unsigned_abs()).unwrap_or(usize::MAX))
            }
        }
    };
    for (i, piece) in pieces[..keep].iter().enumerate() {
        if i > 0 {
            out.push(b'_');
        }
        out.extend_from_slice(piece);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MISSILE: &[u8] =
        b"POST /example/search/hello/help/us?param1=50 HTTP/1.1\r\nHost: x\r\n\r\n";

    fn mark(autocases: Autocases, enumerate: bool, missile: &[u8]) -> String {
        let mut out = Vec::new();
        Marker::new(autocases, enumerate)
            .mark(missile, &mut out)
            .unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn depth_keeps_n_plus_one_pieces() {
        assert_eq!(mark(Autocases::Depth(2), false, MISSILE), "_example_search");
        assert_eq!(
            mark(Autocases::Depth(3), false, MISSILE),
            "_example_search_hello"
        );
        assert_eq!(
            mark(Autocases::Depth(9), false, MISSILE),
            "_example_search_hello_help_us"
        );
        assert_eq!(
            mark(Autocases::Depth(1), false, b"GET / HTTP/1.0\r\n\r\n"),
            "_"
        );
        assert_eq!(
            mark(Autocases::Depth(-2), false, MISSILE),
            "_example_search_hello_help"
        );
    }

    #[test]
    fn uri_keeps_every_piece_and_off_is_empty() {
        assert_eq!(
            mark(Autocases::Uri, false, MISSILE),
            "_example_search_hello_help_us"
        );
        assert_eq!(mark(Autocases::Off, false, MISSILE), "");
    }

    #[test]
    fn enumeration_counts_every_call() {
        let mut marker = Marker::new(Autocases::Off, true);
        let mut out = Vec::new();
        for expected in ["#0", "#1", "#2"] {
            marker.mark(MISSILE, &mut out).unwrap();
            assert_eq!(out, expected.as_bytes());
        }
        assert_eq!(
            mark(Autocases::Depth(2), true, MISSILE),
            "_example_search#0"
        );
    }

    #[test]
    fn uniq_is_32_hex() {
        let tag = mark(Autocases::Uniq, false, MISSILE);
        assert_eq!(tag.len(), 32);
        assert!(tag
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    }

    #[test]
    fn request_line_without_uri_is_an_error() {
        assert!(Marker::new(Autocases::Depth(2), false)
            .mark(b"GARBAGE\r\n", &mut Vec::new())
            .is_err());
        assert!(Marker::new(Autocases::Off, false)
            .mark(b"GARBAGE\r\n", &mut Vec::new())
            .is_ok());
    }
}
