//! Declared body sizes cost no memory: the body budget refuses what would
//! go over it, and a `tank origin` process serving hundreds of megabytes of
//! bodies keeps a peak RSS below the size of one of them.

use std::io::Read;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tank_origin::{Options, Server};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::{first_line_address, get, loopback, post, within, Running};

/// The 245-byte POST that took the simulator from 6 MB to 1.05 GB.
const FOUR_TIMES_256MB: &str = r#"[{"route":"/a","random_content":"256mb","stages":[{"at":0}]},{"route":"/b","random_content":"256mb","stages":[{"at":0}]},{"route":"/c","random_content":"256mb","stages":[{"at":0}]},{"route":"/d","random_content":"256mb","stages":[{"at":0}]}]"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_over_the_body_budget_is_refused_naming_the_route_and_sizes() {
    within(async {
        let server = Server::start(loopback(), Vec::new()).await.unwrap();
        let addr = server.local_addr();
        let refused = post(addr, "/_admin/add_recipe", FOUR_TIMES_256MB).await;
        assert_eq!(refused.status, 400);
        assert_eq!(
            refused.text(),
            "recipe for route /b: its body of 256mb would bring the bodies of all routes to \
             512mb, over the body budget of 256mb (raise it with --body-budget, or body_budget \
             in [origin])"
        );
        assert_eq!(
            get(addr, "/_admin/routes").await.text(),
            "",
            "nothing was added"
        );
        server.shutdown().await;
    })
    .await;
}

#[test]
fn the_origin_section_s_body_budget_is_kept_by_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let config = r#"
[phantom]
address = origin
uris = /
rps_schedule = const(1,1s)

[origin]
body_budget = 1kb
recipe_json = {"random_content": "2kb", "stages": [{}]}
"#;
    let output = crate::support::shoot(dir.path(), config, Duration::from_secs(30));
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "recipe for route /*: its body of 2kb would bring the bodies of all routes to 2kb, \
             over the body budget of 1kb"
        ),
        "{stderr}"
    );
}

/// What one `GET path` with `Connection: close` brings: the head, and the
/// body (kept only when `keep`, else just counted).
async fn fetch(addr: SocketAddr, path: &str, keep: bool) -> (String, usize, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut buf = vec![0u8; 1 << 20];
    let mut head = Vec::new();
    let mut kept = Vec::new();
    let mut length = 0;
    loop {
        let n = stream.read(&mut buf).await.expect("read");
        if n == 0 {
            break;
        }
        let mut chunk = &buf[..n];
        if !head.ends_with(b"\r\n\r\n") {
            let start = head.len();
            head.extend_from_slice(chunk);
            let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") else {
                continue;
            };
            head.truncate(end + 4);
            chunk = &chunk[end + 4 - start..];
        }
        length += chunk.len();
        if keep {
            kept.extend_from_slice(chunk);
        }
    }
    (String::from_utf8_lossy(&head).into_owned(), length, kept)
}

fn content_length(head: &str) -> Option<usize> {
    head.lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .and_then(|v| v.trim().parse().ok())
}

/// A process's peak resident memory (`VmHWM`), in bytes.
fn peak_rss(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let kb: usize = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse().ok())
        .expect("a VmHWM line");
    kb * 1024
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_bodies_are_sent_whole_without_being_held_in_memory() {
    within(async {
        const MB: usize = 1 << 20;
        let dir = tempfile::tempdir().unwrap();
        let recipe = dir.path().join("large.json");
        std::fs::write(
            &recipe,
            r#"[{"route": "/a", "random_content": "64mb", "stages": [{}]},
                {"route": "/b", "body": "<<64mb>>!", "stages": [{}]},
                {"route": "/c", "random_content": "64mb", "stages": [{}]},
                {"route": "/z", "random_content": "16mb", "headers": {"content-encoding": "gzip"},
                 "stages": [{}]}]"#,
        )
        .unwrap();
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_tank"))
            .args(["origin", "--listen", "127.0.0.1:0", "--recipe"])
            .arg(&recipe)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("start tank origin");
        let mut running = Running(child);
        let addr = first_line_address(&mut running).await;
        for (path, declared) in [("/a", 64 * MB), ("/b", 64 * MB + 1), ("/c", 64 * MB)] {
            let (head, length, _) = fetch(addr, path, false).await;
            assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
            assert_eq!(content_length(&head), Some(declared), "{path}: {head}");
            assert_eq!(length, declared, "{path}: every declared byte arrives");
        }
        let (head, length, gzipped) = fetch(addr, "/z", true).await;
        assert_eq!(content_length(&head), Some(length));
        let mut plain = 0;
        let mut decoder = flate2::read::GzDecoder::new(gzipped.as_slice());
        let mut buf = vec![0u8; MB];
        loop {
            match decoder.read(&mut buf).expect("a valid gzip body") {
                0 => break,
                n => plain += n,
            }
        }
        assert_eq!(plain, 16 * MB);
        let peak = peak_rss(running.0.id());
        assert!(
            peak < 64 * MB,
            "peak RSS {} MB after sending 208 MB of bodies",
            peak / MB
        );
    })
    .await;
}

