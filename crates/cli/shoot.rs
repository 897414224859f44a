//! `tank -c FILE` / `tank shoot -c FILE`: run a test.
//!
//! Wiring only: load the config, prepare the engine (every input error shows
//! before a shot is fired), start the results threads, run, summarise. The
//! first Ctrl-C (or SIGTERM) stops firing and waits for shots in flight (up to `timeout`);
//! a second one stops at once. Either way phout is flushed and the exit code is 1.
//! An autostop criterion that fires stops the run the same way, with its code
//! (21-33); `[rcassert]` may remap the code.

mod answers;
mod artifacts;
mod collector;

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use std::collections::BTreeMap;
use std::fmt::Write as _;

use tank_config::{LoadProfile, OriginConfig, OriginRecipe, Override, TestConfig, WriteLog};
use tank_engine::{priority, AnswerSink, Clock, Control, Engine, IoThreads, SampleSink};
use tank_report::stream::write_outputs;
use tank_report::{Meta, Summary};
use tank_stats::autostop::{rcassert, Autostop};
use tank_stats::Aggregator;

use artifacts::Artifacts;

/// Samples buffered between the shooters and the results thread.
const SAMPLE_QUEUE: usize = 1 << 18;
/// The schedule starts this long after the clock is read, so that threads,
/// instances and the first shots are ready when they are due.
const START_LEAD: Duration = Duration::from_millis(50);
/// File descriptors kept free beyond one per instance (logs, ammo, runtime).
const SPARE_FILES: u64 = 64;

