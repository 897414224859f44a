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
#    the intended start; h2load's --rps per client, 5,000 on each of 2), and the CPU each
#    spent on the same requests.
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
start_nginx http2
url=http://$origin_addr/small


echo "## HTTP/2, closed model, 2 connections x 64 streams, $duration, nginx h2c"
echo
echo "| tool | requests | CPU s | requests per CPU-second |"
echo "|---|---|---|---|"
cpu=$(cpu_seconds "$tank" bench --http2 -c 2 -M 64 -t 1 -d "$duration" --artifacts "$work/logs" "$url")
req=$(grep -oE '^ *[0-9]+ requests in' "$work/out" | grep -oE '[0-9]+' | head -1)
echo "| tank | $req | $cpu | $(per_cpu_second "$req" "$cpu") |"
cpu=$(cpu_seconds h2load -c 2 -m 64 -t 1 -D "$secs" "$url")
req=$(grep -oE 'requests: [0-9]+ total, [0-9]+ started, [0-9]+ done, [0-9]+ succeeded' "$work/out" | awk '{print $8}')
echo "| h2load | $req | $cpu | $(per_cpu_second "$req" "$cpu") |"
if command -v oha > /dev/null; then
    cpu=$(cpu_seconds oha --http2 -c 2 -p 64 -z "$duration" --no-tui "$url")
    req=$(python3 -c "import re,sys; t=open(sys.argv[1]).read(); m=re.search(r'Requests/sec:\s+([0-9.]+)', t); print(int(float(m.group(1))*$secs) if m else 0)" "$work/out")
    echo "| oha --http2 | $req | $cpu | $(per_cpu_second "$req" "$cpu") |"
else
    echo "| oha | (not on PATH: cargo install oha) | | |"
fi

echo
echo "## HTTP/2, open model, 10,000 requests/s on 2 connections, $duration"
echo
echo "| tool | p99 | CPU s |"
echo "|---|---|---|"
cpu=$(cpu_seconds "$tank" bench --http2 -c 2 -M 64 -t 1 -R 10000 -d "$duration" --artifacts "$work/logs" "$url")
echo "| tank (from the intended start) | $(grep -E '^ +99%' "$work/out" | awk '{print $2}') | $cpu |"
cpu=$(cpu_seconds h2load -c 2 -m 64 -t 1 --rps 5000 -D "$secs" "$url")
echo "| h2load (--rps 5000 per client; from its send) | $(python3 benches/http2/h2load_p99.py "$work/out") | $cpu |"
if command -v oha > /dev/null; then
    cpu=$(cpu_seconds oha --http2 -c 2 -p 64 -q 10000 --latency-correction -z "$duration" --no-tui "$url")
    echo "| oha (--latency-correction) | $(grep -E '99.00%' "$work/out" | head -1 | awk '{print $3, $4}') | $cpu |"
fi
