//! Response bodies, prepared once per recipe as a few shared pieces.
//!
//! A recipe's body is first resolved into [`Part`]s: text as written (or as
//! fetched from an `origin`), and runs of generated text that are only a
//! length. Serving needs bytes, but not all of them at once: a [`Body`] is a
//! short list of [`Piece`]s, each a reference-counted [`Bytes`] sent some
//! number of times, and a generated run is the process's [`filler`] repeated
//! plus a slice of it. So a `256mb` body costs a few pointers, serving one is
//! a reference-count bump, and the bodies load tests use (up to hundreds of
//! kilobytes) are still one piece, sent as one frame.
//!
//! Random content is text (letters and digits), as OriginSimulator's is, so
//! that it survives any proxy or logger in front of the simulator; gzip, when
//! the recipe's headers ask for `content-encoding: gzip`, is applied here,
//! once, piece by piece ([`crate::gzip`]).

use std::sync::Arc;

use bytes::Bytes;
use hyper::header::CONTENT_ENCODING;

use crate::error::LoadError;
use crate::fetch::{self, Asker};
use crate::filler::{filler, FILLER_LEN};
use crate::gzip;
use crate::recipe::{Recipe, Source};
use crate::units;

/// Pieces at most this long are copied together rather than kept apart, so a
/// small body (a gzip header, its text and trailer) is one frame. Kept short so
/// that copying never costs more than the pieces' own bookkeeping would.
const COPY_MAX: usize = 64;

/// What a body is made of, before it is encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Part {
    /// Bytes as they are: written in the recipe or fetched from its origin.
    Text(Bytes),
    /// This many bytes of random text.
    Filler(usize),
}

impl Part {
    /// How many bytes the part stands for.
    pub fn len(&self) -> usize {
        match self {
            Part::Text(text) => text.len(),
            Part::Filler(len) => *len,
        }
    }
}

/// One run of a body: `bytes`, sent `times` times in a row.
#[derive(Debug)]
pub(crate) struct Piece {
    pub bytes: Bytes,
    pub times: usize,
}

/// A prepared body: its pieces in order. Cloning it is a reference-count bump.
#[derive(Debug, Clone)]
pub(crate) struct Body {
    pieces: Arc<[Piece]>,
    len: usize,
}

impl Body {
    /// The body's size on the wire, in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The pieces, in order (none are empty or sent zero times).
    pub fn pieces(&self) -> &[Piece] {
        &self.pieces
    }

    /// The body without encoding: text shared as it is, filler as views of the filler.
    pub fn plain(parts: &[Part]) -> Body {
        let mut builder = Builder::default();
        for part in parts {
            match part {
                Part::Text(text) => builder.push(text.clone()),
                Part::Filler(len) => {
                    let filler = filler();
                    builder.repeat(filler.clone(), len / FILLER_LEN);
                    builder.push(filler.slice(..len % FILLER_LEN));
                }
            }
        }
        builder.finish()
    }
}

/// Collects pieces into a [`Body`], copying the short ones together.
#[derive(Debug, Default)]
pub(crate) struct Builder {
    pieces: Vec<Piece>,
    short: Vec<u8>,
    len: usize,
}

impl Builder {
    /// Appends `bytes` once.
    pub fn push(&mut self, bytes: Bytes) {
        self.repeat(bytes, 1);
    }

    /// Appends `bytes` `times` times in a row.
    pub fn repeat(&mut self, bytes: Bytes, times: usize) {
        if bytes.is_empty() || times == 0 {
            return;
        }
        self.len = self.len.saturating_add(bytes.len().saturating_mul(times));
        if times == 1 && bytes.len() <= COPY_MAX {
            self.short.extend_from_slice(&bytes);
            return;
        }
        self.end_short();
        self.pieces.push(Piece { bytes, times });
    }

    /// The body built so far.
    pub fn finish(mut self) -> Body {
        self.end_short();
        Body {
            pieces: self.pieces.into(),
            len: self.len,
        }
    }

    fn end_short(&mut self) {
        if !self.short.is_empty() {
            let bytes = Bytes::from(std::mem::take(&mut self.short));
            self.pieces.push(Piece { bytes, times: 1 });
        }
    }
}

/// The parts of `recipe`'s body. An `origin` is fetched here, on behalf of
/// `asker`, and may be at most `limit` bytes long.
pub(crate) async fn parts(
    recipe: &Recipe,
    limit: usize,
    asker: Asker,
) -> Result<Vec<Part>, LoadError> {
    Ok(match &recipe.source {
        Source::Empty => Vec::new(),
        Source::RandomContent(size) => vec![Part::Filler(*size)],
        Source::Body(text) => placeholders(text),
        Source::Origin(url) => {
            let page = fetch::get(url, limit, asker).await.map_err(|message| {
                LoadError::new(&recipe.route, format!("origin {url}: {message}"))
            })?;
            vec![Part::Text(Bytes::from(page))]
        }
    })
}

