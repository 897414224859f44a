//! CPU work per request, to simulate a CPU-bound handler.
//!
//! A stage's `cpu` time is spent busy (arithmetic, not sleeping) on a
//! blocking thread, at most one request per core at a time, like a server
//! whose handlers compete for its cores: throughput tops out near
//! cores / cpu-time and queueing shows up as latency. Spinning on the async
//! workers instead would also stall every other connection, and, when the
//! simulator runs inside `tank`, the load generator itself.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

/// Runs busy work with at most one request per core at a time.
#[derive(Debug)]
pub(crate) struct CpuPool {
    cores: Arc<Semaphore>,
}

impl CpuPool {
    /// A pool as wide as the machine.
    pub fn new() -> CpuPool {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        CpuPool {
            cores: Arc::new(Semaphore::new(cores)),
        }
    }

    /// Spends `time` of busy CPU once a core is free.
    pub async fn burn(&self, time: Duration) {
        let Ok(permit) = Arc::clone(&self.cores).acquire_owned().await else {
            return;
        };
        let _ = tokio::task::spawn_blocking(move || {
            spin(time);
            drop(permit);
        })
        .await;
    }
}

/// Busy arithmetic until `time` has passed.
fn spin(time: Duration) {
    let start = Instant::now();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    while start.elapsed() < time {
        for _ in 0..1_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        black_box(x);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn burning_takes_the_time_asked_for() {
        let pool = CpuPool::new();
        let start = Instant::now();
        pool.burn(Duration::from_millis(20)).await;
        let took = start.elapsed();
        assert!(
            took >= Duration::from_millis(20) && took < Duration::from_secs(1),
            "{took:?}"
        );
    }
}
