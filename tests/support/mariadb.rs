//! A real MariaDB (Debian's mariadb-server) in a temporary datadir on a free
//! loopback port, started by a test and stopped when dropped. A [`Snapshot`]
//! is a datadir set up once (users, schema, rows) with its server stopped;
//! each [`MariaDb`] starts on a copy of it, so a capture's server and a
//! replay's start from the same data, as Apiary's tutorial asks.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::component::{binary, free_port};

/// Server options every instance runs with: small, quiet, and logging every
/// command to `mysql.general_log` with microseconds.
const SERVER_OPTIONS: &[&str] = &[
    "--no-defaults",
    "--bind-address=127.0.0.1",
    "--skip-name-resolve",
    "--skip-log-bin",
    "--performance-schema=OFF",
    "--innodb-buffer-pool-size=16M",
    "--innodb-log-file-size=4M",
    "--max-connections=500",
    "--general-log=1",
    "--log-output=TABLE",
];

/// A datadir ready to be copied (its server stopped).
pub struct Snapshot {
    dir: tempfile::TempDir,
    mariadbd: PathBuf,
}

impl Snapshot {
    /// A fresh datadir with `setup` run in it as root; `None` (after
    /// failing in CI) when mariadb-server is not installed.
    pub fn create(setup: &str) -> Option<Snapshot> {
        let mariadbd = binary("mariadbd", "mariadb-server")?;
        let install = binary("mariadb-install-db", "mariadb-server")?;
        binary("mariadb", "mariadb-client")?;
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        // The installer's bootstrap server has been seen to fail once in
        // many runs on a machine beside a CPU hog ("Installation of system
        // tables failed"): try it up to three times, and keep every
        // attempt's output for the message if none succeeds.
        let mut failures = Vec::new();
        while let Err(failure) = install_db(&install, &data) {
            eprintln!("mariadb-install-db failed, retrying:\n{failure}");
            failures.push(failure);
            assert!(
                failures.len() < 3,
                "mariadb-install-db failed three times:\n{}",
                failures.join("\n---\n")
            );
            let _ = std::fs::remove_dir_all(&data);
        }
        let snapshot = Snapshot { dir, mariadbd };
        {
            // Not logged: the copies' logs hold only what the tests do.
            let server = MariaDb::on(&snapshot, &data, &["--general-log=0".into()]);
            server.sql(setup);
        }
        Some(snapshot)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }
}

/// Runs `mariadb-install-db` into `data`; on failure, what it printed and
/// the datadir's error logs.
fn install_db(install: &Path, data: &Path) -> Result<(), String> {
    let out = Command::new(install)
        .args([
            "--no-defaults",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
        ])
        .arg(format!("--datadir={}", data.display()))
        .args(user_option())
        .arg("--innodb-log-file-size=4M")
        .stdin(Stdio::null())
        .output()
        .expect("run mariadb-install-db");
    if out.status.success() {
        return Ok(());
    }
    let mut report = format!(
        "{}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    for entry in std::fs::read_dir(data).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "err") {
            let log = std::fs::read_to_string(&path).unwrap_or_default();
            report.push_str(&format!("\n{}:\n{log}", path.display()));
        }
    }
    Err(report)
}

/// A running server.
pub struct MariaDb {
    child: Child,
    /// Its loopback port.
    pub port: u16,
    /// Its own directory (a copy of the snapshot's datadir, its socket, logs).
    pub dir: tempfile::TempDir,
    socket: PathBuf,
}

/// One row of `mysql.general_log`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logged {
    /// The server's connection id.
    pub thread: u64,
    /// `Connect`, `Query`, `Prepare`, `Execute`, `Init DB`, `Quit`, …
    pub command: String,
    /// What it carried (a statement, a schema, `user@host on schema …`).
    pub argument: Vec<u8>,
    /// When, µs since the Unix epoch.
    pub at_us: u64,
}

