//! A capture named where a sessions file is expected (`ammo_type = sessions`
//! with `ammofile = traffic.pcap`, an access log, a HAR or a MySQL slow log):
//! imported with the default options into a temporary sessions file before
//! the plan is made, so a replay needs no separate `tank import` step. A pcap
//! is read as the queue's gun speaks (`tank_type = mysql`: MySQL; `none`
//! with a reply framing: that framing; else HTTP). The file lives as long as
//! the [`Imported`] value and is removed with it.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter};
use std::path::Path;

use tempfile::TempPath;

use tank_config::{QueueConfig, ReplyFraming, TankType};

use crate::detect::{detect, Format, HEAD};
use crate::{import, ImportError, Options, Protocol, Summary, Warnings};

/// A capture imported into a temporary sessions file.
#[derive(Debug)]
pub struct Imported {
    file: TempPath,
    /// What the import did, for the run's log.
    pub summary: Summary,
}

impl Imported {
    /// The sessions file.
    pub fn path(&self) -> &Path {
        &self.file
    }
}

/// Import `path` for `queue` unless it already is a sessions file (`Ok(None)`).
/// The queue's `headers` (`Name: value`) go into the requests rebuilt from
/// an access log, as yandex-tank's `access` ammo puts them; a pcap or HAR
/// replays its requests as captured, so there they are a warning. Warnings
/// go to `warnings`, as `tank import` reports them; a capture of no request
/// is an error naming it, with the import's summary and first warnings.
pub fn import_capture(
    path: &Path,
    queue: &QueueConfig,
    warnings: &mut Warnings,
) -> Result<Option<Imported>, ImportError> {
    let headers = &queue.headers;
    let name = path.display().to_string();
    match tank_plan::sessions::is_sessions_file(path) {
        Ok(true) => return Ok(None),
        Ok(false) => {}
        Err(error) => return Err(ImportError::input(&name, error.to_string())),
    }
    let mut input = BufReader::with_capacity(
        1 << 20,
        File::open(path).map_err(|e| ImportError::io(&name, "opening", e))?,
    );
    let head = input
        .fill_buf()
        .map_err(|e| ImportError::io(&name, "reading", e))?;
    let format = detect(&head[..head.len().min(HEAD)]);
    // What `tank import` would read the capture as, for the error of a queue
    // whose gun reads it otherwise and finds nothing.
    let mysql_capture =
        matches!(format, Format::Pcap | Format::Pcapng) && crate::mysql::in_capture(head);
    let mut options = Options::default();
    if matches!(format, Format::Pcap | Format::Pcapng) {
        options.protocol = Some(match (queue.tank_type, &queue.reply_framing) {
            (TankType::Mysql, _) => Protocol::Mysql,
            (TankType::None, framing) if *framing != ReplyFraming::Close => {
                options.framing = Some(framing.clone());
                Protocol::Tcp
            }
            _ => Protocol::Http,
        });
    }
    if format == Format::Access {
        options.headers = headers.to_vec();
    } else if !headers.is_empty() {
        warnings.warn(format!(
            "`headers` go into requests rebuilt from an access log; a {} replays its \
             requests as captured, so they are not added",
            format.name()
        ));
    }
    let temp = tempfile::Builder::new()
        .prefix("tank-sessions-")
        .suffix(".txt")
        .tempfile()
        .map_err(|e| ImportError::io(&name, "creating a temporary sessions file for", e))?;
    let (out, file) = temp.into_parts();
    let out = BufWriter::with_capacity(1 << 20, out);
    let summary = import(input, &name, out, &options, warnings)?;
    if summary.requests == 0 {
        let hint = (mysql_capture && summary.protocol != Protocol::Mysql).then_some(
            "; its connections are MySQL (to port 3306, or greeted as MySQL): to replay \
             them, set tank_type = mysql and the [mysql] section's user and password",
        );
        return Err(nothing_to_replay(&name, &summary, warnings, hint));
    }
    Ok(Some(Imported { file, summary }))
}

