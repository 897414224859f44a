//! `[prometheus]`: tank serves `/metrics` while the test runs.
//!
//! The results thread renders the page once a second from the finished
//! second and the run so far; a thread of its own answers scrapes with the
//! last page, so a slow or hostile scraper never touches the shooting or the
//! results.
//!
//! The server is hyper's, on a current-thread tokio runtime in that thread.
//! Every client is served on its own (a task each, at most
//! [`MAX_CLIENTS`] at once), and each has [`CLIENT_TIMEOUT`] for its whole
//! exchange, from its first byte to the last of the answer: a client sending
//! one byte a second, or never reading, is cut off then and delays no other
//! scrape. [`Endpoint::finish`] stops the runtime, which drops every client
//! at once, so the run's end never waits for one.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tank_stats::SecondStats;
use tokio::sync::{oneshot, Semaphore};

/// How long one client may take for its whole exchange.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);
/// Clients served at once; more are closed as they come.
pub const MAX_CLIENTS: usize = 256;

/// Counters kept across seconds, per group: `tag="__OVERALL__"` the whole
/// test, `tag=""` untagged shots, `tag="__QUEUE__",queue="NAME"` a queue of
/// several (the group's labels, as written on the page).
#[derive(Debug, Default)]
struct Totals {
    responses: BTreeMap<String, u64>,
    proto: BTreeMap<(String, u16), u64>,
    net: BTreeMap<(String, u16), u64>,
    sent: u64,
}

/// The running endpoint.
pub struct Endpoint {
    page: Arc<Mutex<String>>,
    /// Tells the server's thread to stop.
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    addr: SocketAddr,
    totals: Totals,
    /// `,shard="I/N"`: on every series.
    shard: String,
    /// `tank_info`'s line: the job's facts as labels.
    info: String,
}

impl Endpoint {
    /// Binds `listen` (here, so that a port in use is an error now) and starts
    /// answering; every series carries `run`'s shard, and `tank_info` its job.
    pub fn start(listen: SocketAddr, run: &crate::RunTags) -> std::io::Result<Endpoint> {
        let listener = std::net::TcpListener::bind(listen)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let page = Arc::new(Mutex::new(String::new()));
        let (stop, stopped) = oneshot::channel();
        let served = page.clone();
        let thread = std::thread::Builder::new()
            .name("prometheus".into())
            .spawn(move || {
                runtime.block_on(serve(listener, served, stopped));
                // Clients still connected are dropped here, not waited for.
                runtime.shutdown_background();
            })?;
        Ok(Endpoint {
            page,
            stop: Some(stop),
            thread: Some(thread),
            addr,
            totals: Totals::default(),
            shard: format!(",shard=\"{}\"", label(&run.shard)),
            info: std::iter::once(("shard".to_owned(), run.shard.clone()))
                .chain(run.job.iter().cloned())
                .map(|(k, v)| format!("{}=\"{}\"", label_name(&k), label(&v)))
                .collect::<Vec<_>>()
                .join(","),
        })
    }

