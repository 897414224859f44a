//! The dispatch under both disciplines: every shot once, in order, never
//! early; most recently idle first; halting; a thread that cannot run.

use super::*;
use crate::io_threads::IoThreads;
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use std::collections::HashSet;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};

const BOTH: [Discipline; 2] = [Discipline::Open, Discipline::Closed];

fn io(threads: usize) -> IoThreads {
    IoThreads::start(NonZeroUsize::new(threads).unwrap(), || {}).unwrap()
}

fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(future)
}

/// Shot `id`, due at `due_ms` (or at once).
fn shot(id: usize, due_ms: Option<u64>) -> Shot {
    Shot {
        due: due_ms.map(Duration::from_millis),
        tag: Arc::from(&b""[..]),
        request: Arc::from(id.to_string().as_bytes()),
    }
}

fn id(shot: &Shot) -> usize {
    std::str::from_utf8(&shot.request).unwrap().parse().unwrap()
}

/// A shot as an instance got it.
#[derive(Debug, Clone, Copy)]
struct Taken {
    id: usize,
    seat: Seat,
    /// Its place in the order shots were handed out.
    order: usize,
    /// When it was handed out, from the start; `None` before it.
    at: Option<Duration>,
    due: Option<Duration>,
}

/// Instances taking shots until there are none; each "fires" at once.
struct Run {
    dispatch: Arc<Dispatch>,
    instances: JoinSet<Vec<Taken>>,
    _timers: JoinSet<()>,
}

/// `per_thread` instances on each of `io`'s threads.
fn run(io: &IoThreads, start: Instant, per_thread: usize, discipline: Discipline) -> Run {
    let spawner = io.spawner();
    let threads = spawner.threads().count();
    let dispatch = Arc::new(Dispatch::new(start, discipline));
    let order = Arc::new(AtomicUsize::new(0));
    let mut instances = JoinSet::new();
    for index in 0..threads * per_thread {
        let thread = spawner.thread_for(index);
        let seat = dispatch.seat(thread);
        let dispatch = Arc::clone(&dispatch);
        let order = Arc::clone(&order);
        spawner.spawn(&mut instances, thread, async move {
            let mut taken = Vec::new();
            while let Some(shot) = dispatch.next(seat).await {
                taken.push(Taken {
                    id: id(&shot),
                    seat,
                    order: order.fetch_add(1, Ordering::SeqCst),
                    at: Instant::now().checked_duration_since(start),
                    due: shot.due,
                });
            }
            taken
        });
    }
    let timers = dispatch.start_timers(&spawner);
    Run {
        dispatch,
        instances,
        _timers: timers,
    }
}

impl Run {
    fn offer_all(&self, shots: impl IntoIterator<Item = Shot>) {
        let mut batch: VecDeque<Shot> = shots.into_iter().collect();
        assert_eq!(self.dispatch.offer(&mut batch), Offered::All);
    }

    /// Everything handed out, in that order.
    fn finish(mut self) -> Vec<Taken> {
        let mut taken = block_on(async {
            let mut taken = Vec::new();
            while let Some(joined) =
                tokio::time::timeout(Duration::from_secs(10), self.instances.join_next())
                    .await
                    .expect("instances did not end")
            {
                taken.extend(joined.unwrap());
            }
            taken
        });
        taken.sort_by_key(|t| t.order);
        taken
    }
}

#[test]
fn shots_go_once_each_in_order_and_never_early() {
    for (discipline, threads) in [
        (Discipline::Open, 1),
        (Discipline::Open, 2),
        (Discipline::Closed, 2),
    ] {
        let io = io(threads);
        let run = run(&io, Instant::now(), 3, discipline);
        let dues = [0, 3, 10, 10, 10, 20, 30, 30];
        run.offer_all(dues.iter().enumerate().map(|(i, due)| shot(i, Some(*due))));
        run.dispatch.close();
        let taken = run.finish();
        let all: Vec<usize> = (0..dues.len()).collect();
        let mut ids: Vec<usize> = taken.iter().map(|t| t.id).collect();
        match (discipline, threads) {
            // One thread takes and records each shot in one go: the record is
            // the order they were taken in.
            (Discipline::Open, 1) => assert_eq!(ids, all),
            // Two threads may record theirs in either order; each thread's own
            // record is in the order it took them.
            (Discipline::Open, _) => {
                for thread in 0..threads {
                    let mine = taken.iter().filter(|t| t.seat.thread == thread);
                    assert!(mine.map(|t| t.id).is_sorted(), "{taken:?}");
                }
            }
            // Held shots due together may fire in any order.
            (Discipline::Closed, _) => {}
        }
        ids.sort_unstable();
        assert_eq!(ids, all, "{discipline:?} on {threads} threads: once each");
        for t in &taken {
            assert!(t.at >= t.due, "{discipline:?}: {t:?} went early");
        }
    }
}

