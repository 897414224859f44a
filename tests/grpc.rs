//! `tank_type = grpc` against an independent gRPC server (Python's grpcio,
//! from the venv `scripts/grpc-venv.sh` makes; `TANK_GRPC_PYTHON` names its
//! python): calls from Pandora's grpc/json ammo, the schema from the
//! server's reflection or from the `.proto` file, each status in phout as
//! Pandora's HTTP code, and the server's own count of calls equal to the rows.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::component::Component;
use crate::support::{artifacts, assert_ran, phout, shoot, tank};

/// The venv's python, from `TANK_GRPC_PYTHON`; missing, the test is skipped
/// (in CI, `CI=true`, it fails).
fn grpc_python() -> Option<PathBuf> {
    match std::env::var_os("TANK_GRPC_PYTHON") {
        Some(python) if !python.is_empty() => Some(PathBuf::from(python)),
        _ => {
            let why = "TANK_GRPC_PYTHON is not set: run `export \
                       TANK_GRPC_PYTHON=$(scripts/grpc-venv.sh)` (scripts/test.sh does)";
            if std::env::var("CI").as_deref() == Ok("true") {
                panic!("{why}");
            }
            eprintln!("SKIPPED: {why}");
            None
        }
    }
}

fn service_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/grpc")
}

/// tests/grpc/server.py on a free port; it counts its calls in `calls.log`.
fn server() -> Option<Component> {
    let python = grpc_python()?;
    let stubs = python
        .parent()
        .and_then(Path::parent)
        .map(|venv| venv.join("stubs"))
        .unwrap();
    std::env::set_var("PYTHONPATH", &stubs);
    Some(Component::start(&python, |port, dir| {
        vec![
            service_dir().join("server.py").display().to_string(),
            port.to_string(),
            dir.join("calls.log").display().to_string(),
        ]
    }))
}

const AMMO: &str = r#"{"tag": "/hello", "call": "tankbar.Greeter.SayHello", "metadata": {"x-user": "u1"}, "payload": {"name": "tank"}}
{"tag": "/missing", "call": "tankbar.Greeter.SayHello", "payload": {"name": "missing"}}

{"tag": "/busy", "call": "tankbar.Greeter/SayHello", "payload": {"name": "busy"}}
{"tag": "/count", "call": "tankbar.Greeter.Count", "payload": {"name": "c", "times": "3"}}
"#;

fn config(dir: &Path, port: u16, grpc: &str) -> String {
    std::fs::write(dir.join("ammo.jsonl"), AMMO).unwrap();
    format!(
        "[phantom]\naddress = 127.0.0.1:{port}\ntank_type = grpc\nammofile = ammo.jsonl\n\
         instances_schedule = const(8, 1s)\nloop = 25\n\
         [tank]\nartifacts_base_dir = {}\n{grpc}\n",
        dir.join("logs").display()
    )
}

/// Wait (up to 10 s) for the server to have counted `calls`.
fn calls(server: &Component, calls: usize) -> Vec<String> {
    let started = std::time::Instant::now();
    loop {
        let text = std::fs::read_to_string(server.dir.path().join("calls.log")).unwrap_or_default();
        let lines: Vec<String> = text.lines().map(str::to_owned).collect();
        if lines.len() >= calls || started.elapsed() > Duration::from_secs(10) {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn check_run(dir: &Path, server: &Component) {
    let run = artifacts(dir);
    // The summary names the statuses the proto codes stand for.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    assert_eq!(
        summary["grpc_statuses"],
        serde_json::json!({"OK": 50, "NOT_FOUND": 25, "UNAVAILABLE": 25})
    );
    let text = std::fs::read_to_string(run.join("summary.txt")).unwrap();
    assert!(text.contains("gRPC statuses:"), "{text}");
    let rows = phout(&run);
    assert_eq!(rows.len(), 100);
    assert!(rows.iter().all(|r| r.net_code == 0), "{rows:?}");
    for (tag, code) in [
        ("/hello", 200),
        ("/missing", 404),
        ("/busy", 503),
        ("/count", 200),
    ] {
        let with_tag: Vec<_> = rows.iter().filter(|r| r.tag == tag).collect();
        assert_eq!(with_tag.len(), 25, "{tag}");
        assert!(
            with_tag.iter().all(|r| r.proto_code == code),
            "{tag}: {with_tag:?}"
        );
    }
    // A streaming call is one row, sized by all its messages (the least of
    // each: HPACK makes a connection's first replies the largest).
    let least = |tag: &str| {
        rows.iter()
            .filter(|r| r.tag == tag)
            .map(|r| r.size_in)
            .min()
    };
    let (count_in, hello_in) = (least("/count").unwrap(), least("/hello").unwrap());
    assert!(count_in > hello_in, "{count_in} <= {hello_in}");
    let calls = calls(server, 100);
    assert_eq!(calls.len(), 100);
    assert_eq!(calls.iter().filter(|c| *c == "Count c").count(), 25);
}

#[test]
fn calls_by_reflection_get_pandoras_codes() {
    let Some(server) = server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = shoot(
        dir.path(),
        &config(dir.path(), server.port, ""),
        Duration::from_secs(120),
    );
    assert_ran(&out);
    check_run(dir.path(), &server);
}

#[test]
fn a_deadline_the_server_enforces_is_its_deadline_exceeded_not_tanks_timeout() {
    let Some(server) = server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("slow.jsonl"),
        r#"{"tag": "/slow", "call": "tankbar.Greeter.SayHello", "payload": {"name": "slow"}}"#,
    )
    .unwrap();
    let cfg = format!(
        "[phantom]\naddress = 127.0.0.1:{}\ntank_type = grpc\nammofile = slow.jsonl\n\
         instances_schedule = const(2, 1s)\nloop = 2\ntimeout = 500ms\n\
         [tank]\nartifacts_base_dir = {}\n",
        server.port,
        dir.path().join("logs").display()
    );
    let out = shoot(dir.path(), &cfg, Duration::from_secs(120));
    assert_ran(&out);
    let rows = phout(&artifacts(dir.path()));
    assert_eq!(rows.len(), 2);
    // grpc-timeout is 500 ms; tank waits a little past it for the server's word.
    for row in &rows {
        assert_eq!((row.net_code, row.proto_code), (0, 504), "{row:?}");
        assert!(row.interval_real >= 500_000, "{row:?}");
    }
}

#[test]
fn calls_from_a_proto_file() {
    let Some(server) = server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let grpc = format!(
        "[grpc]\nproto = tankbar.proto\nimport_paths = {}\n",
        service_dir().display()
    );
    let out = shoot(
        dir.path(),
        &config(dir.path(), server.port, &grpc),
        Duration::from_secs(120),
    );
    assert_ran(&out);
    check_run(dir.path(), &server);
}

#[test]
fn tank_plan_names_a_wrong_field_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let grpc = format!(
        "[grpc]\nproto = {}\n",
        service_dir().join("tankbar.proto").display()
    );
    std::fs::write(dir.path().join("load.ini"), config(dir.path(), 1, &grpc)).unwrap();
    std::fs::write(
        dir.path().join("ammo.jsonl"),
        "{\"call\": \"tankbar.Greeter.SayHello\"}\n\
         {\"call\": \"tankbar.Greeter.SayHello\", \"payload\": {\"nmae\": \"x\"}}\n",
    )
    .unwrap();
    let out = tank()
        .args(["plan", "-c", "load.ini"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "ammo.jsonl:2: tankbar.Greeter.SayHello: payload: field \"nmae\" does not exist \
             (tankbar.HelloRequest has: name, times)"
        ),
        "{stderr}"
    );
}