    /// Where it listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Renders the page after a finished second.
    pub fn second(&mut self, second: &SecondStats) {
        let t = &mut self.totals;
        let shard = &self.shard;
        t.sent += second.sent;
        // Each group as its labels: the whole test, each tag, each queue of several.
        let groups =
            std::iter::once((format!("tag=\"{}\"", crate::line::OVERALL), &second.overall))
                .chain(
                    second
                        .tagged
                        .iter()
                        .map(|(k, g)| (format!("tag=\"{}\"", label(k)), g)),
                )
                .chain(second.queues.iter().map(|(queue, g)| {
                    (
                        format!("tag=\"{}\",queue=\"{}\"", crate::QUEUE_GROUP, label(queue)),
                        g,
                    )
                }));
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# HELP tank_info The run: its shard and job ([meta]); always 1."
        );
        let _ = writeln!(out, "# TYPE tank_info gauge");
        let _ = writeln!(out, "tank_info{{{}}} 1", self.info);
        let _ = writeln!(
            out,
            "# HELP tank_responses_per_second Responses in the last finished second."
        );
        let _ = writeln!(out, "# TYPE tank_responses_per_second gauge");
        let mut quantiles = String::new();
        for (labels, group) in groups {
            *t.responses.entry(labels.clone()).or_default() += group.len();
            for (code, n) in group.proto_codes.iter() {
                *t.proto.entry((labels.clone(), code)).or_default() += n;
            }
            for (code, n) in group.net_codes.iter() {
                *t.net.entry((labels.clone(), code)).or_default() += n;
            }
            let _ = writeln!(
                out,
                "tank_responses_per_second{{{labels}{shard}}} {}",
                group.len()
            );
            for (per_mille, q) in [
                (500, "0.5"),
                (900, "0.9"),
                (950, "0.95"),
                (990, "0.99"),
                (1000, "1"),
            ] {
                if let Some(us) = group.quantile_us(per_mille) {
                    let _ = writeln!(
                        quantiles,
                        "tank_response_time_seconds{{{labels},quantile=\"{q}\"{shard}}} {}",
                        seconds(us)
                    );
                }
            }
        }
        let _ = writeln!(out, "# HELP tank_response_time_seconds Response time quantiles of the last finished second.");
        let _ = writeln!(out, "# TYPE tank_response_time_seconds gauge");
        out.push_str(&quantiles);
        let _ = writeln!(out, "# HELP tank_responses_total Responses so far.");
        let _ = writeln!(out, "# TYPE tank_responses_total counter");
        for (labels, n) in &t.responses {
            let _ = writeln!(out, "tank_responses_total{{{labels}{shard}}} {n}");
        }
        let _ = writeln!(
            out,
            "# HELP tank_http_codes_total Responses by HTTP code so far."
        );
        let _ = writeln!(out, "# TYPE tank_http_codes_total counter");
        for ((labels, code), n) in &t.proto {
            let _ = writeln!(
                out,
                "tank_http_codes_total{{{labels},code=\"{code}\"{shard}}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP tank_net_codes_total Responses by net code (0 is success) so far."
        );
        let _ = writeln!(out, "# TYPE tank_net_codes_total counter");
        for ((labels, code), n) in &t.net {
            let _ = writeln!(
                out,
                "tank_net_codes_total{{{labels},code=\"{code}\"{shard}}} {n}"
            );
        }
        let _ = writeln!(out, "# HELP tank_shots_sent_total Shots fired so far.");
        let _ = writeln!(out, "# TYPE tank_shots_sent_total counter");
        let _ = writeln!(out, "tank_shots_sent_total{{{}}} {}", &shard[1..], t.sent);
        let _ = writeln!(
            out,
            "# HELP tank_planned_per_second Shots planned in the last finished second."
        );
        let _ = writeln!(out, "# TYPE tank_planned_per_second gauge");
        let _ = writeln!(
            out,
            "tank_planned_per_second{{{}}} {}",
            &shard[1..],
            second.planned
        );
        let _ = writeln!(
            out,
            "# HELP tank_instances Instances busy in the last finished second (peak)."
        );
        let _ = writeln!(out, "# TYPE tank_instances gauge");
        let _ = writeln!(
            out,
            "tank_instances{{{}}} {}",
            &shard[1..],
            second.instances
        );
        let _ = writeln!(out, "# HELP tank_lag_seconds How late shots started, quantiles of the last finished second.");
        let _ = writeln!(out, "# TYPE tank_lag_seconds gauge");
        for (per_mille, q) in [(500, "0.5"), (990, "0.99"), (1000, "1")] {
            if let Some(us) = second.lag.get(per_mille) {
                let _ = writeln!(
                    out,
                    "tank_lag_seconds{{quantile=\"{q}\"{shard}}} {}",
                    seconds(us)
                );
            }
        }
        let _ = writeln!(
            out,
            "# HELP tank_second The unix second these gauges describe."
        );
        let _ = writeln!(out, "# TYPE tank_second gauge");
        let _ = writeln!(out, "tank_second{{{}}} {}", &shard[1..], second.ts);
        if let Ok(mut page) = self.page.lock() {
            *page = out;
        }
    }

