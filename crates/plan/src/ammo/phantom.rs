//! Request-style ("phantom") ammo: `<size>[ <tag>[ ignored…]]` on a line, then
//! exactly `size` raw bytes sent as they are.
//!
//! Blank lines between chunks are skipped; a chunk of size 0 starts the next
//! pass (chunks after it are never read); a negative size takes the rest of the
//! file as one request (the reference's quirk, kept).
//!
//! A file held in memory reads the same on every pass, so its first pass is
//! recorded (where each missile lies, and its tag) and later passes replay it
//! without parsing a header again.

use std::ops::Range;

use super::passes::ReadState;
use super::pybytes::{is_space, show, strip_set};
use super::source::AmmoFile;
use super::Slot;
use crate::error::{PlanError, Result};
use crate::pynum::py_int;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Nothing read yet: read the first header.
    Start,
    /// A header was read: its size (its tag is in the slot), or `None` at the end of the file.
    Header(Option<i64>),
    /// A missile was just returned: read the next header, rewinding at the end.
    AfterMissile,
    Done,
}

/// One missile of a pass over an in-memory file.
#[derive(Debug, Clone)]
struct Recorded {
    /// Where its bytes lie in the file.
    missile: Range<usize>,
    /// Its tag from the header, if it had one.
    tag: Option<Box<[u8]>>,
}

/// Chunks recorded at most: past this, every pass is parsed (the record takes
/// about 40 bytes a chunk, so it stays near 10 MiB).
const MAX_RECORDED: usize = 1 << 18;

/// Passes after the first, for a file held in memory.
#[derive(Debug)]
enum Replay {
    /// The first pass is being read and recorded.
    Recording(Vec<Recorded>),
    /// The first pass ended: later ones replay it, from `next`.
    Replaying { pass: Vec<Recorded>, next: usize },
    /// A streamed file: every pass is read.
    Off,
}

/// Reader of request-style ammo.
pub(crate) struct PhantomReader {
    file: AmmoFile,
    state: State,
    /// Where the header of the chunk last read starts, in this pass: a bad
    /// header after it, or its end cut short, names it.
    header_at: Option<u64>,
    yielded: bool,
    replay: Replay,
    /// [`MAX_RECORDED`], lower in tests.
    record_limit: usize,
}

impl PhantomReader {
    /// Read `file` as request-style ammo.
    pub(crate) fn new(file: AmmoFile) -> Self {
        let replay = match file.memory() {
            Some(_) => Replay::Recording(Vec::new()),
            None => Replay::Off,
        };
        PhantomReader {
            file,
            state: State::Start,
            header_at: None,
            yielded: false,
            replay,
            record_limit: MAX_RECORDED,
        }
    }

    /// A reader that parses every pass, to hold the replay to in tests.
    #[cfg(test)]
    fn parsing_every_pass(file: AmmoFile) -> Self {
        PhantomReader {
            replay: Replay::Off,
            ..PhantomReader::new(file)
        }
    }

    /// A reader that records at most `limit` chunks.
    #[cfg(test)]
    fn recording_at_most(file: AmmoFile, limit: usize) -> Self {
        PhantomReader {
            record_limit: limit,
            ..PhantomReader::new(file)
        }
    }

    /// The reference's `read_chunk_header`, parsed: the size of the next chunk
    /// (its tag goes to `slot`), or `None` at the end of the file.
    #[inline]
    fn read_header(&mut self, slot: &mut Slot) -> Result<Option<i64>> {
        // Blank lines hold only \r and \n, and those are stripped from a
        // header's ends anyway: skipping them first gives the same header.
        self.file.skip_line_breaks()?;
        let start = self.file.offset();
        let parsed = self.file.with_line(|line| {
            if let Some((size, tag)) = quick_header(line) {
                slot.set_tag(tag);
                return Ok(size);
            }
            let header = strip_set(line, b"\r\n");
            let (size, tag) = two_fields(header);
            match size.and_then(py_int) {
                Some(size) => {
                    slot.set_tag(tag);
                    Ok(size)
                }
                None => Err(format!(
                    "bad chunk header `{}`: expected `<size> [tag]` with a whole number size",
                    show(header)
                )),
            }
        })?;
        match parsed {
            None => Ok(None),
            Some(Ok(size)) => {
                self.header_at = Some(start);
                Ok(Some(size))
            }
            Some(Err(message)) => Err(self.bad_header(start, message)),
        }
    }

