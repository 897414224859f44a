//! Real components (Debian packages) started by a test on a free loopback port
//! in a temporary directory, stopped when dropped. In CI (`CI=true`) a missing
//! package is a failure; elsewhere the test is skipped with the reason.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running component.
pub struct Component {
    child: Child,
    /// Its loopback port.
    pub port: u16,
    /// Its temporary directory (data, logs).
    pub dir: tempfile::TempDir,
}

impl Drop for Component {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback port for a child process to listen on. A port the kernel
/// hands out for `bind(0)` is an ephemeral one, which any outgoing connection
/// of a test running beside this one (tank opens thousands) may take as its
/// source port before the child binds it. So this picks ports below the
/// kernel's ephemeral range, each free when picked and never handed out twice
/// by this process.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32768);
    let (low, high) = (10_000, ephemeral_low.max(10_001));
    let span = high - low;
    // Processes of one test run start apart in the range.
    let offset = (std::process::id() * 7919) % span;
    for _ in 0..span {
        let port = low + (offset + NEXT.fetch_add(1, Ordering::Relaxed)) % span;
        let port = u16::try_from(port).expect("below 65536");
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port from {low} to {high}");
}

/// The binary `name` from PATH or /usr/sbin, or `None` (after failing in CI) with why.
pub fn binary(name: &str, package: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/bin")])
        .map(|dir| dir.join(name))
        .find(|p| p.is_file());
    if found.is_none() {
        let why = format!("{name} not found: install the Debian package {package} (.ci/run does)");
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("{why}");
        }
        eprintln!("SKIPPED: {why}");
    }
    found
}

impl Component {
    /// Starts `binary` with `args(port, dir)` and waits (up to 60 s) until `port` accepts.
    pub fn start(binary: &Path, args: impl FnOnce(u16, &Path) -> Vec<String>) -> Component {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let log = std::fs::File::create(dir.path().join("component.log")).unwrap();
        let child = Command::new(binary)
            .args(args(port, dir.path()))
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", binary.display()));
        let mut component = Component { child, port, dir };
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = component.child.try_wait() {
                panic!(
                    "{} exited ({status}):\n{}",
                    binary.display(),
                    component.log()
                );
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "{} did not listen on {port} within 60 s:\n{}",
                binary.display(),
                component.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        component
    }

    /// What it printed.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("component.log")).unwrap_or_default()
    }
}