#[test]
fn the_most_recently_idle_instance_takes_the_next_shot() {
    let io = io(1);
    let run = run(&io, Instant::now(), 8, Discipline::Open);
    // Due from 100 ms (by then every instance is idle), 5 ms apart.
    run.offer_all((0..10).map(|i| shot(i, Some(100 + 5 * i as u64))));
    run.dispatch.close();
    let taken = run.finish();
    assert_eq!(taken.len(), 10);
    // Each shot ends before the next is due, so one instance carries them
    // all; a thread that runs late finds several due at once and wakes a
    // second one for them, which may then be the most recently idle. First
    // come, all eight would take their turn.
    let seats: HashSet<Seat> = taken.iter().map(|t| t.seat).collect();
    assert!(seats.len() <= 3, "{taken:?}");
}

#[test]
fn a_thread_that_cannot_run_leaves_its_shots_to_the_other() {
    let io = io(2);
    let spawner = io.spawner();
    let start = Instant::now();
    let run = run(&io, start, 2, Discipline::Open);
    // Shots due from 1 s on, offered while both threads have idle instances
    // (a second leaves a busy machine time to block thread 0 before they are due).
    let from = start.elapsed().as_millis() as u64 + 1000;
    run.offer_all((0..10).map(|i| shot(i, Some(from + 5 * i as u64))));
    // Then thread 0 stops running for 2 s, as a busy CPU or an unscheduled vCPU would.
    std::thread::sleep(Duration::from_millis(10));
    let (held, holding) = std::sync::mpsc::channel();
    let mut blocker = JoinSet::new();
    spawner.spawn(&mut blocker, spawner.thread_for(0), async move {
        held.send(start.elapsed()).unwrap();
        std::thread::sleep(Duration::from_millis(2000));
    });
    let blocked_at = holding.recv().unwrap();
    assert!(
        blocked_at < Duration::from_millis(from),
        "the test started too late"
    );
    run.dispatch.close();
    let taken = run.finish();
    assert_eq!(taken.len(), 10);
    // No shot waited for thread 0 (taking it there before it stopped, say).
    for t in &taken {
        assert_eq!(t.seat.thread, 1, "{t:?} waited for the stopped thread");
    }
}

#[test]
fn closed_instances_start_at_their_time_then_fire_back_to_back() {
    let io = io(1);
    let run = run(&io, Instant::now(), 2, Discipline::Closed);
    // The closed model's shape: two start times, then shots due at once.
    let mut shots = vec![shot(0, Some(0)), shot(1, Some(200))];
    shots.extend((2..20).map(|i| shot(i, None)));
    run.offer_all(shots);
    run.dispatch.close();
    let taken = run.finish();
    let ids: Vec<usize> = taken.iter().map(|t| t.id).collect();
    let mut expected = vec![0];
    expected.extend(2..20);
    expected.push(1);
    assert_eq!(ids, expected);
    // One instance ran until the second start time: whichever held that shot
    // fired nothing else before it.
    let second = taken[19];
    assert!(second.at >= Some(Duration::from_millis(200)), "{second:?}");
    let back_to_back: HashSet<Seat> = taken[1..19].iter().map(|t| t.seat).collect();
    assert_eq!(back_to_back.len(), 1, "{taken:?}");
}

#[test]
fn idle_instances_wake_for_shots_offered_after_they_waited() {
    for discipline in BOTH {
        let io = io(2);
        let run = run(&io, Instant::now(), 2, discipline);
        std::thread::sleep(Duration::from_millis(20));
        run.offer_all((0..3).map(|i| shot(i, None)));
        std::thread::sleep(Duration::from_millis(20));
        run.offer_all((3..6).map(|i| shot(i, Some(0))));
        run.dispatch.close();
        assert_eq!(run.finish().len(), 6, "{discipline:?}");
    }
}