    /// The error for the bad header line at `start`. Nearly always the chunk
    /// before it has the wrong size, so the message names that chunk.
    #[cold]
    fn bad_header(&self, start: u64, message: String) -> PlanError {
        let message = match self.header_at {
            Some(before) => format!(
                "{message}; the chunk before it, {}, ends before this line: if its size is wrong \
                 (counted with \\r\\n line ends for a request written with \\n, or in characters, \
                 not bytes), this line is the rest of its request or of the chunk after it",
                self.file.quote_line(before)
            ),
            None => message,
        };
        self.file.line_error(start, message)
    }

    /// Start the next pass; `false` when the `loop` limit ends the reading.
    /// After the first pass of an in-memory file, later passes replay it.
    fn next_pass(&mut self, st: &mut ReadState) -> Result<bool> {
        self.file.rewind()?;
        self.header_at = None;
        let yielded = std::mem::replace(&mut self.yielded, false);
        let more = st.passes.finish(yielded, &self.file.path().display())?;
        if let Replay::Recording(pass) = &mut self.replay {
            self.replay = Replay::Replaying {
                pass: std::mem::take(pass),
                next: 0,
            };
        }
        Ok(more)
    }

    /// Advance to the next missile; `false` when reading has ended.
    pub(crate) fn advance(&mut self, st: &mut ReadState, slot: &mut Slot) -> Result<bool> {
        if matches!(self.replay, Replay::Replaying { .. }) {
            return self.replay_next(st, slot);
        }
        loop {
            let header = match self.state {
                State::Done => return Ok(false),
                State::Start => self.read_header(slot)?,
                State::Header(header) => header,
                State::AfterMissile => match self.read_header(slot)? {
                    Some(size) => Some(size),
                    // The end of the file ends the pass.
                    None if self.next_pass(st)? => {
                        if matches!(self.replay, Replay::Replaying { .. }) {
                            return self.replay_next(st, slot);
                        }
                        self.read_header(slot)?
                    }
                    None => None,
                },
            };
            let Some(size) = header else {
                self.state = State::Done;
                return Ok(false);
            };
            if size == 0 {
                // A zero-size chunk ends the pass.
                if !self.next_pass(st)? {
                    self.state = State::Done;
                    return Ok(false);
                }
                if matches!(self.replay, Replay::Replaying { .. }) {
                    return self.replay_next(st, slot);
                }
                self.state = State::Header(self.read_header(slot)?);
                continue;
            }
            let start = usize::try_from(self.file.offset()).unwrap_or(usize::MAX);
            if size < 0 {
                self.file.read_rest(&mut slot.missile)?;
            } else {
                let wanted = size as u64;
                self.file.read_up_to(wanted, &mut slot.missile)?;
                if (slot.missile.len() as u64) < wanted {
                    let chunk = match self.header_at {
                        Some(at) => format!(" for the chunk {}", self.file.quote_line(at)),
                        None => String::new(),
                    };
                    return Err(self.file.error(format!(
                        "unexpected end of file: read {} bytes instead of {wanted}{chunk}",
                        slot.missile.len()
                    )));
                }
            }
            if let Replay::Recording(pass) = &mut self.replay {
                if pass.len() < self.record_limit {
                    pass.push(Recorded {
                        missile: start..start + slot.missile.len(),
                        tag: slot.has_tag.then(|| slot.tag.as_slice().into()),
                    });
                } else {
                    // A file of many tiny chunks: its record would outgrow the file.
                    self.replay = Replay::Off;
                }
            }
            self.yielded = true;
            self.state = State::AfterMissile;
            return Ok(true);
        }
    }

