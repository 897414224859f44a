//! The book end to end: a file compiled, then runs driven through it with
//! replies made here, the request bytes compared whole.

use std::path::Path;

use rand::rngs::SmallRng;
use rand::SeedableRng;

use super::*;
use crate::failure::FailureKind;
use crate::run::{Cursors, Defaults, Run};

/// A temporary directory holding `users.csv`, and the HCL flow that reads it.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("users.csv"),
            "user_id,name\n1,ann\n2,bob\n3,cid\n",
        )
        .unwrap();
        Fixture { dir }
    }

    fn csv(&self) -> String {
        self.dir.path().join("users.csv").display().to_string()
    }

    fn hcl(&self) -> String {
        format!(
            r#"
locals {{
  json = {{ Content-Type = "application/json" }}
}}
variable_source "users" "file/csv" {{
  file = "{csv}"
}}
variable_source "global" "variables" {{
  variables = {{ shop = "main" }}
}}
request "auth" {{
  method  = "POST"
  uri     = "/login"
  headers = local.json
  body    = "{{\"user\": \"{{{{.request.auth.preprocessor.user.name}}}}\"}}"
  preprocessor {{
    mapping = {{ user = "source.users[next]" }}
  }}
  postprocessor "var/jsonpath" {{
    mapping = {{ token = "$.token" }}
  }}
  postprocessor "assert/response" {{
    status_code = 200
  }}
}}
request "list" {{
  uri = "/items?shop={{{{.source.global.shop}}}}"
  headers = merge(local.json, {{ Authorization = "Bearer {{{{.request.auth.postprocessor.token}}}}" }})
  postprocessor "var/jsonpath" {{
    mapping = {{ items = "$.items" }}
  }}
}}
request "buy" {{
  method = "POST"
  uri    = "/buy/{{{{.request.buy.preprocessor.item}}}}"
  headers = {{ Authorization = "Bearer {{{{.request.auth.postprocessor.token}}}}" }}
  preprocessor {{
    mapping = {{ item = "request.list.postprocessor.items[next]" }}
  }}
  postprocessor "var/header" {{
    mapping = {{ receipt = "X-Receipt|lower" }}
  }}
}}
scenario "shopper" {{
  weight           = 3
  min_waiting_time = 500
  requests         = ["auth", "sleep(100)", "list", "buy(3, 10)"]
}}
scenario "looker" {{
  requests = ["auth", "list"]
}}
"#,
            csv = self.csv()
        )
    }

    fn book(&self, format: Format, text: &str) -> Result<Book, ScenarioError> {
        let name = match format {
            Format::Hcl => "s.hcl",
            Format::Yaml => "s.yaml",
            Format::Json => "s.json",
        };
        compile_text(&self.dir.path().join(name), format, text, 7)
    }
}

fn reply(status: u16, headers: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status} X\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Drive one run of `scenario`, answering each request with `answer`; the
/// requests sent, and the failure that ended the run early, if any.
fn drive(
    book: &Book,
    cursors: &Cursors,
    run: &mut Run<'_>,
    scenario: &str,
    answer: &mut dyn FnMut(&str) -> Vec<u8>,
) -> (Vec<String>, Option<crate::Failure>) {
    let mut rng = SmallRng::seed_from_u64(1);
    let scenario = book.scenario_named(scenario.as_bytes()).unwrap();
    run.start();
    let mut sent = Vec::new();
    let mut out = Vec::new();
    for step in &scenario.steps {
        if let Err(failure) = run.request(step.request, cursors, &mut rng, &mut out) {
            return (sent, Some(failure));
        }
        let text = String::from_utf8(out.clone()).unwrap();
        let answer = answer(&text);
        sent.push(text);
        if let Err(failure) = run.reply(step.request, &answer) {
            return (sent, Some(failure));
        }
    }
    (sent, None)
}

