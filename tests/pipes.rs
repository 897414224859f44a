//! A reader that goes away (`tank -c load.ini -q | head -1`) never kills a
//! command: its output is dropped, the command runs to its end and leaves
//! every artifact, and its exit code is the one it would have had.

use std::io::Read;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::support::server::{Behaviour, Server};
use crate::support::{artifacts, phout, tank};

const LIMIT: Duration = Duration::from_secs(60);

/// Run tank with `args` in `dir`, its stdout (and, with `stderr_too`, its
/// stderr) a pipe whose reader is closed before tank writes anything. Returns
/// its exit status and whatever stderr it wrote while that was still read.
fn with_reader_gone(dir: &Path, args: &[&str], stderr_too: bool) -> (ExitStatus, String) {
    let mut child = tank()
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tank");
    drop(child.stdout.take());
    let mut stderr = child.stderr.take().expect("stderr");
    let reader = (!stderr_too).then(|| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        })
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for tank") {
            break status;
        }
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            panic!("tank {args:?} ran longer than {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = reader.map(|r| r.join().unwrap()).unwrap_or_default();
    assert!(!stderr.contains("panicked"), "tank {args:?}:\n{stderr}");
    (status, stderr)
}

fn load_ini(dir: &Path, server: &Server) {
    std::fs::write(
        dir.join("load.ini"),
        format!(
            "[phantom]\naddress = {}\nuris = /a /b\nrps_schedule = const(100,3s)\ninstances = 10\n",
            server.addr()
        ),
    )
    .unwrap();
}

#[test]
fn a_run_whose_stdout_and_stderr_are_closed_runs_to_its_end_and_writes_everything() {
    let server = Server::start(Behaviour::KeepAlive);
    let dir = tempfile::tempdir().unwrap();
    load_ini(dir.path(), &server);
    let (status, _) = with_reader_gone(dir.path(), &["-c", "load.ini", "-q"], true);
    assert!(status.success(), "{status}");
    let run = artifacts(dir.path());
    let rows = phout(&run);
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("summary.json")).unwrap()).unwrap();
    let planned = summary["shots"]["planned"].as_u64().unwrap();
    let unsent = summary["shots"]["unsent"].as_u64().unwrap();
    assert_eq!(planned, 300);
    assert_eq!(rows.len() as u64, planned - unsent, "{summary}");
    assert_eq!(rows.len(), server.requests().len());
    for file in ["summary.txt", "report.html"] {
        assert!(run.join(file).exists(), "{file}");
    }
}

#[test]
fn every_command_that_prints_ends_normally_when_its_reader_is_gone() {
    let server = Server::start(Behaviour::KeepAlive);
    let dir = tempfile::tempdir().unwrap();
    load_ini(dir.path(), &server);
    let (status, stderr) = with_reader_gone(dir.path(), &["-c", "load.ini", "-q"], false);
    assert!(status.success(), "{stderr}");
    let run = artifacts(dir.path());
    let run = run.to_str().unwrap();
    let phout = format!("{run}/phout.log");
    let url = format!("http://{}/", server.addr());
    let commands: [&[&str]; 6] = [
        &["plan", "-c", "load.ini"],
        &["report", &phout, "--out", "report"],
        &["compare", run, run],
        &[
            "k8s", "-c", "load.ini", "--shards", "2", "--image", "tank:1",
        ],
        &["k8s", "--dockerfile"],
        &["bench", &url, "-c", "1", "-d", "1s"],
    ];
    for args in commands {
        let (status, stderr) = with_reader_gone(dir.path(), args, false);
        assert!(status.success(), "tank {args:?}: {status}\n{stderr}");
    }
    assert!(dir.path().join("report/summary.json").exists());
}

/// `tank import -o`: the sessions file appears whole, or not at all. The
/// capture itself is never written over, and a failed import leaves an
/// earlier sessions file as it was.
#[test]
fn import_output_is_replaced_only_by_a_finished_import() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let line =
        "127.0.0.1 - - [10/Oct/2025:13:55:36 +0000] \"GET /a HTTP/1.1\" 200 2 \"-\" \"ua\"\n";
    std::fs::write(&log, line.repeat(3)).unwrap();
    let import = |input: &Path, out: &Path| {
        tank()
            .arg("import")
            .arg(input)
            .arg("-o")
            .arg(out)
            .output()
            .unwrap()
    };
    // -o naming the capture, directly or through a link: refused, the capture intact.
    let link = dir.path().join("link.sessions");
    std::os::unix::fs::symlink(&log, &link).unwrap();
    for out in [&log, &link] {
        let done = import(&log, out);
        let stderr = String::from_utf8_lossy(&done.stderr);
        assert!(
            !done.status.success() && stderr.contains("is the capture being read"),
            "{stderr}"
        );
        assert_eq!(std::fs::read(&log).unwrap(), line.repeat(3).as_bytes());
    }
    // A good import, then a failed one onto the same file: the first stays.
    let sessions = dir.path().join("out.sessions");
    let done = import(&log, &sessions);
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let good = std::fs::read(&sessions).unwrap();
    assert!(
        String::from_utf8_lossy(&good).contains("GET /a HTTP/1.1"),
        "{}",
        String::from_utf8_lossy(&good)
    );
    let junk = dir.path().join("junk.log");
    std::fs::write(&junk, "not a capture at all\n").unwrap();
    let done = import(&junk, &sessions);
    assert!(!done.status.success());
    assert_eq!(std::fs::read(&sessions).unwrap(), good);
    // A file replaced keeps its permissions; a read-only one is refused.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&sessions, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert!(import(&log, &sessions).status.success());
    let mode = std::fs::metadata(&sessions).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    std::fs::set_permissions(&sessions, std::fs::Permissions::from_mode(0o444)).unwrap();
    let done = import(&log, &sessions);
    assert!(
        !done.status.success() && String::from_utf8_lossy(&done.stderr).contains("is read-only"),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    // A link to a file not made yet: the file is made, the link kept.
    let dangling = dir.path().join("dangling.sessions");
    std::os::unix::fs::symlink("made.sessions", &dangling).unwrap();
    assert!(import(&log, &dangling).status.success());
    assert!(std::fs::symlink_metadata(&dangling)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        std::fs::read(dir.path().join("made.sessions")).unwrap(),
        good
    );
    // Nothing half-written is left beside it.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|name| !name.starts_with(".tank-import-")),
        "{names:?}"
    );
}
