//! `tank plan`: stream each queue's plan once, printing a summary and
//! optionally writing the stpd.

use std::fmt::Write as _;
use std::fs::File;
use std::io;
use std::path::Path;

use anyhow::{bail, Context, Result};
use tank_config::{AmmoSource, LoadProfile, Override, QueueConfig, TestConfig};
use tank_plan::replay::CaptureStats;
use tank_plan::schedule::{self, RpsStep};
use tank_plan::words::count;
use tank_plan::writer::OffThreadWriter;
use tank_plan::{stpd, Plan, PlanTotals, Schedule};

/// Run `tank plan`: the run's prepare stage (every check `tank -c` makes
/// before its first shot, with no network needed), then each selected
/// queue's plan walked once.
pub fn run(
    config_path: &Path,
    section: Option<&str>,
    stpd_out: Option<&Path>,
    overrides: &[Override],
) -> Result<()> {
    let loaded = tank_config::load(config_path, overrides)?;
    // A replay's capture becomes a sessions file here, as `tank -c` does it.
    let mut prepared = tank_run::Prepared::new(&tank_run::Spec::new(loaded.clone()))?;
    for note in prepared.notes() {
        match note {
            tank_run::Note::Warning(text) => errln!("tank: warning: {text}"),
            tank_run::Note::Info(text) => errln!("tank: {text}"),
        }
    }
    for unresolved in prepared.unresolved_targets() {
        errln!("tank: warning: {unresolved} (here; `tank -c` looks it up again where it runs)");
    }
    for missing in prepared.missing_environment() {
        errln!("tank: warning: {missing} (here; `tank -c` reads it where it runs)");
    }
    let names = select_queues(prepared.config(), section)?;
    if stpd_out.is_some() && names.len() > 1 {
        bail!(
            "{}: --stpd writes one queue, and this config has {} ({}); choose one with --section",
            config_path.display(),
            names.len(),
            names.join(", ")
        );
    }
    let mut report = String::new();
    for (queue, plan) in prepared.plans_mut() {
        if !names.contains(&queue.name) {
            continue;
        }
        if let LoadProfile::Rps(text) | LoadProfile::Instances(text) = &queue.load_profile {
            if schedule::is_blank(text) {
                errln!(
                    "tank: warning: {}",
                    queue.load_profile_at.error(
                        "the schedule is empty; as yandex-tank does, every shot is due at 0 \
                         and the ammo is read once"
                    )
                );
            }
        }
        // Its errors name the config file, line, section and option.
        let summary = plan_queue(queue, plan, stpd_out)?;
        // Described as written: an imported capture by its own name.
        let written = loaded.queues.iter().find(|q| q.name == queue.name);
        describe(&mut report, written.unwrap_or(queue), &summary, stpd_out);
    }
    // With the stpd on stdout, the summary goes to stderr so the stpd stays clean.
    if stpd_out == Some(Path::new("-")) {
        err!("{report}");
    } else {
        out!("{report}");
    }
    Ok(())
}

/// The names of the queues `section` selects (all of them without one).
fn select_queues(config: &TestConfig, section: Option<&str>) -> Result<Vec<String>> {
    let names: Vec<String> = config.queues.iter().map(|q| q.name.clone()).collect();
    let Some(name) = section else {
        return Ok(names);
    };
    if names.iter().any(|n| n == name) {
        return Ok(vec![name.to_owned()]);
    }
    bail!(
        "{}: no queue `{name}`; the config has: {}",
        config.path.display(),
        names.join(", ")
    )
}

struct QueueSummary {
    totals: PlanTotals,
    format: &'static str,
    /// Full passes over the ammo its shots made (`None`: the shots ended
    /// within the first pass, perhaps at its end).
    passes: Option<u64>,
    schedule: Option<Schedule>,
    /// A replay's capture and pool.
    replay: Option<(CaptureStats, usize)>,
    /// A scenario file's compiled book.
    scenarios: Option<std::sync::Arc<tank_scenario::Book>>,
}

