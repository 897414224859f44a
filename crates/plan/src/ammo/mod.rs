//! Ammo readers: each format turns its source into a stream of missiles
//! (request bytes plus an optional tag from the file), pass after pass.
//!
//! Readers are "lending": a missile lives in a reused [`Slot`] until the next
//! one is read, so reading allocates nothing per shot.

mod access;
#[cfg(test)]
pub(crate) mod fuzzing;
pub mod grpc;
mod headers;
pub mod memcached;
mod passes;
mod phantom;
mod pybytes;
pub mod request;
mod scenario;
pub mod source;
mod uri;
mod uripost;
mod uris;

use std::path::Path;

use tank_config::{AmmoSource, AmmoType, QueueConfig};

use crate::error::{PlanError, Result};
use crate::marker::Marker;
pub(crate) use passes::{Passes, ReadState};
pub(crate) use pybytes::show;
use source::AmmoFile;

/// The current missile of a reader.
#[derive(Debug, Default)]
pub struct Slot {
    /// The request bytes, sent verbatim.
    pub missile: Vec<u8>,
    tag: Vec<u8>,
    has_tag: bool,
}

impl Slot {
    /// The marker: the file's tag, or what [`Slot::mark_untagged`] computed.
    pub fn marker(&self) -> &[u8] {
        &self.tag
    }

    /// Give an untagged missile its computed marker (a file tag is kept as is).
    pub(crate) fn mark_untagged(&mut self, marker: &mut Marker) -> Result<(), String> {
        if !self.has_tag {
            marker.mark(&self.missile, &mut self.tag)?;
        }
        Ok(())
    }

    fn set_tag(&mut self, tag: Option<&[u8]>) {
        self.tag.clear();
        self.has_tag = tag.is_some();
        if let Some(tag) = tag {
            self.tag.extend_from_slice(tag);
        }
    }
}

/// A reader of any supported ammo source.
pub(crate) enum AmmoReader {
    /// Request-style file.
    Phantom(phantom::PhantomReader),
    /// URI-per-line file.
    Uri(uri::UriReader),
    /// URI+POST file.
    UriPost(uripost::UriPostReader),
    /// Access log.
    Access(access::AccessReader),
    /// The `uris` option.
    Uris(uris::UrisReader),
    /// The `[memcached]` workload.
    Memcached(Box<memcached::WorkloadReader>),
    /// A scenario file: each missile is a scenario run, by name.
    Scenario(scenario::ScenarioReader),
    /// Pandora's grpc/json file.
    Grpc(Box<grpc::GrpcReader>),
}

impl AmmoReader {
    /// Open the queue's ammo source. `ammo_type = phantom` files whose first
    /// line does not start with a digit are read as uri ammo, as the reference does.
    pub(crate) fn open(queue: &QueueConfig, source: &AmmoSource) -> Result<Self> {
        let http_ver = queue.header_http.as_str();
        let (path, ammo_type) = match source {
            AmmoSource::Uris(uris) => {
                return Ok(AmmoReader::Uris(uris::UrisReader::new(
                    uris,
                    &queue.headers,
                    http_ver,
                )))
            }
            AmmoSource::File { path, ammo_type } => (path.as_path(), *ammo_type),
            AmmoSource::Memcached(workload) => {
                return Ok(AmmoReader::Memcached(Box::new(
                    memcached::WorkloadReader::new(workload),
                )))
            }
        };
        let mut file = AmmoFile::open(path)?;
        let ammo_type = match ammo_type {
            AmmoType::Phantom => sniff(&mut file, path)?,
            other => other,
        };
        let header_map =
            || headers::HeaderMap::from_config(&queue.headers).map_err(PlanError::Config);
        Ok(match ammo_type {
            AmmoType::Phantom => AmmoReader::Phantom(phantom::PhantomReader::new(file)),
            AmmoType::Uri => AmmoReader::Uri(uri::UriReader::new(file, header_map()?, http_ver)),
            AmmoType::UriPost => {
                AmmoReader::UriPost(uripost::UriPostReader::new(file, header_map()?, http_ver))
            }
            AmmoType::Access => AmmoReader::Access(access::AccessReader::new(file, &queue.headers)),
            AmmoType::GrpcJson => AmmoReader::Grpc(Box::new(grpc::GrpcReader::new(file, queue)?)),
            AmmoType::Sessions => {
                return Err(PlanError::Config(
                    "a sessions file is replayed with its own timing (ammo_type = sessions \
                     and no schedule), not stepped"
                        .into(),
                ))
            }
            AmmoType::Scenario => {
                let reader = scenario::ScenarioReader::open(path, queue.arrivals.seed)?;
                scenario::check_chosen(reader.book(), &queue.chosen_cases, path)?;
                AmmoReader::Scenario(reader)
            }
        })
    }

