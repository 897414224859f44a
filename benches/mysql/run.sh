#!/usr/bin/env bash
# MySQL replay benchmarks (issue 29), each against a MariaDB of its own (Debian's
# mariadb-server, a temporary datadir on a free loopback port, removed at the end):
#
#   arrivals  A sessions file of SESSIONS connections sending 5,000 queries/s together for
#             SECONDS (`SELECT <offset> /*arrival*/`: each query's text is its captured
#             offset), replayed by `tank -c` (tank_type = mysql). Each query's arrival is its
#             row in the server's general log (log_output = TABLE, microseconds); its error
#             is the arrival minus its offset, the two clocks aligned by the median of those
#             differences. Goal: error p99 <= 1 ms.
#   cpu       sysbench's oltp_point_select (Debian's sysbench: THREADS threads, prepared
#             statements) beside a replay of as many point selects over THREADS sessions,
#             each a prepare then executes back to back (all due at once: a closed loop like
#             sysbench's threads), both making the same number of queries per run. CPU
#             seconds (user + system, from /usr/bin/time) per query of each, in RUNS rounds
#             (default 3) in which the two alternate (sysbench first in odd rounds, tank in
#             even ones); before each run the script waits until the machine is quiet (under
#             10% busy over a second) and the CPUs are held awake for both (AWAKE=0: for
#             neither, tank's keep_cpus_awake off too). The median and spread of the rounds'
#             ratios. Goal: tank's <= sysbench's. PIN=1 runs the server on CPU 0 and each
#             client on CPU 1, as on two machines (a client sharing the server's cores is
#             preempted by the server threads its queries wake; how often depends on how the
#             kernel places them, a large part of the spread between rounds).
#             tank runs with TANK_THREADS I/O threads
#             (default 1: one thread serves the THREADS connections, as the server needs the
#             other core; phantom's default, cores/2 + 1, is 2 on two cores: TANK_THREADS=2
#             measures that).
#   counts    instructions (valgrind --tool=callgrind: user space, load-independent) and
#             syscalls (strace -c -f) per query of sysbench's oltp_point_select and of tank's
#             replay of it, as in `cpu` (THREADS connections of prepared point selects): each
#             run twice, 2,000 and 2,000 + COUNT queries, the difference over the difference
#             (start-up and exit cancelled out). Counts, not times: it may run on a busy machine.
#             KEEP=DIR keeps the callgrind profiles and strace tables there.
#   import    `tank import` of a generated MySQL pcap (benches/mysql/gen.py pcap, SIZE_MB,
#             CONNECTIONS interleaved): MB/s and peak RSS, the import checked lossless.
#             Goal: >= 300 MB/s in flat memory (run two sizes to see RSS not grow).
#
#   benches/mysql/run.sh [--quick] [arrivals] [cpu] [counts] [import]
#                                                        (default: arrivals, cpu and import)
#   TANK=target/debug/tank benches/mysql/run.sh --quick          (a smoke check, no release build)
#
# Defaults: arrivals 200 sessions for 20 s; cpu 8 threads, 1,200,000 queries per run on 100,000 rows; import
# 1,000 MB over 2,000 connections; counts 20,000 more queries. --quick: 50 sessions, 500
# queries/s for 5 s; 2 threads, 30,000 queries on 10,000 rows; 50 MB; counts 5,000 more queries.
# Needs mariadb-server, mariadb-client, sysbench, python3, /usr/bin/time (counts: valgrind,
# strace). Prints a markdown table per part.
set -euo pipefail
cd "$(dirname "$0")/../.."
quick=0 parts=()
for arg in "$@"; do
    case "$arg" in
        --quick) quick=1 ;;
        arrivals | cpu | counts | import) parts+=("$arg") ;;
        *) echo "usage: $0 [--quick] [arrivals] [cpu] [counts] [import]" >&2; exit 2 ;;
    esac
