//! The stepper: pairs a schedule's due times with the ammo stream, applying
//! markers, `chosen_cases`, `loop` and `ammo_limit` exactly as the reference's
//! stepper does (docs/reference.md, section 3), with departures on purpose:
//! `ammo_limit = M` gives exactly M shots, inputs on which the reference
//! would loop forever are errors, and no plan goes on past
//! [`MAX_SHOTS`] shots. Every plan ends: the schedule bounds an rps plan, and
//! the ammo side stops, or fails, as soon as no further pass could give a shot.

use tank_config::bounds::{grouped, MAX_SHOTS};
use tank_config::{AmmoSource, QueueConfig};

use crate::ammo::{show, AmmoReader, Passes, ReadState, Slot};
use crate::error::{PlanError, Result};
use crate::marker::Marker;
use crate::schedule::{Cursor, Schedule};

/// One planned shot, borrowed from the stepper until the next one is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShotRef<'a> {
    /// 0-based index of the shot in its queue.
    pub seq: u64,
    /// When it is due, ms from the start of the test (as stpd writes it).
    pub due_ms: i64,
    /// The same in ns: drawn arrivals are planned finer than a ms (evenly
    /// spaced shots and stpd files are whole ms: `due_ms` × 10^6).
    pub due_ns: i64,
    /// Its marker (tag): from the file, or computed; may be empty.
    pub marker: &'a [u8],
    /// The request bytes, sent verbatim.
    pub missile: &'a [u8],
}

/// When the shot count runs out, besides the schedule and the ammo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Limit {
    None,
    /// The user's `ammo_limit`: exactly this many shots.
    Exact(u64),
    /// A limit the reference derives itself (from `uris` × `loop`, or from the
    /// first pass under an instances schedule): it stops once the count
    /// exceeds it, as the reference does.
    Over(i64),
}

/// Streams the shots of one queue.
pub(crate) struct Stepper {
    schedule: Schedule,
    reader: AmmoReader,
    slot: Slot,
    marker: Marker,
    chosen: Vec<Vec<u8>>,
    state: ReadState,
    limit: Limit,
    loop_limit: Option<i64>,
    first_pass_checked: bool,
    last_accept_pass: Option<u64>,
    seq: u64,
    /// Where the previous shot was in the schedule (shots are looked up in order).
    cursor: Cursor,
    stopped: bool,
    /// [`MAX_SHOTS`], lower in tests.
    shot_cap: u64,
}

impl Stepper {
    /// Plan `queue` with `schedule` (an rps or instances schedule) over `ammo`.
    pub(crate) fn new(queue: &QueueConfig, schedule: Schedule, ammo: &AmmoSource) -> Result<Self> {
        let rps = matches!(schedule, Schedule::Rps(_));
        let mut loop_limit = (queue.loop_count != -1).then_some(queue.loop_count);
        let user_limit = (queue.ammo_limit != -1).then_some(queue.ammo_limit);
        if loop_limit.is_none() && user_limit.is_none() && !rps {
            // An instances schedule has no end of its own: one pass over the ammo.
            loop_limit = Some(1);
        }
        let loops_end = loop_limit.is_some_and(|l| l != 0);
        let limit = match (ammo, loop_limit.filter(|l| *l != 0), user_limit) {
            // With `uris` and a loop limit the reference replaces any ammo_limit by len × loop.
            (AmmoSource::Uris(uris), Some(loops), _) => {
                Limit::Over((uris.len() as i64).saturating_mul(loops))
            }
            (_, _, None) => Limit::None,
            (_, _, Some(m)) if m > 0 => Limit::Exact(m as u64),
            // The reference fails on 0 too (a division by zero, or "Ammo limit should be specified").
            (_, _, Some(m)) => {
                return Err(PlanError::Config(format!(
                    "ammo_limit = {m}: expected a positive number of shots, or -1 for no limit"
                )))
            }
        };
        if !rps && limit == Limit::None && !loops_end {
            return Err(PlanError::Config(
                "an instances_schedule has no end of its own, and neither `loop` nor `ammo_limit` ends the ammo: \
                 expected `loop` = N passes or `ammo_limit` = N shots"
                    .into(),
            ));
        }
        Ok(Stepper {
            schedule,
            reader: AmmoReader::open(queue, ammo)?,
            slot: Slot::default(),
            marker: Marker::new(queue.autocases, queue.enum_ammo),
            chosen: queue.chosen_cases.clone(),
            state: ReadState {
                passes: Passes::new(loop_limit),
                written: 0,
            },
            limit,
            loop_limit,
            first_pass_checked: false,
            last_accept_pass: None,
            seq: 0,
            cursor: Cursor::default(),
            stopped: false,
            shot_cap: MAX_SHOTS,
        })
    }

