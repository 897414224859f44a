//! Waveforms (mcperf's dynamic QPS): a rate that changes every interval,
//! written as one step of an `rps_schedule` and played as `const` steps, so
//! offsets stay closed form and they compose with `line`, `const` and `step`.
//!
//! - `random(min, max, interval, duration[, seed])`: a rate drawn uniformly
//!   from `[min, max]` for every interval (a whole number when both bounds
//!   are, as mcperf's `--qps_min`/`--qps_max`), until `duration` (a last,
//!   shorter interval when `duration` is not a multiple). Without a seed of its own
//!   the step draws from the queue's `arrivals_seed` (and its place in the
//!   schedule), so a run is repeated by that one seed.
//! - `trace(interval; r1 r2 r3 …)`: the rates given, one per interval.
//! - `trace_file(path, interval)`: the rates read from a file, separated by
//!   whitespace or newlines (`#` starts a comment to the end of the line).
//!
//! The schedule is split on `)` before steps are parsed, so a `trace_file`
//! path must not hold `(` or `)`.

use std::path::Path;

use super::rps::RpsStep;
use crate::duration::parse_duration_ms;
use crate::error::{PlanError, Result};
use crate::splitmix::{mix, unit, GAMMA};
use tank_config::bounds::{grouped, MAX_DURATION_MS, MAX_RPS, MAX_STEPS};

const KEY: &str = "rps_schedule";

/// The largest `trace_file` read: room for [`MAX_STEPS`] rates with comments.
const MAX_TRACE_BYTES: u64 = 16 << 20;

/// The waveform step names.
pub(crate) const NAMES: [&str; 3] = ["random", "trace", "trace_file"];

/// Expand waveform `name` (one of [`NAMES`]) with `params` (the text after
/// `(`) into at most `room` const steps in `out`. `seed` draws a `random`
/// step that names none; `step` is the step as written, for errors. Returns
/// whether `seed` was drawn from.
pub(crate) fn expand(
    name: &str,
    params: &str,
    step: &str,
    room: usize,
    seed: u64,
    out: &mut Vec<RpsStep>,
) -> Result<bool> {
    let fail = |message: String| PlanError::schedule(KEY, step, message);
    let params = params.trim_end().strip_suffix(')').unwrap_or(params);
    match name {
        "random" => random(params, room, seed, out).map_err(fail),
        "trace" => trace(params, room, out).map(|()| false).map_err(fail),
        _ => trace_file(params, room, out).map(|()| false).map_err(fail),
    }
}

/// `random(min, max, interval, duration[, seed])`.
/// Returns whether `seed` was drawn from (the step names no seed of its own).
fn random(params: &str, room: usize, seed: u64, out: &mut Vec<RpsStep>) -> Result<bool, String> {
    const USAGE: &str = "expected `random(min_rps, max_rps, interval, duration[, seed])`";
    let args: Vec<&str> = params.split(',').map(str::trim).collect();
    let (min, max, interval, duration, own_seed) = match args.as_slice() {
        [min, max, interval, duration] => (min, max, interval, duration, None),
        [min, max, interval, duration, seed] => (min, max, interval, duration, Some(*seed)),
        _ => return Err(format!("{USAGE}, found {} arguments", args.len())),
    };
    let (min, max) = (rate(min)?, rate(max)?);
    if min > max {
        return Err(format!(
            "the lowest rate {min} is above the highest {max}: {USAGE}"
        ));
    }
    let interval = interval_ms(interval)?;
    let duration = duration_ms(duration)?;
    let seed = match own_seed {
        Some(text) => text.parse::<u64>().map_err(|_| {
            format!(
                "`{text}` is not a seed: expected a whole number from 0 to {}",
                u64::MAX
            )
        })?,
        None => seed,
    };
    let stairs = stairs(duration, interval, room)?;
    // Whole bounds draw whole rates, as mcperf's --qps_min/--qps_max do.
    let whole = min.fract() == 0.0 && max.fract() == 0.0;
    let key = mix(seed);
    for k in 0..stairs {
        // unit() is in (0, 1]: v is in [0, 1).
        let v = 1.0 - unit(mix(key.wrapping_add(k.wrapping_mul(GAMMA))));
        let rps = if whole {
            (min + ((max - min + 1.0) * v).floor()).min(max)
        } else {
            min + (max - min) * v
        };
        let length = interval.min(duration - k as i64 * interval);
        out.push(RpsStep::constant(rps, length));
    }
    Ok(own_seed.is_none())
}