/// Run the test in `config_path`.
pub fn run(config_path: &Path, overrides: &[Override], quiet: bool) -> Result<ExitCode> {
    let config = tank_config::load(config_path, overrides)?;
    // Asked on this thread first, to learn (and log) whether the kernel takes it;
    // then by every I/O thread, where the instances wake.
    let short_slice = priority::short_slice();
    let io_threads_ask = short_slice.is_ok();
    // This thread's runtime runs the queues' bookkeeping, signals and the embedded
    // origin simulator; the instances run on the I/O threads started below.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let origin = match &config.origin {
        Some(origin) => Some(runtime.block_on(start_origin(origin))?),
        None => None,
    };
    let engine = Engine::prepare(
        &config,
        origin.as_ref().map(tank_origin::Server::local_addr),
    )?;
    let io = IoThreads::start(engine.io_threads().count, move || {
        if io_threads_ask {
            // Granted to this thread a moment ago: a refusal now changes nothing that matters.
            let _ = priority::short_slice();
        }
    })
    .context("starting the I/O threads")?;
    let needed = engine.total_instances() as u64 + SPARE_FILES;
    raise_file_limit(needed)?;
    let artifacts = Artifacts::create(&config, overrides)?;
    artifacts.log(&format!(
        "config {} with {} queue(s)",
        config.path.display(),
        engine.queues().len()
    ));
    for queue in engine.queues() {
        artifacts.log(&format!("[{}] {} instances", queue.name(), queue.pool()));
    }
    let threads = engine.io_threads();
    artifacts.log(&format!(
        "{} I/O threads ({})",
        threads.count,
        if threads.configured {
            "threads"
        } else {
            "default: cores/2 + 1; set with threads"
        }
    ));
    artifacts.log(&match &short_slice {
        Ok(()) => format!(
            "I/O threads: {} µs scheduler slice, so instances run soon after they wake",
            priority::SHORT_SLICE_NS / 1000
        ),
        Err(why) => format!("I/O threads: the default scheduler slice ({why})"),
    });
    // Held until the run is over; the kernel drops it when tank exits, however it exits.
    let cpus_awake = config.core.keep_cpus_awake.then(priority::keep_cpus_awake);
    artifacts.log(&match &cpus_awake {
        Some(Ok(_)) => "CPUs kept awake while shooting (keep_cpus_awake)".to_owned(),
        Some(Err(why)) => format!(
            "CPUs may sleep: cannot write {} ({why}; it needs root). Shots due while a \
             CPU wakes up go late",
            priority::CPU_LATENCY_DEVICE
        ),
        None => "CPUs may sleep: keep_cpus_awake = 0".to_owned(),
    });

    let instances_limit = engine.total_instances() as u64;
    let autostop = Autostop::new(&config.autostop.criteria, instances_limit)
        .map_err(|e| anyhow!("{}: [autostop] {e}", config.path.display()))?;
    let clock = Clock::starting_in(START_LEAD);
    let start_s = clock.start_unix_us / 1_000_000;
    let mut planned = BTreeMap::new();
    for queue in engine.queues() {
        for (offset, shots) in queue
            .planned_per_second()
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            if *shots > 0 {
                *planned.entry(start_s + offset as u64).or_insert(0) += shots;
            }
        }
    }
    let planned_duration = engine
        .queues()
        .iter()
        .filter_map(|q| q.schedule_duration())
        .max();
    let control = Control::default();
    let live = collector::Live {
        aggregator: Aggregator::new(config.queues.first().map_or(2, |q| q.buffered_seconds)),
        autostop,
        control: control.clone(),
        json: artifacts
            .create_file("test_data.log")
            .context("creating test_data.log")?,
        autostop_report: artifacts.file(&config.autostop.report_file),
        active: engine.queues().iter().map(|q| q.active()).collect(),
        planned,
        console: collector::Console::choose(
            quiet || config.console.short_only,
            config.path.display().to_string(),
            instances_limit,
            planned_duration,
        ),
        started: std::time::Instant::now(),
    };
    let meta = meta(&config, &engine);

    let (samples, sample_rx) = SampleSink::new(SAMPLE_QUEUE);
    let phout = artifacts
        .create_file("phout.log")
        .context("creating phout.log")?;
    let collector =
        collector::spawn(sample_rx, phout, live).context("starting the results thread")?;
    let answers = if config.queues.iter().any(|q| q.writelog != WriteLog::Off) {
        let (sink, rx) = AnswerSink::new(4096);
        let file = artifacts
            .create_file("answ.log")
            .context("creating answ.log")?;
        Some((
            sink,
            answers::spawn(rx, file).context("starting the answers thread")?,
        ))
    } else {
        None
    };

    if let Some(origin) = &origin {
        artifacts.log(&format!("origin simulator on {}", origin.local_addr()));
    }
    let report = runtime.block_on(async {
        let signals = tokio::spawn(watch_signals(control.clone()));
        let report = engine
            .run(
                clock,
                samples,
                answers.as_ref().map(|(sink, _)| sink.clone()),
                control.clone(),
                &io,
            )
            .await;
        signals.abort();
        if let Some(origin) = origin {
            origin.shutdown().await;
        }
        report
    });
    drop(cpus_awake);
    let outcome = collector
        .join()
        .map_err(|_| anyhow!("the results thread failed"))?
        .context("writing phout.log")?;
    if let Some((sink, thread)) = answers {
        drop(sink);
        let written = thread
            .join()
            .map_err(|_| anyhow!("the answers thread failed"))?
            .context("writing answ.log")?;
        artifacts.log(&format!("answ.log: {written} entries"));
    }
    let errors: Vec<String> = report
        .queues
        .iter()
        .filter_map(|q| q.error.as_ref().map(ToString::to_string))
        .collect();
    // yandex-tank's codes: an autostop criterion's, 1 for an interruption, 0 when completed;
    // then [rcassert] may remap them.
    let code = match (
        &outcome.stopped,
        control.stop.is_cancelled() || !errors.is_empty(),
    ) {
        (Some(reason), _) => reason.code,
        (None, true) => 1,
        (None, false) => 0,
    };
    let code = rcassert(code, &config.rcassert.pass, config.rcassert.fail_code);
    let summary = Summary::build(
        meta,
        &outcome.totals,
        outcome.timeline,
        true,
        outcome.stopped.as_ref(),
        Some(code),
    );
    write_outputs(&summary, artifacts.dir()).context("writing the reports")?;
    let mut text = summary.to_text();
    for queue in &report.queues {
        let planned = queue
            .planned
            .map_or_else(|| "?".to_string(), |p| p.to_string());
        let _ = writeln!(
            text,
            "[{}] planned {planned}, sent {}, unsent {}",
            queue.name, queue.fired, queue.unsent
        );
    }
    if report.samples_dropped > 0 {
        let _ = writeln!(
            text,
            "WARNING: {} samples were dropped (the results thread fell behind)",
            report.samples_dropped
        );
    }
    let _ = writeln!(
        text,
        "artifacts: {} (report.html, summary.json, phout.log)",
        artifacts.dir().display()
    );
    print!("{text}");
    artifacts.log(&format!("finished with exit code {code}\n{text}"));
    if !errors.is_empty() {
        bail!("{}: {}", config.path.display(), errors.join("; "));
    }
    if outcome.stopped.is_none() && control.stop.is_cancelled() {
        artifacts.log("interrupted");
    }
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

