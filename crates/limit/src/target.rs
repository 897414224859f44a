//! What the probes shoot at: a URL with wrk-style request flags, or the first
//! queue of a config, turned into one [`TestConfig`] per probe.
//!
//! A URL's request is written once as phantom ammo (the exact bytes on the
//! wire: method, path, `Host`, the `-H` headers, the body) beside a
//! `load.ini` in the command's own artifacts directory, where they stay: the
//! runs' summaries name that config, and `tank -c` reruns it. The config is
//! built from options (`tank_config::from_options`), so it is checked and
//! given defaults exactly as a file's would be.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tank_config::{ArrivalProcess, LoadProfile, Override, TestConfig};
use tank_http1::Url;
use tank_run::Spec;

use crate::LimitError;

/// The request a URL target sends (wrk's and oha's flags).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `-m`: the method (default GET).
    pub method: String,
    /// `-H`: extra header lines, `Name: value`.
    pub headers: Vec<String>,
    /// `--body` / `--body-file`: the body, sent with a Content-Length.
    pub body: Option<Vec<u8>>,
    /// `--http1.0`: HTTP/1.0 (a connection per request) instead of HTTP/1.1.
    pub http10: bool,
}

impl Default for Request {
    fn default() -> Request {
        Request {
            method: "GET".into(),
            headers: Vec::new(),
            body: None,
            http10: false,
        }
    }
}

/// How the generator runs, whatever the target.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// `-t`: I/O threads (`None`: tank's default).
    pub threads: Option<u32>,
    /// `--timeout`: per request (`None`: the config's, 11 s by default).
    pub timeout: Option<Duration>,
    /// Where each run's artifacts go: a directory per probe under it.
    pub artifacts: PathBuf,
    /// `--http2`: send the requests as HTTP/2 (`tank_type = http2`), over
    /// this many connections (`Some(None)`: as few as the concurrency needs).
    pub http2: Option<Option<u32>>,
}

/// One probe's load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Load {
    /// Open model: `rate` shots per second for `duration`, on up to `instances` connections.
    Open {
        /// Shots per second.
        rate: u64,
        /// How long.
        duration: Duration,
        /// The most connections at once.
        instances: u32,
        /// How the shots are spaced (`--arrivals`); `None`: as the config
        /// says (evenly, unless it sets `arrivals`).
        arrivals: Option<ArrivalProcess>,
    },
    /// Closed model: `concurrency` connections firing back to back; the
    /// caller stops the run after the duration (a closed model has no end of its own).
    Closed {
        /// Connections.
        concurrency: u32,
    },
}

/// A target to probe: a config file (the user's, or one written for a URL)
/// and the overrides every probe adds to it.
#[derive(Debug)]
pub struct Target {
    path: PathBuf,
    /// Options of a URL target (also written to `path`); empty for a config file.
    url_options: Vec<Override>,
    /// `--threads`, `--timeout`, `artifacts_base_dir`: added to every probe.
    common: Vec<Override>,
    base: TestConfig,
}

impl Target {
    /// A target from `url` (`http://host[:port]/path`, or `https://`) and the
    /// request to send. The request goes into a phantom ammo file `ammo.txt`
    /// and the options into a `load.ini` beside it, both in `dir` (the
    /// command's artifacts directory, which must exist): each probe's
    /// summary names that config, and `tank -c` reruns it.
    pub fn from_url(
        url: &str,
        request: &Request,
        options: &Options,
        dir: &Path,
    ) -> Result<Target, LimitError> {
        let parsed = parse_url(url)?;
        let ammo = dir.join("ammo.txt");
        std::fs::write(&ammo, phantom_ammo(&parsed, request))
            .map_err(|e| LimitError::io("writing the request", e))?;
        let mut set = vec![
            ("address", parsed.authority()),
            ("ammofile", ammo.display().to_string()),
            ("ammo_type", "phantom".to_owned()),
            ("rps_schedule", "const(1,1s)".to_owned()),
        ];
        if parsed.is_tls() {
            set.push(("ssl", "1".into()));
        }
        let url_options: Vec<Override> = set
            .iter()
            .map(|(key, value)| option("phantom", key, value))
            .collect();
        let path = dir.join("load.ini");
        let mut ini = format!("# tank's config for {url}\n[phantom]\n");
        for (key, value) in &set {
            ini.push_str(&format!("{key} = {value}\n"));
        }
        std::fs::write(&path, ini).map_err(|e| LimitError::io("writing the config", e))?;
        Target::new(path, url_options, options)
    }

    /// A target from a config file: its first queue (target, ammo, options)
    /// and its `[origin]`, if any; other queues are left out.
    pub fn from_config(path: &Path, options: &Options) -> Result<Target, LimitError> {
        Target::new(path.to_owned(), Vec::new(), options)
    }

