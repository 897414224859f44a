//! The two line files the pipeline writes: phout (one row per response) and
//! `test_data.log` (one JSON line per finished second, yandex-tank's shape).
//! Both are [`LineFile`]s: a full disk leaves whole lines only.

use std::io;
use std::path::Path;

use tank_stats::{json, phout, SecondStats, TotalStats};

use crate::lines::LineFile;
use crate::sink::{Response, SecondSink, SinkError, SoFar};

/// phout's buffer: a second of a fast run's rows, written in one go.
const PHOUT_BUFFER: usize = 1 << 20;
/// `test_data.log`'s buffer (each second is flushed at once anyway).
const JSON_BUFFER: usize = 1 << 16;

/// phout: each response as a row; rows read from phout files are copied as written.
#[derive(Debug)]
pub struct PhoutFile {
    file: LineFile,
    /// A failure met while taking a response, reported at the next flush or second.
    pending: Option<SinkError>,
}

impl PhoutFile {
    /// Create (truncate) the file at `path`.
    pub fn create(path: &Path) -> io::Result<PhoutFile> {
        Ok(PhoutFile {
            file: LineFile::create(path, PHOUT_BUFFER)?,
            pending: None,
        })
    }

    /// Write what is buffered: the live run does it once a wall-clock second,
    /// so a failing disk is found within a second and `tail -f` is at most a
    /// second behind.
    pub fn flush(&mut self) -> Result<(), SinkError> {
        match self.pending.take() {
            Some(error) => Err(error),
            None => self.file.flush(),
        }
    }
}

impl SecondSink for PhoutFile {
    fn response(&mut self, response: Response<'_>) {
        let appended = match response {
            Response::Sample(sample) => self.file.append(|out| phout::push_line(out, sample)),
            Response::Row { line, .. } => self.file.append(|out| {
                out.extend_from_slice(line);
                out.push(b'\n');
            }),
        };
        if let Err(error) = appended {
            self.pending.get_or_insert(error);
        }
    }

    fn second(&mut self, _: &SecondStats, _: SoFar<'_>) -> Result<(), SinkError> {
        self.pending.take().map_or(Ok(()), Err)
    }

    fn finish(&mut self, _: &TotalStats) -> Result<(), SinkError> {
        self.flush()
    }
}

/// `test_data.log`: each finished second with responses as one JSON line,
/// written out at once (the `--processes` parent reads its shards' as they grow).
#[derive(Debug)]
pub struct JsonLines {
    file: LineFile,
}

impl JsonLines {
    /// Create (truncate) the file at `path`.
    pub fn create(path: &Path) -> io::Result<JsonLines> {
        Ok(JsonLines {
            file: LineFile::create(path, JSON_BUFFER)?,
        })
    }
}

impl SecondSink for JsonLines {
    fn second(&mut self, second: &SecondStats, _: SoFar<'_>) -> Result<(), SinkError> {
        // Writing into a Vec cannot fail.
        self.file.append(|out| {
            let _ = json::write_second(out, second);
        })?;
        self.file.flush()
    }

    fn finish(&mut self, _: &TotalStats) -> Result<(), SinkError> {
        self.file.flush()
    }
}
