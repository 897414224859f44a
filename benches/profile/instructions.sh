#!/usr/bin/env bash
# Instructions per request: tank's CPU cost in a unit the machine's noise does not move.
#
#   benches/profile/instructions.sh [REQUESTS]
#   PEER=wrk benches/profile/instructions.sh    # wrk -t1 -c8 beside it, the same way
#   TANK_BIN=/tmp/tank-main benches/profile/instructions.sh   # a binary built elsewhere (main's, to compare)
#   HTTP2=1 benches/profile/instructions.sh     # HTTP/2: nginx h2c, 2 connections, 128 streams
#
# Runs `tank -c` under `valgrind --tool=callgrind` twice against a local target (nginx with
# one worker when installed, else `tank origin`), closed model with 8 instances and
# keep-alive, firing 2,000 and then 2,000 + REQUESTS (default 20,000) shots. The difference
# of the two instruction counts over the difference of the shots is the marginal cost of a
# request in tank's own threads (user space: the gun, the feeder, the results thread with
# phout and aggregation; the kernel is not counted), start-up and exit cancelled out. Then
# prints the functions that cost the most instructions in the larger run.
#
# With HTTP2=1 the same over HTTP/2 (`tank_type = http2`) against nginx speaking h2c, with
# 128 instances on 2 connections, as benches/http2/run.sh's closed model.
#
# With PEER=wrk, wrk (-t1 -c8, keep-alive, the same target and path) is measured the same
# way: two runs of different lengths, the difference of its instructions over the
# difference of its requests. Its requests are counted from its own output.
#
# KEEP=DIR copies the callgrind profiles there (for callgrind_annotate --inclusive=yes).
#
# Needs: valgrind (Debian: apt-get install -y valgrind); callgrind_annotate comes with it.
# Takes about a minute.
set -euo pipefail
cd "$(dirname "$0")/../.."
requests=${1:-20000}
base=2000
command -v valgrind > /dev/null || { echo "valgrind not found (Debian: apt-get install -y valgrind)"; exit 1; }
if [ -n "${TANK_BIN:-}" ]; then
    tank=$TANK_BIN
else
    cargo build --release --quiet --bin tank
    tank=$PWD/target/release/tank
fi
work=$(mktemp -d)
. benches/targets.sh
if [ -n "${HTTP2:-}" ]; then
    [ -n "$nginx" ] || { echo "HTTP2=1 needs nginx (apt-get install -y nginx-light)"; exit 1; }
    start_nginx http2
    target_name="nginx (1 worker, h2c)"
    queue=$'tank_type = http2\nconnections = 2'
    instances=128
else
    start_fast_target
    queue=''
    instances=8
fi
addr=$origin_addr

# Instructions of one run firing $1 shots (with uris, the shots are len(uris) x loop).
instructions() {
    cat > "$work/load.ini" <<INI
[core]
artifacts_dir = $work/run-$1
[phantom]
address = $addr
uris = /small
header_http = 1.1
headers = [Host: bench]
instances_schedule = const($instances, 600s)
loop = $1
$queue
INI
    valgrind --tool=callgrind --callgrind-out-file="$work/cg-$1.out" "$tank" -q -c "$work/load.ini" \
        > /dev/null 2> "$work/cg-$1.err"
    shots=$(wc -l < "$work/run-$1/phout.log")
    [ "$shots" -eq "$1" ] || { echo "expected $1 shots, phout has $shots"; exit 1; }
    grep -oE 'Collected : [0-9]+' "$work/cg-$1.err" | grep -oE '[0-9]+$'
}
small=$(instructions "$base")
large=$(instructions $((base + requests)))
echo "## Instructions per request (callgrind), closed model, $instances instances, keep-alive, $target_name"
echo
echo "| shots | instructions | per request, marginal |"
echo "|---|---|---|"
printf '| %s | %s | |\n' "$base" "$small"
printf '| %s | %s | **%s** |\n' $((base + requests)) "$large" $(( (large - small) / requests ))
if [ "${PEER:-}" = wrk ]; then
    command -v wrk > /dev/null || { echo "wrk not found (Debian: apt-get install -y wrk)"; exit 1; }
    # wrk's instructions and requests over a run of $1 seconds.
    wrk_run() {
        valgrind --tool=callgrind --callgrind-out-file="$work/wrk-$1.out" \
            wrk -t1 -c8 -d"$1"s -H 'Host: bench' "http://$addr/small" > "$work/wrk-$1.txt" 2> "$work/wrk-$1.err"
        echo "$(grep -oE 'Collected : [0-9]+' "$work/wrk-$1.err" | grep -oE '[0-9]+$') \
$(grep -oE '^ *[0-9]+ requests in' "$work/wrk-$1.txt" | grep -oE '[0-9]+')"
    }
    read -r wi1 wr1 <<< "$(wrk_run 5)"
    read -r wi2 wr2 <<< "$(wrk_run 20)"
    echo
    echo "wrk -t1 -c8, the same target, under callgrind:"
    echo
    echo "| run | requests | instructions | per request, marginal |"
    echo "|---|---|---|---|"
    printf '| 5 s | %s | %s | |\n' "$wr1" "$wi1"
    printf '| 20 s | %s | %s | **%s** |\n' "$wr2" "$wi2" $(( (wi2 - wi1) / (wr2 - wr1) ))
fi
echo
echo "Functions with the most instructions (self cost) in the larger run:"
echo
echo '```'
# awk, not head: head's early exit would fail the pipeline (pipefail) and end the script here.
callgrind_annotate --inclusive=no "$work/cg-$((base + requests)).out" 2>/dev/null \
    | grep -E '^ *[0-9,]+ \(' | awk 'NR <= 25'
echo '```'
if [ -n "${KEEP:-}" ]; then
    mkdir -p "$KEEP"
    cp "$work"/*.out "$KEEP"/
fi
