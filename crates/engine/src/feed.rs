//! The feeder: runs a queue's plan on its own thread (reading ammo is
//! blocking file I/O) and hands owned shots to the queue's [`Dispatch`], in
//! order, a batch at a time; a replay's steps go to its [`SessionDispatch`].

use std::collections::VecDeque;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use tank_plan::replay::Step;
use tank_plan::{Model, Plan, PlanError};
use tank_stats::Tag;

use crate::dispatch::sessions::{Handed, SessionDispatch};
use crate::dispatch::{Discipline, Dispatch, Offered};
use crate::queue::Handoff;

/// Shots handed over at once: one lock of the dispatch for these many.
const BATCH: usize = 64;
/// Distinct tags shared, and their bytes at most; beyond this each shot gets its own copy.
const INTERNED_TAGS: usize = 4096;
const INTERNED_TAG_BYTES: usize = 1 << 20;
/// Distinct requests shared, and their bytes at most.
const INTERNED_REQUESTS: usize = 4096;
const INTERNED_REQUEST_BYTES: usize = 8 << 20;

/// A shot ready to fire.
#[derive(Debug, Clone)]
pub struct Shot {
    /// When it is due, from the start of the test; `None` for "as soon as an
    /// instance is free" (the closed model's shots after its start times), which
    /// neither waits nor has a lag.
    pub due: Option<Duration>,
    /// Its tag.
    pub tag: Tag,
    /// The request bytes, sent verbatim.
    pub request: Arc<[u8]>,
}

/// What the feeder did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeedReport {
    /// Shots the plan produced (including ones counted after the instances stopped).
    pub planned: u64,
    /// Whether the whole plan was walked (false when the run stopped it early).
    pub complete: bool,
}

/// Where `model`'s shots go, their due times counted from `start`: an open
/// model's are taken when due, by any free instance; a closed model's and a
/// ready stpd file's (which may be either) as phantom does, at once and held
/// until due, which is what makes an instance start at its start time; a
/// replay's sessions go to instances of their own.
/// A replay counts its sessions in `tally`; a scenario queue's shots are
/// runs its instances play through `play`.
pub(crate) fn handoff(
    model: &Model,
    start: std::time::Instant,
    tally: &Arc<crate::tally::SessionTally>,
    play: Option<Arc<crate::queue::scenario::Play>>,
) -> Handoff {
    let discipline = match model {
        Model::Open { .. } => Discipline::Open,
        Model::Closed { .. } | Model::Stpd { .. } => Discipline::Closed,
        Model::Sessions { .. } => {
            let sessions = SessionDispatch::new(start, Arc::clone(tally));
            return Handoff::Sessions(Arc::new(sessions));
        }
    };
    let dispatch = Arc::new(Dispatch::new(start, discipline));
    match play {
        Some(play) => Handoff::Scenarios(dispatch, play),
        None => Handoff::Shots(dispatch),
    }
}

/// Hand `batch` over, waiting while the dispatch is full. It sleeps: the
/// instances do not signal room, which would cost a wake-up per shot; a sleep
/// lets them take thousands. `pause` adapts to their pace: it doubles while
/// they leave the buffer over half full after a sleep (a slow schedule needs
/// few refills), up to a pause in which even 400k shots/s would not empty it,
/// and halves when they drain it faster. `false` when the queue halted.
fn hand_over(dispatch: &Dispatch, batch: &mut VecDeque<Shot>, pause: &mut Duration) -> bool {
    loop {
        match dispatch.offer(batch) {
            Offered::All => return true,
            Offered::Halted => return false,
            Offered::Full => {
                std::thread::sleep(*pause);
                *pause = if dispatch.over_half_full() {
                    (*pause * 2).min(MAX_REFILL_PAUSE)
                } else {
                    (*pause / 2).max(REFILL_PAUSE)
                };
            }
        }
    }
}

/// The feeder's shortest pause when the instances have all the shots they can hold.
const REFILL_PAUSE: Duration = Duration::from_micros(500);
/// Its longest: `dispatch::AHEAD` shots last this long at 400k shots/s.
const MAX_REFILL_PAUSE: Duration = Duration::from_millis(8);

