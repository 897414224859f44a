//! Differential test: `tank plan` against yandex-tank 2.0.11's stepper, byte for byte.
//!
//! Every case under `tests/corpus/cases/` is a directory holding one config in one or more
//! spellings (`load.ini`, `load.yaml`, `load.toml`) and a `case.txt` (format in
//! `tests/corpus/README.md`). For every spelling and every queue the reference
//! (`tests/reference/ref_stepper.py`, run by the Python in `TANK_REFERENCE_PYTHON`) and
//! `tank plan --stpd` both write a stpd file, with the case directory as working directory,
//! and the outputs are compared:
//!
//! * reference wrote a file → tank must exit 0 with the same bytes;
//! * reference raised → tank must exit non-zero and say why on stderr;
//! * the departures docs/departures.md lists, as `case.txt` marks them:
//!   `ammo_limit M` (tank writes M records, the reference M + 1: the reference output is cut
//!   to M records), `expected` (compare with the committed `<queue>.expected`), `uniq` (the
//!   same with 32-hex markers masked), `timeout` (the reference never finishes: tank must
//!   fail with a message), `refused TEXT` (the reference plans a load nobody wrote: tank must
//!   fail with a message that contains TEXT).
//!
//! `case.txt` also records what the reference does (`ref = ok|error|timeout`), and the test
//! checks that too, so the corpus README stays true.
//!
//! Without `TANK_REFERENCE_PYTHON` the test fails and says how to set it up, unless
//! `TANK_SKIP_REFERENCE=1`. `TANK_DIFF_CASES=a,b` runs only the cases whose name contains
//! one of the given substrings.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The longest one `tank plan` run may take (the whole corpus takes well under a second).
const TANK_TIMEOUT: Duration = Duration::from_secs(30);
/// Reference wall-clock guard for ordinary cases (each takes a few ms once imported).
const REF_TIMEOUT_S: u32 = 20;
/// Reference guard for cases where it is known to loop forever.
const REF_TIMEOUT_LOOPING_S: u32 = 5;
/// The longest the whole reference batch may take.
const REF_BATCH_TIMEOUT: Duration = Duration::from_secs(600);

const SETUP_HELP: &str = "\
the differential test needs the reference, yandextank 2.0.11, in a Python venv.
Set it up once and point the test at it:

    scripts/reference-venv.sh            # creates .venv-ref/ and prints its python
    export TANK_REFERENCE_PYTHON=$PWD/.venv-ref/bin/python
    cargo test

(scripts/test.sh does both.) To skip this test on purpose, set TANK_SKIP_REFERENCE=1.";

#[test]
fn plan_matches_reference_stepper() {
    let python = match std::env::var_os("TANK_REFERENCE_PYTHON") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => {
            if std::env::var("TANK_SKIP_REFERENCE").as_deref() == Ok("1") {
                eprintln!("differential test SKIPPED: TANK_SKIP_REFERENCE=1");
                return;
            }
            panic!("TANK_REFERENCE_PYTHON is not set: {SETUP_HELP}");
        }
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cases = load_cases(&root.join("tests/corpus/cases"));
    assert!(!cases.is_empty(), "no cases found under tests/corpus/cases");
    let work = tempfile::tempdir().expect("temp dir");
    let runs = plan_runs(&cases, work.path());

    let started = Instant::now();
    let reference = ReferenceBatch::start(
        &python,
        &root.join("tests/reference/ref_stepper.py"),
        &runs,
        work.path(),
    );
    let tank: Vec<TankOutcome> = runs.iter().map(run_tank).collect();
    let reference = reference.finish();

    let mut failures = Vec::new();
    for (run, tank) in runs.iter().zip(&tank) {
        let case = &cases[run.case];
        let Some(reference) = reference.get(&run.id) else {
            failures.push(format!("{}: the reference batch gave no result", run.id));
            continue;
        };
        if let Err(why) = judge(run, case, reference, tank) {
            failures.push(format!("{}: {}", run.id, why));
        }
    }
    eprintln!(
        "differential: {} runs over {} cases in {:.1?}, {} failing",
        runs.len(),
        cases.len(),
        started.elapsed(),
        failures.len()
    );
    if !failures.is_empty() {
        panic!(
            "{} of {} differential runs failed:\n\n{}",
            failures.len(),
            runs.len(),
            failures.join("\n\n")
        );
    }
}

