//! The run's artifacts directory: `logs/<UTC time>_<id>/` by default, holding
//! phout.log, answ.log, the config as run, and tank.log. Every directory tank
//! names itself is named this way ([`dir_name`]): a run's, `--processes`' and a
//! bench's or search's, so they sort by time together.

use std::fmt::Write as _;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use tank_config::{Override, TestConfig};

use crate::collector::PHOUT;
use crate::RunError;

/// The artifacts of one run.
pub struct Artifacts {
    dir: PathBuf,
    log: Mutex<File>,
}

impl Artifacts {
    /// Create the directory (`artifacts_dir`, or a new one under `artifacts_base_dir`),
    /// copy the config into it with the overrides noted, and open tank.log.
    pub fn create(config: &TestConfig, overrides: &[Override]) -> Result<Artifacts, RunError> {
        let dir = match &config.core.artifacts_dir {
            Some(dir) => PathBuf::from(dir),
            None => Path::new(&config.core.artifacts_base_dir).join(run_id(SystemTime::now())),
        };
        // Another run's phout there would be overwritten: its results lost.
        if dir.join(PHOUT).exists() {
            return Err(RunError::Artifacts(format!(
                "[tank] artifacts_dir {}: it holds a run already (its {PHOUT}), which this \
                 one would overwrite: give another directory, or move that run away",
                dir.display()
            )));
        }
        let at = |what: &str, path: &Path| {
            let what = format!("{what} {}", path.display());
            move |error| RunError::Io { what, error }
        };
        fs::create_dir_all(&dir).map_err(at("creating the artifacts directory", &dir))?;
        let mut text =
            fs::read_to_string(&config.path).map_err(at("reading again", &config.path))?;
        if !overrides.is_empty() {
            text.push_str("\n# overridden on the command line:\n");
            for o in overrides {
                let _ = writeln!(text, "# -o {}.{}={}", o.section, o.key, o.value);
            }
        }
        let name = config
            .path
            .file_name()
            .map_or_else(|| "config".into(), |n| n.to_string_lossy().into_owned());
        let copy = dir.join(name);
        fs::write(&copy, text).map_err(at("writing the config copy", &copy))?;
        let log_path = dir.join("tank.log");
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(at("creating", &log_path))?;
        Ok(Artifacts {
            dir,
            log: Mutex::new(log),
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A file in the directory.
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Append a timestamped line to tank.log (best effort: logging never stops a run).
    pub fn log(&self, message: &str) {
        if let Ok(mut log) = self.log.lock() {
            let _ = writeln!(log, "{} {message}", utc(SystemTime::now(), '-', ':'));
        }
    }

    /// Create a file in the directory.
    pub fn create_file(&self, name: &str) -> Result<File, RunError> {
        let path = self.file(name);
        File::create(&path).map_err(|error| RunError::Io {
            what: format!("creating {}", path.display()),
            error,
        })
    }
}

/// A new artifacts directory's name: `2026-11-21_19-39-11_4f2a9c`, then
/// `_<what>` when given (`_bench`, `_3processes`): sortable by time, and unique
/// enough for two runs in one second.
pub fn dir_name(what: Option<&str>) -> String {
    let id = run_id(SystemTime::now());
    match what {
        Some(what) => format!("{id}_{what}"),
        None => id,
    }
}

/// `2026-11-21_19-39-11_4f2a9c`: sortable, and unique enough for two runs in one second.
fn run_id(now: SystemTime) -> String {
    let nanos = now
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let id = (u64::from(nanos) ^ u64::from(std::process::id()).rotate_left(20)) & 0xff_ffff;
    format!("{}_{id:06x}", utc(now, '_', '-'))
}

/// `YYYY-MM-DD<sep>HH<time_sep>MM<time_sep>SS` in UTC (the calendar is jiff's).
fn utc(at: SystemTime, sep: char, time_sep: char) -> String {
    let at = jiff::Timestamp::try_from(at).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    let time = jiff::tz::Offset::UTC.to_datetime(at);
    format!(
        "{:04}-{:02}-{:02}{sep}{:02}{time_sep}{:02}{time_sep}{:02}",
        time.year(),
        time.month(),
        time.day(),
        time.hour(),
        time.minute(),
        time.second()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(UNIX_EPOCH, ' ', ':'), "1970-01-01 00:00:00");
        let at = UNIX_EPOCH + Duration::from_secs(1_763_753_951);
        assert_eq!(utc(at, '_', '-'), "2025-11-21_19-39-11");
        assert!(run_id(at).starts_with("2025-11-21_19-39-11_"));
        let named = dir_name(Some("bench"));
        assert_eq!(
            named.len(),
            "2025-11-21_19-39-11_4f2a9c_bench".len(),
            "{named}"
        );
        assert!(named.ends_with("_bench"), "{named}");
    }
}
