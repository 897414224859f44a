#!/usr/bin/env bash
# Timing accuracy and footprint of `tank -c`, against tank's origin simulator
# on 127.0.0.1 (the only target traffic goes to).
#
#   benches/engine/accuracy.sh [--quick]
#
# 1. const(R, T) for R = 1k, 10k, 30k rps: achieved rate (responses / T),
#    sent vs planned, lag p50/p99 (start - due, from tank's summary),
#    interval_real p99, tank's CPU seconds and peak RSS.
# 2. Many instances held open against a slow target (latency 1 s): peak RSS
#    and RSS per instance. 20,000 is the goal; the run uses as many as the
#    open-files hard limit allows (one descriptor per connection).
# T is 30 s (10 s with --quick). Prints a markdown table.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=30
[ "${1:-}" = --quick ] && seconds=10
cargo build --release --quiet
tank=$PWD/target/release/tank
work=$(mktemp -d)
origin_pid=''
cleanup() { [ -n "$origin_pid" ] && kill "$origin_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

start_origin() { # recipe-json -> sets origin_addr
    echo "$1" > "$work/recipe.json"
    "$tank" origin --listen 127.0.0.1:0 --recipe "$work/recipe.json" > "$work/origin.out" 2>&1 &
    origin_pid=$!
    for _ in $(seq 100); do
        origin_addr=$(grep -oE '127\.0\.0\.1:[0-9]+' "$work/origin.out" | head -1 || true)
        [ -n "$origin_addr" ] && return 0
        sleep 0.1
    done
    echo "the origin simulator did not start:"; cat "$work/origin.out"; exit 1
}
stop_origin() { kill "$origin_pid" 2>/dev/null || true; wait "$origin_pid" 2>/dev/null || true; origin_pid=''; }

field() { # summary-file label quantile -> value in ms
    local text; text=$(grep -E "^  $2 " "$1" | grep -oE "p$3=[0-9.]+(µs|ms)" | head -1 | cut -d= -f2)
    case "$text" in *µs) echo "scale=3; ${text%µs} / 1000" | bc ;; *ms) echo "${text%ms}" ;; *) echo "?" ;; esac
}

echo "## Rate accuracy: const(R, ${seconds}s), keep-alive, 100-byte replies"
echo
echo "| R rps | sent / planned | achieved rps | achieved / R | lag p50 ms | lag p99 ms | interval_real p99 ms | tank CPU s | tank RSS MiB |"
echo "|---|---|---|---|---|---|---|---|---|"
start_origin '{"random_content": "100b", "stages": [{"at": 0, "status": 200, "latency": 0}]}'
for rate in 1000 10000 30000; do
    cat > "$work/load.ini" <<INI
[phantom]
address = $origin_addr
rps_schedule = const($rate, ${seconds}s)
uris = /small
header_http = 1.1
headers = [Host: bench]
instances = 256
INI
    (cd "$work" && /usr/bin/time -f "%U %S %M" -o time.txt "$tank" -c load.ini > summary.txt 2> err.txt) || { cat "$work/err.txt"; exit 1; }
    read -r user sys rss_kb < "$work/time.txt"
    sent=$(grep -oE 'sent [0-9]+' "$work/summary.txt" | head -1 | cut -d' ' -f2)
    planned=$(grep -oE 'planned [0-9]+' "$work/summary.txt" | head -1 | cut -d' ' -f2)
    responses=$(grep -E '^  responses' "$work/summary.txt" | grep -oE '[0-9]+' | head -1)
    achieved=$(echo "scale=1; $responses / $seconds" | bc)
    ratio=$(echo "scale=4; $achieved / $rate" | bc)
    printf '| %s | %s / %s | %s | %s | %s | %s | %s | %s | %s |\n' "$rate" "$sent" "$planned" "$achieved" "$ratio" \
        "$(field "$work/summary.txt" lag 50)" "$(field "$work/summary.txt" lag 99)" \
        "$(field "$work/summary.txt" interval_real 99)" "$(echo "$user + $sys" | bc)" "$((rss_kb / 1024))"
    rm -rf "$work/logs"
done
stop_origin

hard=$(ulimit -Hn)
instances=$(( hard >= 20100 ? 20000 : hard - 100 ))
echo
echo "## Many instances: ${instances} held open against a 1 s target (open-files hard limit: ${hard})"
echo
start_origin '{"random_content": "100b", "stages": [{"at": 0, "status": 200, "latency": "1s"}]}'
idle_kb=$( (cd "$work" && printf '[phantom]\naddress = %s\nrps_schedule = const(1,1s)\nuris = /\ninstances = 1\n' "$origin_addr" > idle.ini \
    && /usr/bin/time -f "%M" -o idle.txt "$tank" -c idle.ini > /dev/null 2>&1); cat "$work/idle.txt")
cat > "$work/many.ini" <<INI
[phantom]
address = $origin_addr
instances_schedule = ramp($instances, 5s) wait(${seconds}s)
uris = /
header_http = 1.1
headers = [Host: bench]
ammo_limit = $((instances * 5))
loop = 1000000
timeout = 10s
INI
(cd "$work" && /usr/bin/time -f "%U %S %M" -o time.txt "$tank" -c many.ini > summary.txt 2> err.txt) || { cat "$work/err.txt"; exit 1; }
read -r user sys rss_kb < "$work/time.txt"
grep -E '^  (responses|net codes|HTTP codes|interval_real)' "$work/summary.txt" | sed 's/^  /    /'
echo
echo "| instances | peak RSS MiB | idle RSS MiB | KiB per instance | tank CPU s |"
echo "|---|---|---|---|---|"
printf '| %s | %s | %s | %s | %s |\n' "$instances" "$((rss_kb / 1024))" "$((idle_kb / 1024))" \
    "$(( (rss_kb - idle_kb) / instances ))" "$(echo "$user + $sys" | bc)"
