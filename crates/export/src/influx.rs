//! `[influx]`: a thread that writes each second's points to InfluxDB.
//!
//! The results thread hands it text (a second's lines) through a bounded
//! queue and never waits: a full queue drops the batch and counts it. The
//! thread sends batches of at most `chunk_size` bytes; when InfluxDB is down
//! or refuses, it keeps up to [`RETRY_BUFFER`] bytes to try again and drops
//! (and counts) the oldest beyond that. At the end it sends what is left
//! within [`FINAL_FLUSH`] of [`Influx::finish`] (every write then gets only
//! the time left, so a stalled InfluxDB cannot hold the run's end longer),
//! and gives up at the first refusal. What it could not send is counted as
//! dropped, for the summary.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{
    sync_channel, Receiver, RecvTimeoutError, SyncSender, TryRecvError, TrySendError,
};
use std::sync::{Arc, OnceLock};
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
    /// Points dropped (queue full, retry buffer full, refused, or left at
    /// the end never sent).
    pub dropped: u64,
    /// Points left at the end whose last write went unanswered (timed out):
    /// InfluxDB may have written them.
    pub unconfirmed: u64,
    /// The first error InfluxDB gave, if any.
    pub first_error: Option<String>,
}

/// The running writer.
pub struct Influx {
    schema: Schema,
    tx: Option<SyncSender<String>>,
    thread: Option<JoinHandle<InfluxReport>>,
    dropped: Arc<AtomicU64>,
    /// When the final flush must be over: set by [`Influx::finish`].
    end: Arc<OnceLock<Instant>>,
}

