use super::*;
use crate::order::{Item, Kind as ItemKind};

/// MariaDB 10.11's slow log, as it writes it (whole seconds).
const MARIADB: &str = "\
/usr/sbin/mariadbd, Version: 10.11.19-MariaDB-0+deb12u1-log (Debian 12). started with:
Tcp port: 33061  Unix socket: /tmp/sock
Time\t\t    Id Command\tArgument
# Time: 261126 15:28:14
# User@Host: app[app] @ localhost [127.0.0.1]
# Thread_id: 4  Schema: shop  QC_hit: No
# Query_time: 0.000305  Lock_time: 0.000129  Rows_sent: 1  Rows_examined: 1
# Rows_affected: 0  Bytes_sent: 126
use `shop`;
SET timestamp=1795706894;
select * from items where id = 1;
# User@Host: root[root] @ localhost []
# Thread_id: 3  Schema:   QC_hit: No
# Query_time: 0.000098  Lock_time: 0.000000  Rows_sent: 1  Rows_examined: 0
# Rows_affected: 0  Bytes_sent: 58
SET timestamp=1795706894;
select 1;
# User@Host: app[app] @ localhost [127.0.0.1]
# Thread_id: 4  Schema: stock  QC_hit: No
# Query_time: 0.001000  Lock_time: 0.000000  Rows_sent: 0  Rows_examined: 0
# Rows_affected: 1  Bytes_sent: 11
SET timestamp=1795706894;
update counts
# not a header: part of the statement
set n = n + 1;
# User@Host: app[app] @ localhost [127.0.0.1]
# Thread_id: 4  Schema: stock  QC_hit: No
# Query_time: 0.000010  Lock_time: 0.000000  Rows_sent: 0  Rows_examined: 0
SET timestamp=1795706894;
# administrator command: Quit;
";

/// MySQL 8's (microseconds, the time it was logged: the statement's end).
const MYSQL: &str = "\
/usr/sbin/mysqld, Version: 8.0.36 (MySQL Community Server - GPL). started with:
Tcp port: 3306  Unix socket: /var/run/mysqld/mysqld.sock
Time                 Id Command    Argument
# Time: 2024-01-02T03:04:05.500000Z
# User@Host: app[app] @ localhost [127.0.0.1]  Id:    12
# Query_time: 0.250000  Lock_time: 0.000010 Rows_sent: 1  Rows_examined: 1
use shop;
SET timestamp=1704164645;
SELECT * FROM items;
# Time: 2024-01-02T03:04:05.400000Z
# User@Host: app[app] @ localhost [127.0.0.1]  Id:    13
# Query_time: 0.000100  Lock_time: 0.000010 Rows_sent: 1  Rows_examined: 1
SET timestamp=1704164645;
INSERT INTO orders VALUES (1);
";

/// A request imported: time µs, session, tag, bytes.
type Imported = (u64, u64, String, Vec<u8>);

/// What `text` imports to: its requests, the sessions in the order they end, the warnings.
fn imported(text: &str) -> (Vec<Imported>, Vec<u64>, Vec<String>) {
    let mut sorter = Sorter::new(1 << 20);
    let said = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = said.clone();
    let mut warnings = Warnings::new(
        10,
        Box::new(move |w| sink.lock().unwrap().push(w.to_owned())),
    );
    import(text.as_bytes(), "slow.log", &mut sorter, &mut warnings).unwrap();
    let mut items: Vec<Item> = Vec::new();
    sorter
        .finish(&mut |item| {
            items.push(item);
            Ok(())
        })
        .unwrap();
    let mut requests = Vec::new();
    let mut ends = Vec::new();
    for item in items {
        match item.kind {
            ItemKind::Request { tag, bytes, .. } => requests.push((
                item.at_us,
                item.session,
                String::from_utf8(tag).unwrap(),
                bytes.head,
            )),
            ItemKind::End => ends.push(item.session),
        }
    }
    let said = said.lock().unwrap().clone();
    (requests, ends, said)
}

