#!/usr/bin/env bash
# gRPC beside ghz: tank (`tank_type = grpc`) and ghz firing tankbar.Greeter.SayHello at a
# grpc-go server of our own (benches/grpc/server, built here from source with the Go
# module proxy; no binary is committed), in the same run on the same machine.
#
#   benches/grpc/run.sh [DURATION]      (default 10s per run)
#
# 1. Closed model, 2 connections x 64 streams: requests per CPU-second of each tool
#    (user + system, /usr/bin/time) and tank's ratio.
# 2. A fixed rate, 5,000 calls/s: p99 of each.
# Run it on a quiet machine. Needs: go (1.22+), /usr/bin/time; ghz from the Go module
# proxy (`go install github.com/bojand/ghz/cmd/ghz@latest`, which this script runs into
# its temp dir when ghz is not on PATH).
set -euo pipefail
cd "$(dirname "$0")/../.."
duration=${1:-10s}
cargo build --release --quiet --bin tank
tank=$PWD/target/release/tank
work=$(mktemp -d)
. benches/targets.sh
server_pid=''
trap '[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"' EXIT
export GOPATH="$work/go" GOFLAGS=-modcacherw
cp -r benches/grpc/server "$work/server"
(cd "$work/server" && go mod init tankbench/server > /dev/null 2>&1 \
    && go get google.golang.org/grpc@latest > /dev/null 2>&1 && go build -o server . )
ghz=$(command -v ghz || true)
if [ -z "$ghz" ]; then
    GOBIN="$work/bin" go install github.com/bojand/ghz/cmd/ghz@latest
    ghz="$work/bin/ghz"
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$work/server/server" "$port" & server_pid=$!
for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
proto=$PWD/tests/grpc/tankbar.proto
echo '{"tag": "/hello", "call": "tankbar.Greeter.SayHello", "payload": {"name": "tank"}}' > "$work/ammo.jsonl"
config() { # schedule -> load.ini
    cat > "$work/load.ini" <<INI
[phantom]
address = 127.0.0.1:$port
tank_type = grpc
ammofile = $work/ammo.jsonl
connections = 2
threads = 1
$1
[grpc]
proto = $proto
[core]
artifacts_base_dir = $work/logs
INI
}
secs=${duration%s}

echo "## gRPC unary, closed model, 2 connections x 64 streams, $duration, grpc-go server"
echo
echo "| tool | calls | CPU s | calls per CPU-second |"
echo "|---|---|---|---|"
config "instances_schedule = const(128, ${secs}s)
instances = 128
loop = 100000000
[autostop]
autostop = limit(${secs}s)"
cpu=$(cpu_seconds "$tank" -q -c "$work/load.ini")
calls=$(cat "$work"/logs/*/phout.log | wc -l)
echo "| tank | $calls | $cpu | $(per_cpu_second "$calls" "$cpu") |"
cpu=$(cpu_seconds "$ghz" --insecure --proto "$proto" --call tankbar.Greeter.SayHello -d '{"name":"tank"}' \
    --connections 2 -c 128 -z "$duration" --format json "127.0.0.1:$port")
calls=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['count'])" "$work/out")
echo "| ghz | $calls | $cpu | $(per_cpu_second "$calls" "$cpu") |"

echo
echo "## gRPC unary at 5,000 calls/s, $duration"
echo
echo "| tool | p99 |"
echo "|---|---|"
rm -rf "$work/logs"
config "rps_schedule = const(5000, ${secs}s)
instances = 256"
cpu_seconds "$tank" -c "$work/load.ini" > /dev/null
echo "| tank (ms: service, from the intended start) | $(grep -E "^ +99%" "$work/out" | head -1 | awk "{print \$2, \$3}") |"
cpu_seconds "$ghz" --insecure --proto "$proto" --call tankbar.Greeter.SayHello -d '{"name":"tank"}' \
    --connections 2 -c 256 --rps 5000 -z "$duration" --format json "127.0.0.1:$port" > /dev/null
echo "| ghz | $(python3 -c "import json,sys; l=[x for x in json.load(open(sys.argv[1]))['latencyDistribution'] if x['percentage']==99]; print(f\"{l[0]['latency']/1e6:.3f} ms\" if l else 'n/a')" "$work/out") |"