    /// Stops answering: at once, whatever clients are connected (as
    /// dropping it does).
    pub fn finish(self) {
        drop(self);
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("addr", &self.addr)
            .finish()
    }
}

/// `us` microseconds as seconds, in decimal to the ns and no further:
/// `5921.2` µs is `0.0059212`, not the `0.005921199999999997` that dividing
/// the float by 10⁶ prints.
fn seconds(us: f64) -> String {
    let ns = (us * 1000.0).round();
    if us.is_nan() {
        return "NaN".into();
    }
    if !(0.0..u64::MAX as f64).contains(&ns) {
        // The text format's spellings; a finite value this far out keeps the float's.
        return match us {
            f64::INFINITY => "+Inf".into(),
            f64::NEG_INFINITY => "-Inf".into(),
            _ => format!("{}", us / 1e6),
        };
    }
    let ns = ns as u64;
    let fraction = format!("{:09}", ns % 1_000_000_000);
    let fraction = fraction.trim_end_matches('0');
    if fraction.is_empty() {
        format!("{}", ns / 1_000_000_000)
    } else {
        format!("{}.{fraction}", ns / 1_000_000_000)
    }
}

/// A label name: letters, digits and `_` (others become `_`; a leading digit gets one before it).
fn label_name(text: &str) -> String {
    let mut name: String = text
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if name.starts_with(|c: char| c.is_ascii_digit()) || name.is_empty() {
        name.insert(0, '_');
    }
    name
}

/// A label value escaped for the text format.
fn label(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Accept clients until `stopped`, each served by a task of its own.
async fn serve(
    listener: std::net::TcpListener,
    page: Arc<Mutex<String>>,
    mut stopped: oneshot::Receiver<()>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    let slots = Arc::new(Semaphore::new(MAX_CLIENTS));
    loop {
        let accepted = tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else {
            // A failed accept (out of descriptors, say): a pause, not a spin.
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        // Beyond MAX_CLIENTS, the newcomer is closed (dropped) at once.
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            continue;
        };
        let page = page.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                std::future::ready(Ok::<_, Infallible>(answer(&request, &page)))
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .keep_alive(false)
                .serve_connection(TokioIo::new(stream), service);
            // Timed out or failed: either way the client is gone, and no one to tell.
            let _ = tokio::time::timeout(CLIENT_TIMEOUT, connection).await;
            drop(slot);
        });
    }
}

