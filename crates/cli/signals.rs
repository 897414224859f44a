//! SIGINT (Ctrl-C) and SIGTERM, watched on a thread of their own for the rest
//! of the process: `tank -c` and `--processes` each decide what the n-th one means.

/// SIGINTs and SIGTERMs seen so far by [`watch`]ers (each watcher counts
/// each signal: the count only ever grows).
static RECEIVED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A count that grows with each SIGINT or SIGTERM a [`watch`] sees: a wait
/// that a Ctrl-C should end (the dashboard's linger) watches it grow.
pub fn received() -> usize {
    RECEIVED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Call `on_signal(n)` for the n-th SIGINT or SIGTERM (from 1). The handlers
/// are registered before this returns, so no signal sent after it is missed.
pub fn watch(mut on_signal: impl FnMut(usize) + Send + 'static) -> std::io::Result<()> {
    let (ready, registered) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(error) => {
                    let _ = ready.send(Err(error));
                    return;
                }
            };
            runtime.block_on(async move {
                let mut signals = match Signals::new() {
                    Ok(signals) => signals,
                    Err(error) => {
                        let _ = ready.send(Err(error));
                        return;
                    }
                };
                let _ = ready.send(Ok(()));
                for n in 1.. {
                    signals.next().await;
                    RECEIVED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    on_signal(n);
                }
            });
        })?;
    registered
        .recv()
        .map_err(|_| std::io::Error::other("the signal thread ended"))?
}

/// SIGINT and SIGTERM, as one stream; registered when made.
struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> std::io::Result<Self> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Signals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    /// Wait for the next signal (forever, if none can come).
    async fn next(&mut self) {
        let received = tokio::select! {
            signal = self.interrupt.recv() => signal.is_some(),
            signal = self.terminate.recv() => signal.is_some(),
        };
        if !received {
            std::future::pending::<()>().await;
        }
    }
}

/// Wait `linger` (a dashboard or an endpoint kept up after the command), or
/// until a Ctrl-C or SIGTERM, which ends it now.
pub fn linger(linger: std::time::Duration) {
    // A command that watches no signal of its own (bench, sweep, search)
    // would die of a Ctrl-C instead of ending the linger.
    let watching = watch(|_| {});
    let seen = received();
    let until = std::time::Instant::now() + linger;
    while std::time::Instant::now() < until && (watching.is_err() || received() == seen) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Ctrl-C for the commands made of probes (`bench`, `sweep`, `search`,
/// `scan`): the first stops the probe running (its requests in flight finish
/// and are measured) and the command after it; the second stops it at once.
pub fn interrupt_probes() -> std::io::Result<tank_limit::Interrupt> {
    let interrupt = tank_limit::Interrupt::default();
    let steer = interrupt.clone();
    watch(move |n| {
        match n {
            1 => errln!(
                "tank: stopping: waiting for requests in flight, then reporting what was measured \
                 (Ctrl-C again to stop now)"
            ),
            2 => errln!("tank: stopping now"),
            _ => {}
        }
        steer.signal();
    })?;
    Ok(interrupt)
}