    /// The format being read (after sniffing), for summaries.
    pub(crate) fn format(&self) -> &'static str {
        match self {
            AmmoReader::Phantom(_) => "phantom",
            AmmoReader::Uri(_) => "uri",
            AmmoReader::UriPost(_) => "uripost",
            AmmoReader::Access(_) => "access",
            AmmoReader::Uris(_) => "uris",
            AmmoReader::Memcached(_) => "memcached",
            AmmoReader::Scenario(_) => "scenario",
            AmmoReader::Grpc(_) => "grpc/json",
        }
    }

    /// Read the next missile into `slot`; `false` when the source has ended.
    pub(crate) fn advance(&mut self, st: &mut ReadState, slot: &mut Slot) -> Result<bool> {
        match self {
            AmmoReader::Phantom(r) => r.advance(st, slot),
            AmmoReader::Uri(r) => r.advance(st, slot),
            AmmoReader::UriPost(r) => r.advance(st, slot),
            AmmoReader::Access(r) => r.advance(st, slot),
            AmmoReader::Uris(r) => r.advance(st, slot),
            AmmoReader::Memcached(r) => r.advance(st, slot),
            AmmoReader::Scenario(r) => r.advance(st, slot),
            AmmoReader::Grpc(r) => r.advance(st, slot),
        }
    }

    /// A scenario file's compiled book (`None` for other ammo).
    pub(crate) fn scenarios(&self) -> Option<&std::sync::Arc<tank_scenario::Book>> {
        match self {
            AmmoReader::Scenario(r) => Some(r.book()),
            _ => None,
        }
    }
}

/// Phantom or uri, by the first character of the first line (decoded as UTF-8).
fn sniff(file: &mut AmmoFile, path: &Path) -> Result<AmmoType> {
    let mut line = Vec::new();
    if !file.read_line(&mut line)? {
        return Err(PlanError::Ammo {
            path: path.to_path_buf(),
            offset: 0,
            message:
                "the ammo file is empty: expected request-style chunks `<size> [tag]` or uri lines"
                    .into(),
        });
    }
    let text = std::str::from_utf8(&line).map_err(|e| PlanError::Ammo {
        path: path.to_path_buf(),
        offset: e.valid_up_to() as u64,
        message: utf16(&line).unwrap_or_else(|| {
            "the first line is not valid UTF-8: expected a chunk header `<size> [tag]` or a uri line"
                .into()
        }),
    })?;
    file.rewind()?;
    let first = text.chars().next().unwrap_or('\n');
    // Python's str.isdigit(): ASCII digits, and other Unicode digits too.
    let digit = first.is_ascii_digit() || (!first.is_ascii() && first.is_numeric());
    Ok(if digit {
        AmmoType::Phantom
    } else {
        AmmoType::Uri
    })
}

