#!/usr/bin/env bash
# Instructions per request: tank's CPU cost in a unit the machine's noise does not move.
#
#   benches/profile/instructions.sh [REQUESTS]
#
# Runs `tank -c` under `valgrind --tool=callgrind` twice against a local target (nginx with
# one worker when installed, else `tank origin`), closed model with 8 instances and
# keep-alive, firing 2,000 and then 2,000 + REQUESTS (default 20,000) shots. The difference
# of the two instruction counts over the difference of the shots is the marginal cost of a
# request in tank's own threads (user space: the gun, the feeder, the results thread with
# phout and aggregation; the kernel is not counted), start-up and exit cancelled out. Then
# prints the functions that cost the most instructions in the larger run.
#
# Needs: valgrind (Debian: apt-get install -y valgrind); callgrind_annotate comes with it.
# Takes about a minute.
set -euo pipefail
cd "$(dirname "$0")/../.."
requests=${1:-20000}
base=2000
command -v valgrind > /dev/null || { echo "valgrind not found (Debian: apt-get install -y valgrind)"; exit 1; }
cargo build --release --quiet --bin tank
tank=$PWD/target/release/tank
work=$(mktemp -d)
target_pid=''
cleanup() { [ -n "$target_pid" ] && kill "$target_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
nginx=$(command -v nginx || { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; } || true)
if [ -n "$nginx" ]; then
    port=$(free_port)
    cat > "$work/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $work/nginx.pid;
events { worker_connections 1024; }
http {
    access_log off;
    keepalive_requests 100000000;
    server {
        listen 127.0.0.1:$port;
        location /small { return 200 "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"; }
    }
}
CONF
    "$nginx" -p "$work" -c "$work/nginx.conf" -e "$work/nginx-error.log" &
    target_pid=$!
    addr=127.0.0.1:$port
    what="nginx (1 worker)"
else
    echo '{"random_content": "100b", "stages": [{"at": 0, "status": 200, "latency": 0}]}' > "$work/recipe.json"
    "$tank" origin --listen 127.0.0.1:0 --recipe "$work/recipe.json" > "$work/origin.out" 2>&1 &
    target_pid=$!
    addr=''
    for _ in $(seq 100); do
        addr=$(grep -oE '127\.0\.0\.1:[0-9]+' "$work/origin.out" | head -1 || true)
        [ -n "$addr" ] && break
        sleep 0.1
    done
    what="tank origin"
fi
for _ in $(seq 50); do
    (exec 3<>"/dev/tcp/${addr%:*}/${addr#*:}") 2>/dev/null && break
    sleep 0.1
done

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
instances_schedule = const(8, 600s)
loop = $1
INI
    valgrind --tool=callgrind --callgrind-out-file="$work/cg-$1.out" "$tank" -q -c "$work/load.ini" \
        > /dev/null 2> "$work/cg-$1.err"
    shots=$(wc -l < "$work/run-$1/phout.log")
    [ "$shots" -eq "$1" ] || { echo "expected $1 shots, phout has $shots"; exit 1; }
    grep -oE 'Collected : [0-9]+' "$work/cg-$1.err" | grep -oE '[0-9]+$'
}
small=$(instructions "$base")
large=$(instructions $((base + requests)))
echo "## Instructions per request (callgrind), closed model, 8 instances, keep-alive, $what"
echo
echo "| shots | instructions | per request, marginal |"
echo "|---|---|---|"
printf '| %s | %s | |\n' "$base" "$small"
printf '| %s | %s | **%s** |\n' $((base + requests)) "$large" $(( (large - small) / requests ))
echo
echo "Functions with the most instructions (self cost) in the larger run:"
echo
echo '```'
callgrind_annotate --inclusive=no "$work/cg-$((base + requests)).out" 2>/dev/null \
    | grep -E '^ *[0-9,]+ \(' | head -25
echo '```'