fn plan_queue(
    queue: &QueueConfig,
    plan: &mut Plan,
    stpd_out: Option<&Path>,
) -> Result<QueueSummary> {
    if stpd_out.is_some() && plan.scenarios().is_some() {
        bail!(
            "[{}] a scenario's requests are built as each run goes (variables, cookies): \
             an stpd file cannot hold them; plan without --stpd",
            queue.name
        );
    }
    if stpd_out.is_some() && plan.capture().is_some() {
        errln!(
            "tank: warning: [{}] an stpd file has no sessions: it keeps each request's due \
             time, tag and bytes, not the connection it goes on (a ready stpd file goes to any free instance, \
             as phantom fires one)",
            queue.name
        );
    }
    // Disk writes happen on their own thread, overlapping the planning.
    let mut out = match stpd_out {
        None => None,
        Some(path) if path == Path::new("-") => Some(OffThreadWriter::new(io::stdout())),
        Some(path) => {
            let file =
                File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
            Some(OffThreadWriter::new(file))
        }
    };
    let mut totals = PlanTotals::default();
    // A replay looped until stopped has no end: its first pass is shown.
    let endless = queue.loop_count == 0 && queue.ammo_limit == -1;
    let first_pass = plan
        .capture()
        .filter(|_| endless)
        .map(|capture| capture.requests_selected);
    let total = first_pass.or_else(|| plan.planned_count().map(|p| p.total()));
    let mut progress = crate::walk::WalkProgress::new(format!("[{}]", queue.name), total);
    // The shots of the ammo's first pass, known once a shot comes from the
    // second: the stepper reads no further than its last shot, so on an exact
    // multiple the passes it finished are one short of the shots' passes.
    let mut per_pass = None;
    let mut wrapped = false;
    loop {
        if !wrapped && plan.passes() > 0 {
            // The shot just taken was the second pass's first (a first pass
            // that gave none, as `chosen_cases` may, counts no passes).
            wrapped = true;
            per_pass = Some(totals.shots.saturating_sub(1)).filter(|&n| n > 0);
        }
        let Some(shot) = plan.next_shot()? else {
            break;
        };
        if first_pass.is_some_and(|requests| totals.shots >= requests) {
            break;
        }
        if let Some(out) = out.as_mut() {
            stpd::push_record(out.buffer(), shot.due_ms, shot.marker, shot.missile);
            out.commit().context("writing the stpd")?;
        }
        totals.observe(&shot);
        progress.at(totals.shots);
    }
    drop(progress);
    if let Some(mut out) = out {
        out.finish().context("writing the stpd")?;
    }
    let passes = match (per_pass, plan.passes()) {
        (Some(per_pass), _) => Some(totals.shots / per_pass),
        // It never read past its first pass's last shot: whether that was
        // the pass's last record is not known.
        (None, 0) => None,
        (None, passes) => Some(passes),
    };
    Ok(QueueSummary {
        totals,
        format: plan.ammo_format(),
        passes,
        schedule: plan.schedule().cloned(),
        replay: plan
            .capture()
            .map(|capture| (capture.clone(), plan.model().instances())),
        scenarios: plan.scenarios().cloned(),
    })
}

