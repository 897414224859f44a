//! The capacity model: `workers` serve at once, the rest queue in arrival
//! order with the wait in their latency, and `queue_limit` turns the excess
//! away with 503.

use std::time::{Duration, Instant};

use super::{get, start, within, Client};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_beyond_the_workers_wait_and_the_wait_is_in_their_latency() {
    within(async {
        let server = start(r#"{"workers": 2, "stages": [{"latency": "200ms"}]}"#).await;
        let addr = server.local_addr();
        let begin = Instant::now();
        let took: Vec<Duration> = futures_join(6, move || async move {
            let mut client = Client::connect(addr).await;
            let sent = Instant::now();
            assert_eq!(client.get("/").await.status, 200);
            sent.elapsed()
        })
        .await;
        // Six requests on two workers of 200 ms: three rounds, so the last
        // answer comes after 600 ms, and the fastest after one service time.
        let slowest = took.iter().max().copied().unwrap_or_default();
        let fastest = took.iter().min().copied().unwrap_or_default();
        assert!(slowest >= Duration::from_millis(550), "{took:?}");
        assert!(fastest >= Duration::from_millis(200), "{took:?}");
        assert!(begin.elapsed() < Duration::from_secs(5), "{took:?}");
        let status = get(addr, "/_admin/routes_status").await.text();
        assert_eq!(status, "/* 200 200ms workers=0/2 waiting=0");
        server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_queue_limit_requests_get_503_at_once() {
    within(async {
        let server =
            start(r#"{"workers": 1, "queue_limit": 1, "stages": [{"latency": "400ms"}]}"#).await;
        let addr = server.local_addr();
        // One in service, one waiting: the third is refused without waiting.
        let mut busy = Vec::new();
        for _ in 0..2 {
            busy.push(tokio::spawn(async move { get(addr, "/").await.status }));
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let sent = Instant::now();
        let refused = get(addr, "/").await;
        assert_eq!(refused.status, 503);
        assert_eq!(
            refused.text(),
            "all 1 workers are busy and 1 requests wait (queue_limit)"
        );
        assert!(
            sent.elapsed() < Duration::from_millis(300),
            "{:?}",
            sent.elapsed()
        );
        for request in busy {
            assert_eq!(request.await.unwrap(), 200);
        }
        server.shutdown().await;
    })
    .await;
}

/// Runs `n` copies of a task at once and returns their results.
async fn futures_join<F, Fut, T>(n: usize, task: F) -> Vec<T>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let handles: Vec<_> = (0..n).map(|_| tokio::spawn(task())).collect();
    let mut out = Vec::with_capacity(n);
    for handle in handles {
        out.push(handle.await.expect("task"));
    }
    out
}
