//! A real memcached (the Debian package) on a free loopback port, started
//! by a test and killed when it is dropped.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A memcached of the test's own.
pub struct Memcached {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
}

impl Memcached {
    /// Start one; `None` (with the reason printed) when memcached is not
    /// installed outside CI. In CI (`CI=true`) a missing memcached fails the test.
    pub fn start() -> Option<Memcached> {
        let port = super::component::free_port();
        let child = Command::new("memcached")
            .args([
                "-l",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "-U",
                "0",
                "-m",
                "64",
                "-t",
                "1",
            ])
            // memcached refuses to run as root unless told to; it ignores `-u` otherwise.
            .args(["-u", "root"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let child = match child {
            Ok(child) => child,
            Err(error) if std::env::var("CI").as_deref() != Ok("true") => {
                eprintln!("skipped: cannot start memcached ({error}); scripts/deps.sh installs it");
                return None;
            }
            Err(error) => panic!("cannot start memcached ({error}); CI must install it"),
        };
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let mut server = Memcached { child, addr };
        let started = Instant::now();
        while TcpStream::connect(addr).is_err() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("memcached exited at start ({status})");
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "memcached did not listen on {addr} within 10 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(server)
    }

    /// Send `command` and read the reply up to its last line `end`.
    pub fn ask(&self, command: &str, end: &str) -> Vec<String> {
        let stream = TcpStream::connect(self.addr).expect("connect to memcached");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        (&stream).write_all(command.as_bytes()).unwrap();
        let mut reader = BufReader::new(&stream);
        let mut lines = Vec::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).expect("a reply line");
            assert!(!line.is_empty(), "memcached closed mid-reply");
            let line = line.trim_end().to_string();
            let last = line == end || line.starts_with("ERROR") || line.contains("_ERROR");
            lines.push(line);
            if last {
                return lines;
            }
        }
    }

    /// memcached's own counter `name` (`stats`).
    pub fn stat(&self, name: &str) -> u64 {
        let prefix = format!("STAT {name} ");
        self.ask("stats\r\n", "END")
            .iter()
            .find_map(|line| line.strip_prefix(&prefix)?.parse().ok())
            .unwrap_or_else(|| panic!("no stat {name}"))
    }
}

impl Drop for Memcached {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