#[test]
fn mariadb_threads_become_sessions_placed_within_their_second() {
    let (requests, ends, warnings) = imported(MARIADB);
    assert!(warnings.is_empty(), "{warnings:?}");
    let second = 1_795_706_894_000_000;
    let got: Vec<(u64, u64, &str)> = requests
        .iter()
        .map(|r| (r.0 - second, r.1, r.2.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (0, 0, "CONNECT"),
            (0, 0, "SELECT items"),
            (0, 1, "CONNECT"),
            (0, 1, "SELECT"),
            // After the thread's previous statement (0.000305 s).
            (305, 0, "INIT_DB"),
            (305, 0, "UPDATE counts"),
            (1305, 0, "QUIT"),
        ]
    );
    assert_eq!(Connect::decode(&requests[0].3).unwrap().schema, b"shop");
    assert_eq!(requests[4].3, b"\x02stock");
    assert_eq!(
        requests[5].3,
        b"\x03update counts\n# not a header: part of the statement\nset n = n + 1"
    );
    // Thread 3 ends at its only statement, thread 4 at its quit.
    assert_eq!(ends, [1, 0]);
}

#[test]
fn mysql_statements_start_at_their_logged_end_less_their_query_time() {
    let (requests, _, _) = imported(MYSQL);
    let got: Vec<(u64, &str)> = requests.iter().map(|r| (r.0, r.2.as_str())).collect();
    let end = 1_704_164_645_500_000;
    assert_eq!(
        got,
        [
            (end - 250_000, "CONNECT"),
            (end - 250_000, "SELECT items"),
            (1_704_164_645_399_900, "CONNECT"),
            (1_704_164_645_399_900, "INSERT orders"),
        ]
    );
    // MySQL writes `use` only when the schema changes: thread 13 ran in shop too.
    assert_eq!(Connect::decode(&requests[2].3).unwrap().schema, b"shop");
}

/// The error `text` is refused with.
fn refused(text: &str) -> String {
    let mut sorter = Sorter::new(1 << 20);
    let mut warnings = Warnings::new(0, Box::new(|_| {}));
    import(text.as_bytes(), "x.log", &mut sorter, &mut warnings)
        .unwrap_err()
        .to_string()
}

#[test]
fn a_file_without_entries_is_an_error_and_bad_entries_are_warnings() {
    let error = refused("just text\n");
    assert!(error.contains("x.log: no slow log entry"), "{error}");
    let (requests, _, warnings) = imported(
        "# User@Host: a[a] @ h []\n# Query_time: 0.1\nSET timestamp=1;\nselect 1;\n\
         # User@Host: a[a] @ h []  Id: 5\n# Query_time: 0.1\nselect 2;\n\
         # User@Host: a[a] @ h []  Id: 5\n# Query_time: 0.1\nSET timestamp=1;\nselect 3;\n",
    );
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(
        warnings,
        [
            "slow.log:1: an entry with no thread id (`Id:` or `Thread_id:`); skipped",
            "slow.log:5: an entry with no time (`# Time:` at or above it, or `SET \
             timestamp=`); skipped",
            "slow.log: 2 of 3 entries skipped: 1 with no thread id (`Id:` or `Thread_id:`; \
             MySQL 5.5 and earlier log none), and a replay needs each statement's connection; \
             1 with no time (`# Time:` or `SET timestamp=`)",
        ]
    );
}

#[test]
fn a_file_whose_entries_have_no_thread_id_is_refused_saying_so() {
    // MySQL 5.5's `# User@Host:` has no `Id:`.
    let entry = "# Time: 160720 18:13:25\n# User@Host: root[root] @ localhost []\n\
                 # Query_time: 0.000241  Lock_time: 0.000055 Rows_sent: 0  Rows_examined: 0\n\
                 SET timestamp=1469038405;\nSELECT 1;\n";
    assert_eq!(
        refused(&entry.repeat(2)),
        "x.log: 2 entries read, none can be replayed: 2 with no thread id (`Id:` or \
         `Thread_id:`; MySQL 5.5 and earlier log none), and a replay needs each statement's \
         connection"
    );
}

