//! `[memcached] preload = 1`: set every record of the workload before the
//! measured run, as mcperf's loader does, so that the run's gets hit.
//!
//! The sets go out over one plain connection in batches (pipelined), each
//! batch's replies read and checked before the next; anything but `STORED`
//! stops the run before its first shot. The queue's `timeout` bounds the
//! connect and every wait for the server (a stalled memcached fails the
//! preload after `timeout`, saying so). Not measured: no phout rows.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use tank_config::MemcachedConfig;
use tank_plan::ammo::memcached::Preload;

use crate::RunError;

/// Sets written before their replies are read.
const BATCH: u64 = 256;

/// Set every record of `workload` on the memcached at `target`, waiting at
/// most `timeout` for any one step; `progress` learns (records set, all
/// records) after each batch.
pub fn run(
    queue: &str,
    target: SocketAddr,
    workload: &MemcachedConfig,
    timeout: Duration,
    mut progress: impl FnMut(u64, u64),
) -> Result<u64, RunError> {
    let fail = |what: String| RunError::Preload(format!("[{queue}] preload of {target}: {what}"));
    let timeout = timeout.max(Duration::from_millis(1));
    // A socket timeout is EAGAIN or ETIMEDOUT: said as what it is.
    let said = |e: io::Error| match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
            format!("nothing within {timeout:?} (the queue's timeout)")
        }
        _ => e.to_string(),
    };
    let stream = TcpStream::connect_timeout(&target, timeout)
        .map_err(|e| fail(format!("cannot connect: {}", said(e))))?;
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
        .and_then(|()| stream.set_nodelay(true))
        .map_err(|e| fail(format!("cannot set up the connection: {e}")))?;
    let mut writer = &stream;
    let mut replies = BufReader::new(&stream);
    let mut sets = Preload::new(workload);
    let total = sets.records();
    let mut done = 0;
    let mut batch = Vec::new();
    let mut line = String::new();
    while done < total {
        batch.clear();
        let mut in_batch = 0;
        while in_batch < BATCH && sets.next_set(&mut batch) {
            in_batch += 1;
        }
        writer
            .write_all(&batch)
            .map_err(|e| fail(format!("cannot send: {}", said(e))))?;
        for _ in 0..in_batch {
            line.clear();
            replies
                .read_line(&mut line)
                .map_err(|e| fail(format!("no reply: {}", said(e))))?;
            if line != "STORED\r\n" {
                let shown = if line.is_empty() {
                    "the connection closed"
                } else {
                    line.trim_end()
                };
                return Err(fail(format!(
                    "record {done}: expected STORED, got `{shown}`"
                )));
            }
            done += 1;
        }
        progress(done, total);
    }
    Ok(total)
}