// ------------------------------------------------------------------------------ corpus

/// One corpus case: a directory and what its `case.txt` says.
struct Case {
    name: String,
    dir: PathBuf,
    configs: Vec<String>,
    queues: Vec<String>,
    /// What the reference does, per queue (`ok`, `error`, `timeout`).
    reference: Vec<String>,
    departure: Departure,
    options: Vec<String>,
}

/// Where tank departs from the reference on purpose (docs/departures.md).
#[derive(Clone, Debug, PartialEq)]
enum Departure {
    None,
    /// Tank writes exactly M records where the reference writes M + 1.
    AmmoLimit(usize),
    /// Compare with the committed `<queue>.expected`.
    Expected,
    /// As `Expected`, with random 32-hex markers masked on both sides.
    Uniq,
    /// The reference never finishes; tank must fail with a message.
    Timeout,
    /// The reference plans what the config does not say; tank must fail
    /// with a message containing this text.
    Refused(String),
}

fn load_cases(dir: &Path) -> Vec<Case> {
    let filter: Vec<String> = std::env::var("TANK_DIFF_CASES")
        .map(|s| {
            s.split(',')
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            e.expect("dir entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| filter.is_empty() || filter.iter().any(|f| n.contains(f.as_str())))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| parse_case(&dir.join(&name), name))
        .collect()
}

fn parse_case(dir: &Path, name: String) -> Case {
    let meta_path = dir.join("case.txt");
    let text =
        fs::read_to_string(&meta_path).unwrap_or_else(|e| panic!("{}: {e}", meta_path.display()));
    let mut case = Case {
        name,
        dir: dir.to_owned(),
        configs: Vec::new(),
        queues: vec!["phantom".to_owned()],
        reference: vec!["ok".to_owned()],
        departure: Departure::None,
        options: Vec::new(),
    };
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line
            .split_once(" = ")
            .unwrap_or_else(|| panic!("{}:{}: expected `key = value`", meta_path.display(), n + 1));
        let words = || {
            value
                .split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        match key {
            "about" => {}
            "queues" => case.queues = words(),
            "ref" => case.reference = words(),
            "option" => case.options.push(value.to_owned()),
            "departure" => {
                case.departure = match value.split_whitespace().collect::<Vec<_>>().as_slice() {
                    ["ammo_limit", m] => Departure::AmmoLimit(m.parse().expect("ammo_limit count")),
                    ["expected"] => Departure::Expected,
                    ["uniq"] => Departure::Uniq,
                    ["timeout"] => Departure::Timeout,
                    ["refused", text @ ..] if !text.is_empty() => {
                        Departure::Refused(text.join(" "))
                    }
                    _ => panic!(
                        "{}:{}: unknown departure {value:?}",
                        meta_path.display(),
                        n + 1
                    ),
                }
            }
            _ => panic!("{}:{}: unknown key {key:?}", meta_path.display(), n + 1),
        }
    }
    for config in ["load.ini", "load.yaml", "load.toml"] {
        if dir.join(config).is_file() {
            case.configs.push(config.to_owned());
        }
    }
    assert!(
        !case.configs.is_empty(),
        "{}: no load.ini / load.yaml / load.toml",
        dir.display()
    );
    assert!(
        case.reference.len() == 1 || case.reference.len() == case.queues.len(),
        "{}: `ref` needs one value, or one per queue",
        meta_path.display()
    );
    case
}

impl Case {
    fn expected_reference(&self, queue: usize) -> &str {
        &self.reference[if self.reference.len() == 1 { 0 } else { queue }]
    }
}

/// One (case, config spelling, queue) to run on both sides.
struct Run {
    id: String,
    case: usize,
    config: String,
    queue: usize,
    section: String,
    /// The case directory: both sides run there (ammo paths are relative to it).
    cwd: PathBuf,
    options: Vec<String>,
    ref_timeout_s: u32,
    ref_out: PathBuf,
    tank_out: PathBuf,
}

fn plan_runs(cases: &[Case], work: &Path) -> Vec<Run> {
    let mut runs = Vec::new();
    for (ci, case) in cases.iter().enumerate() {
        for config in &case.configs {
            for (qi, section) in case.queues.iter().enumerate() {
                let n = runs.len();
                runs.push(Run {
                    id: format!("{}/{}[{}]", case.name, config, section),
                    case: ci,
                    config: config.clone(),
                    queue: qi,
                    section: section.clone(),
                    cwd: case.dir.clone(),
                    options: case.options.clone(),
                    ref_timeout_s: if case.reference.iter().any(|r| r == "timeout") {
                        REF_TIMEOUT_LOOPING_S
                    } else {
                        REF_TIMEOUT_S
                    },
                    ref_out: work.join(format!("{n}.ref.stpd")),
                    tank_out: work.join(format!("{n}.tank.stpd")),
                });
            }
        }
    }
    runs
}

// ------------------------------------------------------------------------------ reference

/// What the reference did for one run.
struct RefOutcome {
    code: i32,
    message: String,
    out: PathBuf,
}

/// The reference script in `--batch` mode, running while tank runs.
struct ReferenceBatch {
    child: Child,
    results: mpsc::Receiver<String>,
    stderr: PathBuf,
    outs: HashMap<String, PathBuf>,
}

impl ReferenceBatch {
    fn start(python: &Path, script: &Path, runs: &[Run], work: &Path) -> ReferenceBatch {
        let stderr = work.join("reference-batch.err");
        let mut child = Command::new(python)
            .arg(script)
            .arg("--batch")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(fs::File::create(&stderr).expect("batch stderr file"))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {} ({e}): {SETUP_HELP}", python.display()));
        let mut jobs = String::new();
        let mut outs = HashMap::new();
        for run in runs {
            outs.insert(run.id.clone(), run.ref_out.clone());
            jobs.push_str(&job_json(run));
            jobs.push('\n');
        }
        let mut stdin = child.stdin.take().expect("batch stdin");
        let mut stdout = child.stdout.take().expect("batch stdout");
        let (tx, results) = mpsc::channel();
        std::thread::spawn(move || {
            // Jobs are small; write them all, then close stdin so the batch ends.
            let _ = stdin.write_all(jobs.as_bytes());
            drop(stdin);
            let mut text = String::new();
            let _ = stdout.read_to_string(&mut text);
            let _ = tx.send(text);
        });
        ReferenceBatch {
            child,
            results,
            stderr,
            outs,
        }
    }

    fn finish(mut self) -> HashMap<String, RefOutcome> {
        let text = match self.results.recv_timeout(REF_BATCH_TIMEOUT) {
            Ok(text) => text,
            Err(_) => {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("the reference batch did not finish within {REF_BATCH_TIMEOUT:?}");
            }
        };
        let status = self.child.wait().expect("wait for the reference batch");
        if !status.success() {
            let err = fs::read_to_string(&self.stderr).unwrap_or_default();
            panic!("the reference batch failed ({status}):\n{err}\n{SETUP_HELP}");
        }
        let mut outcomes = HashMap::new();
        for line in text.lines() {
            let mut fields = line.splitn(3, '\t');
            let (Some(id), Some(code), message) = (fields.next(), fields.next(), fields.next())
            else {
                panic!("unexpected reference batch line {line:?}");
            };
            let out = self
                .outs
                .get(id)
                .unwrap_or_else(|| panic!("unknown id in {line:?}"))
                .clone();
            let code = code
                .parse()
                .unwrap_or_else(|_| panic!("bad exit code in {line:?}"));
            outcomes.insert(
                id.to_owned(),
                RefOutcome {
                    code,
                    message: message.unwrap_or("").to_owned(),
                    out,
                },
            );
        }
        outcomes
    }
}

/// One `--batch` job line (see the script's docs).
fn job_json(run: &Run) -> String {
    let options: Vec<String> = run.options.iter().map(|o| json_str(o)).collect();
    format!(
        r#"{{"id": {}, "cwd": {}, "config": {}, "section": {}, "out": {}, "options": [{}], "timeout": {}}}"#,
        json_str(&run.id),
        json_str(&run.cwd.to_string_lossy()),
        json_str(&run.config),
        json_str(&run.section),
        json_str(&run.ref_out.to_string_lossy()),
        options.join(", "),
        run.ref_timeout_s
    )
}

fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

// ------------------------------------------------------------------------------ tank

/// What `tank plan` did for one run.
struct TankOutcome {
    /// Exit code, or None when it was killed for taking longer than TANK_TIMEOUT.
    code: Option<i32>,
    stderr: String,
}

fn run_tank(run: &Run) -> TankOutcome {
    let stderr_path = run.tank_out.with_extension("err");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tank"));
    cmd.current_dir(&run.cwd)
        .arg("plan")
        .arg("-c")
        .arg(&run.config)
        .arg("--section")
        .arg(&run.section)
        .arg("--stpd")
        .arg(&run.tank_out);
    for option in &run.options {
        cmd.arg("-o").arg(option);
    }
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(fs::File::create(&stderr_path).expect("tank stderr file"))
        .spawn()
        .expect("run tank");
    let code = wait_bounded(child, TANK_TIMEOUT);
    let stderr = String::from_utf8_lossy(&fs::read(&stderr_path).unwrap_or_default()).into_owned();
    TankOutcome { code, stderr }
}

/// Wait for a child at most `limit`; kill it after that. None = killed.
fn wait_bounded(mut child: Child, limit: Duration) -> Option<i32> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return Some(status.code().unwrap_or(-1));
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

// ------------------------------------------------------------------------------ judging

fn judge(run: &Run, case: &Case, reference: &RefOutcome, tank: &TankOutcome) -> Result<(), String> {
    let ref_kind = match reference.code {
        0 => "ok",
        1 => "error",
        3 | 4 => "timeout",
        code => {
            return Err(format!(
                "the reference script failed (exit {code}): {}",
                reference.message
            ))
        }
    };
    let expected_kind = case.expected_reference(run.queue);
    if ref_kind != expected_kind {
        return Err(format!(
            "corpus drift: case.txt says the reference gives `{expected_kind}`, it gave `{ref_kind}` {}",
            reference.message
        ));
    }
    let Some(tank_code) = tank.code else {
        return Err(format!("tank plan did not finish within {TANK_TIMEOUT:?}"));
    };
    let must_fail = |why: &str| -> Result<(), String> {
        if tank_code == 0 {
            Err(format!("tank exited 0, but {why}"))
        } else if tank.stderr.trim().is_empty() {
            Err(format!(
                "tank exited {tank_code} without a message on stderr ({why})"
            ))
        } else {
            Ok(())
        }
    };
    let tank_bytes = || -> Result<Vec<u8>, String> {
        if tank_code != 0 {
            return Err(format!(
                "tank exited {tank_code}, expected success: {}",
                last_lines(&tank.stderr)
            ));
        }
        fs::read(&run.tank_out)
            .map_err(|e| format!("tank exited 0 but its stpd is unreadable: {e}"))
    };
    let expected_file = || -> Result<Vec<u8>, String> {
        let path = case.dir.join(format!("{}.expected", run.section));
        fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))
    };
    match (&case.departure, ref_kind) {
        (Departure::Expected, _) => compare(&expected_file()?, &tank_bytes()?, "expected"),
        (Departure::Uniq, _) => compare(
            &mask_uuid_markers(&expected_file()?),
            &mask_uuid_markers(&tank_bytes()?),
            "expected",
        ),
        (Departure::Refused(text), _) => {
            must_fail("the case is one tank refuses")?;
            if tank.stderr.contains(text.as_str()) {
                Ok(())
            } else {
                Err(format!(
                    "tank's message does not say {text:?}: {}",
                    last_lines(&tank.stderr)
                ))
            }
        }
        (_, "timeout") => must_fail(&format!(
            "the reference never finishes ({})",
            reference.message
        )),
        (_, "error") => must_fail(&format!("the reference raised {}", reference.message)),
        (departure, _) => {
            let mut want =
                fs::read(&reference.out).map_err(|e| format!("reference stpd unreadable: {e}"))?;
            if let Departure::AmmoLimit(m) = departure {
                let starts = record_starts(&want);
                if starts.len() > *m {
                    want.truncate(starts[*m]);
                }
            }
            compare(&want, &tank_bytes()?, "reference")
        }
    }
}

/// Byte comparison with a report a human can act on.
fn compare(want: &[u8], got: &[u8], what: &str) -> Result<(), String> {
    if want == got {
        return Ok(());
    }
    let at = want
        .iter()
        .zip(got)
        .position(|(a, b)| a != b)
        .unwrap_or(want.len().min(got.len()));
    let starts = record_starts(want);
    let place = if at >= want.len() {
        format!("where the {what} ends")
    } else {
        format!(
            "in record {} of the {what}",
            starts.iter().rposition(|&s| s <= at).unwrap_or(0)
        )
    };
    let mut msg = format!(
        "first difference at byte {at} ({place}); {what} has {} bytes / {} records, tank {} bytes / {} records",
        want.len(),
        starts.len(),
        got.len(),
        record_starts(got).len()
    );
    let _ = write!(msg, "\n    {what:>9}: {}", context(want, at));
    let _ = write!(msg, "\n    {:>9}: {}", "tank", context(got, at));
    Err(msg)
}

/// Up to 60 bytes before and after `at`, escaped, with `⟦` marking `at`.
fn context(bytes: &[u8], at: usize) -> String {
    let from = at.saturating_sub(60);
    let to = (at + 60).min(bytes.len());
    let esc = |s: &[u8]| s.escape_ascii().to_string();
    if at > bytes.len() {
        return format!("…{}⟦<end>", esc(&bytes[from.min(bytes.len())..]));
    }
    format!("…{}⟦{}…", esc(&bytes[from..at]), esc(&bytes[at..to]))
}

fn last_lines(text: &str) -> String {
    let lines: Vec<&str> = text.lines().rev().take(3).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
}

/// Start offsets of the records of a stpd file (`<len> <ts> <marker>\n<len bytes>\n`).
/// Stops at the first malformed header.
fn record_starts(stpd: &[u8]) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut pos = 0;
    while pos < stpd.len() {
        let Some(nl) = stpd[pos..].iter().position(|&b| b == b'\n') else {
            break;
        };
        let header = &stpd[pos..pos + nl];
        let Some(len) = header
            .split(|&b| b == b' ')
            .next()
            .and_then(|f| std::str::from_utf8(f).ok())
            .and_then(|f| f.parse::<usize>().ok())
        else {
            break;
        };
        starts.push(pos);
        pos += nl + 1 + len + 1;
    }
    starts
}

