//! The origin simulator over real HTTP on 127.0.0.1: every recipe feature,
//! every admin route, stage timing, and each fault as a raw TCP client sees it.
//!
//! Servers start in-process on ephemeral ports (one per test), and a few
//! tests run the `tank origin` binary. Clients are raw: requests are written
//! by hand and replies parsed here, so what is checked is what is on the wire.
//! Every test is bounded by [`within`]. The admin API's guards are in
//! [`exposure`], the body budget and memory in [`memory`].

mod capacity;
mod exposure;
mod memory;

use std::future::Future;
use std::io::{ErrorKind, Read};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tank_origin::{Recipe, Server};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// The longest any test here may take.
const LIMIT: Duration = Duration::from_secs(20);

async fn within<F: Future>(test: F) -> F::Output {
    tokio::time::timeout(LIMIT, test)
        .await
        .expect("the test ran longer than its limit")
}

fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

async fn start(recipe: &str) -> Server {
    let recipes = Recipe::from_json(recipe).expect("test recipe parses");
    Server::start(loopback(), recipes)
        .await
        .expect("simulator starts")
}

/// A parsed reply.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// A keep-alive HTTP/1.1 connection that reads Content-Length replies.
struct Client {
    stream: BufReader<TcpStream>,
}

impl Client {
    async fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).await.expect("connect");
        Client {
            stream: BufReader::new(stream),
        }
    }

    async fn request(&mut self, method: &str, path: &str, body: &str) -> Reply {
        self.request_with(method, path, "", body).await
    }

    /// A request with extra header lines (each ending in `\r\n`).
    async fn request_with(&mut self, method: &str, path: &str, headers: &str, body: &str) -> Reply {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: test\r\n{headers}Content-Length: {}\r\n\r\n",
            body.len()
        );
        let stream = self.stream.get_mut();
        stream.write_all(head.as_bytes()).await.expect("send head");
        stream.write_all(body.as_bytes()).await.expect("send body");
        let mut status_line = String::new();
        self.stream
            .read_line(&mut status_line)
            .await
            .expect("read status line");
        let status = status_code(&status_line).expect("a valid status line");
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            self.stream.read_line(&mut line).await.expect("read header");
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').expect("a header line");
            headers.push((name.to_owned(), value.trim().to_owned()));
        }
        let length: usize = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
            .map_or(0, |(_, v)| v.parse().expect("numeric content-length"));
        let mut body = vec![0; length];
        self.stream.read_exact(&mut body).await.expect("read body");
        Reply {
            status,
            headers,
            body,
        }
    }

    async fn get(&mut self, path: &str) -> Reply {
        self.request("GET", path, "").await
    }
}

/// The status code of an HTTP/1.x status line, if it is one.
fn status_code(line: &str) -> Option<u16> {
    let mut parts = line.split(' ');
    let version = parts.next()?;
    let code = parts.next()?;
    if !version.starts_with("HTTP/1.") || code.len() != 3 {
        return None;
    }
    code.parse().ok()
}

async fn get(addr: SocketAddr, path: &str) -> Reply {
    Client::connect(addr).await.get(path).await
}

async fn post(addr: SocketAddr, path: &str, body: &str) -> Reply {
    Client::connect(addr)
        .await
        .request("POST", path, body)
        .await
}