#[test]
fn a_file_whose_entries_have_no_time_is_refused_like_one_without_thread_ids() {
    assert_eq!(
        refused("# User@Host: a[a] @ h []  Id: 5\n# Query_time: 0.1\nselect 2;\n"),
        "x.log: 1 entry read, none can be replayed: 1 with no time (`# Time:` or `SET \
         timestamp=`)"
    );
}

#[test]
fn a_set_line_with_insert_ids_is_the_entrys_set_line_not_its_statement() {
    // MySQL 5.7: the time is `# Time:`'s; the `SET` line is a marker all the same.
    let (requests, _, warnings) = imported(
        "# Time: 2016-07-20T18:13:25.698433Z\n\
         # User@Host: root[root] @ localhost [127.0.0.1]  Id:     3\n\
         # Query_time: 0.003464  Lock_time: 0.000324 Rows_sent: 1000  Rows_examined: 2000\n\
         SET last_insert_id=7,insert_id=7,timestamp=1469038405;\n\
         SELECT * FROM facturas LIMIT 0, 1000;\n",
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(requests[1].0, 1_469_038_405_698_433 - 3464);
    assert_eq!(requests[1].3, b"\x03SELECT * FROM facturas LIMIT 0, 1000");
    // MariaDB: its timestamp is the entry's, whatever order and subset.
    let (requests, _, warnings) = imported(
        "# User@Host: [SQL_SLAVE] @  []\n# Thread_id: 10\n# Query_time: 0.000530\n\
         SET insert_id=34484549,timestamp=1197996507;\nINSERT INTO conch VALUES ('211');\n\
         # User@Host: [SQL_SLAVE] @  []\n# Thread_id: 10\n# Query_time: 0.000010\n\
         SET timestamp=1197996509,last_insert_id=4;\nSELECT 1;\n",
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    let got: Vec<(u64, &str)> = requests.iter().map(|r| (r.0, r.2.as_str())).collect();
    assert_eq!(
        got,
        [
            (1_197_996_507_000_000, "CONNECT"),
            (1_197_996_507_000_000, "INSERT conch"),
            (1_197_996_509_000_000, "SELECT"),
        ]
    );
}

#[test]
fn a_whole_second_time_line_is_carried_to_the_entries_below_it_without_a_set_timestamp() {
    let (requests, _, warnings) = imported(
        "# Time: 090504  9:07:24\n# User@Host: a[a] @ h []\n# Thread_id: 1\n\
         # Query_time: 2.156031\nSELECT 1;\n\
         # User@Host: b[b] @ h []\n# Thread_id: 2\n# Query_time: 2.060030\nSELECT 2;\n\
         # User@Host: c[c] @ h []\n# Thread_id: 3\n# Query_time: 4.352063\n\
         SET timestamp=1241453102;\nSELECT 3;\n",
    );
    // The third entry shows `# Time:` was the server's zone, 7 hours behind UTC.
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains(
            "UTC-07:00 by this entry's `SET timestamp=`; entries above it timed \
             by `# Time:` alone (2) were read as UTC"
        ),
        "{warnings:?}"
    );
    // 2009-05-04 09:07:24 (read as UTC), less each statement's Query_time.
    let logged = 1_241_428_044_000_000;
    let got: Vec<(u64, u64, &str)> = requests
        .iter()
        .map(|r| (r.0, r.1, r.2.as_str()))
        .filter(|r| r.2 != "CONNECT")
        .collect();
    assert_eq!(
        got,
        [
            (logged - 2_156_031, 0, "SELECT"),
            (logged - 2_060_030, 1, "SELECT"),
            // `SET timestamp=` stays preferred to a `# Time:` above it.
            (1_241_453_102_000_000, 2, "SELECT"),
        ]
    );
}

#[test]
fn a_use_after_the_set_line_or_alone_is_the_statement() {
    let (requests, _, warnings) = imported(
        "# User@Host: root[root] @  [127.0.0.1]\n# Thread_id: 8  Schema: test_db\n\
         # Query_time: 0.000102\nSET timestamp=1111111111;\nuse test_db;\n\
         # User@Host: root[root] @  [127.0.0.1]\n# Thread_id: 9\n\
         # Query_time: 0.000102\nuse shop;\nSET timestamp=1111111111;\nuse stock;\n\
         # Time: 090504  9:07:24\n# User@Host: root[root] @  [127.0.0.1]\n# Thread_id: 10\n\
         # Query_time: 0.000102\nuse `mysql`;\n",
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    let got: Vec<(u64, &str, &[u8])> = requests
        .iter()
        .map(|r| (r.1, r.2.as_str(), &r.3[..]))
        .filter(|r| r.1 != "CONNECT")
        .collect();
    // A `USE` changes the schema itself, as a `COM_QUERY`: no `COM_INIT_DB` before it.
    assert_eq!(
        got,
        [
            (0, "USE", &b"\x03use test_db"[..]),
            (1, "USE", b"\x03use stock"),
            (2, "USE", b"\x03use `mysql`"),
        ]
    );
    assert_eq!(Connect::decode(&requests[2].3).unwrap().schema, b"shop");
}

proptest::proptest! {
    #[test]
    fn any_text_imports_or_is_refused_without_panicking(text in "(# (Time|User@Host|Thread_id|Query_time): [ -~]{0,20}\n|SET timestamp=[0-9]{0,12};\n|[ -~]{0,30}\n){0,20}") {
        let mut sorter = Sorter::new(1 << 20);
        let mut warnings = Warnings::new(0, Box::new(|_| {}));
        let _ = import(text.as_bytes(), "fuzz.log", &mut sorter, &mut warnings);
    }
}

#[test]
fn a_use_statement_is_not_preceded_by_an_init_db_of_its_own() {
    // MariaDB logs `USE shop` with the schema it changed to.
    let (requests, _, _) = imported(
        "# User@Host: app[app] @ h []\n# Thread_id: 7  Schema:   QC_hit: No\n\
         # Query_time: 0.000010\nSET timestamp=100;\nSET AUTOCOMMIT = 0;\n\
         # User@Host: app[app] @ h []\n# Thread_id: 7  Schema: shop  QC_hit: No\n\
         # Query_time: 0.000010\nuse shop;\nSET timestamp=100;\nUSE shop;\n\
         # User@Host: app[app] @ h []\n# Thread_id: 7  Schema: mysql  QC_hit: No\n\
         # Query_time: 0.000010\nuse mysql;\nSET timestamp=100;\nSELECT 1;\n",
    );
    let tags: Vec<&str> = requests.iter().map(|r| r.2.as_str()).collect();
    // The change to mysql was a COM_INIT_DB: no statement explains it.
    assert_eq!(tags, ["CONNECT", "SET", "USE", "INIT_DB", "SELECT"]);
    assert_eq!(requests[2].3, b"\x03USE shop");
    assert_eq!(requests[3].3, b"\x02mysql");
}

#[test]
fn a_table_in_the_entrys_schema_is_tagged_without_it() {
    let (requests, _, _) = imported(
        "# User@Host: app[app] @ h []\n# Thread_id: 7  Schema: shop  QC_hit: No\n\
         # Query_time: 0.000010\nSET timestamp=100;\nSELECT * FROM shop.items;\n\
         # User@Host: app[app] @ h []\n# Thread_id: 7  Schema: shop  QC_hit: No\n\
         # Query_time: 0.000010\nSET timestamp=100;\nSELECT * FROM items;\n\
         # User@Host: app[app] @ h []\n# Thread_id: 7  Schema: shop  QC_hit: No\n\
         # Query_time: 0.000010\nSET timestamp=100;\nSELECT * FROM stock.items;\n",
    );
    let tags: Vec<&str> = requests.iter().map(|r| r.2.as_str()).collect();
    assert_eq!(
        tags,
        [
            "CONNECT",
            "SELECT items",
            "SELECT items",
            "SELECT stock.items"
        ]
    );
}

#[test]
fn a_restart_banner_ends_every_session_so_a_thread_id_after_it_is_another() {
    let entry = |schema: &str, second: u64, text: &str| {
        format!(
            "# User@Host: app[app] @ h []\n# Thread_id: 10  Schema: {schema}  QC_hit: No\n\
             # Query_time: 0.000010\nSET timestamp={second};\n{text};\n"
        )
    };
    let banner = "/usr/sbin/mariadbd, Version: 10.11.19-MariaDB-log (Debian 12). started with:\n\
                  Tcp port: 3306  Unix socket: /run/mysqld/mysqld.sock\n\
                  Time\t\t    Id Command\tArgument\n";
    let text = [
        banner,
        &entry("shop", 100, "SET AUTOCOMMIT=0"),
        &entry("shop", 100, "SELECT 1"),
        banner,
        &entry("mysql", 700, "SELECT 2"),
    ]
    .concat();
    let (requests, ends, warnings) = imported(&text);
    assert!(warnings.is_empty(), "{warnings:?}");
    let got: Vec<(u64, &str)> = requests.iter().map(|r| (r.1, r.2.as_str())).collect();
    assert_eq!(
        got,
        [
            (0, "CONNECT"),
            (0, "SET"),
            (0, "SELECT"),
            (1, "CONNECT"),
            (1, "SELECT")
        ]
    );
    assert_eq!(Connect::decode(&requests[3].3).unwrap().schema, b"mysql");
    assert_eq!(ends, [0, 1]);
}

#[test]
fn a_zone_learnt_from_a_set_timestamp_moves_the_time_lines_after_it() {
    let (requests, _, warnings) = imported(
        "# Time: 090504  9:07:24\n# User@Host: c[c] @ h []\n# Thread_id: 3\n\
         # Query_time: 0.5\nSET timestamp=1241453244;\nSELECT 3;\n\
         # Time: 090504  9:08:00\n# User@Host: a[a] @ h []\n# Thread_id: 1\n\
         # Query_time: 1.0\nSELECT 1;\n",
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    let got: Vec<u64> = requests
        .iter()
        .filter(|r| r.2 != "CONNECT")
        .map(|r| r.0)
        .collect();
    // 09:08:00 local is 16:08:00 UTC (the zone learnt: UTC-07:00), less 1 s.
    assert_eq!(
        got,
        [1_241_453_244_000_000, 1_241_453_280_000_000 - 1_000_000]
    );
}

#[test]
fn an_absurd_query_time_before_a_threads_next_statement_does_not_overflow() {
    // The thread's next statement starts no earlier than the first's end:
    // a Query_time past u64 µs (saturated) must not wrap that end.
    let (requests, _, _) = imported(
        "# User@Host: a[a] @ h []  Id: 5\n# Query_time: 1e300\nSET timestamp=1;\nselect 1;\n\
         # User@Host: a[a] @ h []  Id: 5\n# Query_time: 0.1\nSET timestamp=2;\nselect 2;\n",
    );
    let got: Vec<u64> = requests
        .iter()
        .filter(|r| r.2 != "CONNECT")
        .map(|r| r.0)
        .collect();
    assert_eq!(got, [1_000_000, u64::MAX]);
}

#[test]
fn a_set_timestamp_past_any_clock_is_skipped_and_teaches_no_zone() {
    for timestamp in ["32536771200", "9223372036854775807", "18446744073709551615"] {
        let (requests, _, warnings) = imported(&format!(
            "# Time: 090504  9:07:24\n# User@Host: c[c] @ h []\n# Thread_id: 3\n\
             # Query_time: 1.0\nSET timestamp={timestamp};\nSELECT 3;\n\
             # Time: 090504  9:08:00\n# User@Host: a[a] @ h []\n# Thread_id: 1\n\
             # Query_time: 1.0\nSELECT 1;\n"
        ));
        let warned = warnings.join("\n");
        assert!(
            warned.contains(&format!(
                ":1: `SET timestamp={timestamp}` is past any server's clock"
            )),
            "{warned}"
        );
        let got: Vec<u64> = requests
            .iter()
            .filter(|r| r.2 != "CONNECT")
            .map(|r| r.0)
            .collect();
        // Only the second entry, its 09:08:00 read as UTC (no zone learnt), less 1 s.
        assert_eq!(got, [1_241_428_080_000_000 - 1_000_000]);
    }
}
