//! A capture spans at most [`MAX_OFFSET_US`]: a time further from the others
//! is a corrupt clock, refused where it is read.
//!
//! One bad `$msec` (10²⁰ s) or pcap timestamp once imported into a session
//! hundreds of thousands of years out, which a replay would wait for and
//! `tank plan` tried to count second by second. The sessions reader refuses
//! such an offset; the importers refuse to write one, naming the two places
//! in the input whose times are too far apart (which of the two is wrong,
//! only the user can tell).

use std::fmt::Display;

use tank_plan::sessions::{human_span, MAX_OFFSET_US};

/// The earliest and latest times seen so far, and where each was read.
#[derive(Debug, Clone, Default)]
pub(crate) struct Span<L> {
    earliest: Option<(u64, L)>,
    latest: Option<(u64, L)>,
}

impl<L: Clone + Display> Span<L> {
    /// A span with nothing in it yet.
    pub(crate) fn new() -> Self {
        Span {
            earliest: None,
            latest: None,
        }
    }

    /// Take a time read at `here`; an error saying why when it is further
    /// than [`MAX_OFFSET_US`] from a time read before.
    pub(crate) fn check(&mut self, at_us: u64, here: &L) -> Result<(), String> {
        if let Some((earliest, there)) = &self.earliest {
            if at_us > earliest.saturating_add(MAX_OFFSET_US) {
                return Err(too_far(at_us - earliest, "after", there));
            }
        }
        if let Some((latest, there)) = &self.latest {
            if at_us.saturating_add(MAX_OFFSET_US) < *latest {
                return Err(too_far(latest - at_us, "before", there));
            }
        }
        if self.earliest.as_ref().is_none_or(|(t, _)| at_us < *t) {
            self.earliest = Some((at_us, here.clone()));
        }
        if self.latest.as_ref().is_none_or(|(t, _)| at_us > *t) {
            self.latest = Some((at_us, here.clone()));
        }
        Ok(())
    }
}

fn too_far(apart_us: u64, which: &str, there: &impl Display) -> String {
    format!(
        "its time is {} {which} that of {there}: a capture spans at most 366 days, so one of \
         the two clocks is wrong",
        human_span(apart_us)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_within_the_span_pass_and_one_too_far_either_way_is_named() {
        let mut span = Span::new();
        let day = 86_400_000_000;
        span.check(1000 * day, &"line 1").unwrap();
        span.check(1000 * day + MAX_OFFSET_US, &"line 2").unwrap();
        span.check(1000 * day, &"line 3").unwrap();
        let after = span.check(u64::MAX, &"line 4").unwrap_err();
        assert!(after.contains("years after that of line 1"), "{after}");
        let before = span.check(day, &"line 5").unwrap_err();
        assert!(before.contains("4 years before that of line 2"), "{before}");
    }
}