fn describe(
    report: &mut String,
    queue: &QueueConfig,
    summary: &QueueSummary,
    stpd_out: Option<&Path>,
) {
    let totals = &summary.totals;
    let _ = writeln!(report, "[{}]", queue.name);
    match &queue.load_profile {
        LoadProfile::Rps(text) => {
            let _ = writeln!(report, "  rps_schedule   {}", one_line(text));
        }
        LoadProfile::Instances(text) => {
            let _ = writeln!(report, "  instances      {}", one_line(text));
        }
        LoadProfile::StpdFile(path) => {
            let _ = writeln!(report, "  stpd_file      {}", path.display());
        }
        LoadProfile::Replay(replay) => {
            let connections = match replay.connections {
                tank_config::ReplayConnections::Captured => "captured connections",
                tank_config::ReplayConnections::PerRequest => "a connection per request",
            };
            let mut selection = String::new();
            if replay.skip > 1 {
                selection = format!(
                    ", one session in {} (replay_offset {})",
                    replay.skip, replay.offset
                );
            }
            let _ = writeln!(
                report,
                "  replay         speed {}, {connections}{selection}",
                num(replay.speed)
            );
        }
    }
    if let Some((capture, pool)) = &summary.replay {
        describe_capture(report, capture, *pool, queue);
        if queue.loop_count == 0 && queue.ammo_limit == -1 {
            let _ = writeln!(
                report,
                "  the test       replays the capture until stopped (loop = 0): one pass shown"
            );
        }
    }
    match &summary.schedule {
        Some(Schedule::Rps(rps)) => {
            let _ = writeln!(report, "  duration       {}", human_ms(rps.duration_ms()));
            let steps: Vec<String> = rps.steps().map(describe_step).collect();
            let _ = writeln!(report, "  steps          {}", compact(&steps));
            if rps.uses_seed() {
                let _ = writeln!(report, "  arrivals       {}", queue.arrivals.describe());
            }
        }
        Some(Schedule::Instances(instances)) => {
            let _ = writeln!(
                report,
                "  ramp-up        {} instances over {} (then each instance fires back to back)",
                instances.instances(),
                human_ms(instances.duration_ms())
            );
        }
        None => {}
    }
    let source = match &queue.ammo {
        Some(AmmoSource::File { path, .. }) => path.display().to_string(),
        Some(AmmoSource::Uris(uris)) => count(uris.len() as u64, "uri"),
        Some(AmmoSource::Memcached(workload)) => tank_plan::ammo::memcached::describe(workload),
        None => "in the stpd file".to_string(),
    };
    // uris are counted: their passes are the shots over them. A file's are
    // counted by its first pass's shots, once the plan read past it.
    let passes = match (&queue.ammo, summary.passes) {
        (Some(AmmoSource::Uris(uris)), _) if !uris.is_empty() => {
            count(totals.shots / uris.len() as u64, "full pass")
        }
        (Some(_), None) => "not past its first pass".to_string(),
        (_, passes) => count(passes.unwrap_or(0), "full pass"),
    };
    let _ = writeln!(
        report,
        "  ammo           {source} ({}), {passes}",
        summary.format,
    );
    let span = match (totals.first_due_ms, totals.last_due_ms) {
        (Some(first), Some(last)) => {
            format!(", due from {} to {}", human_ms(first), human_ms(last))
        }
        _ => String::new(),
    };
    if let Some(book) = &summary.scenarios {
        describe_scenarios(report, book, &queue.chosen_cases);
        let _ = writeln!(report, "  runs           {}{span}", totals.shots);
    } else {
        let _ = writeln!(report, "  shots          {}{span}", totals.shots);
    }
    if let Some(end) = Plan::closed_model_end(queue) {
        let _ = writeln!(report, "  the test       {end}");
    }
    // A scenario shot's bytes are its scenario's name: the requests are built as it runs.
    if let Some(average) = totals
        .bytes
        .checked_div(totals.shots)
        .filter(|_| summary.scenarios.is_none())
    {
        let _ = writeln!(
            report,
            "  request bytes  {} (average {average})",
            totals.bytes
        );
    }
    let mut tags: Vec<String> = totals
        .tags_by_count()
        .iter()
        .take(10)
        .map(|(tag, n)| {
            format!(
                "{} {n}",
                if tag.is_empty() {
                    "(none)".into()
                } else {
                    String::from_utf8_lossy(tag).into_owned()
                }
            )
        })
        .collect();
    let distinct = totals.distinct_tags();
    if distinct > 10 || totals.other_tags > 0 {
        tags.push(format!(
            "… {} distinct",
            if totals.other_tags > 0 {
                format!("over {distinct}")
            } else {
                distinct.to_string()
            }
        ));
    }
    if !tags.is_empty() {
        // A scenario run's tag is its scenario's name: the draw.
        let label = if summary.scenarios.is_some() {
            "drawn"
        } else {
            "tags"
        };
        let _ = writeln!(report, "  {label:<14} {}", tags.join(", "));
    }
    if let Some(path) = stpd_out {
        let _ = writeln!(
            report,
            "  stpd           {}",
            if path == Path::new("-") {
                "stdout".into()
            } else {
                path.display().to_string()
            }
        );
    }
}

/// What `tank plan` says of a scenario file: each scenario (its weight,
/// requests and sleeps per run, shortest run; its share of the runs among
/// those `chosen`, all when none is) and each source (its rows).
fn describe_scenarios(report: &mut String, book: &tank_scenario::Book, chosen: &[Vec<u8>]) {
    let runs = |scenario: &tank_scenario::Scenario| {
        chosen.is_empty()
            || chosen
                .iter()
                .any(|c| c.as_slice() == scenario.name.as_bytes())
    };
    let total_weight: u64 = book
        .scenarios()
        .iter()
        .filter(|s| runs(s))
        .map(|s| s.weight)
        .sum();
    let _ = writeln!(
        report,
        "  scenario file  {}: {} scenario(s), {} request(s), {} source(s)",
        book.path().display(),
        book.scenarios().len(),
        book.request_count(),
        book.sources().len()
    );
    for scenario in book.scenarios() {
        let ms = |d: std::time::Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        let share = if runs(scenario) {
            format!(
                "{:.1}% of runs",
                scenario.weight as f64 * 100.0 / total_weight.max(1) as f64
            )
        } else {
            "not in chosen_cases: never run".to_owned()
        };
        let _ = writeln!(
            report,
            "    {:<12} weight {} ({share}), {} request(s) a run, sleeps {}, at least {} a run",
            scenario.name,
            scenario.weight,
            scenario.steps.len(),
            human_ms(ms(scenario.sleeps())),
            human_ms(ms(scenario.min_duration())),
        );
    }
    for source in book.sources() {
        let what = match &source.data {
            tank_scenario::SourceData::Csv(table) => {
                format!("{} rows of {}", table.rows(), table.fields().join(", "))
            }
            tank_scenario::SourceData::Json(serde_json::Value::Array(items)) => {
                format!("a list of {}", items.len())
            }
            tank_scenario::SourceData::Json(serde_json::Value::Object(map)) => {
                format!("{} key(s)", map.len())
            }
            tank_scenario::SourceData::Json(_) => "one value".to_owned(),
        };
        let file = source
            .file
            .as_ref()
            .map(|f| format!(" {}", f.display()))
            .unwrap_or_default();
        let _ = writeln!(
            report,
            "    source {:<8} {}{file}: {what}",
            source.name, source.kind
        );
    }
}

