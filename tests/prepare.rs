//! The prepare stage: `tank plan` checks what `tank -c` checks before its
//! first shot, needs no network, and a refused run leaves nothing behind.

use std::path::Path;
use std::process::Output;

use crate::support::tank;

fn run_in(dir: &Path, args: &[&str]) -> Output {
    tank()
        .args(args)
        .current_dir(dir)
        .output()
        .expect("start tank")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn plan_warns_of_a_host_that_does_not_resolve_here_and_plans_it_as_any_other() {
    let dir = tempfile::tempdir().unwrap();
    // `.invalid` never resolves (RFC 6761), with or without a network.
    let config = |address: &str| {
        format!("[phantom]\naddress = {address}\nrps_schedule = line(1,20,3s)\nuris = /a /b\n")
    };
    std::fs::write(dir.path().join("far.ini"), config("target.invalid:8080")).unwrap();
    std::fs::write(dir.path().join("near.ini"), config("127.0.0.1:8080")).unwrap();
    let far = run_in(dir.path(), &["plan", "-c", "far.ini", "--stpd", "far.stpd"]);
    assert!(far.status.success(), "{}", stderr(&far));
    assert!(
        stderr(&far).contains("far.ini:2: [phantom] address: cannot resolve `target.invalid`"),
        "{}",
        stderr(&far)
    );
    let near = run_in(
        dir.path(),
        &["plan", "-c", "near.ini", "--stpd", "near.stpd"],
    );
    assert!(near.status.success(), "{}", stderr(&near));
    let read = |name: &str| std::fs::read(dir.path().join(name)).unwrap();
    assert_eq!(read("far.stpd"), read("near.stpd"));

    // Firing it here is an error, before anything is written.
    let shot = run_in(dir.path(), &["-c", "far.ini"]);
    assert_eq!(shot.status.code(), Some(1), "{}", stderr(&shot));
    assert!(
        stderr(&shot).contains("cannot resolve `target.invalid`"),
        "{}",
        stderr(&shot)
    );
    assert!(
        !dir.path().join("logs").exists(),
        "a refused run left logs/"
    );
}

#[test]
fn plan_refuses_what_the_run_refuses_before_its_first_shot() {
    let dir = tempfile::tempdir().unwrap();
    let base = "[phantom]\naddress = origin\nrps_schedule = const(5,1s)\nuris = /\n";
    let cases = [
        // The origin simulator's recipe, which `tank plan` did not read before.
        (
            "recipe.ini",
            format!(
                "{base}[origin]\nrecipe_json = {{\"stages\": [{{\"at\": 0, \"status\": 99}}]}}\n"
            ),
            "recipe_json",
        ),
        // Its body budget.
        (
            "budget.ini",
            format!(
                "{base}[origin]\nrecipe_json = {{\"stages\": [{{\"at\": 0, \"status\": 200}}]}}\n\
                 body_budget = lots\n"
            ),
            "body_budget",
        ),
        // An autostop criterion on monitoring that is off.
        (
            "autostop.ini",
            format!(
                "{base}[origin]\nrecipe_json = {{\"stages\": [{{\"at\": 0, \"status\": 200}}]}}\n\
                 [autostop]\nautostop = metric_higher(host, cpu, 90, 5s)\n"
            ),
            "[telegraf]",
        ),
    ];
    for (name, text, says) in cases {
        std::fs::write(dir.path().join(name), text).unwrap();
        let plan = run_in(dir.path(), &["plan", "-c", name]);
        let shot = run_in(dir.path(), &["-c", name]);
        for out in [&plan, &shot] {
            assert_eq!(out.status.code(), Some(1), "{name}: {}", stderr(out));
            assert!(stderr(out).contains(says), "{name}: {}", stderr(out));
        }
        assert_eq!(stderr(&plan), stderr(&shot), "{name}: the same error");
        assert!(!dir.path().join("logs").exists(), "{name} left logs/");
    }
}
