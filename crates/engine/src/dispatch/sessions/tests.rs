//! The sessions discipline against its contract: every request once, in its
//! session's order, never early, each session on one instance; a session
//! waits for a free instance; halting counts what it drops.

use super::*;
use crate::io_threads::IoThreads;
use std::num::NonZeroUsize;

fn io(threads: usize) -> IoThreads {
    IoThreads::start(NonZeroUsize::new(threads).unwrap(), || {}).unwrap()
}

/// Request `j` of session `s`, due at `due_ms`.
fn request(s: u64, j: u64, due_ms: u64) -> Handed {
    Handed::Request(
        s,
        Shot {
            due: Some(Duration::from_millis(due_ms)),
            tag: Arc::from(&b""[..]),
            request: Arc::from(format!("{s}/{j}").as_bytes()),
        },
    )
}

/// What an instance did: (seat, session, request, when, due), or a hang-up (request `None`).
type Did = (Seat, u64, Option<u64>, Duration, Duration);

/// `instances` instances over `threads` threads taking turns until there are none.
fn replay(threads: usize, instances: usize, steps: Vec<Handed>) -> (Vec<Did>, Instant) {
    let io = io(threads);
    let spawner = io.spawner();
    let start = Instant::now() + Duration::from_millis(20);
    let dispatch = Arc::new(SessionDispatch::new(start, Arc::default()));
    let mut tasks = JoinSet::new();
    for index in 0..instances {
        let thread = spawner.thread_for(index);
        let seat = dispatch.seat(thread);
        let dispatch = Arc::clone(&dispatch);
        spawner.spawn(&mut tasks, thread, async move {
            let mut turns = Vec::new();
            let mut session = None;
            while let Some(turn) = dispatch.next(seat).await {
                let at = Instant::now().saturating_duration_since(start);
                match turn {
                    Turn::Fire(shot) => {
                        let text = String::from_utf8(shot.request.to_vec()).unwrap();
                        let (s, j) = text.split_once('/').unwrap();
                        let s: u64 = s.parse().unwrap();
                        session = Some(s);
                        let due = shot.due.unwrap();
                        turns.push((seat, s, Some(j.parse().unwrap()), at, due));
                    }
                    Turn::HangUp => {
                        turns.push((seat, session.take().unwrap(), None, at, Duration::ZERO));
                    }
                }
            }
            turns
        });
    }
    let timers = dispatch.start_timers(&spawner);
    let mut steps = steps;
    assert!(dispatch.offer(&mut steps));
    dispatch.close();
    let turns = std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
            .block_on(async move {
                let mut all = Vec::new();
                let waited = tokio::time::timeout(Duration::from_secs(10), async {
                    while let Some(done) = tasks.join_next().await {
                        all.extend(done.unwrap());
                    }
                })
                .await;
                assert!(waited.is_ok(), "an instance was never woken");
                drop(timers);
                all
            })
    })
    .join()
    .unwrap();
    dispatch.halt();
    (turns, start)
}

#[test]
fn requests_go_in_order_never_early_each_session_on_one_instance() {
    let steps = vec![
        Handed::Begin(0, Duration::ZERO),
        request(0, 0, 0),
        Handed::Begin(1, Duration::from_millis(10)),
        request(1, 0, 10),
        request(1, 1, 12),
        request(0, 1, 30),
        Handed::End(1),
        request(0, 2, 40),
        Handed::End(0),
    ];
    let (turns, _) = replay(2, 4, steps);
    for session in [0u64, 1] {
        let mine: Vec<&Did> = turns.iter().filter(|t| t.1 == session).collect();
        let requests: Vec<u64> = mine.iter().filter_map(|t| t.2).collect();
        let expected: Vec<u64> = (0..if session == 0 { 3 } else { 2 }).collect();
        assert_eq!(requests, expected, "session {session}");
        assert!(
            mine.iter().all(|t| t.0 == mine[0].0),
            "session {session} changed instance"
        );
        assert_eq!(
            mine.last().unwrap().2,
            None,
            "session {session} hangs up last"
        );
        for (_, _, request, at, due) in &mine {
            if request.is_some() {
                assert!(at >= due, "{request:?} of {session} at {at:?}, due {due:?}");
            }
        }
    }
}

#[test]
fn a_session_waits_for_a_free_instance_and_starts_late() {
    // One instance: session 1 (due at 5 ms) waits until session 0 ends at 30 ms.
    let steps = vec![
        Handed::Begin(0, Duration::ZERO),
        request(0, 0, 0),
        Handed::Begin(1, Duration::from_millis(5)),
        request(1, 0, 5),
        Handed::End(1),
        request(0, 1, 30),
        Handed::End(0),
    ];
    let (turns, _) = replay(1, 1, steps);
    let late = turns.iter().find(|t| t.1 == 1 && t.2 == Some(0)).unwrap();
    assert!(
        late.3 >= Duration::from_millis(30),
        "started at {:?}",
        late.3
    );
    assert_eq!(turns.len(), 5);
}

#[test]
fn halt_drops_the_requests_not_yet_fired_and_counts_them() {
    let dispatch = SessionDispatch::new(Instant::now() + Duration::from_secs(60), Arc::default());
    let mut steps = vec![
        Handed::Begin(0, Duration::ZERO),
        request(0, 0, 0),
        request(0, 1, 5),
        request(9, 0, 5),
        Handed::End(0),
    ];
    assert!(dispatch.offer(&mut steps));
    // The request of a session never begun is dropped, not counted.
    assert_eq!(dispatch.halt(), 2);
    assert!(dispatch.halted());
    assert!(!dispatch.offer(&mut vec![Handed::Begin(1, Duration::ZERO)]));
}
