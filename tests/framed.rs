//! Framed TCP (Apiary's "simple protocols", its CountDB): JSON messages
//! ended by a NUL byte, both ways, over kept connections. A server of that
//! protocol logs what it reads per connection; tank shoots it with
//! `reply_delimiter`, and a tcpdump capture of a client at it is imported
//! with `--framing` and replayed.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::import::Tcpdump;
use crate::support::{artifacts, assert_ran, phout, shoot, tank};

/// Per connection (in the order accepted), the messages read.
type Log = Arc<Mutex<Vec<Vec<Vec<u8>>>>>;

/// A server answering each NUL-ended message with `{"ok":N}` and a NUL.
fn countdb() -> (SocketAddr, Log) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let log: Log = Arc::default();
    let accepted = Arc::clone(&log);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let index = {
                let mut log = accepted.lock().unwrap();
                log.push(Vec::new());
                log.len() - 1
            };
            let log = Arc::clone(&accepted);
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut writer = stream;
                loop {
                    let mut message = Vec::new();
                    if reader.read_until(0, &mut message).unwrap_or(0) == 0
                        || message.last() != Some(&0)
                    {
                        return;
                    }
                    let n = {
                        let mut log = log.lock().unwrap();
                        log[index].push(message);
                        log[index].len()
                    };
                    if writer
                        .write_all(format!("{{\"ok\":{n}}}\0").as_bytes())
                        .is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    (addr, log)
}

/// A client: on each of `connections`, send its messages and read each answer.
fn client(server: SocketAddr, connections: &[&[&str]]) {
    let threads: Vec<_> = connections
        .iter()
        .enumerate()
        .map(|(i, messages)| {
            let messages: Vec<String> = messages.iter().map(|m| (*m).to_owned()).collect();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(150 * i as u64));
                let stream = TcpStream::connect(server).unwrap();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut writer = stream;
                for message in messages {
                    writer.write_all(message.as_bytes()).unwrap();
                    writer.write_all(b"\0").unwrap();
                    let mut answer = Vec::new();
                    reader.read_until(0, &mut answer).unwrap();
                    std::thread::sleep(Duration::from_millis(100));
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
}

#[test]
fn a_delimited_protocol_is_shot_over_kept_connections() {
    let (server, log) = countdb();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ammo.txt"), "12 count\n{\"count\":1}\0\n").unwrap();
    let config = format!(
        "[phantom]\naddress = {server}\ntank_type = none\nreply_delimiter = \\0\n\
         ammofile = ammo.txt\nrps_schedule = const(10,2s)\ninstances = 2\n"
    );
    assert_ran(&shoot(dir.path(), &config, Duration::from_secs(60)));
    let rows = phout(&artifacts(dir.path()));
    assert_eq!(rows.len(), 20);
    // Each reply `{"ok":N}` and its NUL, read to the delimiter: nothing cut short.
    assert!(
        rows.iter()
            .all(|row| row.net_code == 0 && row.size_out == 12),
        "{rows:?}"
    );
    let log = log.lock().unwrap();
    assert!(
        log.len() <= 2,
        "{} connections: they were not kept",
        log.len()
    );
    assert_eq!(log.iter().map(Vec::len).sum::<usize>(), 20);
}

#[test]
fn a_capture_of_a_delimited_protocol_replays_its_messages_per_connection() {
    let Some(tcpdump) = crate::support::component::binary("tcpdump", "tcpdump") else {
        return;
    };
    let (server, log) = countdb();
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("countdb.pcap");
    let dump = Tcpdump::start(&tcpdump, server.port(), &capture);
    let connections: [&[&str]; 2] = [
        &["{\"incr\":\"a\"}", "{\"get\":\"a\"}", "{\"incr\":\"b\"}"],
        &["{\"get\":\"b\"}", "{\"incr\":\"a\",\"by\":2}"],
    ];
    client(server, &connections);
    dump.stop();
    let captured = log.lock().unwrap().clone();
    log.lock().unwrap().clear();

    let sessions = dir.path().join("countdb.sessions");
    let out = tank()
        .arg("import")
        .arg(&capture)
        .args(["--framing", "delimiter:\\0", "--server-port"])
        .arg(server.port().to_string())
        .arg("-o")
        .arg(&sessions)
        .output()
        .expect("tank import");
    let summary = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{summary}");
    assert!(
        summary.contains("pcap (tcp): 2 sessions, 5 requests"),
        "{summary}"
    );
    let text = std::fs::read(&sessions).unwrap();
    assert!(text.starts_with(b"tank-sessions 1 tcp\n"));

    let config = format!(
        "[phantom]\naddress = {server}\ntank_type = none\nreply_delimiter = \\0\n\
         ammo_type = sessions\nammofile = {}\n",
        sessions.display()
    );
    assert_ran(&shoot(dir.path(), &config, Duration::from_secs(60)));
    let replayed = log.lock().unwrap().clone();
    let sorted = |mut connections: Vec<Vec<Vec<u8>>>| {
        connections.sort();
        connections
    };
    assert_eq!(sorted(replayed), sorted(captured));
    assert_eq!(phout(&artifacts(dir.path())).len(), 5);
}
