//! tank-web: the live web dashboard (`--web 127.0.0.1:8089`, `[web]`).
//!
//! A run's results as a page that draws itself while the test goes: rates
//! (planned, sent, answered), quantiles and lag, codes, tags, monitoring, the
//! job's name, and a search's or sweep's steps. It is one more sink of the
//! results pipeline (tank-results' [`SecondSink`]), beside the console and the
//! exporters: a run's [`Feed`] takes each second as it becomes final, with the
//! pipeline's totals so far, and hands it on to every page open, as a
//! server-sent event; it never slows the shooting (see [`server`]'s notes on
//! slow clients). What is not a second of results (a run starting, monitoring,
//! a sweep's table of steps) the command gives [`Dashboard`] directly.
//!
//! The page is self-contained (its CSS and scripts inline; no CDN, fonts or
//! other network), draws with the same chart code as report.html, and keeps
//! what it has drawn when the run ends and when tank exits: it says so
//! instead of going blank. Read-only; on loopback unless the command line
//! asks for another address, and then only with a token (tank-http1's
//! [`tank_http1::access`], as the origin simulator's admin API).

#![warn(missing_docs)]

mod page;
pub mod server;
mod state;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tank_config::Job;
use tank_http1::access::{is_loopback, Access, Token};
use tank_monitor::HostSecond;
use tank_results::{SecondSink, SinkError, SoFar};
use tank_stats::{SecondStats, TotalStats};
use tokio::sync::broadcast;

use server::{Server, Shared};
use state::State;

pub use state::{KEPT_SECONDS, MAX_TAGS};

/// The environment variable a token may be given in (safer than
/// `--web-token`, which other users see in `ps`).
pub const TOKEN_ENV: &str = "TANK_WEB_TOKEN";

/// Events kept for streams that fall behind (then they get a fresh snapshot).
const EVENTS: usize = 64;

/// How often a feed asks the pipeline for the totals so far (each time is a
/// pass over the run's groups, on the results thread): at most twice a
/// second. Seconds come once a second, a little early or late as the results
/// thread ticks: with a whole second here, one a little early carried the
/// totals of the second before, and the page's "so far" lagged its seconds.
const TOTALS_EVERY: Duration = Duration::from_millis(500);

/// What the page says on top.
#[derive(Debug, Clone, Default)]
pub struct PageMeta {
    /// The command, for people (`tank -c load.ini`, `tank sweep URL`).
    pub title: String,
    /// The config file, if any.
    pub config: Option<String>,
    /// The job's name and description (`[meta]`).
    pub job: Job,
    /// What the proto codes are called (`HTTP codes`, `MySQL codes`;
    /// empty: HTTP codes).
    pub codes: String,
}

/// The live dashboard: a server and what it shows. Cheap to share between
/// the runs of one command (a sweep's steps): it is a handle.
pub struct Dashboard {
    shared: Arc<Shared>,
    server: Server,
    /// The token, when the server takes one, and whether it was made up here.
    access: Access,
}

impl Dashboard {
    /// Serve the dashboard of `meta` on `listen`. On loopback it is open
    /// unless `token` is given; beyond loopback it takes `token`, or one made
    /// up here (show [`Dashboard::url`] to the user: it carries it).
    pub fn start(
        listen: SocketAddr,
        token: Option<Token>,
        meta: &PageMeta,
    ) -> std::io::Result<Dashboard> {
        let access = Access::decide(listen.ip(), token);
        let meta_json = json!({
            "title": meta.title,
            "config": meta.config,
            "job": meta.job,
            "codes": if meta.codes.is_empty() { "HTTP codes" } else { &meta.codes },
            "generator": format!("tank {}", env!("CARGO_PKG_VERSION")),
        });
        let shared = Arc::new(Shared {
            state: std::sync::Mutex::new(State::new(meta_json)),
            events: broadcast::channel(EVENTS).0,
            access: access.clone(),
            page: page::html(meta).into(),
        });
        let server = Server::start(listen, shared.clone())?;
        Ok(Dashboard {
            shared,
            server,
            access,
        })
    }

