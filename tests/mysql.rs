//! MySQL replay against real components: a MariaDB (Debian's mariadb-server)
//! serves a real client (mysql-connector-python's own protocol code, from the
//! venv `scripts/mysql-client-venv.sh` makes) while tcpdump captures the
//! traffic and the server writes its slow log; the capture, and the slow
//! log, are then replayed by `tank -c` at a second and a third MariaDB started
//! from the same snapshot. Each server's general log (`log_output = TABLE`,
//! microseconds) is the witness: the replay's must show the same commands per
//! connection, in order, at the captured offsets give or take 250 ms (the
//! client's commands are 400 ms apart, so a replay that ignored its times
//! would be seconds off; accuracy itself is the benchmark's business).
//! `[mysql] ssl` is shot at a MariaDB serving TLS to a user it admits over
//! TLS only.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::import::Tcpdump;
use crate::support::mariadb::{Logged, MariaDb, Snapshot};
use crate::support::{artifacts, assert_ran, phout, shoot_with, tank};

/// The data both servers start from, and the two users: the client's and the replay's.
const SETUP: &str = "\
    CREATE DATABASE shop; \
    CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(20)); \
    INSERT INTO shop.items VALUES (1, 'apple'), (2, 'pear'), (3, 'plum'); \
    CREATE TABLE shop.orders (id INT AUTO_INCREMENT PRIMARY KEY, item INT, n INT); \
    CREATE USER 'app'@'%' IDENTIFIED BY 'secret'; \
    GRANT ALL ON shop.* TO 'app'@'%'; \
    CREATE USER 'tank'@'%' IDENTIFIED BY 'tanksecret'; \
    GRANT ALL ON shop.* TO 'tank'@'%';";

/// Two connections, interleaved, their commands 400 ms apart: text queries,
/// a transaction, a prepared statement executed twice and closed, a ping, a
/// change of schema, a query that fails.
const CLIENT: &str = r#"
import sys, threading, time
import mysql.connector

port = int(sys.argv[1])
start = time.monotonic()

def at(offset):
    time.sleep(max(0.0, start + offset - time.monotonic()))

def connect(**more):
    return mysql.connector.connect(host="127.0.0.1", port=port, user="app", password="secret",
                                   use_pure=True, ssl_disabled=True, **more)

def first():
    at(0.0)
    c = connect(database="shop")
    cur = c.cursor()
    at(0.4)
    cur.execute("SELECT id, name FROM items ORDER BY id")
    cur.fetchall()
    at(0.8)
    cur.execute("INSERT INTO orders (item, n) VALUES (1, 2)")
    c.commit()
    p = c.cursor(prepared=True)
    at(1.2)
    p.execute("SELECT name FROM items WHERE id = ?", (2,))
    p.fetchall()
    at(1.6)
    p.execute("SELECT name FROM items WHERE id = ?", (3,))
    p.fetchall()
    p.close()
    at(2.0)
    c.ping()
    at(2.4)
    c.close()

def second():
    at(0.2)
    c = connect()
    at(1.0)
    c.cmd_init_db("shop")
    cur = c.cursor()
    at(1.4)
    try:
        cur.execute("SELECT * FROM nope")
    except mysql.connector.Error as e:
        assert e.errno == 1146, e
    at(1.8)
    c.close()

threads = [threading.Thread(target=f) for f in (first, second)]
for t in threads:
    t.start()
for t in threads:
    t.join()
"#;

/// The client's python, from `TANK_MYSQL_PYTHON`; missing, a failure in CI
/// and a skip elsewhere, with how to make it.
fn client_python() -> Option<PathBuf> {
    match std::env::var_os("TANK_MYSQL_PYTHON") {
        Some(python) if !python.is_empty() => Some(PathBuf::from(python)),
        _ => {
            let why = "TANK_MYSQL_PYTHON is not set: run \
                       `export TANK_MYSQL_PYTHON=$(scripts/mysql-client-venv.sh)` (scripts/test.sh does)";
            assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
            eprintln!("SKIPPED: {why}");
            None
        }
    }
}

/// A command as a general log shows it: its name, its argument (a
/// `Connect`'s without the user, who is the test's and not the capture's),
/// and µs from the first connection's `Connect`.
type Entry = (String, String, i64);

/// A general log's commands per connection, connections in the order they connected.
fn by_connection(log: &[Logged]) -> Vec<Vec<Entry>> {
    let first = log
        .iter()
        .find(|row| row.command == "Connect")
        .map_or(0, |row| row.at_us);
    let mut threads: BTreeMap<u64, (u64, Vec<Entry>)> = BTreeMap::new();
    for row in log {
        let argument = String::from_utf8_lossy(&row.argument).into_owned();
        // `app@localhost on shop using TCP/IP`: the user is the test's, not the capture's.
        let argument = match (row.command.as_str(), argument.split_once('@')) {
            ("Connect", Some((_, rest))) => rest.to_owned(),
            _ => argument,
        };
        let entry = threads.entry(row.thread).or_insert((row.at_us, Vec::new()));
        entry.1.push((
            row.command.clone(),
            argument,
            row.at_us as i64 - first as i64,
        ));
    }
    let mut connections: Vec<(u64, Vec<Entry>)> = threads.into_values().collect();
    connections.sort_by_key(|(first_at, _)| *first_at);
    connections.into_iter().map(|(_, rows)| rows).collect()
}

