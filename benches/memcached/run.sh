#!/usr/bin/env bash
# tank's memcached gun beside mcperf, against one memcached on this machine.
#
#   MCPERF=/path/to/mcperf [CONNECTIONS=8] [DEPTH=1] [QPS=20000] [RUNS=3] benches/memcached/run.sh [SECONDS]
#
# Needs memcached (Debian: memcached) and mcperf built from its source
# (github.com/eth-easl/memcache-perf-dynamic; `apt-get install libevent-dev cppzmq-dev
# libzmq3-dev && make`; not vendored here). Both tools get the same workload
# (10,000 records, 30-byte keys, 200-byte values, 10% sets), one thread and
# the same connections, one after the other against one memcached (-t 1):
#   1. closed model, peak: each connection keeps DEPTH requests in flight; QPS and QPS
#      per CPU-second of the load generator (user + system, from /usr/bin/time);
#   2. open model at a fixed QPS: p50 and p99 of reads, µs, and the CPU each spent.
# In RUNS rounds (default 3) in which the tools alternate (mcperf first in odd rounds, tank
# in even ones); before each run the script waits until the machine is quiet (under 10% busy
# over a second) and the CPUs are held awake for both (benches/quiet.sh). Prints each run's
# row, then the median and spread of the rounds' ratios.
set -euo pipefail

run_s=${1:-10}
mcperf=${MCPERF:?set MCPERF to a built mcperf binary (see the comment at the top)}
connections=${CONNECTIONS:-8}
depth=${DEPTH:-1}
fixed_qps=${QPS:-20000}
runs=${RUNS:-3}
root=$(cd "$(dirname "$0")/../.." && pwd)
target_dir=${CARGO_TARGET_DIR:-$root/target}
(cd "$root" && cargo build --release --locked --bin tank >/dev/null)
tank=${TANK:-$target_dir/release/tank}

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
. "$root/benches/quiet.sh"
hold_cpus_awake

# CPU-seconds (user + system) of the command, into $work/cpu.
timed() { /usr/bin/time -f '%U %S' -o "$work/time" "$@"; tail -1 "$work/time" | awk '{print $1 + $2}' >"$work/cpu"; }

mcperf_run() { # qps -> mcperf's output
    timed "$mcperf" -s "$addr" --noload -r 10000 -K 30 -V 200 -u 0.1 -T 1 \
        -c "$connections" -d "$depth" -q "$1" -t "$run_s" >"$work/mcperf.out" 2>&1
}

tank_run() { # "[phantom] load lines" -> tank's summary text
    rm -rf "$work/logs"
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
INI
    timed "$tank" -c "$work/load.ini" -q >"$work/tank.out" 2>&1 || true
}

# The `read` row's column of mcperf's table (avg std min p5 p10 p50 p67 p75 p80 p85 p90 p95 p99 ...).
read_col() { awk -v c="$2" '$1 == "read" { print $(c + 1) }' "$1"; }
mcperf_qps() { sed -n 's/^Total QPS = \([0-9.]*\).*/\1/p' "$work/mcperf.out"; }
mcperf_count() { sed -n 's/^Total QPS = [0-9.]* (\([0-9]*\) .*/\1/p' "$work/mcperf.out"; }
tank_count() { python3 -c 'import json,glob,sys; print(json.load(open(glob.glob(sys.argv[1]+"/logs/*/summary.json")[0]))["shots"]["responses"])' "$work"; }
tank_qps() { python3 -c 'import json,glob,sys; s=json.load(open(glob.glob(sys.argv[1]+"/logs/*/summary.json")[0])); print(round(s["shots"]["responses"]/s["active_s"],1))' "$work"; }

results=$work/results.tsv # round, tool, model, qps, count, cpu, p50, p99, busy
: >"$results"
row() { # round tool model qps count out-file
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$(cat "$work/cpu")" \
        "$(read_col "$6" 6)" "$(read_col "$6" 13)" "$busy" >>"$results"
}
for round in $(seq "$runs"); do
    order=(mcperf tank)
    [ $((round % 2)) = 0 ] && order=(tank mcperf)
    for model in closed open; do
        for tool in "${order[@]}"; do
            echo "round $round of $runs: $model model, $tool" >&2
            busy=$(quiet)
            if [ "$tool" = mcperf ]; then
                if [ "$model" = closed ]; then mcperf_run 0; else mcperf_run "$fixed_qps"; fi
                row "$round" mcperf "$model" "$(mcperf_qps)" "$(mcperf_count)" "$work/mcperf.out"
            else
                if [ "$model" = closed ]; then
                    tank_run "instances_schedule = const($((connections * depth)),1s)
ammo_limit = 100000000"
                else
                    tank_run "rps_schedule = const($fixed_qps,${run_s}s)"
                fi
                row "$round" tank "$model" "$(tank_qps)" "$(tank_count)" "$work/tank.out"
            fi
        done
    done
done

python3 - "$results" "$connections" "$depth" "$fixed_qps" "$run_s" "$runs" "$awake" <<'PY'
import statistics, sys
path, conns, depth, fixed, secs, runs, awake = sys.argv[1:]
rows = [line.rstrip("\n").split("\t") for line in open(path) if line.strip()]
print(f"## memcached, {conns} connections × depth {depth}, {secs} s per run, {runs} rounds; CPUs held awake: {awake}")
print()
print("| round | model | tool | QPS | CPU s | QPS per CPU-second | read p50 µs | read p99 µs | busy before |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|")
got = {}
for rnd, tool, model, qps, count, cpu, p50, p99, busy in rows:
    per_cpu = float(count) / float(cpu) if model == "closed" and count and float(cpu) > 0 else None
    got.setdefault((int(rnd), model), {})[tool] = (per_cpu, float(cpu), p99)
    print(f"| {rnd} | {model} | {tool} | {qps} | {cpu} | {'' if per_cpu is None else f'{per_cpu:,.0f}'} | {p50} | {p99} | {busy} |")
def spread(values):
    return f"**{statistics.median(values):.2f}** ({min(values):.2f}–{max(values):.2f})" if values else "–"
closed = [g["tank"][0] / g["mcperf"][0] for (r, m), g in got.items()
          if m == "closed" and len(g) == 2 and g["tank"][0] and g["mcperf"][0]]
p99 = [float(g["tank"][2]) / float(g["mcperf"][2]) for (r, m), g in got.items()
       if m == "open" and len(g) == 2 and g["tank"][2] and g["mcperf"][2] and float(g["mcperf"][2]) > 0]
cpu = [g["tank"][1] / g["mcperf"][1] for (r, m), g in got.items()
       if m == "open" and len(g) == 2 and g["mcperf"][1] > 0]
print()
print(f"Median (spread) over the rounds: closed model, tank ÷ mcperf QPS per CPU-second {spread(closed)} "
      f"(goal ≥ 1.2); open model at {fixed} QPS, tank ÷ mcperf read p99 {spread(p99)} (goal ≤ 1), "
      f"CPU {spread(cpu)}.")
PY
