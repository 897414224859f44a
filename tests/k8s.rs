//! `tank k8s`: the manifests pass kubernetes-validate's offline schemas (strict,
//! for a current Kubernetes), and the pod's command line, run here as the kubelet
//! would run it (JOB_COMPLETION_INDEX set, `$(VAR)` expanded, the ConfigMap's
//! files where it is mounted), produces a shard's artifacts.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use crate::support::{server::Behaviour, server::Server, tank};

/// kubernetes-validate from TANK_K8S_VALIDATE (scripts/k8s-validate-venv.sh).
fn validator() -> Option<String> {
    match std::env::var("TANK_K8S_VALIDATE") {
        Ok(path) if Path::new(&path).is_file() => Some(path),
        _ if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("TANK_K8S_VALIDATE is not set: run scripts/k8s-validate-venv.sh")
        }
        _ => {
            eprintln!(
                "skipped the schema check: set TANK_K8S_VALIDATE=$(scripts/k8s-validate-venv.sh)"
            );
            None
        }
    }
}

/// The strings under `args:` in the Job, JSON-decoded.
fn pod_args(manifests: &str) -> Vec<String> {
    manifests
        .lines()
        .skip_while(|l| l.trim() != "args:")
        .skip(1)
        .take_while(|l| l.trim_start().starts_with("- \""))
        .map(|l| serde_json::from_str(l.trim_start().trim_start_matches("- ")).unwrap())
        .collect()
}

/// The ConfigMap's `data` entries (key, text).
fn config_files(manifests: &str) -> Vec<(String, String)> {
    manifests
        .lines()
        .skip_while(|l| l.trim() != "data:")
        .skip(1)
        .take_while(|l| l.starts_with("  \""))
        .map(|l| {
            let mut stream = serde_json::Deserializer::from_str(l.trim()).into_iter::<String>();
            let key = stream.next().unwrap().unwrap();
            let rest = l.trim()[stream.byte_offset()..]
                .trim_start_matches(':')
                .trim();
            (key, serde_json::from_str(rest).unwrap())
        })
        .collect()
}

#[test]
fn manifests_validate_and_the_pod_command_runs_a_shard() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(Behaviour::KeepAlive);
    std::fs::write(dir.path().join("ammo.txt"), "/a\n/b\n").unwrap();
    std::fs::write(
        dir.path().join("load.ini"),
        format!(
            "[phantom]\naddress = {}\nammofile = ammo.txt\nrps_schedule = const(20,1s)\n",
            server.addr()
        ),
    )
    .unwrap();
    let out = tank()
        .args([
            "k8s",
            "-c",
            "load.ini",
            "--shards",
            "2",
            "--image",
            "registry.example/tank:1",
        ])
        .args(["--namespace", "load", "--start-in", "3s"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let manifests = String::from_utf8(out.stdout).unwrap();
    let path = dir.path().join("tank.yaml");
    std::fs::write(&path, &manifests).unwrap();
    if let Some(validate) = validator() {
        let out = std::process::Command::new(validate)
            .args(["--strict", "-k", "1.33.0"])
            .arg(&path)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{text}");
        assert!(text.contains("passed for resource job/tank"), "{text}");
        assert!(
            text.contains("passed for resource configmap/tank"),
            "{text}"
        );
    }

    // The pod, here: the ConfigMap's files in a directory, mount paths pointed there.
    let mounted = dir.path().join("etc-tank");
    std::fs::create_dir(&mounted).unwrap();
    for (key, text) in config_files(&manifests) {
        std::fs::write(mounted.join(key), text).unwrap();
    }
    let artifacts = dir.path().join("artifacts");
    let index = "1";
    let mut args: Vec<String> = pod_args(&manifests)
        .into_iter()
        .map(|a| {
            a.replace("$(JOB_COMPLETION_INDEX)", index)
                .replace("/etc/tank", &mounted.display().to_string())
                .replace("/artifacts", &artifacts.display().to_string())
        })
        .collect();
    assert!(args.contains(&"1/2".to_owned()), "{args:?}");
    // The manifests' start was 3 s after they were made; a busy machine may spend that on
    // the validator alone. A pod applied late would be refused; this one starts anew.
    let at = args
        .iter()
        .position(|a| a == "--start-at")
        .expect("the pod command has a common start");
    let soon = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        + Duration::from_secs(2);
    args[at + 1] = tank_run::time::format_rfc3339(soon.as_micros() as u64);
    let status = tank()
        .args(&args)
        .env("JOB_COMPLETION_INDEX", index)
        .env("TANK_SHARDS", "2")
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let run = artifacts.join("tank/shard-1");
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("shard.json")).unwrap()).unwrap();
    assert_eq!(
        (record["index"].as_u64(), record["count"].as_u64()),
        (Some(1), Some(2))
    );
    assert_eq!(record["common_start"], true);
    // const(20,1s) is 20 shots; shard 1 of 2 fires the odd ones.
    let phout = std::fs::read_to_string(run.join("phout.log")).unwrap();
    assert_eq!(phout.lines().count(), 10);
}

