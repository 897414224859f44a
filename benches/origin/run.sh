#!/usr/bin/env bash
# The origin simulator against nginx on the same box, measured by wrk.
#
#   benches/origin/run.sh [SECONDS]      (default 10 s per wrk run; about 80 s in all)
#
# 1. Throughput: wrk -c 64 -t 2 on a 100-byte body, 3 runs each (alternating),
#    median requests/s; the simulator's goal is >= 80% of nginx's.
#    nginx: one worker, keep-alive, access_log off, the 100 bytes from a file
#    (open_file_cache on). The simulator: `tank origin` with random_content 100b.
# 2. Connections: `latency: 100ms` with wrk -c 10000 -t 2; the goal is no socket
#    errors and no non-2xx answers.
#
# Installs nothing: it needs nginx and wrk (Debian: apt-get install -y nginx-light wrk)
# and builds tank in release mode. Runs nginx with its own prefix in a temp dir.
set -euo pipefail
cd "$(dirname "$0")/../.."

SECONDS_PER_RUN="${1:-10}"
# Three free loopback ports (the kernel picks them), unless given.
free_ports() {
    python3 -c 'import socket
s = [socket.socket() for _ in range(3)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))'
}
read -r default_nginx default_origin default_slow < <(free_ports)
NGINX_PORT="${NGINX_PORT:-$default_nginx}"
ORIGIN_PORT="${ORIGIN_PORT:-$default_origin}"
SLOW_PORT="${SLOW_PORT:-$default_slow}"

missing=()
for tool in nginx wrk; do
    command -v "$tool" >/dev/null 2>&1 || [[ -x "/usr/sbin/$tool" ]] || missing+=("$tool")
done
if ((${#missing[@]})); then
    echo "missing: ${missing[*]} (Debian: apt-get install -y nginx-light wrk)" >&2
    exit 1
fi
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"

# 10,000 connections need as many descriptors on both sides.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if (($(ulimit -n) < 10100)); then
    echo "warning: ulimit -n is $(ulimit -n); the 10,000-connection run needs about 10,100 per process" >&2
fi

cargo build --release --quiet --bin tank
TANK="${CARGO_TARGET_DIR:-target}/release/tank"

work="$(mktemp -d)"
chmod 755 "$work" # nginx workers run as another user and read the body file
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

printf '%0100d' 0 | tr 0 x >"$work/small"
cat >"$work/nginx.conf" <<CONF
worker_processes 1;
worker_rlimit_nofile 65536;
daemon off;
pid $work/nginx.pid;
error_log $work/error.log warn;
events { worker_connections 20000; }
http {
    access_log off;
    keepalive_requests 10000000;
    keepalive_timeout 65;
    open_file_cache max=16;
    server {
        listen 127.0.0.1:$NGINX_PORT backlog=16384;
        location = /small { default_type text/plain; alias $work/small; }
    }
}
CONF
"$NGINX" -p "$work" -c "$work/nginx.conf" -e "$work/error.log" &
pids+=($!)

echo '{"random_content": "100b", "stages": [{"at": 0, "status": 200, "latency": 0}]}' >"$work/small.json"
echo '{"random_content": "100b", "stages": [{"at": 0, "status": 200, "latency": "100ms"}]}' >"$work/slow.json"
"$TANK" origin --listen "127.0.0.1:$ORIGIN_PORT" --recipe "$work/small.json" >/dev/null &
pids+=($!)
"$TANK" origin --listen "127.0.0.1:$SLOW_PORT" --recipe "$work/slow.json" >/dev/null &
pids+=($!)

wait_for() {
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "nothing listens on port $1" >&2
    exit 1
}
for port in "$NGINX_PORT" "$ORIGIN_PORT" "$SLOW_PORT"; do wait_for "$port"; done

# Requests/s of one wrk run; fails on socket errors or non-2xx answers.
rps() {
    local out
    out="$(wrk -c 64 -t 2 -d "${SECONDS_PER_RUN}s" "http://127.0.0.1:$1/small")"
    if grep -Eq 'Socket errors|Non-2xx' <<<"$out"; then
        echo "errors in a run against port $1:" >&2
        echo "$out" >&2
        exit 1
    fi
    awk '/^Requests\/sec:/ {printf "%d", $2}' <<<"$out"
}
median() { printf '%s\n' "$@" | sort -n | sed -n 2p; }

echo "throughput: wrk -c 64 -t 2 -d ${SECONDS_PER_RUN}s, 100-byte body, $(nproc) cores" >&2
nginx_runs=()
origin_runs=()
for run in 1 2 3; do
    nginx_runs+=("$(rps "$NGINX_PORT")")
    origin_runs+=("$(rps "$ORIGIN_PORT")")
    echo "  run $run: nginx ${nginx_runs[-1]}, tank origin ${origin_runs[-1]}" >&2
done
nginx_median="$(median "${nginx_runs[@]}")"
origin_median="$(median "${origin_runs[@]}")"
ratio="$(awk -v a="$origin_median" -v b="$nginx_median" 'BEGIN {printf "%.2f", a / b}')"

echo "connections: wrk -c 10000 -t 2 -d ${SECONDS_PER_RUN}s, latency 100ms" >&2
slow="$(wrk -c 10000 -t 2 -d "${SECONDS_PER_RUN}s" --timeout 5s "http://127.0.0.1:$SLOW_PORT/small")"
slow_rps="$(awk '/^Requests\/sec:/ {printf "%d", $2}' <<<"$slow")"
slow_latency="$(awk '$1 == "Latency" {print $2; exit}' <<<"$slow")"
slow_errors="$(grep -E 'Socket errors|Non-2xx' <<<"$slow" | tr -s ' ' || true)"

echo
echo "| target | run 1 | run 2 | run 3 | median req/s |"
echo "|---|---:|---:|---:|---:|"
echo "| nginx (1 worker) | ${nginx_runs[0]} | ${nginx_runs[1]} | ${nginx_runs[2]} | $nginx_median |"
echo "| tank origin | ${origin_runs[0]} | ${origin_runs[1]} | ${origin_runs[2]} | $origin_median |"
echo
echo "tank origin / nginx: $ratio (goal: >= 0.80)"
echo
echo "10,000 connections, latency 100ms: $slow_rps req/s, mean latency $slow_latency, errors: ${slow_errors:-none}"

status=0
awk -v r="$ratio" 'BEGIN {exit !(r >= 0.80)}' || { echo "FAIL: below 80% of nginx" >&2; status=1; }
[[ -z "$slow_errors" ]] || { echo "FAIL: errors with 10,000 connections" >&2; status=1; }
exit "$status"