fn shop_answer(request: &str) -> Vec<u8> {
    if request.starts_with("POST /login") {
        let user = request
            .split("\"user\": \"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        reply(
            200,
            "Set-Cookie: sid=s1; Path=/\r\n",
            &format!("{{\"token\": \"t-{user}\"}}"),
        )
    } else if request.starts_with("GET /items") {
        reply(200, "", r#"{"items": [10, 20]}"#)
    } else {
        reply(200, "X-Receipt: OK-1\r\n", "")
    }
}

#[test]
fn a_flow_runs_with_its_variables_cookies_and_cursors() {
    let fixture = Fixture::new();
    let book = fixture.book(Format::Hcl, &fixture.hcl()).unwrap();
    let shopper = book.scenario_named(b"shopper").unwrap();
    assert_eq!(shopper.steps.len(), 5);
    assert_eq!(shopper.sleeps(), Duration::from_millis(130));
    assert_eq!(shopper.min_duration(), Duration::from_millis(500));
    assert_eq!(shopper.weight, 3);
    let defaults = Defaults::new(&book, "shop.test", &["User-Agent: tank".into()], false).unwrap();
    let cursors = Cursors::new(&book);
    let mut run = Run::new(&book, &defaults);
    let (sent, failure) = drive(&book, &cursors, &mut run, "shopper", &mut shop_answer);
    assert_eq!(failure, None);
    assert_eq!(
        sent[0],
        "POST /login HTTP/1.1\r\nHost: shop.test\r\nUser-Agent: tank\r\nContent-Type: application/json\r\n\
         Content-Length: 15\r\n\r\n{\"user\": \"ann\"}"
    );
    assert_eq!(
        sent[1],
        "GET /items?shop=main HTTP/1.1\r\nHost: shop.test\r\nUser-Agent: tank\r\nContent-Type: application/json\r\n\
         Authorization: Bearer t-ann\r\nCookie: sid=s1\r\n\r\n"
    );
    let buys: Vec<&str> = sent[2..]
        .iter()
        .map(|s| s.lines().next().unwrap())
        .collect();
    assert_eq!(
        buys,
        [
            "POST /buy/10 HTTP/1.1",
            "POST /buy/20 HTTP/1.1",
            "POST /buy/10 HTTP/1.1"
        ]
    );
    assert!(
        sent[2].ends_with("Cookie: sid=s1\r\nContent-Length: 0\r\n\r\n")
            || !sent[2].contains("Content-Length")
    );
    // A second run starts clean and takes the next user; a second instance the one after.
    let (sent, _) = drive(&book, &cursors, &mut run, "looker", &mut shop_answer);
    assert!(sent[0].ends_with("{\"user\": \"bob\"}"), "{}", sent[0]);
    let mut other = Run::new(&book, &defaults);
    let (sent, _) = drive(&book, &cursors, &mut other, "looker", &mut shop_answer);
    assert!(sent[0].ends_with("{\"user\": \"cid\"}"), "{}", sent[0]);
    let (sent, _) = drive(&book, &cursors, &mut run, "looker", &mut shop_answer);
    assert!(
        sent[0].ends_with("{\"user\": \"ann\"}"),
        "wraps around: {}",
        sent[0]
    );
}

#[test]
fn shards_take_a_sources_turns_between_them() {
    let fixture = Fixture::new();
    let book = fixture.book(Format::Hcl, &fixture.hcl()).unwrap();
    let defaults = Defaults::new(&book, "h", &[], false).unwrap();
    let users = |shard: u64| {
        let cursors = Cursors::sharded(&book, shard, 2);
        let mut run = Run::new(&book, &defaults);
        (0..3)
            .map(|_| {
                let (sent, _) = drive(&book, &cursors, &mut run, "looker", &mut shop_answer);
                sent[0]
                    .rsplit("\"user\": \"")
                    .next()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect::<Vec<_>>()
    };
    // Shard 0 of 2 takes rows 0, 2, 4 (wrapping at 3), shard 1 rows 1, 3, 5.
    assert_eq!(users(0), ["ann\"}", "cid\"}", "bob\"}"]);
    assert_eq!(users(1), ["bob\"}", "ann\"}", "cid\"}"]);
}

#[test]
fn failures_end_a_run_with_their_reason() {
    let fixture = Fixture::new();
    let book = fixture.book(Format::Hcl, &fixture.hcl()).unwrap();
    let defaults = Defaults::new(&book, "h", &[], false).unwrap();
    let cursors = Cursors::new(&book);
    let mut run = Run::new(&book, &defaults);
    let reason = |failure: Option<crate::Failure>| {
        let failure = failure.unwrap();
        let reason = &book.reasons()[failure.reason];
        (failure.kind, reason.request.clone(), reason.text.clone())
    };
    // The login answered 403: its assertion fails.
    let (sent, failure) = drive(&book, &cursors, &mut run, "shopper", &mut |_| {
        reply(403, "", r#"{"token": "x"}"#)
    });
    assert_eq!(sent.len(), 1);
    assert_eq!(
        reason(failure),
        (
            FailureKind::Assertion,
            "auth".into(),
            "assert/response: status_code 200".into()
        )
    );
    // No token in the answer: the JSONPath matches nothing.
    let (_, failure) = drive(&book, &cursors, &mut run, "shopper", &mut |_| {
        reply(200, "", "{}")
    });
    assert_eq!(
        reason(failure),
        (
            FailureKind::Extraction,
            "auth".into(),
            "var/jsonpath `$.token` matched nothing".into()
        )
    );
    // Not JSON at all.
    let (_, failure) = drive(&book, &cursors, &mut run, "shopper", &mut |_| {
        reply(200, "", "<html>")
    });
    assert_eq!(reason(failure).2, "var/jsonpath: the body is not JSON");
    // An empty item list: `items[next]` has no value, and the buy is never sent.
    let (sent, failure) = drive(&book, &cursors, &mut run, "shopper", &mut |request| {
        if request.starts_with("GET") {
            reply(200, "", r#"{"items": []}"#)
        } else {
            shop_answer(request)
        }
    });
    assert_eq!(sent.len(), 2);
    let (kind, request, text) = reason(failure);
    assert_eq!((kind, request.as_str()), (FailureKind::Unset, "buy"));
    assert!(
        text.contains("request.list.postprocessor.items[next]"),
        "{text}"
    );
}

#[test]
fn a_function_refusing_a_value_says_so_not_that_it_has_none() {
    let fixture = Fixture::new();
    let hcl = fixture.hcl().replace(
        r#"{ item = "request.list.postprocessor.items[next]" }"#,
        r#"{ item = "request.list.postprocessor.items[next]", n = "randInt(1, request.list.postprocessor.items)" }"#,
    );
    let book = fixture.book(Format::Hcl, &hcl).unwrap();
    let defaults = Defaults::new(&book, "h", &[], false).unwrap();
    let cursors = Cursors::new(&book);
    let mut run = Run::new(&book, &defaults);
    let (_, failure) = drive(&book, &cursors, &mut run, "shopper", &mut shop_answer);
    let failure = failure.unwrap();
    assert_eq!(failure.kind, FailureKind::Unset);
    assert_eq!(
        book.reasons()[failure.reason].text,
        "preprocessor `n` `randInt(1, request.list.postprocessor.items)`: randInt cannot take \
         its arguments' values (expected whole numbers)"
    );
}

#[test]
fn the_same_flow_in_yaml_and_json_sends_the_same_bytes() {
    let fixture = Fixture::new();
    let hcl = fixture.book(Format::Hcl, &fixture.hcl()).unwrap();
    let yaml = format!(
        r#"
locals:
  json: &json
    Content-Type: application/json
variable_sources:
  - {{name: users, type: file/csv, file: "{csv}"}}
  - {{name: global, type: variables, variables: {{shop: main}}}}
requests:
  - name: auth
    method: POST
    uri: /login
    headers: {{<<: *json}}
    body: '{{"user": "{{{{.request.auth.preprocessor.user.name}}}}"}}'
    preprocessor: {{mapping: {{user: "source.users[next]"}}}}
    postprocessors:
      - {{type: var/jsonpath, mapping: {{token: $.token}}}}
      - {{type: assert/response, status_code: 200}}
  - name: list
    uri: "/items?shop={{{{.source.global.shop}}}}"
    headers:
      <<: *json
      Authorization: "Bearer {{{{.request.auth.postprocessor.token}}}}"
    postprocessors: [{{type: var/jsonpath, mapping: {{items: $.items}}}}]
  - name: buy
    method: POST
    uri: "/buy/{{{{.request.buy.preprocessor.item}}}}"
    headers: {{Authorization: "Bearer {{{{.request.auth.postprocessor.token}}}}"}}
    preprocessor: {{mapping: {{item: "request.list.postprocessor.items[next]"}}}}
    postprocessors: [{{type: var/header, mapping: {{receipt: "X-Receipt|lower"}}}}]
scenarios:
  - {{name: shopper, weight: 3, min_waiting_time: 500, requests: [auth, sleep(100), list, "buy(3, 10)"]}}
  - {{name: looker, requests: [auth, list]}}
"#,
        csv = fixture.csv()
    );
    let yaml = fixture.book(Format::Yaml, &yaml).unwrap();
    // The same structure as JSON, written by hand (tab-indented) as a user would.
    let json =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/book/flow.json"))
            .unwrap()
            .replace("USERS_CSV", &fixture.csv().replace('\\', "\\\\"));
    let json = fixture.book(Format::Json, &json).unwrap();
    let mut seen = Vec::new();
    let shape = |book: &Book| -> Vec<(String, u64, Duration, Vec<Step>)> {
        book.scenarios()
            .iter()
            .map(|s| (s.name.clone(), s.weight, s.min_waiting, s.steps.clone()))
            .collect()
    };
    for book in [&hcl, &yaml, &json] {
        assert_eq!(shape(book), shape(&hcl));
        let defaults = Defaults::new(book, "h", &[], false).unwrap();
        let cursors = Cursors::new(book);
        let mut run = Run::new(book, &defaults);
        seen.push(drive(book, &cursors, &mut run, "shopper", &mut shop_answer));
    }
    assert_eq!(seen[0], seen[1]);
    assert_eq!(seen[0], seen[2]);
}

#[test]
fn mistakes_are_found_before_a_shot_at_their_line() {
    let fixture = Fixture::new();
    let hcl = fixture.hcl();
    let error = |text: &str| fixture.book(Format::Hcl, text).unwrap_err();
    // A scenario naming a request that does not exist.
    let e = error(&hcl.replace(r#""auth", "list"]"#, r#""auth", "lsit"]"#));
    assert!(e.message.contains("no request `lsit`"), "{e}");
    assert_eq!(e.line, Some(50), "{e}");
    // A CSV field the source does not have.
    let e = error(&hcl.replace("users[next]\"", "users[next].mail\""));
    assert!(
        e.message
            .contains("no field `mail` (its fields: user_id, name)"),
        "{e}"
    );
    assert_eq!(e.line, Some(17), "{e}");
    // A template that does not parse.
    let e = error(&hcl.replace("/items?shop=", "/items?{{if .x}}"));
    assert!(e.message.contains("control structures"), "{e}");
    assert_eq!(e.line, Some(27), "{e}");
    // A variable no request sets.
    let e = error(&hcl.replace("postprocessor.token}}\" })", "postprocessor.tokn}}\" })"));
    assert!(
        e.message
            .contains("sets no variable `tokn` (there are: token)"),
        "{e}"
    );
    // A variable set only by a later request of the scenario.
    let e = error(&hcl.replace(r#"["auth", "list"]"#, r#"["list", "auth"]"#));
    assert!(
        e.message.contains(
            "`request.auth.postprocessor.token` is never set by then in scenario `looker`"
        ),
        "{e}"
    );
    // A source file that is not there.
    let e = error(&hcl.replace(&fixture.csv(), "/nonexistent/users.csv"));
    assert_eq!(e.line, Some(5), "{e}");
    assert!(
        e.message
            .starts_with("variable_source `users`: cannot read /nonexistent/users.csv"),
        "{e}"
    );
    // A function a template does not have.
    let e = error(&hcl.replace("{{.source.global.shop}}", "{{lower .source.global.shop}}"));
    assert!(e.message.contains("no function `lower`"), "{e}");
}

#[test]
fn a_path_under_a_variable_holding_a_source_is_checked_against_it() {
    let fixture = Fixture::new();
    let hcl = fixture.hcl();
    let error = |text: &str| fixture.book(Format::Hcl, text).unwrap_err();
    // A CSV field through the variable, in a template …
    let e = error(&hcl.replace("preprocessor.user.name}}", "preprocessor.user.mail}}"));
    assert_eq!(e.line, Some(15), "{e}");
    assert!(
        e.message.contains(
            "request `auth`: body: `request.auth.preprocessor.user.mail`: \
             `request.auth.preprocessor.user` is `source.users[next]`, and `users` has no \
             field `mail` (its fields: user_id, name)"
        ),
        "{e}"
    );
    // … under a field, which is text …
    let e = error(&hcl.replace("preprocessor.user.name}}", "preprocessor.user.name.x}}"));
    assert!(e.message.contains("a CSV field is text"), "{e}");
    let e = error(
        &hcl.replace("users[next]\"", "users[next].name\"")
            .replace("preprocessor.user.name}}", "preprocessor.user.x}}"),
    );
    assert!(e.message.contains("a CSV field is text"), "{e}");
    // … and through a variable that holds another's value.
    let chained = hcl.replace(
        "/items?shop=",
        "/items/{{.request.list.preprocessor.who.nam}}?shop=",
    );
    let chained = chained.replace(
        "  postprocessor \"var/jsonpath\" {\n    mapping = { items",
        "  preprocessor {\n    mapping = { who = \"request.auth.preprocessor.user\" }\n  }\n  \
         postprocessor \"var/jsonpath\" {\n    mapping = { items",
    );
    let e = error(&chained);
    assert!(
        e.message.contains(
            "`request.list.preprocessor.who` is `request.auth.preprocessor.user`, \
             `request.auth.preprocessor.user` is `source.users[next]`, and `users` has no \
             field `nam`"
        ),
        "{e}"
    );
    let fixed = chained.replace(".who.nam}}", ".who.name}}");
    if let Err(e) = fixture.book(Format::Hcl, &fixed) {
        panic!("{e}");
    }
    // A JSON key that one item a `[next]` reaches lacks.
    let json = fixture.dir.path().join("f.json");
    std::fs::write(&json, r#"[{"q": "a"}, {"z": 1}]"#).unwrap();
    let source = format!(
        "variable_source \"f\" \"file/json\" {{ file = \"{}\" }}\nvariable_source \"global\"",
        json.display()
    );
    let e = error(
        &hcl.replace(r#"variable_source "global""#, &source)
            .replace(
                r#"user = "source.users[next]""#,
                r#"user = "source.f[next]""#,
            )
            .replace("preprocessor.user.name}}", "preprocessor.user.q}}"),
    );
    assert!(e.message.contains(r#"`{"z":1}` has no key `q`"#), "{e}");
}

#[test]
fn a_file_is_named_by_its_spelling() {
    let e = load(Path::new("scenario.txt"), 1).unwrap_err();
    assert!(e.message.contains(".hcl, .yaml, .yml or .json"), "{e}");
    let e = load(Path::new("/nonexistent/s.hcl"), 1).unwrap_err();
    assert!(e.message.contains("cannot read"), "{e}");
}

mod never_panics {
    use super::*;
    use proptest::prelude::*;

    /// The worked example in each spelling (its source has no file here: a
    /// mutant that keeps it valid fails there, after every stage before).
    const SEEDS: [&[u8]; 3] = [
        include_bytes!("../../../../ammo/scenario/shop.hcl"),
        include_bytes!("../../../../ammo/scenario/shop.yaml"),
        include_bytes!("flow.json"),
    ];
    /// What matters to the file's syntaxes, its paths and its templates.
    const SNIPPETS: [&[u8]; 16] = [
        b"{{",
        b"}}",
        b"{{-",
        b"[next]",
        b"[-1]",
        b".request.",
        b"source.",
        b"$.",
        b"//",
        b"<<",
        b"${",
        b"\"",
        b"\n",
        b"(3, 100)",
        b"merge(",
        b"|substr(-2)",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        #[test]
        fn on_any_text_in_any_spelling(text in "\\PC{0,200}") {
            for format in [Format::Hcl, Format::Yaml, Format::Json] {
                let _ = compile_text(Path::new("s"), format, &text, 1);
            }
        }

        #[test]
        fn on_the_example_mutated(bytes in tank_testkit::mutation::mutated(&SEEDS, &SNIPPETS, 1..5)) {
            let text = String::from_utf8_lossy(&bytes);
            for format in [Format::Hcl, Format::Yaml, Format::Json] {
                let _ = compile_text(Path::new("s"), format, &text, 1);
            }
        }

        #[test]
        fn on_any_request_fields(
            uri in "[ -~]{0,30}",
            header in "[ -~]{0,30}",
            mapping in "[ -~]{0,30}",
        ) {
            let yaml = format!(
                "requests:\n  - name: a\n    uri: {uri:?}\n    headers: {{X: {header:?}}}\n    \
                 preprocessor: {{mapping: {{v: {mapping:?}}}}}\nscenarios:\n  - {{name: s, requests: [a]}}\n"
            );
            let _ = compile_text(Path::new("s.yaml"), Format::Yaml, &yaml, 1);
        }
    }
}