done
[ ${#parts[@]} -eq 0 ] && parts=(arrivals cpu import)
tank_threads=${TANK_THREADS:-1}
runs=${RUNS:-3}
hold=${AWAKE:-1}
server_cpu=() client_cpu=()
if [ "${PIN:-0}" = 1 ]; then
    command -v taskset > /dev/null || { echo "PIN=1 needs taskset (util-linux)"; exit 1; }
    server_cpu=(taskset -c 0) client_cpu=(taskset -c 1)
fi
if [ "$quick" = 1 ]; then
    sessions=50 rate=500 seconds=5 threads=2 cpu_queries=30000 rows=10000 size_mb=50 connections=200
    count=5000
else
    sessions=200 rate=5000 seconds=20 threads=8 cpu_queries=1200000 rows=100000 size_mb=1000 connections=2000
    count=20000
fi
if [ -n "${TANK:-}" ]; then
    tank=$(realpath "$TANK")
else
    cargo build --release --quiet --bin tank
    tank=$PWD/target/release/tank
fi
work=$(mktemp -d)
server_pid=''
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
. benches/quiet.sh
if [ "$hold" = 1 ]; then
    hold_cpus_awake
else
    awake="no (AWAKE=0: neither tool holds them; tank's keep_cpus_awake = 0)"
fi
user_opt=()
[ "$(id -u)" = 0 ] && user_opt=(--user=root)

# A MariaDB on a free port with a `bench` user; extra server options in "$@".
start_mariadb() {
    stop_mariadb
    rm -rf "$work/data"
    mariadb-install-db --no-defaults --datadir="$work/data" --auth-root-authentication-method=normal \
        --skip-test-db "${user_opt[@]}" --innodb-log-file-size=16M > "$work/install.log" 2>&1
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "${server_cpu[@]}" mariadbd --no-defaults --datadir="$work/data" --port="$port" --bind-address=127.0.0.1 \
        --socket="$work/sock" --pid-file="$work/pid" "${user_opt[@]}" --skip-name-resolve \
        --skip-log-bin --performance-schema=OFF --max-connections=2000 \
        --innodb-buffer-pool-size=256M "$@" > "$work/server.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 600); do [ -S "$work/sock" ] && break; sleep 0.1; done
    sql "CREATE USER 'bench'@'%' IDENTIFIED BY 'bench'; GRANT ALL ON *.* TO 'bench'@'%';
         CREATE DATABASE bench; CREATE DATABASE sbtest;"
}
stop_mariadb() {
    if [ -n "$server_pid" ]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=''
    fi
}
sql() { mariadb --no-defaults --socket="$work/sock" -uroot -N -B -e "SET SESSION sql_log_off = 1; $1"; }
replay_config() { # sessions-file [phantom-lines]
    cat > "$work/load.ini" <<INI
[phantom]
address = 127.0.0.1:$port
tank_type = mysql
ammo_type = sessions
ammofile = $1
timeout = 10s
${2:-}
[mysql]
user = bench
password = bench
INI
}

arrivals() {
    python3 benches/mysql/gen.py arrivals "$work/arrivals.sessions" "$sessions" "$rate" "$seconds"
    start_mariadb --general-log=1 --log-output=TABLE
    replay_config "$work/arrivals.sessions"
    (cd "$work" && /usr/bin/time -f "%U %S %M" -o time.txt "$tank" -c load.ini --quiet > summary.txt 2> err.txt) \
        || { cat "$work/err.txt"; exit 1; }
    sql "SELECT argument, UNIX_TIMESTAMP(event_time) * 1000000 FROM mysql.general_log
         WHERE command_type = 'Query' AND argument LIKE 'SELECT % /*arrival*/'" > "$work/arrivals.log"
    stop_mariadb
    read -r user sys rss_kb < "$work/time.txt"
    run=$(ls -d "$work"/logs/*/ | tail -1)
    echo
    echo "## MySQL replay accuracy: $sessions sessions, $rate queries/s for ${seconds}s, measured in the general log"
    echo
    python3 - "$work/arrivals.log" "$run/summary.json" "$user" "$sys" "$rss_kb" "$((rate * seconds))" <<'PY'
import json, sys
log, summary, user, sys_s, rss_kb, planned = sys.argv[1:]
rows = []
for line in open(log):
    text, at = line.rstrip("\n").split("\t")
    rows.append((int(text.split()[1]), int(float(at))))
diffs = sorted(at - offset for offset, at in rows)
median = diffs[len(diffs) // 2]
errors = sorted(abs(d - median) for d in diffs)
pick = lambda q: errors[min(len(errors) - 1, int(q * len(errors)))] / 1000.0
lag = {row["q"]: row["lag_ms"] for row in json.load(open(summary))["quantiles"]}
print("| planned | arrived | error p50 ms | error p99 ms | error p99.9 ms | error max ms | tank lag p99 ms | tank CPU s | tank RSS MiB |")
print("|---|---|---|---|---|---|---|---|---|")
print("| %s | %d | %.3f | %.3f | %.3f | %.3f | %.3f | %.2f | %d |" % (
    planned, len(rows), pick(0.5), pick(0.99), pick(0.999), errors[-1] / 1000.0,
    lag.get(99.0) or 0.0, float(user) + float(sys_s), int(rss_kb) // 1024))
PY
    rm -rf "$work/logs"
}

cpu() {
    start_mariadb
    local sb=(sysbench oltp_point_select --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$port"
        --mysql-user=bench --mysql-password=bench --mysql-db=sbtest --tables=1 --table-size="$rows"
        --threads="$threads")
    "${sb[@]}" prepare > "$work/prepare.log"
    # A warm-up (the table into the buffer pool), which also says how many queries sysbench
    # makes per event, so that each round gives both tools the same number of queries.
    "${sb[@]}" --time=3 run > "$work/warm.log"
    local per_event events queries
    per_event=$(awk '/queries:/ { q = $2 } /total number of events:/ { e = $5 } END { print int(q / e + 0.5) }' \
        "$work/warm.log")
    events=$((cpu_queries / per_event))
    queries=$((events * per_event))
    python3 benches/mysql/gen.py points "$work/points.sessions" "$threads" "$((queries / threads))" "$rows"
    replay_config "$work/points.sessions" "threads = $tank_threads"
    [ "$hold" = 1 ] || printf '[tank]\nkeep_cpus_awake = 0\n' >> "$work/load.ini"
    local results=$work/cpu.tsv # round, tool, queries, wall, user, system, busy
    : > "$results"
    for round in $(seq "$runs"); do
        local order=(sysbench tank)
        [ $((round % 2)) = 0 ] && order=(tank sysbench)
        for tool in "${order[@]}"; do
            echo "round $round of $runs: $tool" >&2
            local busy user system wall done_queries
            busy=$(quiet)
            if [ "$tool" = sysbench ]; then
                /usr/bin/time -f "%U %S %e" -o "$work/time.txt" "${client_cpu[@]}" "${sb[@]}" \
                    --events="$events" --time=0 run \
                    > "$work/sysbench.log"
                done_queries=$(awk '/queries:/ { print $2; exit }' "$work/sysbench.log")
            else
                (cd "$work" && /usr/bin/time -f "%U %S %e" -o time.txt "${client_cpu[@]}" "$tank" \
                    -c load.ini --quiet > summary.txt 2> err.txt) || { cat "$work/err.txt"; exit 1; }
                done_queries=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["shots"]["sent"])' \
                    "$(ls -d "$work"/logs/*/ | tail -1)/summary.json")
                rm -rf "$work/logs"
            fi
            read -r user system wall < "$work/time.txt"
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$tool" "$done_queries" "$wall" "$user" "$system" \
                "$busy" >> "$results"
        done
    done
    stop_mariadb
    echo
    local pinned="no"
    [ ${#client_cpu[@]} -gt 0 ] && pinned="the server on CPU 0, each client on CPU 1 (PIN=1)"
    echo "## MySQL CPU per query: $threads connections of point selects (prepared), $queries queries per run, against sysbench; tank threads = $tank_threads; CPUs held awake: $awake; pinned: $pinned"
    echo
    python3 - "$results" <<'PY'
import statistics, sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1]) if line.strip()]
runs = {}
for rnd, tool, queries, wall, user, system, busy in rows:
    q = int(queries)
    runs.setdefault(int(rnd), {})[tool] = (q, float(wall), float(user) / q * 1e6, float(system) / q * 1e6, busy)
print("| round | sysbench queries/s | sysbench µs per query (user + system) | tank queries/s | tank µs per query (user + system) | tank ÷ sysbench | busy before (sysbench, tank) |")
print("|---|---:|---:|---:|---:|---:|---|")
ratios = []
for rnd in sorted(runs):
    got = runs[rnd]
    if "sysbench" not in got or "tank" not in got:
        continue
    cells = []
    for tool in ("sysbench", "tank"):
        q, wall, u, s, _ = got[tool]
        cells += ["%.0f" % (q / wall), "%.1f (%.1f + %.1f)" % (u + s, u, s)]
    ratio = (got["tank"][2] + got["tank"][3]) / (got["sysbench"][2] + got["sysbench"][3])
    ratios.append(ratio)
    print("| %d | %s | %.2f | %s, %s |" % (rnd, " | ".join(cells), ratio, got["sysbench"][4], got["tank"][4]))
if ratios:
    print("\ntank ÷ sysbench, CPU per query: median **%.2f** (%.2f–%.2f) over %d rounds (goal <= 1)"
          % (statistics.median(ratios), min(ratios), max(ratios), len(ratios)))
PY
}

# Instructions and syscalls of $1 point selects over $threads connections, by sysbench
# and by tank: "sysbench|tank QUERIES INSTRUCTIONS" lines, and strace's tables in
# $work/strace-{sysbench,tank}-$1.txt.
count_run() {
    local n=$1 sb=("${@:2}")
    valgrind --tool=callgrind --callgrind-out-file="$work/cg-sysbench-$n.out" \
        "${sb[@]}" --threads="$threads" --events="$n" --time=0 run > "$work/sb-$n.log" 2> "$work/sb-$n.err"
    echo "sysbench $(awk '/queries:/ { print $2; exit }' "$work/sb-$n.log") \
$(grep -oE 'Collected : [0-9]+' "$work/sb-$n.err" | grep -oE '[0-9]+$')"
    strace -c -f -o "$work/strace-sysbench-$n.txt" \
        "${sb[@]}" --threads="$threads" --events="$n" --time=0 run > /dev/null
    python3 benches/mysql/gen.py points "$work/points-$n.sessions" "$threads" "$((n / threads))" "$rows"
    replay_config "$work/points-$n.sessions"
    (cd "$work" && valgrind --tool=callgrind --callgrind-out-file="$work/cg-tank-$n.out" \
        "$tank" -c load.ini --quiet > /dev/null 2> "cg-tank-$n.err") || { cat "$work/cg-tank-$n.err"; exit 1; }
    local run
    run=$(ls -d "$work"/logs/*/ | tail -1)
    echo "tank $(grep -c . "$run/phout.log") $(grep -oE 'Collected : [0-9]+' "$work/cg-tank-$n.err" | grep -oE '[0-9]+$')"
    rm -rf "$work/logs"
    (cd "$work" && strace -c -f -o "$work/strace-tank-$n.txt" "$tank" -c load.ini --quiet > /dev/null)
    rm -rf "$work/logs"
}

counts() {
    command -v valgrind > /dev/null || { echo "valgrind not found (Debian: apt-get install -y valgrind)"; exit 1; }
    command -v strace > /dev/null || { echo "strace not found (Debian: apt-get install -y strace)"; exit 1; }
    start_mariadb
    local sb=(sysbench oltp_point_select --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$port"
        --mysql-user=bench --mysql-password=bench --mysql-db=sbtest --tables=1 --table-size="$rows")
    "${sb[@]}" prepare > "$work/prepare.log"
    local base=2000
    count_run "$base" "${sb[@]}" > "$work/counts-small.txt"
    count_run "$((base + count))" "${sb[@]}" > "$work/counts-large.txt"
    stop_mariadb
    echo
    echo "## MySQL instructions and syscalls per query: $threads connections of point selects (prepared)"
    echo
    python3 - "$work" "$base" "$((base + count))" <<'PY'
import re, sys
work, small, large = sys.argv[1], sys.argv[2], sys.argv[3]
def runs(size):
    return {tool: (int(q), int(i)) for tool, q, i in (l.split() for l in open(f"{work}/counts-{size}.txt"))}
def syscalls(tool, n):
    calls = {}
    for line in open(f"{work}/strace-{tool}-{n}.txt"):
        f = line.split()
        # "% time  seconds  usecs/call  calls  [errors]  syscall"
        if len(f) >= 5 and re.match(r"^[0-9.]+$", f[0]) and f[-1] != "total":
            calls[f[-1]] = int(f[3])
    return calls
a, b = runs("small"), runs("large")
print("| tool | queries | instructions per query | syscalls per query | of which |")
print("|---|---|---|---|---|")
for tool in ("sysbench", "tank"):
    (q1, i1), (q2, i2) = a[tool], b[tool]
    dq = q2 - q1
    s1, s2 = syscalls(tool, small), syscalls(tool, large)
    per = {name: (s2.get(name, 0) - s1.get(name, 0)) / dq for name in set(s1) | set(s2)}
    shown = sorted(((v, k) for k, v in per.items() if v >= 0.01), reverse=True)
    print("| %s | %d + %d | **%d** | **%.2f** | %s |" % (tool, q1, dq, (i2 - i1) / dq, sum(per.values()),
        ", ".join("%s %.2f" % (k, v) for v, k in shown)))
PY
    echo
    echo "tank's functions with the most instructions (self cost) in the larger run:"
    echo
    echo '```'
    callgrind_annotate --inclusive=no "$work/cg-tank-$((base + count)).out" 2>/dev/null \
        | grep -E '^ *[0-9,]+ \(' | awk 'NR <= 25'
    echo '```'
    if [ -n "${KEEP:-}" ]; then
        mkdir -p "$KEEP"
        cp "$work"/cg-*.out "$work"/strace-*.txt "$KEEP"/
    fi
}

import_bench() {
    local capture="$work/mysql-${size_mb}MB.pcap"
    python3 benches/mysql/gen.py pcap "$capture" "$size_mb" "$connections" > "$work/counts.txt"
    want=$(sed -E 's/.* ([0-9]+) connections, ([0-9]+) commands.*/\1 \2/' "$work/counts.txt")
    read -r want_sessions want_commands <<<"$want"
    bytes=$(stat -c %s "$capture")
    /usr/bin/time -v -o "$work/import-time.txt" "$tank" import "$capture" -o /dev/null 2> "$work/import.txt"
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s }' "$work/import-time.txt")
    rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$work/import-time.txt")
    summary=$(tail -n 1 "$work/import.txt")
    expected="$want_sessions sessions, $((want_commands + want_sessions)) requests"
    case "$summary" in
        *"$expected"*"; 0 warnings"*) ;;
        *) echo "not lossless: expected $expected and no warnings: $summary" >&2; exit 1 ;;
    esac
    rm -f "$capture"
    echo
    echo "## tank import of a MySQL pcap"
    echo
    echo "| capture MB | sessions | requests | seconds | MB/s | peak RSS MiB |"
    echo "|---|---|---|---|---|---|"
    python3 -c 'import sys; b, s, r, w, rss = sys.argv[1:]; print("| %.0f | %s | %s | %.2f | %.0f | %d |" % (int(b) / 1e6, s, r, float(w), int(b) / 1e6 / float(w), int(rss) // 1024))' \
        "$bytes" "$want_sessions" "$((want_commands + want_sessions))" "$wall" "$rss"
}

for part in "${parts[@]}"; do
    case "$part" in
        arrivals) arrivals ;;
        cpu) cpu ;;
        counts) counts ;;
        import) import_bench ;;
    esac
done