    /// The next missile of a replayed pass; at its end, the next pass begins.
    fn replay_next(&mut self, st: &mut ReadState, slot: &mut Slot) -> Result<bool> {
        loop {
            let Replay::Replaying { pass, next } = &mut self.replay else {
                return Ok(false);
            };
            if let Some(recorded) = pass.get(*next) {
                *next += 1;
                let memory = self.file.memory().unwrap_or_default();
                slot.missile.clear();
                slot.missile
                    .extend_from_slice(memory.get(recorded.missile.clone()).unwrap_or_default());
                slot.set_tag(recorded.tag.as_deref());
                self.yielded = true;
                return Ok(true);
            }
            *next = 0;
            if !self.next_pass(st)? {
                self.replay = Replay::Off;
                self.state = State::Done;
                return Ok(false);
            }
        }
    }
}

/// The usual header, `<digits>[ <tag>[ …]]` ending in `\n` or `\r\n`, in one
/// scan. Anything less plain (a sign, `_`, tabs, a bare `\r`, a missing `\n`)
/// returns `None`, and the general Python-rules path decides.
fn quick_header(line: &[u8]) -> Option<(i64, Option<&[u8]>)> {
    let mut size: i64 = 0;
    let mut at = 0;
    while let Some(&digit @ b'0'..=b'9') = line.get(at) {
        if at == 18 {
            return None;
        }
        size = size * 10 + i64::from(digit - b'0');
        at += 1;
    }
    if at == 0 {
        return None;
    }
    let end = match line.last() {
        Some(b'\n') if line.len() >= 2 && line[line.len() - 2] == b'\r' => line.len() - 2,
        Some(b'\n') => line.len() - 1,
        _ => return None,
    };
    let rest = &line[at..end];
    if rest.is_empty() {
        return Some((size, None));
    }
    let tag = rest.strip_prefix(b" ")?;
    // The tag runs to the next space; any other whitespace in it needs Python's rules.
    let mut tag_end = tag.len();
    for (i, &byte) in tag.iter().enumerate() {
        if byte == b' ' {
            tag_end = i;
            break;
        }
        if is_space(byte) {
            return None;
        }
    }
    let tag = &tag[..tag_end];
    if tag.is_empty() {
        return None;
    }
    Some((size, Some(tag)))
}

/// The first two whitespace-separated fields of a chunk header (Python's
/// `split()[0]` and `[1]`), without building an iterator per shot.
fn two_fields(header: &[u8]) -> (Option<&[u8]>, Option<&[u8]>) {
    let field = |from: usize| -> Option<(usize, usize)> {
        let start = from + header.get(from..)?.iter().position(|b| !is_space(*b))?;
        let end = header[start..]
            .iter()
            .position(|b| is_space(*b))
            .map_or(header.len(), |n| start + n);
        Some((start, end))
    };
    let Some((a, b)) = field(0) else {
        return (None, None);
    };
    (Some(&header[a..b]), field(b).map(|(c, d)| &header[c..d]))
}

#[cfg(test)]
mod tests {
    use super::{quick_header, two_fields, PhantomReader};
    use crate::ammo::pybytes::strip_set;
    use crate::ammo::source::AmmoFile;
    use crate::ammo::{Passes, ReadState, Slot};
    use crate::pynum::py_int;