/// The statements of each connection (queries and executions), without times.
fn statements(connections: &[Vec<Entry>]) -> Vec<Vec<String>> {
    connections
        .iter()
        .map(|rows| {
            rows.iter()
                .filter(|(command, ..)| command == "Query" || command == "Execute")
                .map(|(_, argument, _)| argument.clone())
                .collect()
        })
        .collect()
}

fn config(port: u16, ammofile: &Path) -> String {
    format!(
        "[phantom]\naddress = 127.0.0.1:{port}\ntank_type = mysql\nammo_type = sessions\n\
         ammofile = {}\ntimeout = 10s\n[mysql]\nuser = tank\npassword_env = TANK_TEST_MYSQL_PASSWORD\n",
        ammofile.display()
    )
}

/// Run `tank -c` on `config` in `dir` with `args`, the password in the environment.
fn replay(dir: &Path, config: &str, args: &[&str]) {
    std::env::set_var("TANK_TEST_MYSQL_PASSWORD", "tanksecret");
    let out = shoot_with(dir, config, args, Duration::from_secs(120));
    assert_ran(&out);
}

/// Apiary's tally `name` summed over the intervals of summary.json's `apiary`,
/// and the last interval's total of it (0 when no interval has it).
fn apiary_tally(summary: &Value, name: &str) -> (u64, u64) {
    let intervals = summary["apiary"]["intervals"]
        .as_array()
        .expect("summary.json's apiary intervals");
    let of = |interval: &Value| -> Option<(u64, u64)> {
        let tally = interval["tallies"]
            .as_array()?
            .iter()
            .find(|t| t["name"] == name)?;
        Some((tally["current"].as_u64()?, tally["total"].as_u64()?))
    };
    let sum = intervals.iter().filter_map(of).map(|(n, _)| n).sum();
    let total = intervals.last().and_then(of).map_or(0, |(_, total)| total);
    (sum, total)
}