    /// Where it listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.server.addr
    }

    /// The page's URL, with the token when one is needed.
    pub fn url(&self) -> String {
        let addr = self.server.addr;
        match &self.access {
            Access::Open => format!("http://{addr}/"),
            Access::Token { token, .. } => format!("http://{addr}/?token={}", token.as_str()),
        }
    }

    /// What to tell the user beyond loopback (the page's reach and its
    /// token, shown this once when it was made up); `None` on loopback.
    pub fn exposure_warning(&self) -> Option<String> {
        let addr = self.server.addr;
        if is_loopback(addr.ip()) {
            return None;
        }
        let token = match &self.access {
            Access::Token {
                generated: true, ..
            } => format!(
                "no token was given (--web-token or {TOKEN_ENV}), so one was generated; \
                 it is in this URL, shown only now: {}",
                self.url()
            ),
            _ => format!("open it with ?token=TOKEN (the one from --web-token or {TOKEN_ENV})"),
        };
        Some(format!(
            "the dashboard listens on {addr}, beyond loopback: whoever can reach it and holds \
             the token sees the test's targets and results.\n{token}"
        ))
    }

    /// A run starts: `label` names it (`run`, `step 3 of 8: 16 connections`);
    /// its seconds count from `start_unix_us`; `planned_s` is how long its
    /// schedule lasts, when known; `planned_known` says whether its seconds'
    /// planned counts are whole (every queue plans its shots: a scenario's
    /// plans its runs, whose requests are not known ahead).
    pub fn begin_run(
        &self,
        label: &str,
        start_unix_us: u64,
        planned_s: Option<f64>,
        planned_known: bool,
    ) {
        self.shared
            .publish(|state| Some(state.begin(label, start_unix_us, planned_s, planned_known)));
    }

    /// The current run's sink: give it to the run's results pipeline (the
    /// observer's `sinks`) after [`Dashboard::begin_run`].
    pub fn feed(&self) -> Feed {
        Feed {
            shared: self.shared.clone(),
            totals_at: None,
        }
    }

    /// Monitored hosts' latest seconds.
    pub fn monitoring(&self, hosts: &[HostSecond]) {
        if !hosts.is_empty() {
            self.shared.publish(|state| state.monitoring(hosts));
        }
    }

    /// The current run ended: what it printed, and its exit code.
    pub fn end_run(&self, text: &str, exit_code: Option<i32>) {
        self.shared.publish(|state| state.end(text, exit_code));
    }

    /// A search's or sweep's table of probes or steps, as it stands now.
    pub fn table(&self, title: &str, headers: &[&str], rows: &[Vec<String>]) {
        self.shared
            .publish(|state| Some(state.table(title, headers, rows)));
    }

    /// The command is over (`text`: what it concluded). Pages keep what they
    /// have; the server goes on until [`Dashboard::stop`] (or drop).
    pub fn over(&self, text: &str) {
        self.shared.publish(|state| Some(state.over(text)));
    }

    /// Stop serving, at once.
    pub fn stop(mut self) {
        self.server.stop();
    }
}

/// One run's results on the dashboard: a sink of the results pipeline.
///
/// Each finished second goes to the pages as it is handed out, with the
/// pipeline's totals so far (asked for at most every [`TOTALS_EVERY`]; the
/// others carry the last ones), and at the end the run's final totals.
/// Publishing never blocks and never fails: a page that falls behind gets a
/// fresh snapshot instead.
pub struct Feed {
    shared: Arc<Shared>,
    /// When the totals were last asked for.
    totals_at: Option<Instant>,
}

impl SecondSink for Feed {
    fn second(&mut self, second: &SecondStats, so_far: SoFar<'_>) -> Result<(), SinkError> {
        let now = Instant::now();
        let totals = totals_due(self.totals_at, now).then(|| {
            self.totals_at = Some(now);
            so_far.totals()
        });
        self.shared
            .publish(|state| state.second(second, totals.as_ref()));
        Ok(())
    }

    fn finish(&mut self, totals: &TotalStats) -> Result<(), SinkError> {
        self.shared.publish(|state| state.totals(totals));
        Ok(())
    }
}

