//! `[influx]`: a thread that writes each second's points to InfluxDB.
//!
//! The results thread hands it text (a second's lines) through a bounded
//! queue and never waits: a full queue drops the batch and counts it. The
//! thread sends batches of at most `chunk_size` bytes; when InfluxDB is down
//! or refuses, it keeps up to [`RETRY_BUFFER`] bytes to try again and drops
//! (and counts) the oldest beyond that. At the end it sends what is left
//! within [`FINAL_FLUSH`], and gives up at the first refusal.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tank_config::{InfluxApi, InfluxConfig};
use tank_http1::{Scheme, Url};
use tank_monitor::http;
use tank_monitor::HostSecond;
use tank_stats::SecondStats;

use crate::line::Schema;

/// Batches queued between the results thread and the writer.
const QUEUE: usize = 1024;
/// Bytes kept for another try while InfluxDB does not take them.
pub const RETRY_BUFFER: usize = 64 << 20;
/// A write's deadline.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the end of the run waits for the last writes.
pub const FINAL_FLUSH: Duration = Duration::from_secs(10);

/// What the writer did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InfluxReport {
    /// Points written.
    pub written: u64,
    /// Points dropped (queue full, retry buffer full, or left at the end).
    pub dropped: u64,
    /// The first error InfluxDB gave, if any.
    pub first_error: Option<String>,
}

/// The running writer.
pub struct Influx {
    schema: Schema,
    tx: Option<SyncSender<String>>,
    thread: Option<JoinHandle<InfluxReport>>,
    dropped: Arc<AtomicU64>,
}

impl Influx {
    /// Starts the writer thread; `uuid` tags this run's points.
    pub fn start(config: &InfluxConfig, uuid: &str) -> std::io::Result<Influx> {
        let mut tags = vec![
            ("tank".to_string(), config.tank_tag.clone()),
            ("uuid".to_string(), uuid.to_string()),
        ];
        tags.extend(config.custom_tags.iter().cloned());
        let schema = Schema {
            tags,
            labeled: config.labeled,
            histograms: config.histograms,
            prefix: config.prefix_measurement.clone(),
        };
        let target = target(config).map_err(std::io::Error::other)?;
        let (tx, rx) = sync_channel(QUEUE);
        let dropped = Arc::new(AtomicU64::new(0));
        let chunk = config.chunk_size;
        let thread = std::thread::Builder::new()
            .name("influx".into())
            .spawn(move || write_loop(rx, target, chunk))?;
        Ok(Influx {
            schema,
            tx: Some(tx),
            thread: Some(thread),
            dropped,
        })
    }

    fn send(&self, text: String) {
        if text.is_empty() {
            return;
        }
        if let Some(tx) = &self.tx {
            match tx.try_send(text) {
                Ok(()) => {}
                Err(TrySendError::Full(text) | TrySendError::Disconnected(text)) => {
                    self.dropped
                        .fetch_add(text.lines().count() as u64, Ordering::Relaxed);
                }
            }
        }
    }

    /// Queues one finished second (never waits).
    pub fn second(&self, second: &SecondStats) {
        let mut text = String::new();
        self.schema.second(&mut text, second);
        self.send(text);
    }

    /// Queues monitoring seconds (never waits).
    pub fn monitoring(&self, seconds: &[HostSecond]) {
        let mut text = String::new();
        for s in seconds {
            self.schema.monitoring(&mut text, s);
        }
        self.send(text);
    }

    /// Sends what is left (within [`FINAL_FLUSH`]) and says how it went.
    pub fn finish(mut self) -> InfluxReport {
        drop(self.tx.take());
        let mut report = self
            .thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        report.dropped += self.dropped.load(Ordering::Relaxed);
        report
    }
}

/// Where and how to write.
struct Target {
    url: Url,
    headers: Vec<String>,
}