#[test]
fn tank_plan_names_wrong_values_and_missing_protos_before_the_first_shot() {
    let dir = tempfile::tempdir().unwrap();
    let import = format!(
        "[grpc]\nproto = tankbar.proto\nimport_paths = {}\n",
        service_dir().display()
    );
    std::fs::write(dir.path().join("load.ini"), config(dir.path(), 1, &import)).unwrap();
    let plan = |overrides: &[&str], ammo: &str| {
        std::fs::write(dir.path().join("ammo.jsonl"), ammo).unwrap();
        let out = tank()
            .args(["plan", "-c", "load.ini"])
            .args(overrides.iter().flat_map(|o| ["-o", o]))
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let ok = "{\"call\": \"tankbar.Greeter.SayHello\"}\n";
    let stderr = plan(
        &[],
        &format!(
            "{ok}{{\"call\": \"tankbar.Greeter.SayHello\", \"payload\": {{\"times\": \"abc\"}}}}\n"
        ),
    );
    assert!(
        stderr.contains(
            "ammo.jsonl:2: tankbar.Greeter.SayHello: payload: field \"times\": expected an \
             integer (int64, a number or a string), found \"abc\""
        ),
        "{stderr}"
    );
    let stderr = plan(
        &[],
        &format!("{ok}{{\"call\": \"tankbar.Greeter.SayHello\", \"metadata\": {{\"x-bin\": \"!!!\"}}}}\n"),
    );
    assert!(
        stderr.contains("ammo.jsonl:2: tankbar.Greeter.SayHello: metadata `x-bin`"),
        "{stderr}"
    );
    // The missing file is named, not the valid one before it; at `-o`, not a line.
    let stderr = plan(&["grpc.proto=tankbar.proto nothere.proto"], ok);
    assert!(
        stderr.contains(&format!(
            "load.ini: -o grpc.proto: `nothere.proto` was not found in the import paths ({}), \
             nor as a path",
            service_dir().display()
        )),
        "{stderr}"
    );
}

#[test]
fn tank_plan_says_which_connection_specific_metadata_the_calls_leave_out() {
    // Before, transfer-encoding passed the plan and failed every call with 71;
    // then it was left out without a word.
    let dir = tempfile::tempdir().unwrap();
    let import = format!(
        "[grpc]\nproto = tankbar.proto\nimport_paths = {}\n",
        service_dir().display()
    );
    std::fs::write(dir.path().join("load.ini"), config(dir.path(), 1, &import)).unwrap();
    std::fs::write(
        dir.path().join("ammo.jsonl"),
        "{\"call\": \"tankbar.Greeter.SayHello\", \"metadata\": {\"Transfer-Encoding\": \"chunked\"}}\n\
         {\"call\": \"tankbar.Greeter.SayHello\", \"metadata\": {\"transfer-encoding\": \"chunked\"}}\n",
    )
    .unwrap();
    let out = tank()
        .args(["plan", "-c", "load.ini"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(
            "HTTP/2 has no connection-specific headers: left out of the calls' metadata: \
             transfer-encoding (2 lines)"
        ),
        "{text}"
    );
}