/// One shared copy of byte strings that repeat from shot to shot: tags, and the
/// requests of ammo that is looped. A shot then costs a lookup instead of an
/// allocation, a copy, and a free on another thread. Up to `max_count` strings
/// and `max_bytes` bytes are kept; past that, each shot gets its own copy.
///
/// A looped ammo repeats its strings in the same order, pass after pass, so
/// each kept string remembers the one that came after it: the next string is
/// compared with that one first, and only a string that does not follow as
/// it did last time is hashed and looked up. Strings that seldom repeat (a
/// generated workload's requests, each for one of many keys) are not worth
/// the lookup: once the interner is full and more of the strings looked up
/// since were missing than found (past `max_count` missing), it stops looking.
pub(crate) struct Interner {
    // Looked up per shot; the strings are the user's own, so a fast hasher is safe.
    index: foldhash::HashMap<Arc<[u8]>, usize>,
    kept: Vec<Kept>,
    /// The kept string handed out last, if the last string was kept.
    last: Option<usize>,
    bytes: usize,
    max_count: usize,
    max_bytes: usize,
    /// Since the interner filled up: strings found, and strings missing.
    found: usize,
    missing: usize,
}

/// A string the interner keeps.
struct Kept {
    bytes: Arc<[u8]>,
    /// The kept string that followed it the last time (`usize::MAX`: none yet).
    next: usize,
}

impl Interner {
    pub(crate) fn new(max_count: usize, max_bytes: usize) -> Self {
        Interner {
            index: foldhash::HashMap::default(),
            kept: Vec::new(),
            last: None,
            bytes: 0,
            max_count,
            max_bytes,
            found: 0,
            missing: 0,
        }
    }

    pub(crate) fn get(&mut self, bytes: &[u8]) -> Arc<[u8]> {
        if self.missing > self.max_count.max(self.found) {
            return bytes.into();
        }
        if let Some(last) = self.last {
            let next = self.kept[last].next;
            if let Some(kept) = self.kept.get(next).filter(|kept| *kept.bytes == *bytes) {
                self.last = Some(next);
                return Arc::clone(&kept.bytes);
            }
        }
        let found = match self.index.get(bytes) {
            Some(found) => *found,
            None if self.index.len() < self.max_count
                && self.bytes + bytes.len() <= self.max_bytes =>
            {
                let fresh: Arc<[u8]> = bytes.into();
                self.bytes += bytes.len();
                self.index.insert(Arc::clone(&fresh), self.kept.len());
                self.kept.push(Kept {
                    bytes: fresh,
                    next: usize::MAX,
                });
                self.kept.len() - 1
            }
            None => {
                self.last = None;
                self.missing += 1;
                return bytes.into();
            }
        };
        if self.missing > 0 || self.index.len() == self.max_count {
            self.found += 1;
        }
        if let Some(last) = self.last {
            self.kept[last].next = found;
        }
        self.last = Some(found);
        Arc::clone(&self.kept[found].bytes)
    }
}

/// The feeder thread: its result says how much of the plan it walked.
pub type Feeder = JoinHandle<Result<FeedReport, PlanError>>;