fn target(config: &InfluxConfig) -> Result<Target, String> {
    let (path, headers) = match &config.api {
        InfluxApi::V1 => (
            format!(
                "/write?db={}&precision=s&u={}&p={}",
                query(&config.database),
                query(&config.username),
                query(&config.password)
            ),
            Vec::new(),
        ),
        InfluxApi::V2 { org, bucket, token } => (
            format!(
                "/api/v2/write?org={}&bucket={}&precision=s",
                query(org),
                query(bucket)
            ),
            vec![format!("Authorization: Token {token}")],
        ),
    };
    let url = Url::from_parts(Scheme::Http, &config.address, config.port, &path)
        .map_err(|e| format!("[influx] address = {}: {e}", config.address))?;
    Ok(Target { url, headers })
}

/// Percent-encodes a query value.
fn query(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn write_loop(rx: Receiver<String>, target: Target, chunk: usize) -> InfluxReport {
    let mut report = InfluxReport::default();
    let mut pending: VecDeque<String> = VecDeque::new();
    let mut pending_bytes = 0usize;
    let mut open = true;
    let mut retry_at = Instant::now();
    let mut deadline = None;
    loop {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(text) => {
                pending_bytes += text.len();
                pending.push_back(text);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                if open {
                    open = false;
                    deadline = Some(Instant::now() + FINAL_FLUSH);
                    retry_at = Instant::now();
                }
            }
        }
        while pending_bytes > RETRY_BUFFER {
            if let Some(old) = pending.pop_front() {
                pending_bytes -= old.len();
                report.dropped += old.lines().count() as u64;
            }
        }
        let now = Instant::now();
        if now >= retry_at && !pending.is_empty() {
            // Batch whole seconds up to `chunk` bytes (at least one).
            let mut batch = String::new();
            let mut taken = 0;
            for text in &pending {
                if taken > 0 && batch.len() + text.len() > chunk {
                    break;
                }
                batch.push_str(text);
                taken += 1;
            }
            match http::post(
                &target.url,
                &target.headers,
                batch.as_bytes(),
                WRITE_TIMEOUT,
            )
            .and_then(|r| match r.status {
                200..=299 => Ok(()),
                status => Err(format!(
                    "HTTP {status}: {}",
                    String::from_utf8_lossy(&r.body).trim()
                )),
            }) {
                Ok(()) => {
                    for _ in 0..taken {
                        if let Some(sent) = pending.pop_front() {
                            pending_bytes -= sent.len();
                        }
                    }
                    report.written += batch.lines().count() as u64;
                    continue;
                }
                Err(e) => {
                    report.first_error.get_or_insert(e);
                    retry_at = now + Duration::from_secs(1);
                    if !open {
                        // The run is over and the sink still refuses: do not hold up the end.
                        report.dropped += pending
                            .iter()
                            .map(|t| t.lines().count() as u64)
                            .sum::<u64>();
                        return report;
                    }
                }
            }
        }
        let flushed = pending.is_empty();
        let late = deadline.is_some_and(|d| Instant::now() >= d);
        if !open && (flushed || late) {
            report.dropped += pending
                .iter()
                .map(|t| t.lines().count() as u64)
                .sum::<u64>();
            return report;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_and_v2_targets() {
        let mut c = InfluxConfig {
            address: "db".into(),
            port: 8086,
            database: "my db".into(),
            username: "root".into(),
            password: "p&w".into(),
            tank_tag: "t".into(),
            labeled: false,
            histograms: false,
            prefix_measurement: String::new(),
            custom_tags: Vec::new(),
            chunk_size: 500_000,
            api: InfluxApi::V1,
        };
        let t = target(&c).unwrap();
        assert_eq!(t.url.authority(), "db:8086");
        assert_eq!(t.url.path(), "/write?db=my%20db&precision=s&u=root&p=p%26w");
        c.api = InfluxApi::V2 {
            org: "o".into(),
            bucket: "b".into(),
            token: "T".into(),
        };
        let t = target(&c).unwrap();
        assert_eq!(t.url.path(), "/api/v2/write?org=o&bucket=b&precision=s");
        assert_eq!(t.headers, ["Authorization: Token T"]);
    }
}
