//! `--web [ADDR]`: the live dashboard of a command's runs (tank-web).
//!
//! Resolves where it listens (the flag, else `[web] listen`, else the
//! default loopback port) and its token (`--web-token`, else
//! TANK_WEB_TOKEN, else none on loopback and one made up beyond it), prints
//! its URL on stderr, adds its feed to each run's results pipeline (a sink
//! beside the console's), and at the end keeps it up for `--web-linger` (or
//! `[web] linger`) so a reader can finish looking.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use tank_config::web::DEFAULT_WEB_LISTEN;
use tank_config::{TestConfig, WebConfig};
use tank_http1::access::Token;
use tank_report::names::ProtoCodes;
use tank_results::SecondSink;
use tank_run::{LiveState, Notice, Observer, Started};
use tank_stats::aggregate::SecondStats;
use tank_web::{Dashboard, PageMeta, TOKEN_ENV};

/// The dashboard's flags, shared by `tank -c`, bench, sweep, search and scan.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct WebArgs {
    /// Serve a live dashboard of the run at ADDR (default 127.0.0.1:8089, or
    /// `[web] listen`): rates, quantiles, lag, codes, tags, monitoring and the
    /// job's name, updated every second; still readable after the run.
    /// Read-only. Beyond loopback it needs a token (--web-token or
    /// TANK_WEB_TOKEN; without one, one is generated and its URL printed once).
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "")]
    pub web: Option<String>,
    /// The dashboard's token (prefer TANK_WEB_TOKEN: other users see flags in `ps`).
    #[arg(long, value_name = "TOKEN", requires = "web")]
    pub web_token: Option<Token>,
    /// Keep the dashboard up this long after the command ends (`5m`; Ctrl-C
    /// ends it sooner), as `[web] linger`. Without it tank exits at once and
    /// the page keeps what it has drawn.
    #[arg(long, value_name = "DURATION", value_parser = tank_config::search::parse_duration)]
    pub web_linger: Option<Duration>,
}

/// A dashboard serving, and how long it stays after the command.
pub struct Web {
    pub dashboard: Arc<Dashboard>,
    linger: Option<Duration>,
}

impl WebArgs {
    /// Start the dashboard when the flag or the config's `[web]` asks for it
    /// (`None` otherwise); its URL (and, beyond loopback, a warning) goes to stderr.
    pub fn start(&self, config: Option<&TestConfig>, title: String) -> Result<Option<Web>> {
        let from_config = config.and_then(|c| c.web);
        let listen: SocketAddr = match (&self.web, from_config) {
            (None, None) => return Ok(None),
            (Some(text), _) if !text.trim().is_empty() => text.trim().parse().map_err(|_| {
                anyhow!("--web {text}: expected an address like {DEFAULT_WEB_LISTEN} (IP and port)")
            })?,
            (_, Some(web)) => web.listen,
            (Some(_), None) => WebConfig::default().listen,
        };
        let token = match &self.web_token {
            Some(token) => Some(token.clone()),
            None => Token::from_env(TOKEN_ENV).map_err(|e| anyhow!(e))?,
        };
        let meta = PageMeta {
            title,
            config: config.map(|c| c.path.display().to_string()),
            job: config.map(|c| c.job.clone()).unwrap_or_default(),
            codes: config
                .and_then(|c| ProtoCodes::of_protocols(c.queues.iter().map(|q| q.tank_type)))
                .unwrap_or(ProtoCodes::Http)
                .short()
                .to_string(),
        };
        let dashboard = Dashboard::start(listen, token, &meta)
            .with_context(|| format!("starting the web dashboard on {listen}"))?;
        errln!("tank: dashboard: {}", dashboard.url());
        for line in dashboard.exposure_warning().iter().flat_map(|w| w.lines()) {
            errln!("tank: warning: {line}");
        }
        Ok(Some(Web {
            dashboard: Arc::new(dashboard),
            linger: self.web_linger.or(from_config.and_then(|w| w.linger)),
        }))
    }
}

impl Web {
    /// An observer that shows a run on the dashboard as `label`, beside `inner`.
    pub fn observe(&self, label: &str, inner: Box<dyn Observer>) -> Box<dyn Observer> {
        Box::new(Shown {
            dashboard: self.dashboard.clone(),
            label: label.to_owned(),
            inner,
        })
    }

    /// The observer-maker a probe of tank-limit takes: each probe's run
    /// shown as `label`.
    pub fn show(
        web: Option<&Web>,
        label: String,
    ) -> impl Fn(Box<dyn Observer>) -> Box<dyn Observer> + '_ {
        move |inner| match web {
            Some(web) => web.observe(&label, inner),
            None => inner,
        }
    }

    /// The command is over (`text`: what it concluded): tell the pages, and
    /// stay up for the linger (or until a Ctrl-C), then stop.
    pub fn finish(self, text: &str) {
        self.dashboard.over(text);
        if let Some(linger) = self.linger {
            errln!(
                "tank: the dashboard stays at {} for {} s (Ctrl-C ends it now)",
                self.dashboard.url(),
                linger.as_secs()
            );
            crate::signals::linger(linger);
        }
    }
}

/// A run's observer that also shows it on the dashboard.
struct Shown {
    dashboard: Arc<Dashboard>,
    label: String,
    inner: Box<dyn Observer>,
}

impl Observer for Shown {
    fn started(&mut self, started: &Started<'_>) {
        self.dashboard.begin_run(
            &self.label,
            started.start_unix_us,
            started.longest_schedule.map(|d| d.as_secs_f64()),
            started.planned_known,
        );
        self.inner.started(started);
    }

    fn sinks(&mut self) -> Vec<Box<dyn SecondSink + Send>> {
        let mut sinks = self.inner.sinks();
        sinks.push(Box::new(self.dashboard.feed()));
        sinks
    }

    fn sample(&mut self, sample: &tank_stats::Sample) {
        self.inner.sample(sample);
    }

    fn seconds(&mut self, seconds: &[SecondStats], state: &LiveState<'_>) {
        // The seconds reached the page through the feed; monitoring is not
        // the results pipeline's.
        self.dashboard.monitoring(state.monitoring);
        self.inner.seconds(seconds, state);
    }

    fn notice(&mut self, notice: &Notice<'_>) {
        self.inner.notice(notice);
    }

    fn preload(&mut self, queue: &str, done: u64, total: u64) {
        self.inner.preload(queue, done, total);
    }
}
