#!/usr/bin/env bash
# tank's memcached gun beside mcperf, against one memcached on this machine.
#
#   MCPERF=/path/to/mcperf [CONNECTIONS=8] [DEPTH=1] [QPS=20000] benches/memcached/run.sh [SECONDS]
#
# Needs memcached (Debian: memcached) and mcperf built from its source
# (github.com/eth-easl/memcache-perf-dynamic; `apt-get install libevent-dev
# libzmq3-dev && make`; not vendored here). Both tools get the same workload
# (10,000 records, 30-byte keys, 200-byte values, 10% sets), one thread and
# the same connections, one after the other against one memcached (-t 1):
#   1. closed model, peak: each connection sends its next request when the
#      last one is answered; QPS and QPS per CPU-second of the load generator;
#   2. open model at a fixed QPS: p50 and p99 of reads, µs.
set -euo pipefail

run_s=${1:-10}
mcperf=${MCPERF:?set MCPERF to a built mcperf binary (see the comment at the top)}
connections=${CONNECTIONS:-8}
depth=${DEPTH:-1}
fixed_qps=${QPS:-20000}
root=$(cd "$(dirname "$0")/../.." && pwd)
target_dir=${CARGO_TARGET_DIR:-$root/target}
(cd "$root" && cargo build --release --locked --bin tank >/dev/null)
tank=$target_dir/release/tank

work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
memcached -l 127.0.0.1 -p "$port" -U 0 -t 1 -m 256 -u root &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.05
done
addr=127.0.0.1:$port
"$mcperf" -s "$addr" --loadonly -r 10000 -K 30 -V 200 >/dev/null

# CPU-seconds (user + system) of the command, into $work/cpu.
timed() { /usr/bin/time -f '%U %S' -o "$work/time" "$@"; tail -1 "$work/time" | awk '{print $1 + $2}' >"$work/cpu"; }

mcperf_run() { # qps -> mcperf's output
    timed "$mcperf" -s "$addr" --noload -r 10000 -K 30 -V 200 -u 0.1 -T 1 \
        -c "$connections" -d "$depth" -q "$1" -t "$run_s" >"$work/mcperf.out" 2>&1
}

tank_run() { # "[phantom] load lines" -> tank's summary text
    cat >"$work/load.ini" <<INI
[phantom]
address = $addr
tank_type = memcached
threads = 1
instances = $((connections * depth))
depth = $depth
$1
[memcached]
records = 10000
keysize = 30
valuesize = 200
update = 0.1
seed = 1
[autostop]
autostop = limit(${run_s}s)
[tank]
artifacts_base_dir = $work/logs
keep_cpus_awake = 0
INI
    timed "$tank" -c "$work/load.ini" -q >"$work/tank.out" 2>&1 || true
}

# The `read` row's column of mcperf's table (avg std min p5 p10 p50 p67 p75 p80 p85 p90 p95 p99 ...).
read_col() { awk -v c="$2" '$1 == "read" { print $(c + 1) }' "$1"; }
mcperf_qps() { sed -n 's/^Total QPS = \([0-9.]*\).*/\1/p' "$work/mcperf.out"; }
mcperf_count() { sed -n 's/^Total QPS = [0-9.]* (\([0-9]*\) .*/\1/p' "$work/mcperf.out"; }
tank_count() { python3 -c 'import json,glob,sys; print(json.load(open(glob.glob(sys.argv[1]+"/logs/*/summary.json")[0]))["shots"]["responses"])' "$work"; }
tank_qps() { python3 -c 'import json,glob,sys; s=json.load(open(glob.glob(sys.argv[1]+"/logs/*/summary.json")[0])); print(round(s["shots"]["responses"]/s["active_s"],1))' "$work"; }
per_cpu() { python3 -c "import sys; print(round(float(sys.argv[1]) / float(sys.argv[2])))" "$1" "$2"; }

echo "| run | tool | QPS | CPU s | QPS per CPU-second | read p50 µs | read p99 µs |"
echo "|---|---|---:|---:|---:|---:|---:|"
mcperf_run 0
q=$(mcperf_qps); cpu=$(cat "$work/cpu"); qps_cpu_mcperf=$(per_cpu "$(mcperf_count)" "$cpu")
echo "| closed, $connections conns × $depth | mcperf | $q | $cpu | $qps_cpu_mcperf | $(read_col "$work/mcperf.out" 6) | $(read_col "$work/mcperf.out" 13) |"
rm -rf "$work/logs"
tank_run "instances_schedule = const($((connections * depth)),1s)
ammo_limit = 100000000"
q=$(tank_qps); cpu=$(cat "$work/cpu"); qps_cpu_tank=$(per_cpu "$(tank_count)" "$cpu")
echo "| closed, $connections conns × $depth | tank | $q | $cpu | $qps_cpu_tank | $(read_col "$work/tank.out" 6) | $(read_col "$work/tank.out" 13) |"
mcperf_run "$fixed_qps"
echo "| open, $fixed_qps QPS, depth $depth | mcperf | $(mcperf_qps) | $(cat "$work/cpu") | | $(read_col "$work/mcperf.out" 6) | $(read_col "$work/mcperf.out" 13) |"
rm -rf "$work/logs"
tank_run "rps_schedule = const($fixed_qps,${run_s}s)"
echo "| open, $fixed_qps QPS, depth $depth | tank | $(tank_qps) | $(cat "$work/cpu") | | $(read_col "$work/tank.out" 6) | $(read_col "$work/tank.out" 13) |"
