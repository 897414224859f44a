#!/usr/bin/env bash
# HTTP/2 beside its peers: tank (`bench --http2`), h2load (Debian's nghttp2-client) and oha
# (`--http2`, when on PATH), against one nginx (one worker, h2c, a 100-byte /small) on
# 127.0.0.1, in the same run on the same machine.
#
#   benches/http2/run.sh [DURATION]      (default 10s per run)
#
# 1. Closed model, 2 connections x 64 streams: requests per CPU-second of each tool
#    (its user + system time, from /usr/bin/time), and tank's ratio to each.
# 2. Open model at 10,000 requests/s on 2 connections: p99 of each (tank's and oha's from
#    the intended start; h2load's --rps per client, 5,000 on each of 2).
# Run it on a quiet machine: the numbers are only worth the machine's quiet.
# Needs: nginx, nghttp2-client (h2load), /usr/bin/time; oha (cargo install oha) optional.
set -euo pipefail
cd "$(dirname "$0")/../.."
duration=${1:-10s}
secs=${duration%s}
cargo build --release --quiet --bin tank
tank=$PWD/target/release/tank
work=$(mktemp -d)
. benches/targets.sh
command -v h2load > /dev/null || { echo "h2load not found (apt-get install -y nghttp2-client)"; exit 1; }
start_nginx_h2() { # -> origin_addr, origin_pid
    local port; port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    cat > "$work/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $work/nginx.pid;
events { worker_connections 8192; }
http {
    access_log off;
    keepalive_requests 100000000;
    http2_max_concurrent_streams 256;
    server {
        listen 127.0.0.1:$port http2;
        location /small { return 200 "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"; }
    }
}
CONF
    "$nginx" -p "$work" -c "$work/nginx.conf" -e "$work/nginx-error.log" &
    origin_pid=$!
    origin_addr=127.0.0.1:$port
    for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0; sleep 0.1; done
    echo "nginx did not start"; cat "$work/nginx-error.log"; exit 1
}
start_nginx_h2
url=http://$origin_addr/small

# cpu-seconds of a command (user + system), its output in $work/out.
timed() { /usr/bin/time -f '%U %S' -o "$work/time" "$@" > "$work/out" 2>&1 || true; tail -1 "$work/time" | awk '{print $1 + $2}'; }
per_cpu() { python3 -c "import sys; r, c = float(sys.argv[1]), float(sys.argv[2]); print(f'{r / c:,.0f}' if c else 'n/a')" "$1" "$2"; }

echo "## HTTP/2, closed model, 2 connections x 64 streams, $duration, nginx h2c"
echo
echo "| tool | requests | CPU s | requests per CPU-second |"
echo "|---|---|---|---|"
cpu=$(timed "$tank" bench --http2 -c 2 -M 64 -t 1 -d "$duration" --artifacts "$work/logs" "$url")
req=$(grep -oE '^ *[0-9]+ requests in' "$work/out" | grep -oE '[0-9]+' | head -1)
echo "| tank | $req | $cpu | $(per_cpu "$req" "$cpu") |"
cpu=$(timed h2load -c 2 -m 64 -t 1 -D "$secs" "$url")
req=$(grep -oE 'requests: [0-9]+ total, [0-9]+ started, [0-9]+ done, [0-9]+ succeeded' "$work/out" | awk '{print $8}')
echo "| h2load | $req | $cpu | $(per_cpu "$req" "$cpu") |"
if command -v oha > /dev/null; then
    cpu=$(timed oha --http2 -c 2 -p 64 -z "$duration" --no-tui "$url")
    req=$(python3 -c "import re,sys; t=open(sys.argv[1]).read(); m=re.search(r'Requests/sec:\s+([0-9.]+)', t); print(int(float(m.group(1))*$secs) if m else 0)" "$work/out")
    echo "| oha --http2 | $req | $cpu | $(per_cpu "$req" "$cpu") |"
else
    echo "| oha | (not on PATH: cargo install oha) | | |"
fi

echo
echo "## HTTP/2, open model, 10,000 requests/s on 2 connections, $duration"
echo
echo "| tool | p99 |"
echo "|---|---|"
timed "$tank" bench --http2 -c 2 -M 64 -t 1 -R 10000 -d "$duration" --artifacts "$work/logs" "$url" > /dev/null
echo "| tank (from the intended start) | $(grep -E '^ +99%' "$work/out" | awk '{print $2}') |"
timed h2load -c 2 -m 64 -t 1 --rps 5000 -D "$secs" "$url" > /dev/null
echo "| h2load (--rps 5000 per client; from its send) | $(python3 benches/http2/h2load_p99.py "$work/out") |"
if command -v oha > /dev/null; then
    timed oha --http2 -c 2 -p 64 -q 10000 --latency-correction -z "$duration" --no-tui "$url" > /dev/null
    echo "| oha (--latency-correction) | $(grep -E '99.00%' "$work/out" | head -1 | awk '{print $3, $4}') |"
fi