/// The error of a capture that imported to no request: named itself (the
/// temporary file is gone) with what the import skipped, since a run that
/// stops here shows no warnings of its own.
fn nothing_to_replay(
    name: &str,
    summary: &Summary,
    warnings: &Warnings,
    hint: Option<&str>,
) -> ImportError {
    let own = format!("{name}: no request found");
    let said: Vec<&str> = warnings
        .first()
        .iter()
        .filter(|w| !w.starts_with(&own))
        .map(String::as_str)
        .collect();
    let said = if said.is_empty() {
        String::new()
    } else {
        format!("; its warnings: {}", said.join("; "))
    };
    ImportError::input(
        name,
        format!(
            "nothing to replay: importing it found no request ({summary}){said}; expected a \
             capture holding {} requests{}",
            summary.protocol.name(),
            hint.unwrap_or_default()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quiet() -> Warnings {
        Warnings::new(0, Box::new(|_| {}))
    }

    /// A replay queue with `options` (e.g. its `headers`).
    fn queue(options: &str) -> QueueConfig {
        let text = format!(
            "[phantom]\naddress = 127.0.0.1:80\nammo_type = sessions\nammofile = x\n{options}"
        );
        tank_config::load_str(
            &text,
            tank_config::ConfigFormat::Ini,
            Path::new("load.ini"),
            &[],
        )
        .unwrap()
        .queues
        .remove(0)
    }

    #[test]
    fn a_sessions_file_is_used_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.txt");
        std::fs::write(&path, "tank-sessions 1\nS 0 0 a\nR 1 0 0 \nx\nE 0 0\n").unwrap();
        assert!(import_capture(&path, &queue(""), &mut quiet())
            .unwrap()
            .is_none());
    }

    #[test]
    fn an_access_log_is_imported_with_the_headers_into_a_file_removed_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("access.log");
        std::fs::write(
            &path,
            "10.0.0.1 - - [10/Oct/2023:13:55:36 +0000] \"GET /a HTTP/1.1\" 200 5 \"-\" \"ua\"\n\
             10.0.0.1 - - [10/Oct/2023:13:55:37 +0000] \"GET /b HTTP/1.1\" 200 5 \"-\" \"ua\"\n",
        )
        .unwrap();
        let imported = import_capture(
            &path,
            &queue("headers = [Host: example.org]\n"),
            &mut quiet(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (imported.summary.sessions, imported.summary.requests),
            (1, 2)
        );
        let sessions = imported.path().to_path_buf();
        let text = std::fs::read_to_string(&sessions).unwrap();
        assert!(text.starts_with("tank-sessions 1\n"), "{text}");
        assert!(
            text.contains(" 1000000 0 /b\nGET /b HTTP/1.1\r\nHost: example.org\r\n"),
            "{text}"
        );
        drop(imported);
        assert!(!sessions.exists());
    }

    #[test]
    fn a_file_that_is_not_there_is_an_error_naming_it() {
        let error =
            import_capture(Path::new("/nonexistent/x.pcap"), &queue(""), &mut quiet()).unwrap_err();
        assert!(error.to_string().contains("/nonexistent/x.pcap"), "{error}");
    }

    /// A pcap header (µs, Ethernet) and `rest`.
    fn pcap(rest: &[u8]) -> Vec<u8> {
        let mut pcap = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
        pcap.extend_from_slice(&[0; 8]);
        pcap.extend_from_slice(&65535u32.to_le_bytes());
        pcap.extend_from_slice(&1u32.to_le_bytes());
        pcap.extend_from_slice(rest);
        pcap
    }

    /// A pcap record of one TCP segment from port 40000 to `dst_port`
    /// carrying `payload` (Ethernet, IPv4; checksums are not read).
    fn segment(dst_port: u16, payload: &[u8]) -> Vec<u8> {
        let mut frame = vec![0; 12];
        frame.extend_from_slice(&[0x08, 0x00]);
        let total = u16::try_from(20 + 20 + payload.len()).unwrap();
        frame.extend_from_slice(&[0x45, 0]);
        frame.extend_from_slice(&total.to_be_bytes());
        frame.extend_from_slice(&[0, 0, 0x40, 0, 64, 6, 0, 0, 127, 0, 0, 1, 127, 0, 0, 2]);
        frame.extend_from_slice(&40000u16.to_be_bytes());
        frame.extend_from_slice(&dst_port.to_be_bytes());
        frame.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]);
        frame.extend_from_slice(payload);
        let len = u32::try_from(frame.len()).unwrap();
        let mut record = vec![0; 8];
        record.extend_from_slice(&len.to_le_bytes());
        record.extend_from_slice(&len.to_le_bytes());
        record.extend_from_slice(&frame);
        record
    }

    #[test]
    fn a_mysql_capture_on_a_queue_of_another_gun_says_to_set_tank_type_mysql() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mysql.pcap");
        std::fs::write(&path, pcap(&segment(3306, b"\x01\x00\x00\x00\x0e"))).unwrap();
        let error = import_capture(&path, &queue(""), &mut quiet())
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("expected a capture holding http requests; its connections are MySQL")
                && error.contains("set tank_type = mysql"),
            "{error}"
        );
        // A capture of HTTP that found nothing says nothing of MySQL.
        std::fs::write(&path, pcap(&segment(80, b"\x16\x03\x01"))).unwrap();
        let error = import_capture(&path, &queue(""), &mut quiet())
            .unwrap_err()
            .to_string();
        assert!(!error.contains("MySQL"), "{error}");
    }

    #[test]
    fn headers_on_a_pcap_replay_are_a_warning_not_a_silent_skip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.pcap");
        std::fs::write(&path, pcap(&[])).unwrap();
        let said = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = said.clone();
        let mut warnings = Warnings::new(
            5,
            Box::new(move |w| sink.lock().unwrap().push(w.to_owned())),
        );
        // No packets: refused, but the headers' warning was said first.
        import_capture(&path, &queue("headers = [Host: a]\n"), &mut warnings).unwrap_err();
        let said = said.lock().unwrap();
        assert!(
            said[0].contains("a pcap replays its requests as captured"),
            "{said:?}"
        );
    }

    #[test]
    fn a_capture_of_no_request_is_an_error_naming_it_with_what_its_import_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cut.pcap");
        // A packet record cut inside its header: a warning, then no request.
        std::fs::write(&path, pcap(&[1, 2, 3, 4, 5])).unwrap();
        let mut warnings = quiet();
        let error = import_capture(
            &path,
            &queue("tank_type = mysql\n[mysql]\nuser = u\npassword = p\n"),
            &mut warnings,
        )
        .unwrap_err()
        .to_string();
        let name = path.display().to_string();
        assert_eq!(
            error,
            format!(
                "{name}: nothing to replay: importing it found no request (pcap (mysql): 0 \
                 sessions, 0 requests, 0 bytes over 0.000 s; 2 warnings; in order, look-ahead \
                 0); its warnings: the capture ends inside packet 1 (byte 24; 5 bytes left \
                 unread): that packet is lost; expected a capture holding mysql requests"
            )
        );
    }
}