    #[test]
    fn quick_header_takes_only_plain_headers() {
        assert_eq!(quick_header(b"123 tag\n"), Some((123, Some(&b"tag"[..]))));
        assert_eq!(quick_header(b"5\r\n"), Some((5, None)));
        assert_eq!(quick_header(b"5 a b c\n"), Some((5, Some(&b"a"[..]))));
        for unusual in [
            &b"5 tag"[..],
            b"+5\n",
            b"1_0\n",
            b"5\ttag\n",
            b"5  tag\n",
            b"5 \n",
            b"5 a\rb\n",
            b"x\n",
        ] {
            assert_eq!(
                quick_header(unusual),
                None,
                "{:?}",
                String::from_utf8_lossy(unusual)
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn quick_header_agrees_with_the_general_rules(line in "[0-9]{0,4}[ \t_+a-z\r]{0,3}[a-z]{0,3}[ \r]{0,2}\n?") {
            if let Some((size, tag)) = quick_header(line.as_bytes()) {
                let header = strip_set(line.as_bytes(), b"\r\n");
                let (general_size, general_tag) = two_fields(header);
                proptest::prop_assert_eq!(Some(size), general_size.and_then(py_int));
                proptest::prop_assert_eq!(tag, general_tag);
            }
        }
    }

    /// What a reader gives over `advances` calls: each missile with its tag and
    /// the passes done, then how it ended (the end, or an error).
    fn read_through(mut reader: PhantomReader, limit: Option<i64>, advances: usize) -> Vec<String> {
        let mut st = ReadState {
            passes: Passes::new(limit),
            written: 0,
        };
        let mut slot = Slot::default();
        let mut seen = Vec::new();
        for _ in 0..advances {
            match reader.advance(&mut st, &mut slot) {
                Ok(true) => seen.push(format!(
                    "{:?} {:?} {:?} pass {}",
                    slot.missile,
                    slot.has_tag,
                    slot.marker(),
                    st.passes.done()
                )),
                Ok(false) => {
                    seen.push(format!("end after {} passes", st.passes.done()));
                    break;
                }
                Err(error) => {
                    seen.push(format!("error {error}"));
                    break;
                }
            }
        }
        seen
    }

    /// Request-style ammo near the format's edges: chunks with and without tags,
    /// blank lines, a chunk of size 0, a negative size, a truncated chunk.
    fn ammo() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        let chunk = (
            proptest::collection::vec(b'a'..b'e', 0..6),
            prop_oneof![Just(""), Just(" t"), Just(" t#1"), Just(" x y")],
            prop_oneof![6 => Just(""), 1 => Just("\n"), 1 => Just("\r\n\n")],
            prop_oneof![12 => Just(0i64), 1 => Just(-1), 1 => Just(3)],
        )
            .prop_map(|(missile, tag, blank, quirk)| {
                let size = match quirk {
                    0 => missile.len() as i64,
                    // A size of 0 ends the pass; -1 takes the rest; +3 runs past the end.
                    -1 if missile.is_empty() => 0,
                    -1 => -1,
                    _ => missile.len() as i64 + 3,
                };
                [
                    format!("{blank}{size}{tag}\n").into_bytes(),
                    missile,
                    b"\n".to_vec(),
                ]
                .concat()
            });
        proptest::collection::vec(chunk, 0..6).prop_map(|chunks| chunks.concat())
    }

    proptest::proptest! {
        #[test]
        fn replayed_passes_read_as_parsed_passes(
            ammo in ammo(),
            limit in proptest::option::of(1i64..5),
            record_limit in proptest::option::of(0usize..4),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("ammo");
            std::fs::write(&path, &ammo).unwrap();
            // With a record limit that the first pass outgrows, the reader parses every pass.
            let file = AmmoFile::open(&path).unwrap();
            let replayed = match record_limit {
                None => PhantomReader::new(file),
                Some(limit) => PhantomReader::recording_at_most(file, limit),
            };
            let parsed = PhantomReader::parsing_every_pass(AmmoFile::open(&path).unwrap());
            proptest::prop_assert_eq!(read_through(replayed, limit, 40), read_through(parsed, limit, 40));
        }
    }

    /// The error reading request-style ammo `bytes` stops with.
    fn error_of(bytes: &[u8]) -> String {
        crate::ammo::error_of(bytes, |file| {
            crate::ammo::AmmoReader::Phantom(PhantomReader::new(file))
        })
    }

    #[test]
    fn a_bad_header_is_located_at_its_line_and_names_the_chunk_before_it() {
        // The second request is sized for \r\n line ends but written with \n:
        // it takes the next header, `6`, and leaves its request as a header.
        let ammo = b"5 a\nGET /\n\n28 get\nGET / HTTP/1.0\nHost: \"x\"\n\n6\nGET /\n";
        assert_eq!(
            error_of(ammo),
            "ammo.txt: byte 46: line 9: bad chunk header `GET /`: expected `<size> [tag]` with \
             a whole number size; the chunk before it, `28 get` at byte 11 (line 4), ends before \
             this line: if its size is wrong (counted with \\r\\n line ends for a request written \
             with \\n, or in characters, not bytes), this line is the rest of its request or of \
             the chunk after it"
        );
        // A bad first header has no chunk before it.
        assert_eq!(
            error_of(b"\r\n\nGET \"/\"\r\n"),
            "ammo.txt: byte 3: line 3: bad chunk header `GET \"/\"`: expected `<size> [tag]` \
             with a whole number size"
        );
    }

    #[test]
    fn a_chunk_cut_short_by_the_end_of_the_file_is_named() {
        assert_eq!(
            error_of(b"3\nabc\n12 post\r\nabc"),
            "ammo.txt: byte 18: unexpected end of file: read 3 bytes instead of 12 for the \
             chunk `12 post` at byte 6 (line 3)"
        );
    }

    #[test]
    fn two_fields_split_like_python() {
        assert_eq!(two_fields(b"12"), (Some(&b"12"[..]), None));
        assert_eq!(
            two_fields(b" 12 \x0btag  x"),
            (Some(&b"12"[..]), Some(&b"tag"[..]))
        );
        assert_eq!(two_fields(b" \t "), (None, None));
    }

    /// Request-style ammo in every shape the corpus has, plain and gzip.
    const SEEDS: [&[u8]; 9] = [
        include_bytes!("../../../../tests/corpus/ammo/phantom_tags.ammo"),
        include_bytes!("../../../../tests/corpus/ammo/phantom_notags.ammo"),
        include_bytes!("../../../../tests/corpus/ammo/phantom_blank_lines.ammo"),
        include_bytes!("../../../../tests/corpus/ammo/phantom_crlf.ammo"),
        include_bytes!("../../../../tests/corpus/ammo/phantom_negative.ammo"),
        include_bytes!("../../../../tests/corpus/ammo/phantom_size0.ammo"),
        include_bytes!("../../../../tests/corpus/ammo/phantom_utf8_tag.ammo"),
        include_bytes!("../../../../tests/corpus/ammo/phantom_sniff_uri.ammo"),
        include_bytes!("../../../../tests/corpus/ammo/phantom_tags.ammo.gz"),
    ];

    proptest::proptest! {
        #[test]
        fn fuzzed_request_style_ammo_reads_to_an_end_or_a_located_error(
            bytes in crate::ammo::fuzzing::ammo(&SEEDS),
        ) {
            // As `ammo_type = phantom` reads a file: sniffed, then read as phantom or uri ammo.
            crate::ammo::fuzzing::read_to_end(&bytes, |mut file| {
                let path = file.path().to_path_buf();
                Ok(match crate::ammo::sniff(&mut file, &path)? {
                    tank_config::AmmoType::Phantom => crate::ammo::AmmoReader::Phantom(PhantomReader::new(file)),
                    _ => crate::ammo::AmmoReader::Uri(crate::ammo::uri::UriReader::new(
                        file,
                        crate::ammo::headers::HeaderMap::default(),
                        "1.0",
                    )),
                })
            })?;
        }
    }
}