/// Start the feeder of `plan`, handing its shots to `dispatch` and closing it
/// at the plan's end. When the queue halts before the plan ends, the rest is
/// still counted when `count_rest` allows it (the open model reports those
/// shots as unsent), without building them.
pub fn spawn(
    mut plan: Plan,
    name: String,
    count_rest: Arc<std::sync::atomic::AtomicBool>,
    dispatch: Arc<Dispatch>,
) -> std::io::Result<Feeder> {
    std::thread::Builder::new()
        .name(format!("feed-{name}"))
        .spawn(move || {
            let mut tags = Interner::new(INTERNED_TAGS, INTERNED_TAG_BYTES);
            let mut requests = Interner::new(INTERNED_REQUESTS, INTERNED_REQUEST_BYTES);
            let mut report = FeedReport::default();
            let mut pause = REFILL_PAUSE;
            let mut batch = VecDeque::with_capacity(BATCH);
            // The dispatch ends its instances once closed and drained, also on an error.
            let walked = (|| {
                let mut halted = false;
                while let Some(timed) = plan.next_timed()? {
                    report.planned += 1;
                    batch.push_back(Shot {
                        due: timed.due,
                        tag: tags.get(timed.shot.marker),
                        request: requests.get(timed.shot.missile),
                    });
                    if batch.len() == BATCH && !hand_over(&dispatch, &mut batch, &mut pause) {
                        halted = true;
                        break;
                    }
                }
                if !halted && !hand_over(&dispatch, &mut batch, &mut pause) {
                    halted = true;
                }
                if halted {
                    // The instances stopped: count the rest if asked, else stop here.
                    if !count_rest.load(std::sync::atomic::Ordering::Acquire) {
                        return Ok(false);
                    }
                    while plan.next_shot()?.is_some() {
                        report.planned += 1;
                    }
                }
                Ok(true)
            })();
            dispatch.close();
            report.complete = walked?;
            Ok(report)
        })
}

/// How far ahead of its due time a replay's step is handed over: the most
/// a replay buffers is its requests due in this much time (plus those late).
const REPLAY_AHEAD: Duration = Duration::from_millis(250);
/// Once it has handed over all it may, the replay's feeder sleeps this much
/// longer than it must, so that it wakes a few times a second with a batch to
/// hand over rather than once per request (the 10,000 a second of a busy replay).
const REPLAY_REFILL: Duration = Duration::from_millis(50);

/// Start the feeder of a replay's `plan`, handing its steps to `dispatch`
/// between [`REPLAY_AHEAD`] − [`REPLAY_REFILL`] and [`REPLAY_AHEAD`] before
/// they are due, and closing it at the plan's end.
/// Pacing by time, not by count, is what lets a session wait for a free
/// instance without stalling the others: the feeder never waits for room.
pub fn spawn_replay(
    mut plan: Plan,
    name: String,
    count_rest: Arc<std::sync::atomic::AtomicBool>,
    dispatch: Arc<SessionDispatch>,
) -> std::io::Result<Feeder> {
    std::thread::Builder::new()
        .name(format!("feed-{name}"))
        .spawn(move || {
            let mut tags = Interner::new(INTERNED_TAGS, INTERNED_TAG_BYTES);
            let mut requests = Interner::new(INTERNED_REQUESTS, INTERNED_REQUEST_BYTES);
            let mut report = FeedReport::default();
            let mut batch = Vec::with_capacity(BATCH);
            // A moment known to have passed: a step to hand over by then needs
            // no clock read (all of a replay that is behind, or due at once).
            let mut passed = std::time::Instant::now();
            let walked = (|| {
                while let Some(step) = plan.next_step()? {
                    let (handed, due) = match step {
                        Step::Begin { session, due } => (Handed::Begin(session, due), Some(due)),
                        Step::Request {
                            session,
                            due,
                            tag,
                            bytes,
                            ..
                        } => {
                            report.planned += 1;
                            let shot = Shot {
                                due: Some(due),
                                tag: tags.get(tag),
                                request: requests.get(bytes),
                            };
                            (Handed::Request(session, shot), Some(due))
                        }
                        Step::End { session } => (Handed::End(session), None),
                    };
                    let ahead = due.and_then(|due| {
                        // The start may lie ahead: a step due soon after it is handed over now.
                        let handed_at = (dispatch.start() + due).checked_sub(REPLAY_AHEAD)?;
                        if handed_at <= passed {
                            return None;
                        }
                        passed = std::time::Instant::now();
                        let wait = handed_at.checked_duration_since(passed)?;
                        Some(wait + REPLAY_REFILL)
                    });
                    let hand_over = ahead.is_some() || batch.len() == BATCH;
                    if hand_over && (!dispatch.offer(&mut batch) || !wait(&dispatch, ahead)) {
                        return halted(&mut plan, &mut report, &count_rest);
                    }
                    batch.push(handed);
                }
                if !dispatch.offer(&mut batch) {
                    return halted(&mut plan, &mut report, &count_rest);
                }
                Ok(true)
            })();
            dispatch.close();
            report.complete = walked?;
            Ok(report)
        })
}