    fn new(
        path: PathBuf,
        url_options: Vec<Override>,
        options: &Options,
    ) -> Result<Target, LimitError> {
        let mut common = vec![option(
            "tank",
            "artifacts_base_dir",
            &options.artifacts.display().to_string(),
        )];
        if let Some(threads) = options.threads {
            common.push(option("phantom", "threads", &threads.to_string()));
        }
        if let Some(timeout) = options.timeout {
            let ms = timeout.as_millis().max(1);
            common.push(option("phantom", "timeout", &format!("{ms}ms")));
        }
        if let Some(connections) = options.http2 {
            common.push(option("phantom", "tank_type", "http2"));
            if let Some(n) = connections {
                common.push(option("phantom", "connections", &n.to_string()));
            }
        }
        let base = load(&path, &url_options, &common, &[])?;
        let queue = base.queues.first().ok_or_else(|| {
            LimitError::Target(format!(
                "{}: no queue to take the target and ammo from",
                path.display()
            ))
        })?;
        if matches!(queue.load_profile, LoadProfile::StpdFile(_)) {
            return Err(LimitError::Target(format!(
                "{}: [{}] has a stpd_file, whose times are fixed: a probe needs ammo \
                 (ammofile or uris) to set its own rate",
                path.display(),
                queue.name
            )));
        }
        Ok(Target {
            path,
            url_options,
            common,
            base,
        })
    }

    /// The run of one probe: `load` at this target, its artifacts in `dir`.
    /// Every change to the config is an override, noted in the artifacts' copy.
    pub fn spec(&self, load_: &Load, dir: &Path) -> Result<Spec, LimitError> {
        let queue = self.base.queues[0].name.clone();
        let mut extra = vec![
            option("tank", "artifacts_dir", &dir.display().to_string()),
            // Probes judge their own window; an autostop would cut it short.
            option("autostop", "autostop", ""),
        ];
        match *load_ {
            Load::Open {
                rate,
                duration,
                instances,
                arrivals,
            } => {
                let ms = duration.as_millis();
                let schedule = format!("const({rate},{}.{:03}s)", ms / 1000, ms % 1000);
                extra.push(option(&queue, "rps_schedule", &schedule));
                extra.push(option(&queue, "instances", &instances.to_string()));
                if let Some(arrivals) = arrivals {
                    extra.push(option(&queue, "arrivals", &arrivals.to_string()));
                }
            }
            Load::Closed { concurrency } => {
                let schedule = format!("const({concurrency},1s)");
                extra.push(option(&queue, "instances_schedule", &schedule));
                extra.push(option(&queue, "instances", &concurrency.to_string()));
                // Drawn arrivals space an rps schedule's shots, not a closed model's.
                if !self.base.queues[0].arrivals.process.is_uniform() {
                    extra.push(option(&queue, "arrivals", "uniform"));
                }
                // Stopped by the caller; until then the ammo cycles (as many
                // passes as a config may ask for).
                let passes = tank_config::bounds::MAX_SHOTS.to_string();
                extra.push(option(&queue, "loop", &passes));
                extra.push(option(&queue, "ammo_limit", "-1"));
            }
        }
        let config = load(&self.path, &self.url_options, &self.common, &extra)?;
        let overrides = self.common.iter().chain(&extra).cloned().collect();
        Ok(Spec {
            overrides,
            ..Spec::new(config)
        })
    }

    /// The config every probe starts from.
    pub fn base(&self) -> &TestConfig {
        &self.base
    }

    /// How many I/O threads its runs fire on: `threads` (`-t`), else the
    /// engine's default (phantom's: half the cores plus one).
    pub fn io_threads(&self) -> usize {
        tank_engine::IoThreadCount::choose(self.base.run.threads)
            .count
            .get()
    }
}

/// The config at `path` (or, for a URL target, built from its options) with
/// the common and `extra` overrides, cut to its first queue.
fn load(
    path: &Path,
    url_options: &[Override],
    common: &[Override],
    extra: &[Override],
) -> Result<TestConfig, LimitError> {
    let all: Vec<Override> = url_options
        .iter()
        .chain(common)
        .chain(extra)
        .cloned()
        .collect();
    let mut config = if url_options.is_empty() {
        tank_config::load(path, &all)
    } else {
        tank_config::from_options(path, &all)
    }
    .map_err(|e| LimitError::Target(e.to_string()))?;
    config.queues.truncate(1);
    Ok(config)
}

fn option(section: &str, key: &str, value: &str) -> Override {
    Override {
        section: section.to_owned(),
        key: key.to_owned(),
        value: value.to_owned(),
    }
}

/// A probe target's URL (tank-http1's), or an error saying what was expected.
fn parse_url(url: &str) -> Result<Url, LimitError> {
    Url::parse(url).map_err(|e| {
        LimitError::Target(format!(
            "{e}: expected a URL like http://127.0.0.1:8080/path"
        ))
    })
}

