//! A time window over a run's shots: `tank report PHOUT --from 30s --to 5m`.
//!
//! The talk's advice is to analyse the steady part of a run, not its ramp:
//! a window keeps the shots that *started* within it (a shot belongs to the
//! moment it was fired; its reply may end after the window), and every figure
//! is recomputed from them alone. Each bound is an offset from the run's
//! first shot (`30s`, `5m`, `1h30m`, `1500ms`, `0`) or an absolute time
//! (RFC 3339, `2026-11-26T16:00:36Z`, or `@UNIX_SECONDS`); the window is
//! `[from, to)`.

use std::fmt;

/// One end of a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// Milliseconds after the first shot's start.
    Offset(u64),
    /// A moment, ms since the Unix epoch.
    At(u64),
}

impl Bound {
    /// A bound as written: an offset (`30s`, `5m`, `1h30m`, `250ms`, `90` seconds)
    /// or a time (`2026-11-26T16:00:36Z`, `@1795708836`).
    pub fn parse(text: &str) -> Result<Bound, String> {
        let text = text.trim();
        let expected = || {
            format!(
                "`{text}`: expected an offset from the first shot (30s, 5m, 1h30m, 250ms) \
                 or a time (2026-11-26T16:00:36Z, or @UNIX_SECONDS)"
            )
        };
        if let Some(seconds) = text.strip_prefix('@') {
            let seconds: f64 = seconds.parse().map_err(|_| expected())?;
            if !(seconds.is_finite() && seconds >= 0.0) {
                return Err(expected());
            }
            return Ok(Bound::At((seconds * 1000.0).round() as u64));
        }
        if let Ok(at) = text.parse::<jiff::Timestamp>() {
            let ms = u64::try_from(at.as_millisecond()).map_err(|_| expected())?;
            return Ok(Bound::At(ms));
        }
        offset_ms(text).map(Bound::Offset).ok_or_else(expected)
    }

    /// The moment, ms since the Unix epoch, for a run whose first shot started at `first_ms`.
    pub fn resolve(self, first_ms: u64) -> u64 {
        match self {
            Bound::Offset(ms) => first_ms.saturating_add(ms),
            Bound::At(ms) => ms,
        }
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Bound::Offset(ms) => write!(f, "{} s after the first shot", *ms as f64 / 1000.0),
            Bound::At(ms) => {
                let at = i64::try_from(*ms)
                    .ok()
                    .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok());
                match at {
                    Some(at) => write!(f, "{at}"),
                    None => write!(f, "@{}", *ms as f64 / 1000.0),
                }
            }
        }
    }
}

/// `30s`, `5m`, `1h30m`, `250ms`, `1.5s`, `90` (seconds), `0`: whole units,
/// each a number and `h`, `m`, `s` or `ms`, largest first.
fn offset_ms(text: &str) -> Option<u64> {
    if text.is_empty() {
        return None;
    }
    if let Ok(seconds) = text.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| (seconds * 1000.0).round() as u64);
    }
    let mut total = 0f64;
    let mut rest = text;
    let mut last_unit = f64::INFINITY;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .filter(|&at| at > 0)?;
        let (number, tail) = rest.split_at(digits);
        let value: f64 = number.parse().ok()?;
        let (unit_ms, after) = if let Some(after) = tail.strip_prefix("ms") {
            (1.0, after)
        } else if let Some(after) = tail.strip_prefix('h') {
            (3_600_000.0, after)
        } else if let Some(after) = tail.strip_prefix('m') {
            (60_000.0, after)
        } else if let Some(after) = tail.strip_prefix('s') {
            (1000.0, after)
        } else {
            return None;
        };
        if unit_ms >= last_unit {
            return None;
        }
        last_unit = unit_ms;
        total += value * unit_ms;
        rest = after;
    }
    (total.is_finite() && total < u64::MAX as f64).then(|| total.round() as u64)
}

/// The window `[from, to)`; either end may be open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Window {
    /// The start (`None`: the run's).
    pub from: Option<Bound>,
    /// The end (`None`: the run's).
    pub to: Option<Bound>,
}

