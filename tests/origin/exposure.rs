//! The admin API's guards over HTTP on loopback: a posted recipe fetches
//! only when allowed and never from link-local or metadata addresses, a
//! failed fetch does not tell ports apart, and a token guards the API.
//!
//! Nothing here sends a packet beyond 127.0.0.0/8: blocked addresses are
//! refused before any connection, and the token is tested on 127.0.0.2 (a
//! given token is required on loopback too; what happens beyond loopback is
//! the decision function's, unit-tested in the crate).

use std::net::SocketAddr;
use std::sync::atomic::Ordering;

use tank_origin::{AdminAccess, AdminToken, Options, Recipe, Server};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::{counting_origin, get, loopback, post, within, Client, Running};

async fn start_with(options: Options) -> Server {
    Server::start_with(loopback(), Vec::new(), options)
        .await
        .expect("simulator starts")
}

fn allowing_fetch() -> Options {
    Options {
        allow_fetch: true,
        ..Options::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_posted_origin_is_refused_without_allow_fetch_and_fetched_with_it() {
    within(async {
        let (origin, fetches) = counting_origin("<p>the page</p>").await;
        let recipe =
            format!(r#"{{"route": "/p", "origin": "http://{origin}/page", "stages": [{{}}]}}"#);
        let guarded = Server::start(loopback(), Vec::new()).await.unwrap();
        let refused = post(guarded.local_addr(), "/_admin/add_recipe", &recipe).await;
        assert_eq!(refused.status, 403);
        assert_eq!(
            refused.text(),
            "recipe for route /p: this simulator does not fetch an `origin` for a posted recipe; \
             start it with --allow-fetch (or allow_fetch = 1 in [origin]) to let it, or give the \
             recipe at start (--recipe)"
        );
        assert_eq!(get(guarded.local_addr(), "/_admin/routes").await.text(), "");
        assert_eq!(fetches.load(Ordering::SeqCst), 0, "nothing was fetched");

        let open = start_with(allowing_fetch()).await;
        let added = post(open.local_addr(), "/_admin/add_recipe", &recipe).await;
        assert_eq!(added.status, 201, "{}", added.text());
        assert_eq!(get(open.local_addr(), "/p").await.text(), "<p>the page</p>");
        assert_eq!(fetches.load(Ordering::SeqCst), 1);
        guarded.shutdown().await;
        open.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn link_local_and_metadata_origins_are_refused_even_with_allow_fetch() {
    within(async {
        let server = start_with(allowing_fetch()).await;
        for (url, host) in [
            (
                "http://169.254.169.254/latest/meta-data/",
                "169.254.169.254",
            ),
            ("http://169.254.170.2:80/v2/credentials", "169.254.170.2:80"),
            ("http://[fd00:ec2::254]/", "[fd00:ec2::254]"),
            ("http://100.100.100.200/", "100.100.100.200"),
            (
                "http://[::ffff:169.254.169.254]/",
                "[::ffff:169.254.169.254]",
            ),
            ("http://[fe80::1]:8080/", "[fe80::1]:8080"),
        ] {
            let recipe = format!(r#"{{"origin": "{url}", "stages": [{{}}]}}"#);
            let refused = post(server.local_addr(), "/_admin/add_recipe", &recipe).await;
            assert_eq!(refused.status, 400, "{url}");
            assert_eq!(
                refused.text(),
                format!(
                    "recipe for route /*: origin {url}: {host} is a link-local or cloud \
                     metadata address, which is never fetched"
                )
            );
        }
        assert_eq!(get(server.local_addr(), "/_admin/routes").await.text(), "");
        server.shutdown().await;
    })
    .await;
}

/// A port that accepts, says something that is not HTTP, and closes.
async fn not_http() -> SocketAddr {
    let listener = TcpListener::bind(loopback()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut buf = [0u8; 1024];
            let _ = stream.read(&mut buf).await;
            let _ = stream.write_all(b"SSH-2.0-OpenSSH_9.6\r\n").await;
        }
    });
    addr
}

/// A port that accepts and never says a word.
async fn silent() -> (SocketAddr, TcpListener) {
    let listener = TcpListener::bind(loopback()).await.unwrap();
    (listener.local_addr().unwrap(), listener)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_and_open_ports_get_the_same_answer() {
    within(async {
        let server = start_with(allowing_fetch()).await;
        let closed = TcpListener::bind(loopback())
            .await
            .unwrap()
            .local_addr()
            .unwrap();
        let talking = not_http().await;
        // The kernel completes connections to it; nobody ever reads them.
        let (quiet, _quiet_listener) = silent().await;
        let admin = server.local_addr();
        let ask = |port: SocketAddr| async move {
            let url = format!("http://{port}/");
            let recipe = format!(r#"{{"origin": "{url}", "stages": [{{}}]}}"#);
            let reply = post(admin, "/_admin/add_recipe", &recipe).await;
            (reply.status, reply.text().replace(&url, "URL"))
        };
        // Each answer waits out the fetch timeout (5 s), so ask all at once.
        let (closed, talking, quiet) = tokio::join!(ask(closed), ask(talking), ask(quiet));
        assert_eq!(
            closed,
            (
                400,
                "recipe for route /*: origin URL: no HTTP response from it (unreachable, \
                 refused, filtered, or not HTTP: a posted recipe is not told which)"
                    .to_owned()
            )
        );
        assert_eq!(talking, closed);
        assert_eq!(quiet, closed);
        server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_given_token_guards_every_admin_route_and_nothing_else() {
    within(async {
        let listen = SocketAddr::from(([127, 0, 0, 2], 0));
        let options = Options {
            admin_token: Some(AdminToken::new("s3cret").unwrap()),
            ..Options::default()
        };
        let recipes = Recipe::from_json(r#"{"random_content": "10b", "stages": [{}]}"#).unwrap();
        let server = Server::start_with(listen, recipes, options).await.unwrap();
        let addr = server.local_addr();
        assert!(matches!(
            server.admin_access(),
            AdminAccess::Token {
                generated: false,
                ..
            }
        ));
        assert_eq!(server.exposure_warning(), None, "127.0.0.2 is loopback");

        let admin = |headers: &'static str, method: &'static str, path: &'static str| async move {
            let body = if method == "POST" {
                r#"{"stages": [{"status": 500}]}"#
            } else {
                ""
            };
            Client::connect(addr)
                .await
                .request_with(method, path, headers, body)
                .await
        };
        for path in [
            "/_admin/status",
            "/_admin/routes",
            "/_admin/restart",
            "/_admin/nope",
        ] {
            let refused = admin("", "GET", path).await;
            assert_eq!(refused.status, 401, "{path}");
            assert_eq!(
                refused.header("www-authenticate"),
                Some("Bearer realm=\"tank origin admin\"")
            );
            assert!(
                refused.text().contains("TANK_ORIGIN_TOKEN"),
                "{}",
                refused.text()
            );
        }
        let wrong = admin(
            "Authorization: Bearer s3cre7\r\n",
            "POST",
            "/_admin/add_recipe",
        )
        .await;
        assert_eq!(wrong.status, 401);
        assert_eq!(
            get(addr, "/").await.status,
            200,
            "a wrong token changed nothing"
        );
        let right = "Authorization: Bearer s3cret\r\n";
        assert_eq!(admin(right, "GET", "/_admin/status").await.text(), "ok!");
        assert_eq!(admin(right, "POST", "/_admin/add_recipe").await.status, 201);
        assert_eq!(get(addr, "/").await.status, 500, "served without a token");
        server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tank_origin_command_takes_its_token_from_the_environment() {
    within(async {
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_tank"))
            .args(["origin", "--listen", "127.0.0.1:0"])
            .env("TANK_ORIGIN_TOKEN", "from-env")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start tank origin");
        let mut running = Running(child);
        let addr = super::first_line_address(&mut running).await;
        assert_eq!(get(addr, "/_admin/status").await.status, 401);
        let reply = Client::connect(addr)
            .await
            .request_with(
                "GET",
                "/_admin/status",
                "Authorization: Bearer from-env\r\n",
                "",
            )
            .await;
        assert_eq!((reply.status, reply.text().as_str()), (200, "ok!"));
    })
    .await;
}

#[test]
fn the_tank_origin_command_refuses_an_empty_token() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tank"))
        .args(["origin", "--listen", "127.0.0.1:0"])
        .env("TANK_ORIGIN_TOKEN", "")
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stderr).trim(),
        "tank: error: TANK_ORIGIN_TOKEN: an empty token would let anyone in"
    );
}
