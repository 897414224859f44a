//! `[prometheus]`: tank serves `/metrics` while the test runs.
//!
//! The results thread renders the page once a second from the finished
//! second and the run so far; a thread of its own answers scrapes with the
//! last page (one request per connection, HTTP/1.0), so a slow or hostile
//! scraper never touches the shooting or the results.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use tank_stats::SecondStats;

/// Counters kept across seconds, per tag (`__OVERALL__` is the whole test, `""` untagged shots).
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
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    addr: SocketAddr,
    totals: Totals,
}

impl Endpoint {
    /// Binds `listen` and starts answering.
    pub fn start(listen: SocketAddr) -> std::io::Result<Endpoint> {
        // Blocking: the thread sleeps until a scrape comes (polling would wake
        // it dozens of times a second for nothing); `finish` wakes it to stop.
        let listener = TcpListener::bind(listen)?;
        let addr = listener.local_addr()?;
        let page = Arc::new(Mutex::new(String::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s) = (page.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("prometheus".into())
            .spawn(move || serve(listener, p, s))?;
        Ok(Endpoint {
            page,
            stop,
            thread: Some(thread),
            addr,
            totals: Totals::default(),
        })
    }

    /// Where it listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Renders the page after a finished second.
    pub fn second(&mut self, second: &SecondStats) {
        let t = &mut self.totals;
        t.sent += second.sent;
        let groups = std::iter::once((crate::line::OVERALL, &second.overall))
            .chain(second.tagged.iter().map(|(k, g)| (k.as_str(), g)));
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# HELP tank_responses_per_second Responses in the last finished second."
        );
        let _ = writeln!(out, "# TYPE tank_responses_per_second gauge");
        let mut quantiles = String::new();
        for (tag, group) in groups {
            *t.responses.entry(tag.to_owned()).or_default() += group.len();
            for (code, n) in group.proto_codes.iter() {
                *t.proto.entry((tag.to_owned(), code)).or_default() += n;
            }
            for (code, n) in group.net_codes.iter() {
                *t.net.entry((tag.to_owned(), code)).or_default() += n;
            }
            let _ = writeln!(
                out,
                "tank_responses_per_second{{tag=\"{}\"}} {}",
                label(tag),
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
                        "tank_response_time_seconds{{tag=\"{}\",quantile=\"{q}\"}} {}",
                        label(tag),
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
        for (tag, n) in &t.responses {
            let _ = writeln!(out, "tank_responses_total{{tag=\"{}\"}} {n}", label(tag));
        }
        let _ = writeln!(
            out,
            "# HELP tank_http_codes_total Responses by HTTP code so far."
        );
        let _ = writeln!(out, "# TYPE tank_http_codes_total counter");
        for ((tag, code), n) in &t.proto {
            let _ = writeln!(
                out,
                "tank_http_codes_total{{tag=\"{}\",code=\"{code}\"}} {n}",
                label(tag)
            );
        }
        let _ = writeln!(
            out,
            "# HELP tank_net_codes_total Responses by net code (0 is success) so far."
        );
        let _ = writeln!(out, "# TYPE tank_net_codes_total counter");
        for ((tag, code), n) in &t.net {
            let _ = writeln!(
                out,
                "tank_net_codes_total{{tag=\"{}\",code=\"{code}\"}} {n}",
                label(tag)
            );
        }
        let _ = writeln!(out, "# HELP tank_shots_sent_total Shots fired so far.");
        let _ = writeln!(out, "# TYPE tank_shots_sent_total counter");
        let _ = writeln!(out, "tank_shots_sent_total {}", t.sent);
        let _ = writeln!(
            out,
            "# HELP tank_planned_per_second Shots planned in the last finished second."
        );
        let _ = writeln!(out, "# TYPE tank_planned_per_second gauge");
        let _ = writeln!(out, "tank_planned_per_second {}", second.planned);
        let _ = writeln!(
            out,
            "# HELP tank_instances Instances busy in the last finished second (peak)."
        );
        let _ = writeln!(out, "# TYPE tank_instances gauge");
        let _ = writeln!(out, "tank_instances {}", second.instances);
        let _ = writeln!(out, "# HELP tank_lag_seconds How late shots started, quantiles of the last finished second.");
        let _ = writeln!(out, "# TYPE tank_lag_seconds gauge");
        for (per_mille, q) in [(500, "0.5"), (990, "0.99"), (1000, "1")] {
            if let Some(us) = second.lag.get(per_mille) {
                let _ = writeln!(out, "tank_lag_seconds{{quantile=\"{q}\"}} {}", seconds(us));
            }
        }
        let _ = writeln!(
            out,
            "# HELP tank_second The unix second these gauges describe."
        );
        let _ = writeln!(out, "# TYPE tank_second gauge");
        let _ = writeln!(out, "tank_second {}", second.ts);
        if let Ok(mut page) = self.page.lock() {
            *page = out;
        }
    }

    /// Stops answering.
    pub fn finish(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the blocked accept with a connection of our own; if that cannot
        // be made, leave the thread to end with the process rather than hang.
        let mut wake = self.addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(match wake {
                SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        let woken = std::net::TcpStream::connect_timeout(&wake, Duration::from_secs(1)).is_ok();
        if let Some(thread) = self.thread.take() {
            if woken {
                let _ = thread.join();
            }
        }
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

/// A label value escaped for the text format.
fn label(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn serve(listener: TcpListener, page: Arc<Mutex<String>>, stop: Arc<AtomicBool>) {
    loop {
        let accepted = listener.accept();
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let Ok((mut stream, _)) = accepted else {
            // A failed accept (out of descriptors, say): a pause, not a spin.
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
        let _ = stream.set_write_timeout(Some(Duration::from_secs(2)));
        let mut request = Vec::new();
        let mut buf = [0u8; 2048];
        while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 16 * 1024 {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => request.extend_from_slice(&buf[..n]),
            }
        }
        let first = String::from_utf8_lossy(&request);
        let path = first.split_whitespace().nth(1).unwrap_or_default();
        let (status, body) = if path == "/metrics" || path.starts_with("/metrics?") {
            ("200 OK", page.lock().map(|p| p.clone()).unwrap_or_default())
        } else {
            ("404 Not Found", "tank serves /metrics\n".to_owned())
        };
        let _ = write!(
            stream,
            "HTTP/1.0 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tank_monitor::http::{get, Url};

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
        let mut endpoint = Endpoint::start("127.0.0.1:0".parse().unwrap()).unwrap();
        endpoint.second(&second);
        endpoint.second(&second);
        let url = Url::parse(&format!("http://{}/metrics", endpoint.local_addr())).unwrap();
        let response = get(&url, Duration::from_secs(5), 1 << 20).unwrap();
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
        let other = Url::parse(&format!("http://{}/", endpoint.local_addr())).unwrap();
        assert_eq!(
            get(&other, Duration::from_secs(5), 1024).unwrap().status,
            404
        );
        endpoint.finish();
    }
}