impl Window {
    /// Whether it keeps everything.
    pub fn is_whole(&self) -> bool {
        self.from.is_none() && self.to.is_none()
    }

    /// For a run whose first shot started at `first_ms`: the moments it spans,
    /// ms since the Unix epoch, `[from, to)`; an error when it is empty.
    pub fn resolve(&self, first_ms: u64) -> Result<Resolved, String> {
        let from = self.from.map_or(0, |b| b.resolve(first_ms));
        let to = self.to.map_or(u64::MAX, |b| b.resolve(first_ms));
        if to <= from {
            return Err(format!(
                "the window is empty: --from {} is not before --to {}",
                self.from.map_or("the start".into(), |b| b.to_string()),
                self.to.map_or("the end".into(), |b| b.to_string())
            ));
        }
        Ok(Resolved { from, to })
    }
}

/// A window placed on a run: the moments it spans, ms since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resolved {
    /// The first moment kept.
    pub from: u64,
    /// The first moment past it.
    pub to: u64,
}

impl Resolved {
    /// Whether a shot that started at `start_ms` is in the window.
    pub fn keeps(&self, start_ms: u64) -> bool {
        (self.from..self.to).contains(&start_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn offsets_and_times_are_read() {
        assert_eq!(Bound::parse("30s"), Ok(Bound::Offset(30_000)));
        assert_eq!(Bound::parse("5m"), Ok(Bound::Offset(300_000)));
        assert_eq!(Bound::parse("1h30m"), Ok(Bound::Offset(5_400_000)));
        assert_eq!(Bound::parse("1m30s"), Ok(Bound::Offset(90_000)));
        assert_eq!(Bound::parse("250ms"), Ok(Bound::Offset(250)));
        assert_eq!(Bound::parse("1.5s"), Ok(Bound::Offset(1_500)));
        assert_eq!(Bound::parse("90"), Ok(Bound::Offset(90_000)));
        assert_eq!(Bound::parse("0"), Ok(Bound::Offset(0)));
        assert_eq!(
            Bound::parse("@1795708836"),
            Ok(Bound::At(1_795_708_836_000))
        );
        assert_eq!(
            Bound::parse("2026-11-26T16:00:36Z"),
            Ok(Bound::At(1_795_708_836_000))
        );
        assert_eq!(
            Bound::parse("2026-11-26T19:00:36+03:00"),
            Ok(Bound::At(1_795_708_836_000))
        );
        for bad in [
            "", "5x", "s", "30s5m", "-5s", "@-1", "@x", "5m5m", "tomorrow",
        ] {
            let error = Bound::parse(bad).unwrap_err();
            assert!(error.contains("expected an offset"), "{bad}: {error}");
        }
    }

    #[test]
    fn a_window_keeps_the_shots_started_within_it() {
        let window = Window {
            from: Some(Bound::Offset(30_000)),
            to: Some(Bound::Offset(60_000)),
        };
        let resolved = window.resolve(1_000_000).unwrap();
        assert!(!resolved.keeps(1_029_999));
        assert!(resolved.keeps(1_030_000));
        assert!(resolved.keeps(1_059_999));
        assert!(!resolved.keeps(1_060_000));
        assert!(Window::default().is_whole());
        let open = Window {
            from: None,
            to: Some(Bound::At(5)),
        }
        .resolve(1)
        .unwrap();
        assert!(open.keeps(0) && !open.keeps(5));
        let empty = Window {
            from: Some(Bound::Offset(60_000)),
            to: Some(Bound::Offset(30_000)),
        };
        let error = empty.resolve(0).unwrap_err();
        assert!(
            error.starts_with("the window is empty: --from 60 s after the first shot"),
            "{error}"
        );
    }

    proptest! {
        #[test]
        fn parsing_never_panics(text in ".{0,24}") {
            let _ = Bound::parse(&text);
        }

        #[test]
        fn h_m_s_offsets_add_up(h in 0u64..100, m in 0u64..60, s in 0u64..60) {
            let text = format!("{h}h{m}m{s}s");
            prop_assert_eq!(Bound::parse(&text), Ok(Bound::Offset(((h * 60 + m) * 60 + s) * 1000)));
        }
    }
}