#[test]
fn a_captured_mysql_conversation_and_its_slow_log_replay_their_commands_per_connection() {
    let Some(python) = client_python() else {
        return;
    };
    let Some(tcpdump) = crate::support::component::binary("tcpdump", "tcpdump") else {
        return;
    };
    let Some(snapshot) = Snapshot::create(SETUP) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("db.pcap");
    let slow_log = dir.path().join("slow.log");

    // The capture: a real client at a real server, its traffic and slow log.
    let source = MariaDb::start(
        &snapshot,
        &[
            // The slow log to its file, the general log to its table as ever.
            "--log-output=FILE,TABLE".into(),
            format!(
                "--general-log-file={}",
                dir.path().join("general.log").display()
            ),
            "--slow-query-log=1".into(),
            format!("--slow-query-log-file={}", slow_log.display()),
            "--long-query-time=0".into(),
            "--log-slow-admin-statements=1".into(),
        ],
    );
    let dump = Tcpdump::start(&tcpdump, source.port, &capture);
    let client = dir.path().join("client.py");
    std::fs::write(&client, CLIENT).unwrap();
    let out = Command::new(&python)
        .arg(&client)
        .arg(source.port.to_string())
        .output()
        .expect("run the client");
    assert!(
        out.status.success(),
        "the client failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dump.stop();
    let captured = by_connection(&source.general_log());
    drop(source);
    assert_eq!(captured.len(), 2, "{captured:?}");

    // The capture replayed (imported on the fly: `ammofile` is the pcap), with Apiary's view.
    let target = MariaDb::start(&snapshot, &[]);
    let run_dir = dir.path().join("pcap");
    std::fs::create_dir(&run_dir).unwrap();
    replay(
        &run_dir,
        &config(target.port, &capture),
        &["-q", "--apiary", "--interval", "1s"],
    );
    let mut replayed = by_connection(&target.general_log());
    drop(target);
    // Connections paired by what they ran: which of two connections opened within
    // moments of each other logs first is the machine's business (each entry's time
    // is checked below).
    let mut captured = captured;
    let by_statements = |rows: &Vec<Entry>| -> Vec<(String, String)> {
        rows.iter()
            .map(|(c, a, _)| (c.clone(), a.clone()))
            .collect()
    };
    replayed.sort_by_key(by_statements);
    captured.sort_by_key(by_statements);
    let commands = |connections: &[Vec<Entry>]| -> Vec<Vec<(String, String)>> {
        connections
            .iter()
            .map(|rows| {
                rows.iter()
                    .map(|(c, a, _)| (c.clone(), a.clone()))
                    .collect()
            })
            .collect()
    };
    assert_eq!(commands(&replayed), commands(&captured));
    for (replayed, captured) in replayed.iter().flatten().zip(captured.iter().flatten()) {
        assert!(
            (replayed.2 - captured.2).abs() < 250_000,
            "{} `{}` at {} µs in the replay, {} µs in the capture",
            replayed.0,
            replayed.1,
            replayed.2,
            captured.2
        );
    }
    // Every command is a phout row, tagged by kind and table, an error by its number.
    let rows = phout(&artifacts(&run_dir));
    let imported = tank()
        .arg("import")
        .arg(&capture)
        .arg("-o")
        .arg(dir.path().join("db.sessions"))
        .output()
        .expect("run tank import");
    let summary = String::from_utf8_lossy(&imported.stderr).into_owned();
    let requests = format!("pcap (mysql): 2 sessions, {} requests", rows.len());
    assert!(summary.contains(&requests), "{requests}? {summary}");
    assert!(rows.iter().all(|row| row.net_code == 0), "{rows:?}");
    let failed: Vec<&str> = rows
        .iter()
        .filter(|row| row.proto_code != 200)
        .map(|row| row.tag.as_str())
        .collect();
    assert_eq!(failed, ["SELECT nope"]);
    assert_eq!(
        rows.iter().filter(|row| row.tag == "SELECT items").count(),
        3
    );
    // Apiary's view counts every command once, the error by its number, and both sessions.
    let run = artifacts(&run_dir);
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    let all = rows.len() as u64;
    assert_eq!(apiary_tally(&summary, "Requests Completed"), (all, all));
    assert_eq!(
        apiary_tally(&summary, "ERR 1146 (no such table)"),
        (1, 1),
        "{}",
        summary["apiary"]
    );
    assert_eq!(apiary_tally(&summary, "Sessions Completed"), (2, 2));
    // The codes are MySQL's by the run's protocol, not by guessing from them.
    assert_eq!(summary["proto_kind"], "mysql", "{}", summary["proto_kind"]);

    // The slow log replayed: each thread's statements, in order. MariaDB's
    // slow log times statements to the whole second only, so both threads
    // begin in the same second and which connects first is not the log's to
    // say: the connections are compared in the order of their statements.
    let target = MariaDb::start(&snapshot, &[]);
    let run_dir = dir.path().join("slow");
    std::fs::create_dir(&run_dir).unwrap();
    replay(&run_dir, &config(target.port, &slow_log), &[]);
    let from_slow_log = by_connection(&target.general_log());
    drop(target);
    let sorted = |connections: &[Vec<Entry>]| {
        let mut statements = statements(connections);
        statements.sort();
        statements
    };
    assert_eq!(sorted(&from_slow_log), sorted(&captured));
}

/// A MariaDB slow log of one thread: two statements in `shop`, then its quit.
const SLOW_LOG: &str = "\
/usr/sbin/mariadbd, Version: 11.8.3-MariaDB-0+deb13u1-log (Debian 13). started with:
Tcp port: 3306  Unix socket: /run/mysqld/mysqld.sock
Time\t\t    Id Command\tArgument
# Time: 261126 15:28:14
# User@Host: app[app] @ localhost [127.0.0.1]
# Thread_id: 4  Schema: shop  QC_hit: No
# Query_time: 0.000305  Lock_time: 0.000129  Rows_sent: 1  Rows_examined: 1
# Rows_affected: 0  Bytes_sent: 126
SET timestamp=1795706894;
SELECT name FROM items WHERE id = 1;
# User@Host: app[app] @ localhost [127.0.0.1]
# Thread_id: 4  Schema: shop  QC_hit: No
# Query_time: 0.000200  Lock_time: 0.000000  Rows_sent: 3  Rows_examined: 3
# Rows_affected: 0  Bytes_sent: 126
SET timestamp=1795706894;
SELECT COUNT(*) FROM items;
# User@Host: app[app] @ localhost [127.0.0.1]
# Thread_id: 4  Schema: shop  QC_hit: No
# Query_time: 0.000010  Lock_time: 0.000000  Rows_sent: 0  Rows_examined: 0
SET timestamp=1795706894;
# administrator command: Quit;
";

#[test]
fn ssl_logs_in_over_tls_to_a_server_that_requires_it() {
    let Some(snapshot) = Snapshot::create(SETUP) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let (cert_pem, key_pem) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert_pem, cert.cert.pem()).unwrap();
    std::fs::write(&key_pem, cert.signing_key.serialize_pem()).unwrap();
    let slow_log = dir.path().join("slow.log");
    std::fs::write(&slow_log, SLOW_LOG).unwrap();
    let target = MariaDb::start(
        &snapshot,
        &[
            format!("--ssl-cert={}", cert_pem.display()),
            format!("--ssl-key={}", key_pem.display()),
        ],
    );
    // A user the server lets in over TLS only.
    target.sql(
        "CREATE USER 'sure'@'%' IDENTIFIED BY 'tanksecret' REQUIRE SSL; \
         GRANT ALL ON shop.* TO 'sure'@'%';",
    );
    let run = |name: &str, ssl: &str| {
        let run_dir = dir.path().join(name);
        std::fs::create_dir(&run_dir).unwrap();
        let config = config(target.port, &slow_log).replace("user = tank", "user = sure") + ssl;
        replay(&run_dir, &config, &[]);
        phout(&artifacts(&run_dir))
    };

    let rows = run("tls", "ssl = 1\n");
    let codes: Vec<(&str, u16, u16)> = rows
        .iter()
        .map(|row| (row.tag.as_str(), row.proto_code, row.net_code))
        .collect();
    assert_eq!(
        codes,
        [
            ("CONNECT", 200, 0),
            ("SELECT items", 200, 0),
            ("SELECT items", 200, 0),
            ("QUIT", 200, 0),
        ]
    );
    let logged = by_connection(&target.general_log());
    assert_eq!(
        statements(&logged),
        [[
            "SELECT name FROM items WHERE id = 1",
            "SELECT COUNT(*) FROM items"
        ]]
    );

    // Without TLS the server refuses the login with its error number, and nothing runs.
    let rows = run("plain", "");
    assert_eq!(
        rows.first().map(|row| row.proto_code),
        Some(1045),
        "{rows:?}"
    );
    let ran: usize = statements(&by_connection(&target.general_log()))
        .iter()
        .map(Vec::len)
        .sum();
    assert_eq!(ran, 2, "only the TLS run's statements ran");
}