    /// The schedule being followed.
    pub(crate) fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// How many shots the plan holds, when that follows from the schedule alone:
    /// an rps schedule whose ammo is looped without end (so every due time gets a
    /// shot), capped by `ammo_limit`. `None` when the ammo's end can end the plan
    /// first (a `loop` limit, `uris` × `loop`) or the schedule has no end.
    pub(crate) fn known_len(&self) -> Option<u64> {
        let len = self.schedule.len()?;
        if !self.state.passes.unlimited() {
            return None;
        }
        match self.limit {
            Limit::None => Some(len),
            Limit::Exact(max) => Some(len.min(max)),
            Limit::Over(_) => None,
        }
    }

    /// A scenario file's compiled book (`None` for other ammo).
    pub(crate) fn scenarios(&self) -> Option<&std::sync::Arc<tank_scenario::Book>> {
        self.reader.scenarios()
    }

    /// The ammo format being read (after the phantom/uri sniff).
    pub(crate) fn ammo_format(&self) -> &'static str {
        self.reader.format()
    }

    /// Passes over the ammo finished so far.
    pub(crate) fn passes(&self) -> u64 {
        self.state.passes.done()
    }

    /// The next shot, or `None` when the plan has ended.
    pub(crate) fn next_shot(&mut self) -> Result<Option<ShotRef<'_>>> {
        if self.stopped {
            return Ok(None);
        }
        if let Limit::Exact(max) = self.limit {
            if self.state.written >= max {
                self.stopped = true;
                // The reference reads (and writes) one shot more before it stops; read it
                // too, so that a malformed chunk right there fails here as it does there.
                if self
                    .schedule
                    .offset_ns_near(self.seq, &mut self.cursor)
                    .is_some()
                {
                    self.pull()?;
                }
                return Ok(None);
            }
        }
        let Some(due_ns) = self.schedule.offset_ns_near(self.seq, &mut self.cursor) else {
            self.stopped = true;
            return Ok(None);
        };
        if !self.pull()? {
            self.stopped = true;
            return Ok(None);
        }
        // An rps schedule never gets here (it has at most MAX_SHOTS shots); a plan
        // whose ammo sets its length (`loop` × a long pass) may.
        if self.seq >= self.shot_cap {
            self.stopped = true;
            return Err(PlanError::Config(format!(
                "the plan goes on past {} shots, the most one queue may fire: expected a smaller \
                 `loop`, or an `ammo_limit`",
                grouped(self.shot_cap)
            )));
        }
        self.state.written += 1;
        let seq = self.seq;
        self.seq += 1;
        match self.limit {
            Limit::Over(limit) if limit != 0 && self.state.written as i64 > limit => {
                self.stopped = true
            }
            _ => self.check_first_pass(),
        }
        Ok(Some(ShotRef {
            seq,
            due_ms: due_ns.div_euclid(1_000_000),
            due_ns,
            marker: self.slot.marker(),
            missile: &self.slot.missile,
        }))
    }

    /// After the first pass under an instances schedule with no ammo limit, the
    /// reference limits the shots to `loop` × (shots so far).
    fn check_first_pass(&mut self) {
        if self.first_pass_checked || self.state.passes.done() != 1 {
            return;
        }
        self.first_pass_checked = true;
        if self.schedule.len().is_none() && self.limit == Limit::None {
            let loops = self.loop_limit.unwrap_or(0);
            self.limit = Limit::Over(loops.saturating_mul(self.state.written as i64));
        }
    }

    /// Read missiles until one passes `chosen_cases`, with its marker in the slot.
    fn pull(&mut self) -> Result<bool> {
        loop {
            if !self.reader.advance(&mut self.state, &mut self.slot)? {
                return Ok(false);
            }
            self.slot
                .mark_untagged(&mut self.marker)
                .map_err(PlanError::Config)?;
            let done = self.state.passes.done();
            if self.chosen.is_empty()
                || self
                    .chosen
                    .iter()
                    .any(|c| c.as_slice() == self.slot.marker())
            {
                self.last_accept_pass = Some(done);
                return Ok(true);
            }
            let quiet_pass = match self.last_accept_pass {
                None => done >= 1,
                Some(pass) => done >= pass + 2,
            };
            if quiet_pass && !self.may_match_later() {
                if !self.state.passes.unlimited() {
                    // The reference would read the remaining passes and find nothing.
                    return Ok(false);
                }
                let chosen: Vec<String> = self.chosen.iter().map(|c| show(c)).collect();
                return Err(PlanError::Config(format!(
                    "chosen_cases `{}` matched no request in a whole pass over the ammo, and with no `loop` \
                     limit it would be searched forever; expected tags that occur in the ammo",
                    chosen.join(" ")
                )));
            }
        }
    }

    /// With `enum_ammo` the markers change every pass: a chosen `…#N` may still
    /// come, if it is less than [`MAX_SHOTS`] requests away. Other markers are
    /// the same on every pass (or, with `autocases = uniq`, random: a chosen case
    /// matches one by chance too rarely to wait for).
    fn may_match_later(&self) -> bool {
        if !self.marker.enumerates() {
            return false;
        }
        let next = self.marker.next_index();
        self.chosen.iter().any(|case| {
            case.rsplit(|b| *b == b'#')
                .next()
                .filter(|_| case.contains(&b'#'))
                .and_then(|n| std::str::from_utf8(n).ok()?.parse::<u64>().ok())
                .is_some_and(|n| n >= next && n - next < MAX_SHOTS)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use tank_config::{load_str, ConfigFormat, LoadProfile};

    /// A stepper over two chunks read three times under an instances schedule.
    fn three_passes(dir: &Path, shot_cap: u64) -> Stepper {
        let ammo = dir.join("ammo");
        std::fs::write(&ammo, b"5\nGET 1\n5\nGET 2\n").unwrap();
        let text = format!(
            "[phantom]\naddress = a:1\ninstances_schedule = start(1)\nloop = 3\nammofile = {}\n",
            ammo.display()
        );
        let mut config = load_str(&text, ConfigFormat::Ini, Path::new("t.ini"), &[]).unwrap();
        let queue = config.queues.remove(0);
        let LoadProfile::Instances(schedule) = &queue.load_profile else {
            unreachable!("an instances schedule")
        };
        let schedule = Schedule::instances(schedule).unwrap();
        let mut stepper = Stepper::new(&queue, schedule, queue.ammo.as_ref().unwrap()).unwrap();
        stepper.shot_cap = shot_cap;
        stepper
    }

    /// Shots until the end, or the error.
    fn count(mut stepper: Stepper) -> (u64, Option<String>) {
        let mut shots = 0;
        loop {
            match stepper.next_shot() {
                Ok(Some(_)) => shots += 1,
                Ok(None) => return (shots, None),
                Err(e) => return (shots, Some(e.to_string())),
            }
        }
    }

    #[test]
    fn a_plan_may_reach_the_shot_cap_but_not_pass_it() {
        let dir = tempfile::tempdir().unwrap();
        let (all, error) = count(three_passes(dir.path(), MAX_SHOTS));
        assert_eq!((all, error), (6, None));
        assert_eq!(count(three_passes(dir.path(), all)), (all, None));
        let (shots, error) = count(three_passes(dir.path(), all - 1));
        assert_eq!(shots, all - 1);
        assert_eq!(
            error.as_deref(),
            Some(
                "the plan goes on past 5 shots, the most one queue may fire: expected a smaller \
                 `loop`, or an `ammo_limit`"
            )
        );
    }
}
