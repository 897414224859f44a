//! gzip for prepared bodies, run by run, so that a repeated filler stays repeated.
//!
//! Compressing a `256mb` body whole would hold all of it, and its compressed
//! form, in memory: the very amplification [`crate::filler`] removes. But a
//! deflate stream can be cut into independent runs: a run compressed on its
//! own and ended with a full flush stops on a byte boundary and refers to
//! nothing before it, so such runs can follow one another in any order and
//! any number of times. The filler is compressed once per process (whole,
//! and its first [`BLOCK`] bytes), and a body's filler is those runs repeated
//! plus one short run for the rest; text is compressed as it comes. An empty
//! final block ends the stream, and the gzip trailer's CRC-32 of the whole is
//! combined from the runs' CRCs, so nothing is ever compressed or hashed at
//! full size. The result is a valid single-member gzip stream that any
//! client decodes; only the compressed size differs a little from
//! compressing the whole at once.

use std::sync::OnceLock;

use bytes::Bytes;
use flate2::{Compress, Compression, Crc, FlushCompress};

use crate::body::{Body, Builder, Part};
use crate::filler::{filler, FILLER_LEN};

/// The gzip member header: deflate, no name or time, unknown OS (RFC 1952).
const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

/// A final, empty deflate block (fixed Huffman codes, just end-of-block): ends the stream.
const LAST_BLOCK: [u8; 2] = [0x03, 0x00];

/// Filler shorter than the whole filler is made of runs this long, then one shorter run.
const BLOCK: usize = 4096;

/// A run of plain bytes, compressed on its own.
#[derive(Debug)]
struct Run {
    deflated: Bytes,
    crc: Crc,
}

impl Run {
    fn new(plain: &[u8]) -> Result<Run, String> {
        let mut crc = Crc::new();
        crc.update(plain);
        Ok(Run {
            deflated: deflate(plain)?,
            crc,
        })
    }
}

/// The filler's runs, compressed once: all of it, and its first [`BLOCK`] bytes.
#[derive(Debug)]
struct FillerRuns {
    whole: Run,
    block: Run,
}

fn filler_runs() -> Result<&'static FillerRuns, String> {
    static RUNS: OnceLock<Result<FillerRuns, String>> = OnceLock::new();
    RUNS.get_or_init(|| {
        Ok(FillerRuns {
            whole: Run::new(filler())?,
            block: Run::new(&filler()[..BLOCK])?,
        })
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// The gzip body of `parts`.
pub(crate) fn encode(parts: &[Part]) -> Result<Body, String> {
    let mut out = Builder::default();
    let mut crc = Crc::new();
    let mut add = |out: &mut Builder, run: &Run, times: usize| {
        out.repeat(run.deflated.clone(), times);
        for _ in 0..times {
            crc.combine(&run.crc);
        }
    };
    out.push(Bytes::from_static(&HEADER));
    for part in parts {
        match part {
            Part::Text(text) => add(&mut out, &Run::new(text)?, 1),
            Part::Filler(len) => {
                let runs = filler_runs()?;
                add(&mut out, &runs.whole, len / FILLER_LEN);
                let rest = len % FILLER_LEN;
                add(&mut out, &runs.block, rest / BLOCK);
                let tail = rest % BLOCK;
                if tail > 0 {
                    add(&mut out, &Run::new(&filler()[..tail])?, 1);
                }
            }
        }
    }
    out.push(Bytes::from_static(&LAST_BLOCK));
    let mut trailer = Vec::with_capacity(8);
    trailer.extend_from_slice(&crc.sum().to_le_bytes());
    // ISIZE is the plain length modulo 2^32 (RFC 1952), which is what the CRC counted.
    trailer.extend_from_slice(&crc.amount().to_le_bytes());
    out.push(Bytes::from(trailer));
    Ok(out.finish())
}

/// `plain` as raw deflate blocks ended by a full flush: byte-aligned, not
/// final, and referring to nothing before them.
fn deflate(plain: &[u8]) -> Result<Bytes, String> {
    let mut compress = Compress::new(Compression::fast(), false);
    let mut out = Vec::with_capacity(plain.len() / 2 + 64);
    loop {
        let consumed = usize::try_from(compress.total_in()).unwrap_or(plain.len());
        let rest = plain.get(consumed..).unwrap_or_default();
        compress
            .compress_vec(rest, &mut out, FlushCompress::Full)
            .map_err(|e| format!("gzip: compressing the body failed: {e}"))?;
        let all_in = usize::try_from(compress.total_in()).is_ok_and(|n| n == plain.len());
        // Room left over means the flush is complete (zlib's avail_out != 0).
        if all_in && out.len() < out.capacity() {
            return Ok(Bytes::from(out));
        }
        out.reserve(out.capacity().max(64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::read::GzDecoder;
    use std::io::Read;

    fn gunzip(body: &Body) -> Vec<u8> {
        let mut out = Vec::new();
        GzDecoder::new(body.to_vec().as_slice())
            .read_to_end(&mut out)
            .expect("a valid gzip stream with the right CRC and size");
        out
    }

    fn text(s: &'static str) -> Part {
        Part::Text(Bytes::from_static(s.as_bytes()))
    }

    #[test]
    fn text_round_trips() {
        let body = encode(&[text("hello hello hello")]).unwrap();
        assert_eq!(gunzip(&body), b"hello hello hello");
        assert_eq!(body.pieces().len(), 1, "a small body is one frame");
    }

    #[test]
    fn an_empty_body_is_still_a_gzip_stream() {
        assert_eq!(gunzip(&encode(&[]).unwrap()), b"");
    }

    #[test]
    fn filler_of_every_shape_round_trips_with_text_around_it() {
        let len = 2 * FILLER_LEN + 3 * BLOCK + 17;
        let body = encode(&[text("<p>"), Part::Filler(len), text("</p>")]).unwrap();
        let plain = gunzip(&body);
        assert_eq!(plain.len(), len + 7);
        assert!(plain.starts_with(b"<p>") && plain.ends_with(b"</p>"));
        assert!(plain[3..len + 3].iter().all(u8::is_ascii_alphanumeric));
        // Random letters and digits compress to about 3/4 of their size.
        assert!(body.len() < len * 4 / 5, "{} of {len}", body.len());
    }

    #[test]
    fn a_large_gzip_body_holds_no_more_than_the_compressed_filler_and_a_block() {
        let body = encode(&[Part::Filler(256 << 20)]).unwrap();
        let held: usize = body.pieces().iter().map(|p| p.bytes.len()).sum();
        assert!(held < FILLER_LEN + BLOCK, "{held}");
        let runs = filler_runs().unwrap();
        assert!(body
            .pieces()
            .iter()
            .any(|p| p.bytes.as_ptr() == runs.whole.deflated.as_ptr() && p.times == 256));
    }
}