/// `/metrics` (with any query) gets the page; anything else a 404.
fn answer(request: &Request<Incoming>, page: &Mutex<String>) -> Response<Full<Bytes>> {
    let (status, body) = if request.uri().path() == "/metrics" {
        (
            StatusCode::OK,
            page.lock().map(|p| p.clone()).unwrap_or_default(),
        )
    } else {
        (StatusCode::NOT_FOUND, "tank serves /metrics\n".to_owned())
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::time::Instant;
    use tank_monitor::http::{http_url, Client};

    #[test]
    fn seconds_are_decimals_of_the_microseconds_without_float_noise() {
        assert_eq!(seconds(5921.2), "0.0059212");
        assert_eq!(seconds(1_000_000.0), "1");
        assert_eq!(seconds(0.0), "0");
        assert_eq!(seconds(1500.0), "0.0015");
        assert_eq!(seconds(61_234_567.891), "61.234567891");
        assert_eq!(seconds(f64::INFINITY), "+Inf");
        assert_eq!(seconds(f64::NAN), "NaN");
    }
    use tank_stats::phout::parse_line;
    use tank_stats::Aggregator;

    #[test]
    fn the_page_is_valid_exposition_text_with_counters() {
        let mut agg = Aggregator::new(0);
        for line in [
            "1.0\tmain\t1000\t0\t0\t0\t0\t0\t0\t0\t0\t200",
            "1.2\t\t3000\t0\t0\t0\t0\t0\t0\t0\t110\t0",
        ] {
            agg.add_record(&parse_line(line.as_bytes()).unwrap());
        }
        agg.finish();
        let second = agg.pop_ready().unwrap();
        let run = crate::RunTags {
            shard: "1/2".into(),
            job: vec![
                ("job_name".into(), "check \"out\"".into()),
                ("meta.build".into(), "7".into()),
            ],
        };
        let mut endpoint = Endpoint::start("127.0.0.1:0".parse().unwrap(), &run).unwrap();
        endpoint.second(&second);
        endpoint.second(&second);
        let url = http_url(&format!("http://{}/metrics", endpoint.local_addr())).unwrap();
        let client = Client::new().unwrap();
        let response = client.get(&url, Duration::from_secs(5), 1 << 20).unwrap();
        assert_eq!(response.status, 200);
        let text = String::from_utf8(response.body).unwrap();
        let page = tank_monitor::prom::parse(&text).unwrap();
        let find = |name: &str, tag: &str| {
            page.samples
                .iter()
                .find(|s| s.name == name && s.label("tag").as_deref() == Some(tag))
                .map(|s| s.value)
        };
        assert_eq!(find("tank_responses_total", "__OVERALL__"), Some(4.0));
        assert_eq!(find("tank_responses_total", "main"), Some(2.0));
        assert_eq!(find("tank_responses_total", ""), Some(2.0));
        assert_eq!(find("tank_responses_per_second", "__OVERALL__"), Some(2.0));
        assert!(page.is_counter("tank_http_codes_total"));
        let info = page.samples.iter().find(|s| s.name == "tank_info").unwrap();
        assert_eq!(info.label("job_name").as_deref(), Some("check \"out\""));
        assert_eq!(info.label("meta_build").as_deref(), Some("7"));
        assert!(page
            .samples
            .iter()
            .filter(|s| s.name.starts_with("tank_"))
            .all(|s| s.label("shard").as_deref() == Some("1/2")));
        let other = http_url(&format!("http://{}/", endpoint.local_addr())).unwrap();
        assert_eq!(
            client
                .get(&other, Duration::from_secs(5), 1024)
                .unwrap()
                .status,
            404
        );
        endpoint.finish();
    }

    /// A client sending its request a byte a second (metrics_attack.py's
    /// slowloris): the seconds until the server closed it, or `None` when it
    /// still had not after `limit` bytes.
    fn slowloris(addr: SocketAddr, limit: u32) -> Option<u32> {
        let mut stream = std::net::TcpStream::connect(addr).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(1))).ok()?;
        stream.write_all(b"GET /metrics HTTP/1.1\r\n").ok()?;
        for second in 0..limit {
            if stream.write_all(b"X").is_err() {
                return Some(second);
            }
            let mut buf = [0u8; 64];
            match stream.read(&mut buf) {
                Ok(_) => return Some(second),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Some(second),
                Err(_) => {}
            }
        }
        None
    }

    #[test]
    fn a_slow_client_holds_up_no_scrape_and_not_the_end() {
        let endpoint =
            Endpoint::start("127.0.0.1:0".parse().unwrap(), &crate::RunTags::default()).unwrap();
        let addr = endpoint.local_addr();
        let slow = std::thread::spawn(move || slowloris(addr, 120));
        let idle: Vec<std::net::TcpStream> = (0..50)
            .map(|_| std::net::TcpStream::connect(addr).unwrap())
            .collect();
        // Wait until the slow client is well into its request.
        std::thread::sleep(Duration::from_millis(1500));
        let client = Client::new().unwrap();
        let url = http_url(&format!("http://{addr}/metrics")).unwrap();
        for _ in 0..3 {
            let response = client.get(&url, Duration::from_secs(60), 1 << 20);
            assert_eq!(response.map(|r| r.status), Ok(200));
        }
        // The slow client is cut off by its timeout, not served forever.
        let closed_after = slow.join().unwrap();
        assert!(
            closed_after.is_some_and(|s| u64::from(s) < CLIENT_TIMEOUT.as_secs() * 10),
            "{closed_after:?}"
        );
        // And the end does not wait for one still sending.
        let slow = std::thread::spawn(move || slowloris(addr, 120));
        std::thread::sleep(Duration::from_millis(1500));
        let started = Instant::now();
        endpoint.finish();
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{:?}",
            started.elapsed()
        );
        assert!(slow.join().unwrap().is_some());
        drop(idle);
    }
}