/// Sends one GET and returns what a raw client reads until EOF or an error.
async fn raw_exchange(addr: SocketAddr, path: &str) -> (Vec<u8>, std::io::Result<()>) {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let head = format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n");
    stream.write_all(head.as_bytes()).await.expect("send");
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) => return (received, Ok(())),
            Ok(n) => received.extend_from_slice(&buf[..n]),
            Err(e) => return (received, Err(e)),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_recipe_every_request_gets_406_naming_add_recipe() {
    within(async {
        let server = Server::start(loopback(), Vec::new()).await.unwrap();
        for path in ["/", "/news/1"] {
            let reply = get(server.local_addr(), path).await;
            assert_eq!(reply.status, 406);
            assert!(
                reply.text().contains("/_admin/add_recipe"),
                "{}",
                reply.text()
            );
        }
        let current = get(server.local_addr(), "/_admin/current_recipe").await;
        assert!(current.text().contains("/_admin/add_recipe"));
        server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_api_adds_lists_and_removes_recipes() {
    within(async {
        let server = Server::start(loopback(), Vec::new()).await.unwrap();
        let addr = server.local_addr();
        let status = get(addr, "/_admin/status").await;
        assert_eq!((status.status, status.text().as_str()), (200, "ok!"));

        let recipes = r#"[{"route": "/news*", "stages": [{"at": 0, "status": 201, "latency": "5ms"}]},
                          {"stages": [{"at": 0, "status": 202}, {"at": "1h", "status": 503}]}]"#;
        let added = post(addr, "/_admin/add_recipe", recipes).await;
        assert_eq!(added.status, 201, "{}", added.text());
        assert_eq!(added.header("content-type"), Some("application/json"));

        // As posted (keys in JSON's canonical order), most specific route first.
        assert_eq!(
            get(addr, "/_admin/current_recipe").await.text(),
            r#"[{"route":"/news*","stages":[{"at":0,"latency":"5ms","status":201}]},"#.to_owned()
                + r#"{"stages":[{"at":0,"status":202},{"at":"1h","status":503}]}]"#
        );

        assert_eq!(get(addr, "/_admin/routes").await.text(), "/news*\n/*");
        assert_eq!(
            get(addr, "/_admin/routes_status").await.text(),
            "/news* 201 5ms\n/* 202 0ms"
        );
        assert_eq!(get(addr, "/news/today").await.status, 201);
        assert_eq!(get(addr, "/sport").await.status, 202);

        let restarted = get(addr, "/_admin/restart").await;
        assert_eq!((restarted.status, restarted.text().as_str()), (200, "ok!"));
        assert_eq!(get(addr, "/_admin/routes").await.text(), "");
        assert_eq!(get(addr, "/sport").await.status, 406);
        server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_recipe_updates_the_recipe_of_the_same_route() {
    within(async {
        let server = start(r#"{"route": "/a*", "stages": [{"status": 200}]}"#).await;
        let addr = server.local_addr();
        assert_eq!(get(addr, "/a").await.status, 200);
        let updated = post(
            addr,
            "/_admin/add_recipe",
            r#"{"route": "/a*", "stages": [{"status": 500}]}"#,
        )
        .await;
        assert_eq!(updated.status, 201);
        assert_eq!(get(addr, "/a").await.status, 500);
        assert_eq!(get(addr, "/_admin/routes").await.text(), "/a*");
        assert_eq!(get(addr, "/b").await.status, 404);
        server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_recipe_is_refused_with_its_place_and_changes_nothing() {
    within(async {
        let server = start(r#"{"stages": [{"status": 200}]}"#).await;
        let addr = server.local_addr();
        let refused = post(
            addr,
            "/_admin/add_recipe",
            r#"{"stages": [{"at": 0, "latency": "soon"}]}"#,
        )
        .await;
        assert_eq!(refused.status, 400);
        assert!(
            refused
                .text()
                .starts_with("recipe.stages[0].latency: expected a latency"),
            "{}",
            refused.text()
        );
        let wrong_method = get(addr, "/_admin/add_recipe").await;
        assert_eq!(wrong_method.status, 405);
        assert_eq!(get(addr, "/").await.status, 200);
        server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stages_switch_at_their_time() {
    within(async {
        let server = Server::start(loopback(), Vec::new()).await.unwrap();
        let addr = server.local_addr();
        let recipe = r#"{"stages": [{"at": 0, "status": 200},
                                    {"at": 1000, "status": 503},
                                    {"at": "2000ms", "status": 200}]}"#;
        let mut client = Client::connect(addr).await;
        let before_post = Instant::now();
        assert_eq!(
            client
                .request("POST", "/_admin/add_recipe", recipe)
                .await
                .status,
            201
        );
        let post_took = before_post.elapsed();
        let mut switches = Vec::new();
        let mut last = 200;
        while before_post.elapsed() < Duration::from_millis(2800) {
            let sent = before_post.elapsed();
            let status = client.get("/").await.status;
            let received = before_post.elapsed();
            if status != last {
                switches.push((status, sent, received));
                last = status;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let observed: Vec<u16> = switches.iter().map(|s| s.0).collect();
        assert_eq!(observed, [503, 200], "{switches:?}");
        for ((_, sent, received), due) in switches.iter().zip([1000, 2000]) {
            let due = Duration::from_millis(due);
            // The stages start when the server takes the POST (after `before_post`, by
            // `post_took`), and the server answers the GET before `received`: so never
            // early. A request sent well after its stage began must see it (the
            // margin is what a busy machine keeps: the stage's second apart).
            assert!(
                *received >= due && *sent <= post_took + due + Duration::from_millis(500),
                "due {due:?}, sent at {sent:?}, answered by {received:?}"
            );
        }
        server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn before_the_first_stage_starts_the_first_stage_applies() {
    within(async {
        let server = start(r#"{"stages": [{"at": "10s", "status": 418}]}"#).await;
        assert_eq!(get(server.local_addr(), "/").await.status, 418);
        server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_content_has_its_size_and_headers_are_served() {
    within(async {
        let server = start(
            r#"{"random_content": "428kb", "headers": {"content-type": "text/html", "x-sim": "yes"},
                "stages": [{"status": 200}]}"#,
        )
        .await;
        let mut client = Client::connect(server.local_addr()).await;
        let first = client.get("/").await;
        assert_eq!(first.body.len(), 428 * 1024);
        assert!(first.body.iter().all(u8::is_ascii_alphanumeric));
        assert_eq!(first.header("content-type"), Some("text/html"));
        assert_eq!(first.header("x-sim"), Some("yes"));
        // Generated once: every response carries the same bytes.
        assert_eq!(client.get("/other").await.body, first.body);
        server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_placeholders_are_filled_with_random_text() {
    within(async {
        let server = start(r#"{"body": "<html><<256kb>></html>", "stages": [{}]}"#).await;
        let reply = get(server.local_addr(), "/").await;
        let text = reply.text();
        assert_eq!(text.len(), "<html></html>".len() + 256 * 1024);
        assert!(text.starts_with("<html>") && text.ends_with("</html>"));
        assert!(!text.contains("<<"));
        server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_encoding_gzip_compresses_the_body() {
    within(async {
        let server = start(
            r#"{"body": "hello hello hello hello", "headers": {"content-encoding": "gzip"},
                "stages": [{}]}"#,
        )
        .await;
        let reply = get(server.local_addr(), "/").await;
        assert_eq!(reply.header("content-encoding"), Some("gzip"));
        let mut plain = String::new();
        flate2::read::GzDecoder::new(reply.body.as_slice())
            .read_to_string(&mut plain)
            .expect("a gzip body");
        assert_eq!(plain, "hello hello hello hello");
        server.shutdown().await;
    })
    .await;
}

/// A one-page origin on loopback that counts how often it is fetched.
async fn counting_origin(page: &'static str) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind(loopback()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let fetches = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&fetches);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            let mut stream = BufReader::new(stream);
            let mut line = String::new();
            while stream.read_line(&mut line).await.is_ok_and(|n| n > 0) && line != "\r\n" {
                line.clear();
            }
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{page}",
                page.len()
            );
            let _ = stream.get_mut().write_all(reply.as_bytes()).await;
        }
    });
    (addr, fetches)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_origin_is_fetched_once_and_then_served() {
    within(async {
        let (origin, fetches) = counting_origin("<p>the real page</p>").await;
        let server = start(&format!(
            r#"{{"origin": "http://{origin}/page", "stages": [{{"status": 200}}]}}"#
        ))
        .await;
        let mut client = Client::connect(server.local_addr()).await;
        for _ in 0..5 {
            assert_eq!(client.get("/").await.text(), "<p>the real page</p>");
        }
        assert_eq!(fetches.load(Ordering::SeqCst), 1);
        server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_origin_in_a_start_recipe_names_the_cause() {
    within(async {
        // Bind then drop: the port is closed.
        let closed = TcpListener::bind(loopback())
            .await
            .unwrap()
            .local_addr()
            .unwrap();
        let recipe = format!(r#"{{"origin": "http://{closed}/", "stages": [{{}}]}}"#);
        let error = Server::start(loopback(), Recipe::from_json(&recipe).unwrap())
            .await
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with(&format!(
                "recipe for route /*: origin http://{closed}/: cannot connect to {closed}"
            )),
            "{error}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_most_specific_route_answers() {
    within(async {
        let server = start(
            r#"[{"stages": [{"status": 200}]},
                {"route": "/news*", "stages": [{"status": 201}]},
                {"route": "/news/*/live", "stages": [{"status": 202}]}]"#,
        )
        .await;
        let addr = server.local_addr();
        assert_eq!(get(addr, "/").await.status, 200);
        assert_eq!(get(addr, "/news").await.status, 201);
        assert_eq!(get(addr, "/news/uk?x=1").await.status, 201);
        assert_eq!(get(addr, "/news/uk/live").await.status, 202);
        server.shutdown().await;
    })
    .await;
}

/// How long one GET on an open connection takes.
async fn timed_get(client: &mut Client) -> Duration {
    let start = Instant::now();
    client.get("/").await;
    start.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latencies_fixed_ranged_and_distributed_delay_the_answer() {
    within(async {
        let server = start(
            r#"[{"route": "/fixed", "stages": [{"latency": "150ms"}]},
                {"route": "/range", "stages": [{"latency": "50ms..80ms"}]},
                {"route": "/lognormal", "stages": [{"latency": "lognormal(-3.9,0.05)"}]}]"#,
        )
        .await;
        let addr = server.local_addr();
        let took = |path: &'static str| async move {
            let mut client = Client::connect(addr).await;
            let start = Instant::now();
            client.get(path).await;
            start.elapsed()
        };
        let fixed = took("/fixed").await;
        assert!(
            // The lower bound is the point; the upper one only catches a runaway
            // (generous: the test machine may be busy).
            fixed >= Duration::from_millis(150) && fixed < Duration::from_millis(1500),
            "{fixed:?}"
        );
        // Every delay respects the lower bound; the fastest of five respects the upper one
        // (a single slow answer can be the test machine's fault, five cannot).
        let (mut fastest_range, mut fastest_lognormal) = (Duration::MAX, Duration::MAX);
        for _ in 0..5 {
            let ranged = took("/range").await;
            assert!(ranged >= Duration::from_millis(50), "{ranged:?}");
            fastest_range = fastest_range.min(ranged);
            // e^-3.9 s ≈ 20 ms, sigma 0.05: within ±20% nearly always.
            let lognormal = took("/lognormal").await;
            assert!(lognormal >= Duration::from_millis(15), "{lognormal:?}");
            fastest_lognormal = fastest_lognormal.min(lognormal);
        }
        assert!(
            fastest_range < Duration::from_millis(130),
            "{fastest_range:?}"
        );
        assert!(
            fastest_lognormal < Duration::from_millis(70),
            "{fastest_lognormal:?}"
        );
        server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cpu_work_is_spent_on_each_request() {
    within(async {
        let server = start(r#"{"stages": [{"cpu": "40ms"}]}"#).await;
        let mut client = Client::connect(server.local_addr()).await;
        for _ in 0..3 {
            let took = timed_get(&mut client).await;
            assert!(
                took >= Duration::from_millis(40) && took < Duration::from_secs(2),
                "{took:?}"
            );
        }
        assert_eq!(
            get(server.local_addr(), "/_admin/routes_status")
                .await
                .text(),
            "/* 200 0ms cpu=40ms"
        );
        server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_stage_resets_the_connection() {
    within(async {
        let server = start(r#"{"stages": [{"fault": "reset"}]}"#).await;
        let (received, outcome) = raw_exchange(server.local_addr(), "/").await;
        assert!(received.is_empty());
        assert_eq!(outcome.unwrap_err().kind(), ErrorKind::ConnectionReset);
        server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_close_stage_closes_without_a_byte() {
    within(async {
        let server = start(r#"{"stages": [{"latency": "20ms", "fault": "close"}]}"#).await;
        let started = Instant::now();
        let (received, outcome) = raw_exchange(server.local_addr(), "/").await;
        assert!(outcome.is_ok(), "{outcome:?}");
        assert!(received.is_empty(), "{received:?}");
        assert!(started.elapsed() >= Duration::from_millis(20));
        server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_stage_sends_an_unparsable_status_line() {
    within(async {
        let server = start(r#"{"stages": [{"fault": "malformed"}]}"#).await;
        let (received, outcome) = raw_exchange(server.local_addr(), "/").await;
        assert!(outcome.is_ok(), "{outcome:?}");
        let text = String::from_utf8_lossy(&received);
        let first_line = text.lines().next().unwrap_or_default();
        assert!(!first_line.is_empty());
        assert_eq!(status_code(first_line), None, "{first_line}");
        server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickle_stage_sends_the_body_at_its_rate() {
    within(async {
        let server = start(
            r#"{"random_content": "1000b", "stages": [{"status": 200, "fault": "trickle(2kb/s)"}]}"#,
        )
        .await;
        let mut stream = TcpStream::connect(server.local_addr()).await.unwrap();
        stream.write_all(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").await.unwrap();
        let started = Instant::now();
        let mut received = Vec::new();
        let mut head_at = None;
        let mut buf = [0u8; 4096];
        loop {
            let n = stream.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            received.extend_from_slice(&buf[..n]);
            if head_at.is_none() && received.windows(4).any(|w| w == b"\r\n\r\n") {
                head_at = Some(started.elapsed());
            }
        }
        let total = started.elapsed();
        let text = String::from_utf8_lossy(&received);
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        assert!(text.contains("content-length: 1000"), "{text}");
        assert!(head_at.unwrap() < Duration::from_secs(1), "{head_at:?}");
        // 1000 bytes at 2048 bytes/s: about 0.49 s, never sooner; later only
        // as much as a busy machine delays it.
        assert!(total >= Duration::from_millis(440) && total < Duration::from_secs(2), "{total:?}");
        server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stall_stage_never_answers_and_shutdown_still_ends() {
    within(async {
        let server = start(r#"{"stages": [{"fault": "stall"}]}"#).await;
        let mut stream = TcpStream::connect(server.local_addr()).await.unwrap();
        stream
            .write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            .await
            .unwrap();
        let mut buf = [0u8; 64];
        let read = tokio::time::timeout(Duration::from_millis(700), stream.read(&mut buf)).await;
        assert!(read.is_err(), "expected no bytes, got {read:?}");
        let started = Instant::now();
        server.shutdown().await;
        let took = started.elapsed();
        assert!(
            took < tank_origin::GRACE + Duration::from_millis(2500),
            "{took:?}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_recipe_in_configs_origin_loads_and_serves() {
    within(async {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/origin");
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let recipes =
                Recipe::from_json(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let server = Server::start(loopback(), recipes).await.unwrap();
            assert_eq!(
                get(server.local_addr(), "/_admin/status").await.text(),
                "ok!"
            );
            server.shutdown().await;
            names.push(path.file_name().unwrap().to_string_lossy().into_owned());
        }
        names.sort();
        assert_eq!(
            names,
            [
                "capacity.json",
                "degradation.json",
                "heavy_tail.json",
                "outage.json",
                "steady.json"
            ]
        );
        let demo = tank_config::load(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/origin-demo.ini"),
            &[],
        )
        .unwrap();
        match demo.origin.map(|o| o.recipe) {
            Some(tank_config::OriginRecipe::File(path)) => {
                assert!(Path::new(env!("CARGO_MANIFEST_DIR")).join(path).is_file());
            }
            other => panic!("origin-demo.ini should name a recipe file, found {other:?}"),
        }
    })
    .await;
}

/// Kills the child when the test ends, however it ends.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The address a `tank origin` with piped stdout prints on its first line.
async fn first_line_address(running: &mut Running) -> SocketAddr {
    let stdout = running.0.stdout.take().expect("piped stdout");
    let first_line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).map(|_| line)
    })
    .await
    .unwrap()
    .unwrap();
    first_line
        .trim()
        .strip_prefix("tank origin: listening on http://")
        .unwrap_or_else(|| panic!("unexpected first line: {first_line}"))
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tank_origin_command_prints_its_address_and_serves_the_recipe() {
    within(async {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_tank"))
            .args([
                "origin",
                "--listen",
                "127.0.0.1:0",
                "--recipe",
                "configs/origin/steady.json",
            ])
            .current_dir(root)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("start tank origin");
        let mut running = Running(child);
        let addr = first_line_address(&mut running).await;
        assert_ne!(addr.port(), 0);
        let reply = get(addr, "/anything").await;
        assert_eq!((reply.status, reply.body.len()), (200, 2048));
        assert_eq!(get(addr, "/_admin/status").await.text(), "ok!");
    })
    .await;
}

#[test]
fn the_tank_origin_command_names_the_file_and_place_of_a_bad_recipe() {
    let dir = tempfile::tempdir().unwrap();
    let recipe = dir.path().join("bad.json");
    std::fs::write(&recipe, r#"{"stages": [{"status": 999}]}"#).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tank"))
        .args(["origin", "--listen", "127.0.0.1:0", "--recipe"])
        .arg(&recipe)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr.trim(),
        format!(
            "tank: error: {}: recipe.stages[0].status: expected an HTTP status from 200 to 599, found 999",
            recipe.display()
        )
    );
}

/// The whole path: `tank -c` starts `[origin]` in-process and shoots at it.
#[test]
fn tank_sees_each_fault_stage_as_its_net_or_http_code() {
    let dir = tempfile::tempdir().unwrap();
    let config = r#"
[phantom]
address = origin
header_http = 1.1
headers = [Host: origin]
uris = /reset
  /close
  /malformed
  /stall
  /trickle
  /ok
autocases = 1
rps_schedule = const(6,1s)
instances = 10
timeout = 1s

[origin]
recipe_json = [{"route": "/reset", "stages": [{"fault": "reset"}]},
  {"route": "/close", "stages": [{"fault": "close"}]},
  {"route": "/malformed", "stages": [{"fault": "malformed"}]},
  {"route": "/stall", "stages": [{"fault": "stall"}]},
  {"route": "/trickle", "random_content": "1kb", "stages": [{"fault": "trickle(2kb/s)"}]},
  {"route": "/ok", "stages": [{"status": 503}]}]
"#;
    let output = crate::support::shoot(dir.path(), config, Duration::from_secs(30));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let rows = crate::support::phout(&crate::support::artifacts(dir.path()));
    let mut codes: Vec<(&str, u16, u16)> = rows
        .iter()
        .map(|r| (r.tag.as_str(), r.net_code, r.proto_code))
        .collect();
    codes.sort_unstable();
    assert_eq!(
        codes,
        [
            ("_close", 71, 0),     // EOF before a status line: not a reply
            ("_malformed", 71, 0), // EPROTO
            ("_ok", 0, 503),
            ("_reset", 104, 0), // ECONNRESET
            ("_stall", 110, 0), // tank's timeout
            ("_trickle", 0, 200),
        ]
    );
    let trickle = rows.iter().find(|r| r.tag == "_trickle").unwrap();
    // 1024 bytes at 2048 bytes/s.
    assert!(
        (450_000..900_000).contains(&trickle.interval_real),
        "{trickle:?}"
    );
}