/// Whether a second handed out `now` gets fresh totals, the last asked for
/// at `last`.
fn totals_due(last: Option<Instant>, now: Instant) -> bool {
    last.is_none_or(|at| now.saturating_duration_since(at) >= TOTALS_EVERY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_second_a_little_early_still_gets_fresh_totals() {
        let at = Instant::now();
        assert!(totals_due(None, at));
        // A second's tick 0.9 s after the last (the results thread is not exact).
        assert!(totals_due(Some(at), at + Duration::from_millis(900)));
        // Seconds handed out together (a catch-up) share one pass over the groups.
        assert!(!totals_due(Some(at), at + Duration::from_millis(10)));
    }
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpStream;
    use std::time::Duration;

    /// One request over a fresh connection: status line, headers, and (for a
    /// stream) as much of the body as `until` asks for.
    fn get(addr: SocketAddr, request: &str, until: &str) -> (String, String) {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut reader = BufReader::new(stream);
        let mut head = String::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
                break;
            }
            head.push_str(&line);
        }
        let mut body = String::new();
        let mut buf = [0u8; 4096];
        while !body.contains(until) {
            match reader.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => body.push_str(&String::from_utf8_lossy(&buf[..n])),
            }
        }
        (head, body)
    }

    fn meta() -> PageMeta {
        PageMeta {
            title: "tank -c load.ini".into(),
            ..PageMeta::default()
        }
    }

    #[test]
    fn loopback_is_open_and_serves_the_page_the_stream_and_the_state() {
        let dashboard = Dashboard::start("127.0.0.1:0".parse().unwrap(), None, &meta()).unwrap();
        let addr = dashboard.local_addr();
        assert_eq!(dashboard.url(), format!("http://{addr}/"));
        assert_eq!(dashboard.exposure_warning(), None);
        dashboard.begin_run("run", 0, None, true);
        let (head, body) = get(
            addr,
            "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            "</html>",
        );
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(
            body.contains("<title>tank live — tank -c load.ini</title>"),
            "{body}"
        );
        let (head, body) = get(addr, "GET /events HTTP/1.1\r\nHost: x\r\n\r\n", "\n\n");
        assert!(head.contains("content-type: text/event-stream"), "{head}");
        assert!(body.contains("event: snapshot\ndata: {"), "{body}");
        let (_, body) = get(
            addr,
            "GET /state HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            "}",
        );
        assert!(body.contains("\"label\":\"run\""), "{body}");
        let (head, _) = get(
            addr,
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            "\n",
        );
        assert!(head.starts_with("HTTP/1.1 405"), "{head}");
        let (head, _) = get(
            addr,
            "GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            "\n",
        );
        assert!(head.starts_with("HTTP/1.1 404"), "{head}");
        dashboard.stop();
    }

    #[test]
    fn a_token_is_asked_for_and_the_page_hands_it_on_as_a_cookie() {
        let token = Token::new("s3cret").unwrap();
        let dashboard =
            Dashboard::start("127.0.0.1:0".parse().unwrap(), Some(token), &meta()).unwrap();
        let addr = dashboard.local_addr();
        assert_eq!(dashboard.url(), format!("http://{addr}/?token=s3cret"));
        for request in [
            "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            "GET /?token=s3cre HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            "GET /events HTTP/1.1\r\nHost: x\r\nCookie: tank-web-token=nope\r\nConnection: close\r\n\r\n",
            "GET /state HTTP/1.1\r\nHost: x\r\nAuthorization: Basic s3cret\r\nConnection: close\r\n\r\n",
        ] {
            let (head, _) = get(addr, request, "\n");
            assert!(head.starts_with("HTTP/1.1 401"), "{request}: {head}");
        }
        let (head, _) = get(
            addr,
            "GET /?token=s3cret HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            "</html>",
        );
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(
            head.contains("set-cookie: tank-web-token=s3cret; HttpOnly; SameSite=Strict; Path=/"),
            "{head}"
        );
        let (head, body) = get(
            addr,
            "GET /events HTTP/1.1\r\nHost: x\r\nCookie: a=b; tank-web-token=s3cret\r\n\r\n",
            "\n\n",
        );
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(body.contains("event: snapshot\ndata: {"), "{body}");
        let (head, _) = get(
            addr,
            "GET /state HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret\r\nConnection: close\r\n\r\n",
            "}",
        );
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    }

    #[test]
    fn beyond_loopback_a_token_is_made_up_and_shown_once_in_the_url() {
        let dashboard = Dashboard::start("0.0.0.0:0".parse().unwrap(), None, &meta()).unwrap();
        let url = dashboard.url();
        let warning = dashboard.exposure_warning().unwrap();
        assert!(warning.contains("beyond loopback"), "{warning}");
        assert!(warning.ends_with(&url), "{warning}");
        let token = url.split("?token=").nth(1).unwrap();
        assert_eq!(token.len(), 32);
        let loopback = SocketAddr::from(([127, 0, 0, 1], dashboard.local_addr().port()));
        let (head, _) = get(
            loopback,
            "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            "\n",
        );
        assert!(head.starts_with("HTTP/1.1 401"), "{head}");
    }

    #[test]
    fn a_stream_gets_each_second_as_it_is_published() {
        let dashboard = Dashboard::start("127.0.0.1:0".parse().unwrap(), None, &meta()).unwrap();
        dashboard.begin_run("run", 0, None, true);
        let mut stream = TcpStream::connect(dashboard.local_addr()).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        stream
            .write_all(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut seen = String::new();
        let mut buf = [0u8; 8192];
        while !seen.contains("event: snapshot") {
            let n = stream.read(&mut buf).unwrap();
            assert!(n > 0, "closed before the snapshot: {seen}");
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
        let mut pipeline = tank_results::Pipeline::new(tank_stats::Aggregator::new(0));
        let mut feed = dashboard.feed();
        feed.second(
            &SecondStats {
                ts: 7,
                ..SecondStats::default()
            },
            pipeline.so_far(),
        )
        .unwrap();
        let (totals, failures) = pipeline.finish(&mut [&mut feed]);
        assert!(failures.is_empty());
        assert_eq!(totals.sent, 0);
        dashboard.over("exit code 0");
        while !seen.contains("event: over") {
            let n = stream.read(&mut buf).unwrap();
            assert!(n > 0, "closed before the end: {seen}");
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
        let second = seen.find("event: second\ndata: {\"second\":{").unwrap();
        let totals = seen.find("event: totals\ndata: {").unwrap();
        assert!(second < totals && totals < seen.find("event: over").unwrap());
        assert!(seen[second..].contains("\"ts\":7"), "{seen}");
    }
}