/// Replace markers that are a random uuid (`[0-9a-f]{32}`, maybe followed by `#N`) with
/// 32 `x`, so two runs of `autocases = uniq` compare equal when their structure is.
fn mask_uuid_markers(stpd: &[u8]) -> Vec<u8> {
    let mut out = stpd.to_vec();
    for start in record_starts(stpd) {
        let nl = start
            + stpd[start..]
                .iter()
                .position(|&b| b == b'\n')
                .expect("header end");
        let header = &stpd[start..nl];
        let Some(marker_at) = header
            .iter()
            .enumerate()
            .filter(|&(_, &b)| b == b' ')
            .nth(1)
            .map(|(i, _)| start + i + 1)
        else {
            continue;
        };
        let marker = &stpd[marker_at..nl];
        let is_hex = |b: &u8| b.is_ascii_digit() || (b'a'..=b'f').contains(b);
        let rest_ok = |r: &[u8]| {
            r.is_empty() || (r[0] == b'#' && r.len() > 1 && r[1..].iter().all(u8::is_ascii_digit))
        };
        if marker.len() >= 32 && marker[..32].iter().all(is_hex) && rest_ok(&marker[32..]) {
            out[marker_at..marker_at + 32].fill(b'x');
        }
    }
    out
}

#[test]
fn record_starts_and_masking_follow_the_stpd_format() {
    let stpd = b"18 0 \nGET / HTTP/1.0\r\n\r\n\n18 5 0123456789abcdef0123456789abcdef#3\nGET / HTTP/1.0\r\n\r\n\n";
    assert_eq!(record_starts(stpd), vec![0, 25]);
    let masked = mask_uuid_markers(stpd);
    assert!(masked
        .windows(34)
        .any(|w| w == b"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx#3"));
    assert_eq!(masked.len(), stpd.len());
}