/// How many intervals of `interval` ms cover `duration` ms (the last may be
/// shorter), refused past `room` steps.
fn stairs(duration: i64, interval: i64, room: usize) -> Result<u64, String> {
    let stairs = (duration / interval + i64::from(duration % interval != 0)) as u64;
    if stairs > room as u64 {
        return Err(too_many(stairs));
    }
    Ok(stairs)
}

fn too_many(stairs: u64) -> String {
    format!(
        "{} intervals would give the schedule more than {} steps: expected a longer \
         interval or fewer rates",
        grouped(stairs),
        grouped(MAX_STEPS as u64)
    )
}

/// `trace(interval; r1 r2 r3 …)`.
fn trace(params: &str, room: usize, out: &mut Vec<RpsStep>) -> Result<(), String> {
    let (interval, rates) = params
        .split_once(';')
        .ok_or("expected `trace(interval; rps rps …)`, with a `;` after the interval")?;
    let interval = interval_ms(interval)?;
    let rates: Vec<&str> = rates
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|r| !r.is_empty())
        .collect();
    if rates.is_empty() {
        return Err("no rates after the `;`: expected at least one".into());
    }
    if rates.len() > room {
        return Err(too_many(rates.len() as u64));
    }
    for text in rates {
        out.push(RpsStep::constant(rate(text)?, interval));
    }
    Ok(())
}

/// `trace_file(path, interval)`.
fn trace_file(params: &str, room: usize, out: &mut Vec<RpsStep>) -> Result<(), String> {
    let (path, interval) = params
        .rsplit_once(',')
        .ok_or("expected `trace_file(path, interval)`")?;
    let interval = interval_ms(interval)?;
    let path = Path::new(path.trim());
    let cannot = |e: std::io::Error| format!("cannot read `{}`: {e}", path.display());
    let size = std::fs::metadata(path).map_err(cannot)?.len();
    if size > MAX_TRACE_BYTES {
        return Err(format!(
            "`{}` holds {} bytes: expected at most {} (a trace has at most {} rates)",
            path.display(),
            grouped(size),
            grouped(MAX_TRACE_BYTES),
            grouped(MAX_STEPS as u64)
        ));
    }
    let text = std::fs::read_to_string(path).map_err(cannot)?;
    let before = out.len();
    for (line, content) in text.lines().enumerate() {
        let content = content.split('#').next().unwrap_or_default();
        for token in content.split_whitespace() {
            if out.len() - before == room {
                return Err(format!("{}: {}", path.display(), too_many(room as u64 + 1)));
            }
            let rps = rate(token).map_err(|m| format!("{}:{}: {m}", path.display(), line + 1))?;
            out.push(RpsStep::constant(rps, interval));
        }
    }
    if out.len() == before {
        return Err(format!(
            "{}: no rates in the file: expected numbers separated by whitespace or newlines",
            path.display()
        ));
    }
    Ok(())
}

/// A rate: a number from 0 to [`MAX_RPS`].
fn rate(text: &str) -> Result<f64, String> {
    let text = text.trim();
    let value = text
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| format!("`{text}` is not a rate: expected a number like 100 or 2.5"))?;
    if value < 0.0 {
        return Err(format!(
            "`{text}` is negative: expected a rate of 0 or more"
        ));
    }
    if value > MAX_RPS {
        return Err(format!(
            "rate `{text}` is too high: expected at most {} shots a second in one queue",
            grouped(MAX_RPS as u64)
        ));
    }
    Ok(value)
}

/// A duration in the stepper's syntax (`30s`, `1m30s`, `0.5h`), nothing else
/// around it, at most 30 days.
fn duration_ms(text: &str) -> Result<i64, String> {
    let text = text.trim();
    let well_formed = !text.is_empty()
        && text.starts_with(|c: char| c.is_ascii_digit() || c == '.')
        && text
            .chars()
            .all(|c| c.is_ascii_digit() || ".dhms".contains(c));
    if !well_formed {
        return Err(format!(
            "`{text}` is not a duration: expected e.g. 10s, 1m30s or 0.5h"
        ));
    }
    let ms = parse_duration_ms(text)?;
    if ms > MAX_DURATION_MS {
        return Err(format!(
            "`{text}` is longer than 30 days: expected a duration of at most 30d"
        ));
    }
    Ok(ms)
}