/// `recipe`'s body made of `parts`: gzipped when its headers say `content-encoding: gzip`.
pub(crate) fn encode(recipe: &Recipe, parts: &[Part]) -> Result<Body, LoadError> {
    let gzipped = recipe.headers.iter().any(|(name, value)| {
        name == CONTENT_ENCODING && value.as_bytes().eq_ignore_ascii_case(b"gzip")
    });
    if gzipped {
        gzip::encode(parts).map_err(|message| LoadError::new(&recipe.route, message))
    } else {
        Ok(Body::plain(parts))
    }
}

/// `text` as parts: each `<<SIZE>>` placeholder (`<<256kb>>`) becomes that much
/// filler; a `<<...>>` that is not a size is left as written.
pub(crate) fn placeholders(text: &str) -> Vec<Part> {
    let all = Bytes::copy_from_slice(text.as_bytes());
    let mut parts = Vec::new();
    // The text from `literal` to `cursor` is kept as written.
    let (mut literal, mut cursor) = (0, 0);
    while let Some(found) = text[cursor..].find("<<") {
        let start = cursor + found;
        let Some(length) = text[start + 2..].find(">>") else {
            break;
        };
        let end = start + 2 + length + 2;
        if let Ok(size) = units::parse_size(&text[start + 2..end - 2]) {
            if literal < start {
                parts.push(Part::Text(all.slice(literal..start)));
            }
            parts.push(Part::Filler(size));
            literal = end;
        }
        cursor = end;
    }
    if literal < text.len() {
        parts.push(Part::Text(all.slice(literal..)));
    }
    parts
}

#[cfg(test)]
impl Body {
    /// The whole body in one buffer (tests only: serving never does this).
    pub(crate) fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len);
        for piece in self.pieces.iter() {
            for _ in 0..piece.times {
                out.extend_from_slice(&piece.bytes);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &'static str) -> Part {
        Part::Text(Bytes::from_static(s.as_bytes()))
    }

    #[test]
    fn placeholders_become_filler_of_their_size() {
        assert_eq!(
            placeholders("<p><<1kb>></p><<10b>>!"),
            [
                text("<p>"),
                Part::Filler(1024),
                text("</p>"),
                Part::Filler(10),
                text("!")
            ]
        );
    }

    #[test]
    fn text_that_is_not_a_placeholder_stays() {
        assert_eq!(placeholders("a << b >> c"), [text("a << b >> c")]);
        assert_eq!(placeholders("<<>> and <<"), [text("<<>> and <<")]);
        assert_eq!(
            placeholders("x<<no>><<1b>>"),
            [text("x<<no>>"), Part::Filler(1)]
        );
        assert_eq!(placeholders(""), []);
    }

    #[test]
    fn a_plain_body_is_its_parts_in_order() {
        let body = Body::plain(&placeholders("<p><<1kb>></p>"));
        let bytes = body.to_vec();
        assert_eq!((body.len(), bytes.len()), (1031, 1031));
        assert!(bytes.starts_with(b"<p>") && bytes.ends_with(b"</p>"));
        assert!(bytes[3..1027].iter().all(u8::is_ascii_alphanumeric));
    }

    #[test]
    fn a_small_body_is_one_piece_and_short_pieces_are_copied_together() {
        let body = Body::plain(&[Part::Filler(100)]);
        assert_eq!(body.pieces().len(), 1);
        assert_eq!(body.pieces()[0].bytes.as_ptr(), filler().as_ptr());
        let body = Body::plain(&[text("<p>"), Part::Filler(10), text("</p>")]);
        assert_eq!(body.pieces().len(), 1);
        assert_eq!(body.to_vec().len(), 17);
        assert!(Body::plain(&[]).pieces().is_empty());
    }

    #[test]
    fn a_256mb_body_holds_no_more_than_the_filler() {
        let declared = 256 << 20;
        let body = Body::plain(&[Part::Filler(declared + 1000)]);
        assert_eq!(body.len(), declared + 1000);
        let sent: usize = body.pieces().iter().map(|p| p.bytes.len() * p.times).sum();
        assert_eq!(sent, declared + 1000);
        // Every piece is a view of the one filler: nothing was allocated for this body.
        for piece in body.pieces() {
            let start = piece.bytes.as_ptr() as usize;
            let filler_start = filler().as_ptr() as usize;
            assert!(
                start >= filler_start && start + piece.bytes.len() <= filler_start + FILLER_LEN
            );
        }
    }
}
