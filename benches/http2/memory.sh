#!/usr/bin/env bash
# tank's peak memory with 10,000 HTTP/2 streams in flight.
#
#   benches/http2/memory.sh
#
# nginx (h2c, 10,000 streams per connection) proxies every request to `tank origin`,
# which answers after 2 s, so a closed model of 10,000 instances over 10 connections
# keeps 10,000 streams in flight for the whole run (10 s). Prints tank's peak RSS
# (/usr/bin/time) and the requests completed. Memory does not depend on the machine's
# load, so this one may be run anywhere.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --quiet --bin tank
tank=$PWD/target/release/tank
work=$(mktemp -d)
. benches/targets.sh
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
start_origin '{"random_content": "10b", "stages": [{"at": 0, "status": 200, "latency": "2s"}]}'
upstream=$origin_addr
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$work/nginx.conf" <<CONF
worker_processes 1;
worker_rlimit_nofile 65536;
daemon off;
pid $work/nginx.pid;
events { worker_connections 40000; }
http {
    access_log off;
    keepalive_requests 100000000;
    http2_max_concurrent_streams 10000;
    upstream slow { server $upstream; keepalive 10000; }
    server {
        listen 127.0.0.1:$port http2;
        location / { proxy_pass http://slow; proxy_http_version 1.1; proxy_set_header Connection ""; }
    }
}
CONF
"$nginx" -p "$work" -c "$work/nginx.conf" -e "$work/nginx-error.log" &
nginx_pid=$!
trap 'kill $nginx_pid 2>/dev/null; stop_origin; rm -rf "$work"' EXIT
for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
cat > "$work/load.ini" <<INI
[phantom]
address = 127.0.0.1:$port
tank_type = http2
connections = 10
uris = /slow
instances_schedule = const(10000, 10s)
loop = 1000000
[autostop]
autostop = limit(10s)
[core]
artifacts_dir = $work/run
INI
/usr/bin/time -f '%M' -o "$work/rss" "$tank" -q -c "$work/load.ini" > "$work/out" 2>&1 || true
rows=$(wc -l < "$work/run/phout.log")
ok=$(awk -F'\t' '$11 == 0 && $12 == 200' "$work/run/phout.log" | wc -l)
echo "10,000 HTTP/2 streams in flight over 10 connections: peak RSS $(( $(tail -1 "$work/rss") / 1024 )) MB; rows $rows, of which $ok answered 200"
