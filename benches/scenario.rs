//! Criterion benches of a scenario step's own cost, beside the gun's: building
//! a request (preprocessor, templates, defaults, cookies) and reading its reply
//! (the head, cookies, JSONPath, XPath, header modifiers, assertions), each
//! for one request of the shop flow (ammo/scenario/shop.hcl's, its sources in
//! a temporary directory). A static request (no template) is the floor.
//!
//! Run: `cargo bench --bench scenario`. The whole flow under load, beside
//! Pandora, is benches/scenario/pandora.sh.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use tank_scenario::{Book, Cursors, Defaults, Run};

const FLOW: &str = r#"
locals {
  json = { Content-Type = "application/json" }
}
variable_source "users" "file/csv" {
  file              = "USERS"
  fields            = ["id", "name"]
  ignore_first_line = true
}
request "static" {
  uri = "/health"
}
request "login" {
  method  = "POST"
  uri     = "/login"
  headers = local.json
  body    = "{\"user\": \"{{.request.login.preprocessor.user.name}}\", \"id\": \"{{.request.login.preprocessor.user.id}}\"}"
  preprocessor {
    mapping = { user = "source.users[next]" }
  }
  postprocessor "var/jsonpath" {
    mapping = { token = "$.token" }
  }
  postprocessor "var/header" {
    mapping = { session = "X-Session|lower|substr(2)" }
  }
  postprocessor "assert/response" {
    status_code = 200
    body        = ["token"]
  }
}
request "list" {
  uri     = "/items"
  headers = merge(local.json, { Authorization = "Bearer {{.request.login.postprocessor.token}}" })
  postprocessor "var/jsonpath" {
    mapping = { items = "$.items" }
  }
}
request "profile" {
  uri     = "/profile"
  headers = { Authorization = "Bearer {{.request.login.postprocessor.token}}" }
  postprocessor "var/xpath" {
    mapping = { user = "//div[@class='user']" }
  }
}
request "buy" {
  method = "POST"
  uri    = "/buy/{{.request.buy.preprocessor.item}}"
  headers = {
    Authorization = "Bearer {{.request.login.postprocessor.token}}"
    X-User        = "{{.request.profile.postprocessor.user}}"
  }
  preprocessor {
    mapping = { item = "request.list.postprocessor.items[next]" }
  }
  postprocessor "assert/response" {
    status_code = 200
    headers     = { X-Receipt = "R-" }
  }
}
scenario "shop" {
  requests = ["static", "login", "list", "profile", "buy"]
}
"#;

fn reply(headers: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Sat, 21 Nov 2026 21:47:51 GMT\r\n{headers}\
         Content-Length: {}\r\nConnection: keep-alive\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The flow's book, its users in `dir`.
fn book(dir: &std::path::Path) -> Book {
    let users = dir.join("users.csv");
    let mut csv = String::from("id,name\n");
    for i in 0..1000 {
        csv.push_str(&format!("{i},user{i}\n"));
    }
    std::fs::write(&users, csv).expect("users.csv");
    let path = dir.join("flow.hcl");
    std::fs::write(&path, FLOW.replace("USERS", &users.display().to_string())).expect("flow.hcl");
    tank_scenario::load(&path, 1).expect("the flow compiles")
}

fn steps(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let book = book(dir.path());
    let defaults = Defaults::new(&book, "shop.example", &["User-Agent: tank".into()], false)
        .expect("defaults");
    let cursors = Cursors::new(&book);
    let mut rng = SmallRng::seed_from_u64(1);
    let mut run = Run::new(&book, &defaults);
    let mut out = Vec::with_capacity(4096);
    let index = |name: &str| {
        (0..book.request_count())
            .find(|r| book.request_name(*r) == name)
            .expect("a request of the flow")
    };
    let (static_, login, list, profile, buy) = (
        index("static"),
        index("login"),
        index("list"),
        index("profile"),
        index("buy"),
    );
    let login_reply = reply(
        "Content-Type: application/json\r\nX-Session: S-12345\r\nSet-Cookie: shop=c1; Path=/; HttpOnly\r\n",
        r#"{"token": "tok-user1-1", "expires": 3600}"#,
    );
    let items: Vec<String> = (0..100).map(|i| i.to_string()).collect();
    let list_reply = reply(
        "Content-Type: application/json\r\n",
        &format!("{{\"items\": [{}]}}", items.join(", ")),
    );
    let mut page =
        String::from("<!DOCTYPE html><html><head><title>Profile</title></head><body><ul>");
    for i in 0..40 {
        page.push_str(&format!(
            "<li class=\"row\"><a href=\"/item/{i}\">item {i}</a></li>"
        ));
    }
    page.push_str("</ul><div class=\"user\">user1</div></body></html>");
    let profile_reply = reply("Content-Type: text/html\r\n", &page);
    let buy_reply = reply("X-Receipt: R-1\r\n", "");

    // The run's state as the buy step finds it (a request's own variables are
    // cleared when it is built again, so each bench starts from here).
    let prime = |run: &mut Run<'_>, rng: &mut SmallRng, out: &mut Vec<u8>| {
        run.start();
        for (request, answer) in [
            (login, &login_reply),
            (list, &list_reply),
            (profile, &profile_reply),
        ] {
            run.request(request, &cursors, rng, out).expect("builds");
            run.reply(request, answer).expect("reads");
        }
    };

    let mut group = c.benchmark_group("scenario_request");
    group.throughput(Throughput::Elements(1));
    for (name, request) in [
        ("static", static_),
        ("login", login),
        ("list", list),
        ("buy", buy),
    ] {
        prime(&mut run, &mut rng, &mut out);
        group.bench_function(name, |b| {
            b.iter(|| {
                run.request(black_box(request), &cursors, &mut rng, &mut out)
                    .expect("builds");
                black_box(out.len())
            })
        });
    }
    group.finish();
    // Reading a reply sets the request's variables: each iteration reads it anew.
    let mut group = c.benchmark_group("scenario_reply");
    group.throughput(Throughput::Elements(1));
    for (name, request, answer) in [
        ("static_head_only", static_, &buy_reply),
        ("login_jsonpath_header_assert", login, &login_reply),
        ("list_jsonpath_100_items", list, &list_reply),
        ("profile_xpath_html_3kb", profile, &profile_reply),
        ("buy_assert", buy, &buy_reply),
    ] {
        prime(&mut run, &mut rng, &mut out);
        group.bench_function(name, |b| {
            b.iter(|| {
                run.reply(black_box(request), black_box(answer))
                    .expect("reads")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, steps);
criterion_main!(benches);