/// What `tank plan` says of a replay's capture: Apiary's count-concurrent-jobs
/// and the capture's own rate, second by second.
fn describe_capture(report: &mut String, capture: &CaptureStats, pool: usize, queue: &QueueConfig) {
    let ms = |d: std::time::Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    let _ = writeln!(
        report,
        "  capture        {}, {} over {}; largest gap {}",
        count(capture.sessions, "session"),
        count(capture.requests, "request"),
        human_ms(ms(capture.duration)),
        human_ms(ms(capture.largest_gap)),
    );
    let _ = writeln!(
        report,
        "  concurrency    at most {} open at once ({} of this replay's)",
        count(capture.peak_sessions, "session"),
        capture.peak_selected
    );
    let why = if queue.places.is_written("instances") {
        "instances"
    } else if matches!(
        queue.load_profile,
        LoadProfile::Replay(tank_config::Replay {
            connections: tank_config::ReplayConnections::PerRequest,
            ..
        })
    ) {
        "instances: every request is a session of its own"
    } else {
        "the replay's peak of open sessions; set instances for more"
    };
    let _ = writeln!(report, "  session pool   {pool} ({why})");
    let rate = &capture.per_second;
    if rate.seconds > 0 {
        // The run's summary divides by the same span (its requests over the
        // capture's length), so the two agree.
        let span_s = capture.duration.as_secs_f64();
        let mean = if span_s > 0.0 {
            format!(
                "{:.1} on average over {}",
                capture.requests as f64 / span_s,
                human_ms(capture.duration.as_millis() as i64)
            )
        } else {
            "all at once".to_string()
        };
        let mut shown: Vec<String> = rate.first.iter().map(u64::to_string).collect();
        if rate.seconds > rate.first.len() as u64 {
            shown.push(format!(
                "… {} s more",
                rate.seconds - rate.first.len() as u64
            ));
        }
        let _ = writeln!(
            report,
            "  capture rps    {mean}; in each whole second: min {}, max {}: {}",
            rate.min,
            rate.max,
            shown.join(" ")
        );
    }
}

fn describe_step(step: &RpsStep) -> String {
    match *step {
        RpsStep::Const { rps, duration_ms } => {
            format!("const {} rps for {}", num(rps), human_ms(duration_ms))
        }
        RpsStep::Line { from, to, .. } => format!(
            "line {}→{} rps over {}",
            num(from),
            num(to),
            human_ms(step.duration_ms())
        ),
    }
}

/// At most 6 steps shown; the rest counted.
fn compact(steps: &[String]) -> String {
    if steps.len() <= 6 {
        return steps.join("; ");
    }
    format!("{}; … {} more", steps[..5].join("; "), steps.len() - 5)
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn num(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

/// `1h2m3.5s` style.
fn human_ms(ms: i64) -> String {
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let (h, m, s, rest) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000);
    let mut out = String::new();
    if h > 0 {
        let _ = write!(out, "{h}h");
    }
    if m > 0 {
        let _ = write!(out, "{m}m");
    }
    if s > 0 || rest > 0 {
        let _ = if rest > 0 {
            write!(out, "{s}.{rest:03}s")
        } else {
            write!(out, "{s}s")
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations() {
        assert_eq!(human_ms(500), "500ms");
        assert_eq!(human_ms(65_000), "1m5s");
        assert_eq!(human_ms(3_600_300), "1h0.300s");
    }
}