/// An origin on loopback serving a `size`-byte page after `delay`, counting
/// the most requests it had in flight at once.
async fn slow_origin(size: usize, delay: Duration) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind(loopback()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (in_flight, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let seen = Arc::clone(&most);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let (in_flight, most) = (Arc::clone(&in_flight), Arc::clone(&most));
            tokio::spawn(async move {
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n")
                    && stream.read(&mut byte).await.is_ok_and(|n| n == 1)
                {
                    head.push(byte[0]);
                }
                tokio::time::sleep(delay).await;
                let reply = format!("HTTP/1.1 200 OK\r\nContent-Length: {size}\r\n\r\n");
                let _ = stream.write_all(reply.as_bytes()).await;
                let _ = stream.write_all(&vec![b'p'; size]).await;
                in_flight.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    (addr, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_posted_fetches_never_download_more_than_the_budget_together() {
    within(async {
        let (origin, most) = slow_origin(600 << 10, Duration::from_millis(300)).await;
        let options = Options {
            allow_fetch: true,
            body_budget: 1 << 20,
            ..Options::default()
        };
        let server = Server::start_with(loopback(), Vec::new(), options)
            .await
            .unwrap();
        let addr = server.local_addr();
        let posts = ["/a", "/b", "/c", "/d"].map(|route| {
            let recipe = format!(
                r#"{{"route": "{route}", "origin": "http://{origin}/page", "stages": [{{}}]}}"#
            );
            tokio::spawn(async move { post(addr, "/_admin/add_recipe", &recipe).await })
        });
        let mut replies = Vec::new();
        for post in posts {
            replies.push(post.await.unwrap());
        }
        // One load at a time: each origin is fetched up to the room left when its turn comes.
        assert_eq!(most.load(Ordering::SeqCst), 1, "fetches in flight at once");
        let created = replies.iter().filter(|r| r.status == 201).count();
        assert_eq!(created, 1, "{replies:?}");
        for refused in replies.iter().filter(|r| r.status != 201) {
            assert_eq!(refused.status, 400);
            assert!(
                refused
                    .text()
                    .ends_with("its page is larger than the 424kb the body budget has left"),
                "{}",
                refused.text()
            );
        }
        server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recipe_of_many_routes_is_loaded_in_linear_time_and_too_many_are_refused() {
    within(async {
        let server = Server::start(loopback(), Vec::new()).await.unwrap();
        let addr = server.local_addr();
        let list = |n: usize| {
            let items: Vec<String> = (0..n)
                .map(|i| format!(r#"{{"route": "/r{i}*", "body": "{i}", "stages": [{{}}]}}"#))
                .collect();
            format!("[{}]", items.join(","))
        };
        // Quadratic before, 10,000 routes ran past this test's 20 s limit (a debug
        // build on a busy machine); linear now. The limit bounds it, nothing times it.
        let added = post(addr, "/_admin/add_recipe", &list(10_000)).await;
        assert_eq!(added.status, 201);
        assert_eq!(
            get(addr, "/_admin/routes").await.text().lines().count(),
            10_000
        );
        assert_eq!(get(addr, "/r9999/x").await.text(), "9999");
        let refused = post(addr, "/_admin/add_recipe", &list(10_001)).await;
        assert_eq!(refused.status, 400);
        assert_eq!(
            refused.text(),
            "recipe: a list of 10001 recipes: a simulator holds at most 10000 routes"
        );
        server.shutdown().await;
    })
    .await;
}
