//! What `bench`, `sweep`, `search` and `scan` share: the target flags (a URL
//! with wrk's request flags, or `--config FILE`: its first queue's target and
//! ammo), `--fail-on-warnings`, and how their warnings end the command.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use tank_limit::{Options, Request, Target};

/// Where the load goes and what it sends.
#[derive(Debug, clap::Args)]
pub struct TargetArgs {
    /// The URL to load: http://host[:port]/path or https://…
    #[arg(value_name = "URL", required_unless_present = "config")]
    pub url: Option<String>,
    /// Instead of a URL: a config (load.ini, .toml, load.yaml) whose first
    /// queue gives the target, the ammo and the options; its [origin] is
    /// started for each run.
    #[arg(long, value_name = "FILE", conflicts_with = "url")]
    pub config: Option<PathBuf>,
    /// A header line, `Name: value` (repeatable).
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// The request method.
    #[arg(short = 'm', long, default_value = "GET")]
    pub method: String,
    /// The request body (sent with Content-Length).
    #[arg(long, conflicts_with = "body_file")]
    pub body: Option<String>,
    /// A file whose bytes are the request body.
    #[arg(long, value_name = "FILE")]
    pub body_file: Option<PathBuf>,
    /// Per-request timeout (e.g. 2s, 500ms) [default: the config's, 11s].
    #[arg(long, value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// Send HTTP/1.0 requests (no keep-alive) instead of HTTP/1.1.
    #[arg(long = "http1.0")]
    pub http10: bool,
    /// Send the requests as HTTP/2 (h2 over TLS with ALPN for https://, h2c
    /// with prior knowledge for http://), multiplexed over few connections
    /// (`tank_type = http2`; see docs/http2.md).
    #[arg(long)]
    pub http2: bool,
    /// I/O threads, 1 to 4,096 [default: cores/2 + 1, as phantom].
    #[arg(
        short = 't',
        long,
        value_parser = clap::value_parser!(u32).range(1..=i64::from(tank_config::bounds::MAX_THREADS))
    )]
    pub threads: Option<u32>,
    /// Where the runs' artifacts go (a new directory under it per command).
    #[arg(long, value_name = "DIR", default_value = "logs")]
    pub artifacts: PathBuf,
    /// Exit 35 instead of 0 when the command ends with warnings (a run or a
    /// probe where no request succeeded, say), as `tank -c` does.
    #[arg(long)]
    pub fail_on_warnings: bool,
    /// The live web dashboard of every run the command makes: --web,
    /// --web-token, --web-linger.
    #[command(flatten)]
    pub web: crate::web::WebArgs,
}

impl TargetArgs {
    /// The target, and a fresh directory for this command's artifacts (a URL
    /// target's config and request are written there, and stay).
    pub fn target(&self, command: &str) -> Result<(Target, PathBuf, String)> {
        self.target_over(command, None)
    }

    /// The same, with `--http2`'s streams over `connections` (`None`: as few
    /// as the concurrency needs).
    pub fn target_over(
        &self,
        command: &str,
        connections: Option<u32>,
    ) -> Result<(Target, PathBuf, String)> {
        let root = self.artifacts.join(tank_run::dir_name(Some(command)));
        std::fs::create_dir_all(&root)
            .with_context(|| format!("creating the artifacts directory {}", root.display()))?;
        let options = Options {
            threads: self.threads,
            timeout: self.timeout,
            artifacts: self.artifacts.clone(),
            http2: self.http2.then_some(connections),
        };
        if self.http2 && self.http10 {
            bail!("--http2 and --http1.0 ask for two protocols: choose one");
        }
        let request_flags = !self.headers.is_empty()
            || self.method != "GET"
            || self.body.is_some()
            || self.body_file.is_some()
            || self.http10;
        if let Some(path) = &self.config {
            if request_flags {
                bail!("-H, -m, --body, --body-file and --http1.0 shape a URL's request; with --config the ammo does");
            }
            let name = path.display().to_string();
            return Ok((Target::from_config(path, &options)?, root, name));
        }
        let Some(url) = &self.url else {
            bail!("give a URL, or --config FILE");
        };
        for header in &self.headers {
            if !header.contains(':') || header.contains(['\r', '\n']) {
                bail!("-H `{header}`: expected one header line, `Name: value`");
            }
        }
        let body = match (&self.body, &self.body_file) {
            (Some(text), _) => Some(text.clone().into_bytes()),
            (None, Some(path)) => Some(
                std::fs::read(path)
                    .with_context(|| format!("reading the body file {}", path.display()))?,
            ),
            (None, None) => None,
        };
        if self.method.is_empty() || !self.method.bytes().all(|b| b.is_ascii_alphabetic()) {
            bail!("-m `{}`: expected a method like GET or POST", self.method);
        }
        let request = Request {
            method: self.method.clone(),
            headers: self.headers.clone(),
            body,
            http10: self.http10,
        };
        Ok((
            Target::from_url(url, &request, &options, &root)?,
            root,
            url.clone(),
        ))
    }
}

/// `10s`, `500ms`, `2m`, `1h`, or bare seconds (also `[search]`'s durations).
pub use tank_config::search::parse_duration;

/// `dir/NN_label`: one probe's artifacts.
pub fn probe_dir(root: &Path, index: usize, label: &str) -> PathBuf {
    root.join(format!("{:02}_{label}", index + 1))
}

/// Keeps a probe's set-up warnings among a command's `warnings`, each once:
/// every probe of one target gives the same ones, and a new one is shown on
/// stderr as it comes (the command's summary lists them all again).
pub fn note_setup_warnings(warnings: &mut Vec<String>, m: &tank_limit::Measurement) {
    for warning in &m.setup_warnings {
        if !warnings.contains(warning) {
            errln!("tank: warning: {warning}");
            warnings.push(warning.clone());
        }
    }
}

/// Ends a command whose result would exit with `code`: prints each warning
/// as a `WARNING:` line, and exits 35 instead of 0 when there are warnings
/// and `--fail-on-warnings` is set (as `tank -c` does; other codes stand).
pub fn finish(code: u8, warnings: &[String], fail_on_warnings: bool) -> ExitCode {
    for warning in warnings {
        outln!("WARNING: {warning}");
    }
    if code == 0 && fail_on_warnings && !warnings.is_empty() {
        ExitCode::from(tank_limit::exit::WARNINGS)
    } else {
        ExitCode::from(code)
    }
}