/// One phantom-format missile: `<size>\n<request>\n`.
fn phantom_ammo(url: &Url, request: &Request) -> Vec<u8> {
    let version = if request.http10 { "1.0" } else { "1.1" };
    let mut head = format!(
        "{} {} HTTP/{version}\r\nHost: {}\r\n",
        request.method,
        url.path(),
        url.host_header()
    );
    for header in &request.headers {
        head.push_str(header.trim());
        head.push_str("\r\n");
    }
    let body = request.body.as_deref().unwrap_or_default();
    if request.body.is_some() {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    let mut missile = head.into_bytes();
    missile.extend_from_slice(body);
    let mut out = format!("{}\n", missile.len()).into_bytes();
    out.extend_from_slice(&missile);
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_give_the_address_host_and_path() {
        let u = parse_url("http://127.0.0.1:8080/a/b?x=1#frag").unwrap();
        assert_eq!(
            (u.is_tls(), u.authority(), u.host_header(), u.path()),
            (
                false,
                "127.0.0.1:8080".into(),
                "127.0.0.1:8080".into(),
                "/a/b?x=1"
            )
        );
        let u = parse_url("https://example.com").unwrap();
        assert_eq!(
            (u.is_tls(), u.authority(), u.path()),
            (true, "example.com:443".into(), "/")
        );
        let u = parse_url("http://[::1]/?q").unwrap();
        assert_eq!((u.authority(), u.path()), ("[::1]:80".into(), "/?q"));
        let u = parse_url("http://h?q=1").unwrap();
        assert_eq!(u.path(), "/?q=1");
    }

    #[test]
    fn bad_urls_say_what_was_expected() {
        for (url, why) in [
            ("ftp://x/", "not an http:// or https:// URL"),
            ("http:///x", "no host"),
            ("http://h:99999/", "the port `99999` is not a number"),
            ("http://u@h/", "user info"),
        ] {
            let error = parse_url(url).unwrap_err().to_string();
            assert!(error.contains(why) && error.starts_with(url), "{error}");
        }
    }

    #[test]
    fn the_request_is_written_as_one_phantom_missile() {
        let url = parse_url("http://h:81/p").unwrap();
        let request = Request {
            method: "POST".into(),
            headers: vec!["X-A: 1".into()],
            body: Some(b"hello".to_vec()),
            http10: false,
        };
        let missile = "POST /p HTTP/1.1\r\nHost: h:81\r\nX-A: 1\r\nContent-Length: 5\r\n\r\nhello";
        assert_eq!(
            String::from_utf8(phantom_ammo(&url, &request)).unwrap(),
            format!("{}\n{missile}\n", missile.len())
        );
        let get = phantom_ammo(
            &url,
            &Request {
                http10: true,
                ..Request::default()
            },
        );
        assert!(String::from_utf8(get)
            .unwrap()
            .ends_with("GET /p HTTP/1.0\r\nHost: h:81\r\n\r\n\n"));
    }

    #[test]
    fn each_probe_gets_its_load_and_directory_as_overrides() {
        let options = Options {
            threads: Some(1),
            timeout: Some(Duration::from_secs(2)),
            artifacts: "logs".into(),
            http2: None,
        };
        let dir = tempfile::tempdir().unwrap();
        let target = Target::from_url(
            "http://127.0.0.1:9/",
            &Request::default(),
            &options,
            dir.path(),
        )
        .unwrap();
        let load = Load::Open {
            rate: 800,
            duration: Duration::from_millis(2500),
            instances: 64,
            arrivals: None,
        };
        let open = target.spec(&load, Path::new("out/1")).unwrap();
        let q = &open.config.queues[0];
        assert_eq!(q.load_profile, LoadProfile::Rps("const(800,2.500s)".into()));
        assert_eq!(
            (q.instances, open.config.run.threads, q.timeout),
            (64, Some(1), Duration::from_millis(2000))
        );
        assert_eq!(open.config.core.artifacts_dir.as_deref(), Some("out/1"));
        assert!(open
            .overrides
            .iter()
            .any(|o| o.to_string() == "phantom.rps_schedule=const(800,2.500s)"));
        assert!(q.arrivals.process.is_uniform());
        let poisson = Load::Open {
            rate: 800,
            duration: Duration::from_millis(2500),
            instances: 64,
            arrivals: Some(ArrivalProcess::Poisson),
        };
        let drawn = target.spec(&poisson, Path::new("out/3")).unwrap();
        assert_eq!(
            drawn.config.queues[0].arrivals.process,
            ArrivalProcess::Poisson
        );
        assert!(drawn
            .overrides
            .iter()
            .any(|o| o.to_string() == "phantom.arrivals=poisson"));
        let closed = target
            .spec(&Load::Closed { concurrency: 8 }, Path::new("out/2"))
            .unwrap();
        let q = &closed.config.queues[0];
        assert_eq!(q.load_profile, LoadProfile::Instances("const(8,1s)".into()));
        assert_eq!(q.instances, 8);
        let copy = std::fs::read_to_string(&closed.config.path).unwrap();
        assert!(copy.contains("address = 127.0.0.1:9"), "{copy}");
    }
}
