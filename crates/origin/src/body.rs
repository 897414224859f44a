//! Response bodies, prepared once per recipe so serving one is a reference-count bump.
//!
//! Random content is text (letters and digits), as OriginSimulator's is, so
//! that it survives any proxy or logger in front of the simulator; gzip, when
//! the recipe's headers ask for `content-encoding: gzip`, is applied once here
//! rather than per response.

use std::io::Write;

use bytes::Bytes;
use flate2::write::GzEncoder;
use flate2::Compression;
use hyper::header::CONTENT_ENCODING;
use rand::distr::{Alphanumeric, SampleString};

use crate::error::LoadError;
use crate::fetch;
use crate::recipe::{Recipe, Source};
use crate::units;

/// The body a recipe serves: its source resolved (an origin fetched), placeholders
/// filled, and gzipped when its headers say `content-encoding: gzip`.
pub(crate) async fn load(recipe: &Recipe) -> Result<Bytes, LoadError> {
    let plain = match &recipe.source {
        Source::Empty => Vec::new(),
        Source::RandomContent(size) => random_text(*size).into_bytes(),
        Source::Body(text) => fill_placeholders(text).into_bytes(),
        Source::Origin(url) => fetch::get(url).await.map_err(|message| LoadError {
            route: recipe.route.to_string(),
            url: url.clone(),
            message,
        })?,
    };
    let gzipped = recipe.headers.iter().any(|(name, value)| {
        name == CONTENT_ENCODING && value.as_bytes().eq_ignore_ascii_case(b"gzip")
    });
    Ok(Bytes::from(if gzipped { gzip(&plain) } else { plain }))
}

/// `size` random letters and digits.
fn random_text(size: usize) -> String {
    Alphanumeric.sample_string(&mut rand::rng(), size)
}

/// `text` with each `<<SIZE>>` (`<<256kb>>`) replaced by that much random text.
/// A `<<...>>` that is not a size is left as written.
fn fill_placeholders(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<<") {
        let after = &rest[start + 2..];
        let Some(end) = after.find(">>") else {
            break;
        };
        out.push_str(&rest[..start]);
        match units::parse_size(&after[..end]) {
            Ok(size) => out.push_str(&random_text(size)),
            Err(_) => out.push_str(&rest[start..start + 2 + end + 2]),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

fn gzip(plain: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(
        Vec::with_capacity(plain.len() / 2 + 64),
        Compression::fast(),
    );
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(plain);
    encoder.finish().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::read::GzDecoder;
    use std::io::Read;

    #[test]
    fn random_text_has_the_size_asked_for_and_is_printable() {
        let text = random_text(428 * 1024);
        assert_eq!(text.len(), 428 * 1024);
        assert!(text.bytes().all(|b| b.is_ascii_alphanumeric()));
    }

    #[test]
    fn placeholders_become_random_text_of_their_size() {
        let filled = fill_placeholders("<p><<1kb>></p><<10b>>!");
        assert_eq!(filled.len(), "<p></p>!".len() + 1024 + 10);
        assert!(filled.starts_with("<p>") && filled.ends_with('!'));
    }

    #[test]
    fn text_that_is_not_a_placeholder_stays() {
        assert_eq!(fill_placeholders("a << b >> c"), "a << b >> c");
        assert_eq!(fill_placeholders("<<>> and <<"), "<<>> and <<");
        assert_eq!(fill_placeholders("plain"), "plain");
    }

    #[test]
    fn gzip_round_trips() {
        let mut out = Vec::new();
        GzDecoder::new(gzip(b"hello hello hello").as_slice())
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, b"hello hello hello");
    }
}