/// What to say of `queue`'s ammo when `ammo_type = phantom` sniffed it as
/// uri ammo because it begins with a UTF-8 byte-order mark (as editors on
/// Windows save it): the reference reads it so too, so tank does, but a
/// phantom file read as uri lines fires nonsense. `None` otherwise.
pub fn bom_notice(queue: &QueueConfig) -> Option<String> {
    use std::io::Read;
    let Some(AmmoSource::File {
        path,
        ammo_type: AmmoType::Phantom,
    }) = &queue.ammo
    else {
        return None;
    };
    let mut first = [0u8; 4];
    std::fs::File::open(path)
        .ok()?
        .read_exact(&mut first)
        .ok()?;
    let [0xef, 0xbb, 0xbf, after] = first else {
        return None;
    };
    Some(format!(
        "[{}] ammofile {}: the file begins with a UTF-8 byte-order mark, so its first line does not \
         start with a chunk size and it is read as uri ammo, as yandex-tank reads it{}; save it \
         without the mark if it is request-style (phantom) ammo",
        queue.name,
        path.display(),
        if after.is_ascii_digit() {
            " (its first line, after the mark, starts with a digit: it looks like phantom ammo)"
        } else {
            ""
        }
    ))
}

/// What to say of a file whose first bytes, `first`, are a UTF-16 byte-order
/// mark (as PowerShell's `>` writes): ammo is read as bytes, so it must be
/// saved as UTF-8. `None` for any other start.
pub(crate) fn utf16(first: &[u8]) -> Option<String> {
    let (order, mark) = match first.get(..2)? {
        [0xff, 0xfe] => ("little-endian", "FF FE"),
        [0xfe, 0xff] => ("big-endian", "FE FF"),
        _ => return None,
    };
    Some(format!(
        "the file is UTF-16 text ({order}: it begins with the byte-order mark {mark}), \
         but ammo is read as bytes in UTF-8: save the file as UTF-8, without a byte-order mark"
    ))
}

/// The error that a reader, opened by `open` on a file `ammo.txt` of `bytes`,
/// stops with (within 3 passes), without the file's directory.
#[cfg(test)]
pub(crate) fn error_of(bytes: &[u8], open: impl FnOnce(AmmoFile) -> AmmoReader) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ammo.txt");
    std::fs::write(&path, bytes).unwrap();
    let mut reader = open(AmmoFile::open(&path).unwrap());
    let mut st = ReadState {
        passes: Passes::new(Some(3)),
        written: 0,
    };
    let mut slot = Slot::default();
    loop {
        match reader.advance(&mut st, &mut slot) {
            Ok(true) => st.written += 1,
            Ok(false) => panic!("read to the end without an error"),
            Err(error) => {
                let dir = format!("{}/", dir.path().display());
                return error.to_string().replace(&dir, "");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error of sniffing a file of `bytes` (as `ammo_type = phantom` does).
    fn sniff_error(bytes: &[u8]) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ammo.txt");
        std::fs::write(&path, bytes).unwrap();
        let mut file = AmmoFile::open(&path).unwrap();
        let error = sniff(&mut file, &path).unwrap_err().to_string();
        error.replace(&path.display().to_string(), "ammo.txt")
    }

    #[test]
    fn a_utf16_file_is_told_to_be_saved_as_utf8() {
        assert_eq!(
            sniff_error(b"\xff\xfe1\x000\x00\r\x00\n\x00"),
            "ammo.txt: byte 0: the file is UTF-16 text (little-endian: it begins with the \
             byte-order mark FF FE), but ammo is read as bytes in UTF-8: save the file as UTF-8, \
             without a byte-order mark"
        );
        assert_eq!(
            sniff_error(b"\xfe\xff\x001\x000\n"),
            "ammo.txt: byte 0: the file is UTF-16 text (big-endian: it begins with the \
             byte-order mark FE FF), but ammo is read as bytes in UTF-8: save the file as UTF-8, \
             without a byte-order mark"
        );
        // Other bytes that are not UTF-8 are only that.
        assert_eq!(
            sniff_error(b"12 \xff\n"),
            "ammo.txt: byte 3: the first line is not valid UTF-8: expected a chunk header \
             `<size> [tag]` or a uri line"
        );
    }
}