/// An interval: a duration of at least 1 ms (`0.001s`: in the stepper's
/// syntax, as in the reference's, `1ms` is a minute).
fn interval_ms(text: &str) -> Result<i64, String> {
    let ms = duration_ms(text)?;
    if ms == 0 {
        return Err(format!(
            "the interval `{}` is 0: expected at least 0.001s",
            text.trim()
        ));
    }
    Ok(ms)
}

#[cfg(test)]
mod tests {
    use crate::error::PlanError;
    use crate::schedule::{split_steps, RpsSchedule};
    use proptest::prelude::*;
    use tank_config::bounds::MAX_STEPS;

    fn parsed(text: &str, seed: u64) -> RpsSchedule {
        RpsSchedule::parse_seeded(&split_steps(text), seed)
            .unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    /// (rate, duration ms) of every step.
    fn stairs(text: &str, seed: u64) -> Vec<(f64, i64)> {
        parsed(text, seed)
            .steps()
            .map(|s| (s.rates().0, s.duration_ms()))
            .collect()
    }

    /// The message of the error for `text`, which must name `step`.
    fn refused(text: &str, step: &str) -> String {
        match RpsSchedule::parse(&split_steps(text)) {
            Err(PlanError::Schedule {
                step: named,
                message,
                ..
            }) => {
                assert_eq!(named, step, "{text}: {message}");
                message
            }
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn a_trace_plays_one_rate_per_interval_after_other_steps() {
        assert_eq!(
            stairs("line(1,10,2s) trace(10s; 100 250.5\n0 7) const(3,1s)", 0)[1..],
            [
                (100.0, 10_000),
                (250.5, 10_000),
                (0.0, 10_000),
                (7.0, 10_000),
                (3.0, 1_000)
            ]
        );
        let plan = parsed("trace(1s; 2 4)", 0);
        let due: Vec<i64> = (0..plan.len())
            .map(|i| plan.offset_ms(i).unwrap())
            .collect();
        assert_eq!(due, [0, 500, 1000, 1250, 1500, 1750]);
    }

    #[test]
    fn random_draws_a_rate_per_interval_within_its_bounds_from_its_seed() {
        let steps = stairs("random(100, 200, 10s, 65s)", 5);
        assert_eq!(steps.len(), 7);
        assert!(
            steps.iter().all(|(rps, _)| (100.0..200.0).contains(rps)),
            "{steps:?}"
        );
        assert_eq!(steps.iter().map(|s| s.1).sum::<i64>(), 65_000);
        assert_eq!(steps[6].1, 5_000);
        // The queue's seed decides the rates, unless the step names its own.
        assert_eq!(steps, stairs("random(100, 200, 10s, 65s)", 5));
        assert_ne!(steps, stairs("random(100, 200, 10s, 65s)", 6));
        let own = stairs("random(100,200,10s,65s,42)", 5);
        assert_eq!(own, stairs("random(100,200,10s,65s,42)", 6));
        assert_ne!(own, steps);
        // Two random steps in one schedule draw different rates.
        let two = stairs("random(1,1000,1s,5s) random(1,1000,1s,5s)", 5);
        assert_ne!(two[..5], two[5..]);
        assert_eq!(stairs("random(3,3,1s,2s)", 0), [(3.0, 1000), (3.0, 1000)]);
    }

    #[test]
    fn a_trace_file_is_read_and_its_errors_name_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rates.txt");
        std::fs::write(&path, "# rates for a day\n100 200\n\n  300 # peak\n").unwrap();
        let text = format!("trace_file({}, 1m)", path.display());
        assert_eq!(
            stairs(&text, 0),
            [(100.0, 60_000), (200.0, 60_000), (300.0, 60_000)]
        );
        std::fs::write(&path, "100\n200 x5\n").unwrap();
        let message = refused(&text, &text);
        assert_eq!(
            message,
            format!(
                "{}:2: `x5` is not a rate: expected a number like 100 or 2.5",
                path.display()
            )
        );
        std::fs::write(&path, "# nothing\n").unwrap();
        assert!(refused(&text, &text).contains("no rates in the file"));
        let missing = "trace_file(/nonexistent/rates, 1s)";
        assert!(refused(missing, missing).starts_with("cannot read `/nonexistent/rates`"));
    }

    #[test]
    fn bad_waveforms_are_refused_with_what_was_expected() {
        for (text, says) in [
            ("random(1,2,1s)", "found 3 arguments"),
            (
                "random(5,2,1s,10s)",
                "the lowest rate 5 is above the highest 2",
            ),
            ("random(1,2,0s,10s)", "the interval `0s` is 0"),
            ("random(1,2,1s,31d)", "longer than 30 days"),
            ("random(1,2,1x,10s)", "`1x` is not a duration"),
            ("random(-1,2,1s,10s)", "`-1` is negative"),
            ("random(1,20000000,1s,10s)", "rate `20000000` is too high"),
            ("random(1,2,1s,10s,-3)", "`-3` is not a seed"),
            ("random(1,2,0.001s,30d)", "more than 100,000 steps"),
            ("trace(1s 100 200)", "with a `;` after the interval"),
            ("trace(1s;)", "no rates after the `;`"),
            ("trace(1s; 1 nan)", "`nan` is not a rate"),
            ("trace_file(1s)", "expected `trace_file(path, interval)`"),
        ] {
            let message = refused(text, text);
            assert!(message.contains(says), "{text}: {message}");
        }
        // The bound counts the steps before the waveform too.
        let text = format!("step(1,{},1,1s) trace(1s; 1 2)", MAX_STEPS - 1);
        assert!(refused(&text, "trace(1s; 1 2)").contains("more than 100,000 steps"));
    }

    fn waveform_text() -> impl Strategy<Value = String> {
        let number = prop_oneof![
            "[0-9]{1,4}(\\.[0-9]{1,2})?",
            proptest::sample::select(vec!["-1", "", "x", "1e3", "inf", "10000001", "0"])
                .prop_map(str::to_owned),
        ];
        let duration = prop_oneof![
            "[0-9]{1,3}(ms|[smhd])?",
            proptest::sample::select(vec!["0", "", "30d", "31d", "1.5.5s", "s"])
                .prop_map(str::to_owned),
        ];
        prop_oneof![
            (
                number.clone(),
                number.clone(),
                duration.clone(),
                duration.clone(),
                proptest::option::of("[0-9]{1,20}")
            )
                .prop_map(|(a, b, i, d, seed)| match seed {
                    Some(seed) => format!("random({a},{b},{i},{d},{seed})"),
                    None => format!("random({a},{b},{i},{d})"),
                }),
            (
                duration,
                proptest::collection::vec(number, 0..6),
                proptest::sample::select(vec![";", " ", "; "])
            )
                .prop_map(|(i, rates, sep)| format!("trace({i}{sep}{})", rates.join(" "))),
        ]
    }

    proptest! {
        /// Accepted waveforms are within bounds; anything else is refused
        /// naming its step; nothing panics.
        #[test]
        fn waveforms_are_within_bounds_or_refused(text in waveform_text(), seed in any::<u64>()) {
            match RpsSchedule::parse_seeded(&split_steps(&text), seed) {
                Ok(plan) => {
                    prop_assert!(plan.steps().count() <= MAX_STEPS);
                    prop_assert!(plan.steps().all(|s| (0.0..=10_000_000.0).contains(&s.rates().0)));
                    prop_assert!(plan.duration_ms() <= tank_config::bounds::MAX_DURATION_MS);
                }
                Err(PlanError::Schedule { step, message, .. }) => {
                    prop_assert_eq!(step, split_steps(&text)[0].clone());
                    prop_assert!(!message.is_empty());
                }
                Err(other) => prop_assert!(false, "{}: {}", text, other),
            }
        }

        #[test]
        fn no_waveform_text_panics_the_parser(name in proptest::sample::select(vec!["random", "trace", "trace_file"]), rest in "\\PC{0,40}") {
            let _ = RpsSchedule::parse(&split_steps(&format!("{name}({rest}")));
        }
    }
}