#[test]
fn a_start_ahead_holds_even_shots_due_at_zero() {
    for discipline in BOTH {
        let io = io(1);
        let start = Instant::now() + Duration::from_millis(40);
        let run = run(&io, start, 1, discipline);
        run.offer_all([shot(0, Some(0))]);
        run.dispatch.close();
        let taken = run.finish();
        assert_eq!(taken.len(), 1);
        assert!(
            taken[0].at.is_some(),
            "{discipline:?}: taken before the start"
        );
    }
}

#[test]
fn halting_ends_every_instance_and_refuses_more_shots() {
    for discipline in BOTH {
        let io = io(2);
        let run = run(&io, Instant::now(), 2, discipline);
        run.offer_all([shot(0, Some(3_600_000)), shot(1, None)]);
        if discipline == Discipline::Closed {
            // Both taken at once: wait until the buffer is empty.
            let waited = Instant::now();
            while !run.dispatch.lock().shots.is_empty() {
                assert!(waited.elapsed() < Duration::from_secs(10), "never taken");
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        // Open: both wait behind the one due in an hour. Closed: that one is
        // held, and the other has gone.
        let dropped = run.dispatch.halt();
        let mut late = VecDeque::from([shot(2, None)]);
        assert_eq!(run.dispatch.offer(&mut late), Offered::Halted);
        let taken = run.finish();
        let ids: Vec<usize> = taken.iter().map(|t| t.id).collect();
        match discipline {
            Discipline::Open => assert_eq!((dropped, ids), (2, vec![])),
            Discipline::Closed => assert_eq!((dropped, ids), (1, vec![1])),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Any mix of dated and undated shots, any number of instances and threads:
    /// every shot is handed out once, never before it is due, and nobody is left
    /// waiting (a lost wake-up would hang `finish`, which fails after 10 s). The
    /// open discipline hands them out in plan order.
    #[test]
    fn every_shot_goes_once_and_never_early(
        dues in vec(option::weighted(0.8, 0u64..40), 0..60),
        threads in 1usize..=3,
        per_thread in 1usize..=4,
        closed in any::<bool>(),
        sorted in any::<bool>(),
    ) {
        let discipline = if closed { Discipline::Closed } else { Discipline::Open };
        let mut dues = dues;
        if sorted {
            // As schedules make them: dated ones in order.
            dues.sort_by_key(|due| due.unwrap_or(0));
        }
        let io = io(threads);
        let run = run(&io, Instant::now(), per_thread, discipline);
        run.offer_all(dues.iter().enumerate().map(|(i, due)| shot(i, *due)));
        run.dispatch.close();
        let taken = run.finish();
        if discipline == Discipline::Open {
            // A thread takes and records a shot in one go, so each thread's
            // record is in the order it took them.
            for thread in 0..threads {
                let mine: Vec<usize> = taken
                    .iter()
                    .filter(|t| t.seat.thread == thread)
                    .map(|t| t.id)
                    .collect();
                prop_assert!(mine.is_sorted(), "thread {} took {:?}", thread, mine);
            }
        }
        let mut ids: Vec<usize> = taken.iter().map(|t| t.id).collect();
        ids.sort_unstable();
        prop_assert_eq!(ids, (0..dues.len()).collect::<Vec<_>>());
        for t in &taken {
            prop_assert!(t.at >= t.due.or(Some(Duration::ZERO)), "{:?} went early", t);
        }
    }
}

#[test]
fn the_buffer_takes_up_to_its_bound() {
    let dispatch = Dispatch::new(Instant::now(), Discipline::Open);
    let mut batch: VecDeque<Shot> = (0..AHEAD + 1).map(|i| shot(i, None)).collect();
    assert!(!dispatch.over_half_full());
    assert_eq!(dispatch.offer(&mut batch), Offered::Full);
    assert_eq!(batch.len(), 1);
    assert_eq!(id(&batch[0]), AHEAD);
    assert!(dispatch.over_half_full());
}