/// Sleep `ahead` (if any), in slices, while the replay runs: `false` once it halted.
fn wait(dispatch: &SessionDispatch, ahead: Option<Duration>) -> bool {
    let Some(mut ahead) = ahead else {
        return true;
    };
    const SLICE: Duration = Duration::from_millis(50);
    loop {
        if dispatch.halted() {
            return false;
        }
        if ahead <= SLICE {
            std::thread::sleep(ahead);
            return true;
        }
        std::thread::sleep(SLICE);
        ahead -= SLICE;
    }
}

/// The replay halted: count the rest of its requests if asked (`Ok(false)`: not walked).
fn halted(
    plan: &mut Plan,
    report: &mut FeedReport,
    count_rest: &std::sync::atomic::AtomicBool,
) -> Result<bool, PlanError> {
    if !count_rest.load(std::sync::atomic::Ordering::Acquire) {
        return Ok(false);
    }
    while plan.next_shot()?.is_some() {
        report.planned += 1;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_bytes_share_one_copy_within_the_bounds() {
        let mut interner = Interner::new(2, 10);
        let first = interner.get(b"GET /a");
        assert!(Arc::ptr_eq(&first, &interner.get(b"GET /a")));
        // Over the byte budget: a copy of its own each time, nothing kept.
        let long = interner.get(b"GET /longer");
        assert!(!Arc::ptr_eq(&long, &interner.get(b"GET /longer")));
        assert!(Arc::ptr_eq(&interner.get(b"b"), &interner.get(b"b")));
        // Over the count: the same.
        let third = interner.get(b"c");
        assert!(!Arc::ptr_eq(&third, &interner.get(b"c")));
        assert_eq!(&*third, b"c");
        assert_eq!((interner.index.len(), interner.bytes), (2, 7));
    }

    #[test]
    fn a_looped_sequence_is_handed_the_same_copies_pass_after_pass() {
        let mut interner = Interner::new(10, 100);
        let pass = [&b"a"[..], b"b", b"a", b"c", b"x-too-long-to-keep"];
        let mut interner_small = Interner::new(10, 5);
        let first: Vec<_> = pass.iter().map(|bytes| interner.get(bytes)).collect();
        for _ in 0..3 {
            for (bytes, kept) in pass.iter().zip(&first) {
                let again = interner.get(bytes);
                assert_eq!(&*again, *bytes);
                assert!(Arc::ptr_eq(&again, kept), "{bytes:?}");
            }
        }
        // A string out of the usual order is still found, and still the same copy.
        assert!(Arc::ptr_eq(&interner.get(b"c"), &first[3]));
        assert!(Arc::ptr_eq(&interner.get(b"b"), &first[1]));
        // Over the byte budget: never kept, whatever comes before it.
        for _ in 0..2 {
            for bytes in pass {
                assert_eq!(&*interner_small.get(bytes), bytes);
            }
        }
        let long = interner_small.get(b"x-too-long-to-keep");
        assert!(!Arc::ptr_eq(
            &long,
            &interner_small.get(b"x-too-long-to-keep")
        ));
    }

    #[test]
    fn strings_that_seldom_repeat_stop_being_looked_up() {
        let mut interner = Interner::new(2, 100);
        let kept = interner.get(b"a");
        interner.get(b"b");
        // Full: two found for each one missing still looks.
        for round in 0..10u8 {
            assert!(Arc::ptr_eq(&interner.get(b"a"), &kept));
            assert!(!Arc::ptr_eq(&interner.get(b"b"), &kept));
            assert_eq!(&*interner.get(&[round]), &[round]);
        }
        assert!(Arc::ptr_eq(&interner.get(b"a"), &kept));
        // Mostly missing: past `max_count` more missing than found, it stops.
        for fresh in 0..30u8 {
            assert_eq!(&*interner.get(&[b'0', fresh]), &[b'0', fresh]);
        }
        let a = interner.get(b"a");
        assert_eq!(&*a, b"a");
        assert!(!Arc::ptr_eq(&a, &kept));
    }
}