/// What the reports say about the test.
fn meta(config: &TestConfig, engine: &Engine) -> Meta {
    let mut facts = Vec::new();
    for (queue, prepared) in config.queues.iter().zip(engine.queues()) {
        let load = match &queue.load_profile {
            LoadProfile::Rps(s) => format!(
                "rps_schedule = {}",
                s.split_whitespace().collect::<Vec<_>>().join(" ")
            ),
            LoadProfile::Instances(s) => format!(
                "instances_schedule = {}",
                s.split_whitespace().collect::<Vec<_>>().join(" ")
            ),
            LoadProfile::StpdFile(p) => format!("stpd_file = {}", p.display()),
        };
        facts.push((format!("[{}] target", queue.name), queue.address.clone()));
        facts.push((format!("[{}] load", queue.name), load));
        facts.push((
            format!("[{}] instances", queue.name),
            prepared.pool().to_string(),
        ));
    }
    Meta {
        title: config.path.display().to_string(),
        sources: vec![config.path.display().to_string(), "phout.log".into()],
        generator: format!("tank {}", env!("CARGO_PKG_VERSION")),
        facts,
    }
}

/// Start the `[origin]` simulator on the runtime; errors name the recipe.
async fn start_origin(origin: &OriginConfig) -> Result<tank_origin::Server> {
    let (text, source) = match &origin.recipe {
        OriginRecipe::File(path) => (
            std::fs::read_to_string(path)
                .with_context(|| format!("[origin] recipe: cannot read {}", path.display()))?,
            path.display().to_string(),
        ),
        OriginRecipe::Json(json) => (json.clone(), "recipe_json".to_string()),
    };
    let recipes =
        tank_origin::Recipe::from_json(&text).with_context(|| format!("[origin] {source}"))?;
    let body_budget = match &origin.body_budget {
        Some(text) => tank_origin::parse_body_budget(text)
            .map_err(|e| anyhow!("[origin] body_budget: {e}"))?,
        None => tank_origin::DEFAULT_BODY_BUDGET,
    };
    let options = tank_origin::Options {
        allow_fetch: origin.allow_fetch,
        admin_token: tank_origin::AdminToken::from_env().map_err(|e| anyhow!(e))?,
        body_budget,
    };
    let server = tank_origin::Server::start_with(origin.listen, recipes, options)
        .await
        .with_context(|| format!("[origin] cannot start the simulator on {}", origin.listen))?;
    for line in server.exposure_warning().iter().flat_map(|w| w.lines()) {
        eprintln!("[origin] {line}");
    }
    Ok(server)
}

/// First Ctrl-C (or SIGTERM, as CI runners and supervisors send): stop firing
/// and let shots in flight finish. Second: stop now.
async fn watch_signals(control: Control) {
    let mut signals = Signals::new();
    if !signals.next().await {
        return;
    }
    eprintln!("tank: stopping: waiting for shots in flight (Ctrl-C again to stop now)");
    control.stop.cancel();
    if signals.next().await {
        eprintln!("tank: stopping now");
        control.abort.cancel();
    }
}

/// Ctrl-C and, on Unix, SIGTERM, as one stream.
struct Signals {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn new() -> Self {
        Signals {
            #[cfg(unix)]
            term: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok(),
        }
    }

    /// Wait for the next signal; `false` when none can come.
    async fn next(&mut self) -> bool {
        #[cfg(unix)]
        if let Some(term) = self.term.as_mut() {
            return tokio::select! {
                ctrl_c = tokio::signal::ctrl_c() => ctrl_c.is_ok(),
                term = term.recv() => term.is_some(),
            };
        }
        tokio::signal::ctrl_c().await.is_ok()
    }
}

/// Raise the open-files limit to the hard limit, and fail clearly when even
/// that cannot hold one connection per instance.
fn raise_file_limit(needed: u64) -> Result<()> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Ok(());
    }
    if limit.rlim_max < needed {
        bail!(
            "the test needs {needed} open files (one per instance, plus {SPARE_FILES}), but the hard limit is {}: \
             lower `instances` or raise the limit (ulimit -Hn)",
            limit.rlim_max
        );
    }
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: setrlimit reads the struct we own.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 && limit.rlim_cur < needed
        {
            bail!(
                "cannot raise the open-files limit to {needed}: {}",
                std::io::Error::last_os_error()
            );
        }
    }
    Ok(())
}