/// A MariaDB slow log of four threads, a second apart, each one statement
/// naming its thread (`WHERE id = N`) and its quit.
fn four_threads() -> String {
    let mut log = String::from(
        "/usr/sbin/mariadbd, Version: 11.8.3-MariaDB-0+deb13u1-log (Debian 13). started with:\n\
         Tcp port: 3306  Unix socket: /run/mysqld/mysqld.sock\n\
         Time\t\t    Id Command\tArgument\n",
    );
    for thread in 1..=4u64 {
        let second = 1_795_706_894 + thread;
        for statement in [
            format!("SELECT name FROM items WHERE id = {thread};"),
            "# administrator command: Quit;".into(),
        ] {
            log.push_str(&format!(
                "# User@Host: app[app] @ localhost [127.0.0.1]\n\
                 # Thread_id: {thread}  Schema: shop  QC_hit: No\n\
                 # Query_time: 0.000100  Lock_time: 0.000000  Rows_sent: 1  Rows_examined: 1\n\
                 SET timestamp={second};\n{statement}\n"
            ));
        }
    }
    log
}

#[test]
fn skip_offset_shards_and_loop_select_mysql_sessions_as_for_any_replay() {
    let Some(snapshot) = Snapshot::create(SETUP) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let slow_log = dir.path().join("slow.log");
    std::fs::write(&slow_log, four_threads()).unwrap();
    // The statements each replay ran, sorted (which connects first is the timing's business).
    let ran = |name: &str, options: &str, args: &[&str]| -> Vec<String> {
        let target = MariaDb::start(&snapshot, &[]);
        let run_dir = dir.path().join(name);
        std::fs::create_dir(&run_dir).unwrap();
        replay(
            &run_dir,
            &config(target.port, &slow_log).replace("[mysql]", &format!("{options}[mysql]")),
            args,
        );
        let mut statements: Vec<String> = statements(&by_connection(&target.general_log()))
            .into_iter()
            .flatten()
            .collect();
        statements.sort();
        statements
    };
    let of = |ids: &[u64]| -> Vec<String> {
        let mut statements: Vec<String> = ids
            .iter()
            .map(|id| format!("SELECT name FROM items WHERE id = {id}"))
            .collect();
        statements.sort();
        statements
    };

    // One session in every 2 from the second: threads 2 and 4.
    assert_eq!(
        ran("skip", "replay_skip = 2\nreplay_offset = 1\n", &[]),
        of(&[2, 4])
    );
    // Of the kept 1 and 3, shard 1 of 2 fires the second: thread 3.
    assert_eq!(
        ran("shard", "replay_skip = 2\n", &["--shard", "1/2"]),
        of(&[3])
    );
    // Twice through the capture: every thread's statement twice.
    assert_eq!(
        ran("loop", "loop = 2\n", &[]),
        of(&[1, 1, 2, 2, 3, 3, 4, 4])
    );
}