impl Influx {
    /// Starts the writer thread; `uuid` tags this run's points, and so do
    /// `run`'s shard and job facts (before the custom tags, which win).
    pub fn start(
        config: &InfluxConfig,
        uuid: &str,
        run: &crate::RunTags,
    ) -> std::io::Result<Influx> {
        let mut tags = vec![
            ("tank".to_string(), config.tank_tag.clone()),
            ("uuid".to_string(), uuid.to_string()),
            ("shard".to_string(), run.shard.clone()),
        ];
        tags.extend(run.job.iter().cloned());
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
        let writer = Writer {
            client: http::Client::new()?,
            target,
            chunk: config.chunk_size,
            end: Arc::new(OnceLock::new()),
        };
        let end = writer.end.clone();
        let thread = std::thread::Builder::new()
            .name("influx".into())
            .spawn(move || writer.run(rx))?;
        Ok(Influx {
            schema,
            tx: Some(tx),
            thread: Some(thread),
            dropped,
            end,
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

    /// Sends what is left, within [`FINAL_FLUSH`] from now (a write under
    /// way when it is called ends by then too), and says how it went.
    pub fn finish(mut self) -> InfluxReport {
        let _ = self.end.set(Instant::now() + FINAL_FLUSH);
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
    /// Extra headers: (name, value).
    headers: Vec<(String, String)>,
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
            vec![("Authorization".to_owned(), format!("Token {token}"))],
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

/// The writer thread's side.
struct Writer {
    client: http::Client,
    target: Target,
    chunk: usize,
    end: Arc<OnceLock<Instant>>,
}

/// Seconds of text not written yet, oldest first, within [`RETRY_BUFFER`] bytes.
#[derive(Default)]
struct Pending {
    texts: VecDeque<String>,
    bytes: usize,
    /// How many texts at the front went out in a write that timed out:
    /// sent, their fate unknown.
    in_doubt: usize,
}

impl Pending {
    /// Keep `text`; returns the points dropped to stay within [`RETRY_BUFFER`].
    fn push(&mut self, text: String) -> u64 {
        self.bytes += text.len();
        self.texts.push_back(text);
        let mut dropped = 0;
        while self.bytes > RETRY_BUFFER {
            let Some(old) = self.texts.pop_front() else {
                break;
            };
            self.bytes -= old.len();
            self.in_doubt = self.in_doubt.saturating_sub(1);
            dropped += old.lines().count() as u64;
        }
        dropped
    }

    /// The next batch: whole seconds up to `chunk` bytes (at least one), and how many.
    fn batch(&self, chunk: usize) -> (String, usize) {
        let mut batch = String::new();
        let mut taken = 0;
        for text in &self.texts {
            if taken > 0 && batch.len() + text.len() > chunk {
                break;
            }
            batch.push_str(text);
            taken += 1;
        }
        (batch, taken)
    }

    /// The first `taken` seconds were written.
    fn written(&mut self, taken: usize) {
        for sent in self.texts.drain(..taken) {
            self.bytes -= sent.len();
        }
        self.in_doubt = self.in_doubt.saturating_sub(taken);
    }

    /// The write of the first `taken` seconds failed with `error`: a timeout
    /// leaves them in doubt, a refusal (an answer, or no connection) does not.
    fn failed(&mut self, taken: usize, error: &str) {
        self.in_doubt = if http::Client::is_timeout(error) {
            self.in_doubt.max(taken)
        } else {
            0
        };
    }

    /// The end: the texts in doubt (sent, unanswered) are unconfirmed, the
    /// rest dropped.
    fn give_up(&self, report: &mut InfluxReport) {
        for (i, text) in self.texts.iter().enumerate() {
            let points = text.lines().count() as u64;
            if i < self.in_doubt {
                report.unconfirmed += points;
            } else {
                report.dropped += points;
            }
        }
    }
}

impl Writer {
    /// Write batches as they come, retrying every second while InfluxDB
    /// refuses; once the queue closes, flush until done, refused, or the end
    /// [`Influx::finish`] set.
    fn run(self, rx: Receiver<String>) -> InfluxReport {
        let mut report = InfluxReport::default();
        let mut pending = Pending::default();
        let mut open = true;
        let mut retry_at = Instant::now();
        loop {
            let idle = pending.texts.is_empty() || Instant::now() < retry_at;
            open = open && receive(&rx, idle, &mut pending, &mut report);
            let now = Instant::now();
            let left = self.end.get().map(|end| end.saturating_duration_since(now));
            if !open && (pending.texts.is_empty() || left.is_some_and(|l| l.is_zero())) {
                pending.give_up(&mut report);
                return report;
            }
            // After the end there is no waiting out a retry: it would only hold the end up.
            if pending.texts.is_empty() || (open && now < retry_at) {
                continue;
            }
            let (batch, taken) = pending.batch(self.chunk);
            let timeout = left.map_or(WRITE_TIMEOUT, |l| l.min(WRITE_TIMEOUT));
            match self.write(batch.as_bytes().to_vec(), timeout) {
                Ok(()) => {
                    pending.written(taken);
                    report.written += batch.lines().count() as u64;
                }
                Err(e) => {
                    pending.failed(taken, &e);
                    report.first_error.get_or_insert(e);
                    retry_at = now + Duration::from_secs(1);
                    if !open {
                        // The run is over and the sink still refuses: do not hold up the end.
                        pending.give_up(&mut report);
                        return report;
                    }
                }
            }
        }
    }

    /// One write, within `timeout`; anything but a 2xx is an error.
    fn write(&self, batch: Vec<u8>, timeout: Duration) -> Result<(), String> {
        let response = self
            .client
            .post(&self.target.url, &self.target.headers, batch, timeout)?;
        match response.status {
            200..=299 => Ok(()),
            status => Err(format!(
                "HTTP {status}: {}",
                String::from_utf8_lossy(&response.body).trim()
            )),
        }
    }
}

/// Take everything queued into `pending` (waiting up to 200 ms for the first
/// text when `idle`); false once the queue is closed and empty.
fn receive(
    rx: &Receiver<String>,
    idle: bool,
    pending: &mut Pending,
    report: &mut InfluxReport,
) -> bool {
    if idle {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(text) => report.dropped += pending.push(text),
            Err(RecvTimeoutError::Timeout) => return true,
            Err(RecvTimeoutError::Disconnected) => return false,
        }
    }
    loop {
        match rx.try_recv() {
            Ok(text) => report.dropped += pending.push(text),
            Err(TryRecvError::Empty) => return true,
            Err(TryRecvError::Disconnected) => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(address: &str, port: u16) -> InfluxConfig {
        InfluxConfig {
            address: address.into(),
            port,
            database: "tank".into(),
            username: String::new(),
            password: String::new(),
            tank_tag: "t".into(),
            labeled: false,
            histograms: false,
            prefix_measurement: String::new(),
            custom_tags: Vec::new(),
            chunk_size: 100,
            api: InfluxApi::V1,
        }
    }

    fn host_second(ts: u64) -> HostSecond {
        HostSecond {
            ts,
            host: "h".into(),
            comment: String::new(),
            metrics: [("System_la1".to_owned(), 0.5)].into_iter().collect(),
        }
    }

    #[test]
    fn a_stalled_influxdb_holds_the_end_no_longer_than_the_final_flush() {
        // Accepts, reads nothing, never answers: every write times out.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let influx =
            Influx::start(&config("127.0.0.1", port), "u", &crate::RunTags::default()).unwrap();
        // Thirty seconds of points, each its own batch (chunk_size 100).
        for ts in 0..30 {
            influx.monitoring(&[host_second(ts)]);
        }
        let started = Instant::now();
        let report = influx.finish();
        let took = started.elapsed();
        // The bound is the final flush; the margin is for a busy machine. Before,
        // each queued batch cost a whole write timeout (here 30 × 5 s).
        assert!(took < FINAL_FLUSH + Duration::from_secs(20), "{took:?}");
        // Sent and never answered: InfluxDB may have them (not dropped), and
        // what never went out is dropped.
        assert_eq!(report.written, 0);
        assert!(report.unconfirmed > 0, "{report:?}");
        assert_eq!(report.unconfirmed + report.dropped, 30, "{report:?}");
        let error = report.first_error.unwrap_or_default();
        assert!(error.contains("timed out"), "{error}");
        drop(listener);
    }

    #[test]
    fn points_sent_and_unanswered_are_unconfirmed_and_the_rest_dropped() {
        let mut pending = Pending::default();
        for second in 0..4 {
            pending.push(format!("m v={second} {second}\nm w={second} {second}\n"));
        }
        // The first two seconds went out and timed out; the next write of
        // the first one was answered.
        pending.failed(2, "timed out after 5s");
        pending.written(1);
        let mut report = InfluxReport::default();
        pending.give_up(&mut report);
        assert_eq!((report.unconfirmed, report.dropped), (2, 4));
        // A refusal is an answer: nothing of it is in doubt.
        let mut pending = Pending::default();
        pending.push("m v=1 1\n".into());
        pending.failed(1, "timed out after 5s");
        pending.failed(1, "HTTP 500: nope");
        let mut report = InfluxReport::default();
        pending.give_up(&mut report);
        assert_eq!((report.unconfirmed, report.dropped), (0, 1));
    }

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
        assert_eq!(
            t.headers,
            [("Authorization".to_owned(), "Token T".to_owned())]
        );
    }
}