#[test]
fn a_loopback_target_is_warned_of_and_shards_and_start_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("load.ini"),
        "[phantom]\naddress = 127.0.0.1:8080\nuris = /\nrps_schedule = const(1,1s)\n\
         [phantom-2]\naddress = web.load.svc:80\nuris = /\nrps_schedule = const(1,1s)\n",
    )
    .unwrap();
    let k8s = |extra: &[&str]| {
        let out = tank()
            .args(["k8s", "-c", "load.ini", "--image", "tank:1"])
            .args(extra)
            .current_dir(dir.path())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stderr) = k8s(&[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains(
            "load.ini: [phantom] address 127.0.0.1:8080 is a loopback address: in a pod it is the pod itself"
        ),
        "{stderr}"
    );
    assert_eq!(stderr.matches("loopback").count(), 1, "{stderr}");
    for (extra, expected) in [
        (
            ["--shards", "100000000"],
            "--shards 100000000: expected 1 to 100000 (an Indexed Job's most completions)",
        ),
        (
            ["--start-in", "99999999999s"],
            "--start-in 99999999999s: expected a positive duration of at most 7 days",
        ),
    ] {
        let (code, stderr) = k8s(&extra);
        assert_eq!(code, Some(1), "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
    }
}

#[test]
fn what_the_pods_read_travels_and_manifests_that_cannot_work_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let k8s = |config: &str| {
        std::fs::write(dir.path().join("load.ini"), config).unwrap();
        let out = tank()
            .args([
                "k8s", "-c", "load.ini", "--image", "tank:1", "--shards", "2",
            ])
            .current_dir(dir.path())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let target = "[phantom]\naddress = web.load.svc:80\nuris = /\nrps_schedule = const(1,1s)\n";
    // The monitoring host list travels in the ConfigMap, and the pods read it there.
    std::fs::write(
        dir.path().join("mon.xml"),
        "<Monitoring>\n  <Host address=\"web.load.svc\"/>\n</Monitoring>\n",
    )
    .unwrap();
    let (code, manifests, stderr) = k8s(&format!("{target}[telegraf]\nconfig = mon.xml\n"));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        config_files(&manifests)
            .iter()
            .any(|(key, text)| key == "monitoring-mon.xml" && text.contains("web.load.svc")),
        "{manifests}"
    );
    assert!(
        pod_args(&manifests).contains(&"telegraf.config=/etc/tank/monitoring-mon.xml".to_owned()),
        "{manifests}"
    );
    // Exporters on loopback are each pod itself: said.
    let (code, _, stderr) = k8s(&format!(
        "{target}[influx]\naddress = 127.0.0.1\n[prometheus]\nlisten = 127.0.0.1:9464\n"
    ));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("[influx] address 127.0.0.1: in a pod"),
        "{stderr}"
    );
    assert!(
        stderr.contains("[prometheus] listen 127.0.0.1:9464: in a pod"),
        "{stderr}"
    );
    // Refused: drawn arrivals each pod would draw on its own.
    let (code, _, stderr) = k8s(&format!("{target}arrivals = poisson\n"));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("expected `arrivals_seed` set"), "{stderr}");
    // Refused: two large ammo files of one name, one path on the ammo volume.
    let big = "/".repeat(300 * 1024) + "\n";
    for sub in ["a", "b"] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        std::fs::write(dir.path().join(sub).join("x.ammo"), &big).unwrap();
    }
    let (code, _, stderr) = k8s(
        "[phantom]\naddress = web:80\nammofile = a/x.ammo\nrps_schedule = const(1,1s)\n\
         [phantom-2]\naddress = web:80\nammofile = b/x.ammo\nrps_schedule = const(1,1s)\n",
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("are both `x.ammo` on the tank-ammo volume"),
        "{stderr}"
    );
    // Refused: a ConfigMap past Kubernetes' 1 MiB (five files just under the per-file limit).
    let mut config = String::new();
    for i in 0..5 {
        let name = format!("q{i}.ammo");
        std::fs::write(dir.path().join(&name), "/".repeat(250 * 1024) + "\n").unwrap();
        let section = if i == 0 {
            "phantom".to_owned()
        } else {
            format!("phantom-{}", i + 1)
        };
        config += &format!(
            "[{section}]\naddress = web:80\nammofile = {name}\nrps_schedule = const(1,1s)\n"
        );
    }
    let (code, _, stderr) = k8s(&config);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("more than Kubernetes' 1048576"), "{stderr}");
    // Two fit, but not in `kubectl apply`'s annotation: said.
    let (code, _, stderr) = k8s(
        "[phantom]\naddress = web:80\nammofile = q0.ammo\nrps_schedule = const(1,1s)\n\
         [phantom-2]\naddress = web:80\nammofile = q1.ammo\nrps_schedule = const(1,1s)\n",
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("use `kubectl apply --server-side`"),
        "{stderr}"
    );
}