impl MariaDb {
    /// A server on a copy of `snapshot`, with `options` besides the usual ones.
    pub fn start(snapshot: &Snapshot, options: &[String]) -> MariaDb {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let copied = Command::new("cp")
            .arg("-a")
            .arg(snapshot.data())
            .arg(&data)
            .status()
            .expect("copy the snapshot");
        assert!(copied.success(), "cp -a of the snapshot failed");
        MariaDb::in_dir(snapshot, dir, options)
    }

    /// A server on the snapshot's own datadir (to set it up).
    fn on(snapshot: &Snapshot, data: &Path, options: &[String]) -> MariaDb {
        let dir = tempfile::tempdir().unwrap();
        let linked = dir.path().join("data");
        std::os::unix::fs::symlink(data, &linked).expect("link the datadir");
        MariaDb::in_dir(snapshot, dir, options)
    }

    fn in_dir(snapshot: &Snapshot, dir: tempfile::TempDir, options: &[String]) -> MariaDb {
        let port = free_port();
        let socket = dir.path().join("sock");
        let log = std::fs::File::create(dir.path().join("server.log")).unwrap();
        let child = Command::new(&snapshot.mariadbd)
            .args(SERVER_OPTIONS)
            .arg(format!("--datadir={}", dir.path().join("data").display()))
            .arg(format!("--port={port}"))
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--pid-file={}", dir.path().join("pid").display()))
            .args(user_option())
            .args(options)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start mariadbd");
        let mut server = MariaDb {
            child,
            port,
            dir,
            socket,
        };
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("mariadbd exited ({status}):\n{}", server.log());
            }
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "mariadbd did not listen within 120 s:\n{}",
                server.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        server
    }

    /// What the server wrote to its error log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// Run `sql` as root over the socket; its rows, tab-separated. The
    /// session is kept out of the general and slow logs, which hold only what
    /// the test does.
    pub fn sql(&self, sql: &str) -> String {
        let out = Command::new("mariadb")
            .args(["--no-defaults", "-uroot", "-N", "-B"])
            .arg(format!("--socket={}", self.socket.display()))
            .arg("-e")
            .arg(format!(
                "SET SESSION long_query_time = 100000; SET SESSION sql_log_off = 1; {sql}"
            ))
            .stdin(Stdio::null())
            .output()
            .expect("run mariadb");
        assert!(
            out.status.success(),
            "`{sql}` failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("UTF-8 rows")
    }

    /// The general log's rows (`log_output = TABLE`), in the order logged,
    /// without those of `root` (a test's own connections, when not kept out).
    pub fn general_log(&self) -> Vec<Logged> {
        let rows = self.sql(
            "SELECT thread_id, command_type, HEX(argument), \
             UNIX_TIMESTAMP(event_time) * 1000000, HEX(user_host) \
             FROM mysql.general_log ORDER BY event_time",
        );
        let mut logged = Vec::new();
        for row in rows.lines() {
            let fields: Vec<&str> = row.split('\t').collect();
            assert_eq!(fields.len(), 5, "general log row `{row}`");
            let thread: u64 = fields[0].parse().expect("a thread id");
            let user = hex(fields[4]);
            if user.starts_with(b"root[") || user.starts_with(b"[root]") {
                continue;
            }
            let at = fields[3].split('.').next().unwrap_or_default();
            logged.push(Logged {
                thread,
                command: fields[1].to_owned(),
                argument: hex(fields[2]),
                at_us: at.parse().expect("a time"),
            });
        }
        logged
    }
}

impl Drop for MariaDb {
    fn drop(&mut self) {
        // SIGTERM: a clean shutdown, so a snapshot's datadir stays copyable.
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(60) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// mariadbd refuses to run as root unless told to be root.
fn user_option() -> Vec<String> {
    // SAFETY: geteuid(2) has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        vec!["--user=root".into()]
    } else {
        Vec::new()
    }
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len() / 2)
        .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).expect("hex"))
        .collect()
}
