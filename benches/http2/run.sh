#!/usr/bin/env bash
# HTTP/2 beside its peers: tank (`bench --http2`), h2load (Debian's nghttp2-client) and oha
# (`--http2`, when on PATH), against one nginx (one worker, h2c, a 100-byte /small) on
# 127.0.0.1, in the same run on the same machine.
#
#   benches/http2/run.sh [DURATION]      (default 10s per tool and round)
#   RUNS=5 benches/http2/run.sh 10s      (rounds: default 3)
#
# 1. Closed model, 2 connections x 64 streams: requests per CPU-second of each tool
#    (its user + system time, from /usr/bin/time), and tank's ratio to each.
# 2. Open model at 10,000 requests/s on 2 connections: p99 of each (tank's and oha's from
#    the intended start; h2load's --rps per client, 5,000 on each of 2), and the CPU each
#    spent on the same requests.
# Each round runs every tool once, in turn (tank, h2load, oha), so the tools alternate; before
# each run the script waits until the machine is quiet (under 10% busy over a second, for at
# most 2 minutes) and prints how busy it was; the CPUs are held awake for all the tools (a
# zero-latency request on /dev/cpu_dma_latency, when it may; tank asks for itself anyway).
# The summary gives each ratio's median over the rounds and its spread (each round's ratio
# is of runs made minutes apart). Run it on a quiet machine: nothing else should be running.
# Needs: nginx, nghttp2-client (h2load), python3, /usr/bin/time; oha (cargo install oha)
# optional.
set -euo pipefail
cd "$(dirname "$0")/../.."
duration=${1:-10s}
secs=${duration%s}
runs=${RUNS:-3}
cargo build --release --quiet --bin tank
tank=$PWD/target/release/tank
work=$(mktemp -d)
. benches/targets.sh
command -v h2load > /dev/null || { echo "h2load not found (apt-get install -y nghttp2-client)"; exit 1; }
have_oha=0
command -v oha > /dev/null && have_oha=1
start_nginx http2
url=http://$origin_addr/small

# The CPUs held awake for every tool; quiet() before each run.
. benches/quiet.sh
hold_cpus_awake

results=$work/results.tsv # round, tool, model, requests, cpu, p99, busy
: > "$results"
for round in $(seq "$runs"); do
    echo "round $round of $runs: closed model" >&2
    busy=$(quiet)
    cpu=$(cpu_seconds "$tank" bench --http2 -c 2 -M 64 -t 1 -d "$duration" --artifacts "$work/logs" "$url")
    req=$(grep -oE '^ *[0-9]+ requests in' "$work/out" | grep -oE '[0-9]+' | head -1)
    printf '%s\ttank\tclosed\t%s\t%s\t\t%s\n' "$round" "${req:-0}" "$cpu" "$busy" >> "$results"
    busy=$(quiet)
    cpu=$(cpu_seconds h2load -c 2 -m 64 -t 1 -D "$secs" "$url")
    req=$(grep -oE 'requests: [0-9]+ total, [0-9]+ started, [0-9]+ done, [0-9]+ succeeded' "$work/out" | awk '{print $8}')
    printf '%s\th2load\tclosed\t%s\t%s\t\t%s\n' "$round" "${req:-0}" "$cpu" "$busy" >> "$results"
    if [ "$have_oha" = 1 ]; then
        busy=$(quiet)
        cpu=$(cpu_seconds oha --http2 -c 2 -p 64 -z "$duration" --no-tui "$url")
        req=$(python3 -c "import re,sys; t=open(sys.argv[1]).read(); m=re.search(r'Requests/sec:\s+([0-9.]+)', t); print(int(float(m.group(1))*$secs) if m else 0)" "$work/out")
        printf '%s\toha\tclosed\t%s\t%s\t\t%s\n' "$round" "$req" "$cpu" "$busy" >> "$results"
    fi
    echo "round $round of $runs: open model" >&2
    busy=$(quiet)
    cpu=$(cpu_seconds "$tank" bench --http2 -c 2 -M 64 -t 1 -R 10000 -d "$duration" --artifacts "$work/logs" "$url")
    p99=$(grep -E '^ +99%' "$work/out" | awk '{print $2}')
    printf '%s\ttank\topen\t\t%s\t%s\t%s\n' "$round" "$cpu" "$p99" "$busy" >> "$results"
    busy=$(quiet)
    cpu=$(cpu_seconds h2load -c 2 -m 64 -t 1 --rps 5000 -D "$secs" "$url")
    p99=$(python3 benches/http2/h2load_p99.py "$work/out")
    printf '%s\th2load\topen\t\t%s\t%s\t%s\n' "$round" "$cpu" "$p99" "$busy" >> "$results"
    if [ "$have_oha" = 1 ]; then
        busy=$(quiet)
        cpu=$(cpu_seconds oha --http2 -c 2 -p 64 -q 10000 --latency-correction -z "$duration" --no-tui "$url")
        p99=$(grep -E '99.00%' "$work/out" | head -1 | awk '{print $3, $4}')
        printf '%s\toha\topen\t\t%s\t%s\t%s\n' "$round" "$cpu" "$p99" "$busy" >> "$results"
    fi
done

python3 - "$results" "$duration" "$runs" "$awake" "$have_oha" <<'PY'
import statistics, sys
path, duration, runs, awake, have_oha = sys.argv[1:]
rows = [line.rstrip("\n").split("\t") for line in open(path) if line.strip()]
closed = {}
for rnd, tool, model, req, cpu, p99, busy in rows:
    if model == "closed":
        rate = float(req) / float(cpu) if float(cpu) > 0 else 0.0
        closed.setdefault(int(rnd), {})[tool] = (int(req), float(cpu), rate)
tools = ["tank", "h2load"] + (["oha"] if have_oha == "1" else [])
print(f"## HTTP/2, closed model, 2 connections x 64 streams, {duration} per tool, nginx h2c, {runs} rounds")
print()
print("| round | " + " | ".join(f"{t} req/CPU-s" for t in tools) + " | "
      + " | ".join(f"tank ÷ {t}" for t in tools[1:]) + " |")
print("|---|" + "---:|" * (2 * len(tools) - 1))
ratios = {t: [] for t in tools[1:]}
for rnd in sorted(closed):
    got = closed[rnd]
    cells = [f"{got[t][2]:,.0f}" if t in got else "–" for t in tools]
    for t in tools[1:]:
        if t in got and "tank" in got and got[t][2] > 0:
            ratios[t].append(got["tank"][2] / got[t][2])
            cells.append(f"{ratios[t][-1]:.2f}")
        else:
            cells.append("–")
    print(f"| {rnd} | " + " | ".join(cells) + " |")
summary = []
for t, rs in ratios.items():
    if rs:
        summary.append(f"tank ÷ {t} **{statistics.median(rs):.2f}** ({min(rs):.2f}–{max(rs):.2f})")
print()
print("Median (spread) over the rounds: " + "; ".join(summary) + ".")
print()
print(f"## HTTP/2, open model, 10,000 requests/s on 2 connections, {duration}")
print()
print("| round | tool | p99 | CPU s |")
print("|---|---|---|---|")
for rnd, tool, model, req, cpu, p99, busy in rows:
    if model == "open":
        label = {"tank": "tank (from the intended start)", "h2load": "h2load (--rps 5000 per client; from its send)",
                 "oha": "oha (--latency-correction)"}[tool]
        print(f"| {rnd} | {label} | {p99} | {cpu} |")
busiest = max(float(r[6]) for r in rows)
print()
print(f"Machine before each run: at most {busiest:.0%} busy (the script waits for under 10%). CPUs held awake: {awake}.")
PY
