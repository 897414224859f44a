#!/usr/bin/env bash
# What monitoring and the exporters cost the run: tank's CPU (user + system, from
# /usr/bin/time) for a 10,000 rps run against `tank origin`, with and without
# `[telegraf]` (this machine's /proc: per-core CPU, memory, net, disk, system, kernel,
# netstat, once a second), `[influx]` (a real influxd on loopback, when installed) and
# `[prometheus]` (scraped once a second by curl, as Prometheus would).
#
#   benches/monitoring/overhead.sh [SECONDS] [PAIRS]     (default 20 s, 3 pairs)
#
# Runs alternate off/on back to back against the same origin, so drift on a shared box
# hits both alike. Prints each run and the median CPU seconds of each side; the goal is
# under 2% more CPU with everything on. Needs python3, curl, /usr/bin/time; influxd
# (Debian: apt-get install -y influxdb) is optional: without it, `[influx]` is left out
# and the script says so.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-20}"
pairs="${2:-3}"

tank="${TANK_BIN:-}"
if [ -z "$tank" ]; then
    cargo build --release --quiet --bin tank
    tank="${CARGO_TARGET_DIR:-target}/release/tank"
fi
tank="$(realpath "$tank")"
work="$(mktemp -d)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

read -r origin_port influx_port influx_rpc prom_port < <(python3 -c 'import socket
s = [socket.socket() for _ in range(4)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
wait_for() {
    for _ in $(seq 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    echo "nothing listens on port $1" >&2
    exit 1
}

"$tank" origin --listen "127.0.0.1:$origin_port" --recipe configs/origin/steady.json >/dev/null &
pids+=($!)
wait_for "$origin_port"

influx=""
if command -v influxd >/dev/null; then
    cat >"$work/influxdb.conf" <<CONF
reporting-disabled = true
bind-address = "127.0.0.1:$influx_rpc"
[meta]
  dir = "$work/influx/meta"
[data]
  dir = "$work/influx/data"
  wal-dir = "$work/influx/wal"
[http]
  bind-address = "127.0.0.1:$influx_port"
  log-enabled = false
[monitor]
  store-enabled = false
CONF
    influxd -config "$work/influxdb.conf" >"$work/influxd.log" 2>&1 &
    pids+=($!)
    wait_for "$influx_port"
    curl -sf -XPOST "http://127.0.0.1:$influx_port/query" --data-urlencode "q=CREATE DATABASE tank" >/dev/null
    influx="[influx]
address = 127.0.0.1
port = $influx_port
database = tank
labeled = 1
"
else
    echo "influxd not found: measuring monitoring and [prometheus] only" >&2
fi

common="[phantom]
address = 127.0.0.1:$origin_port
header_http = 1.1
headers = [Host: origin.local] [Connection: keep-alive]
uris = /
  /news/1
  /news/2
rps_schedule = const(10000,${seconds}s)
instances = 200
"
printf '%s[telegraf]\nconfig = none\n' "$common" >"$work/off.ini"
printf '%s[telegraf]\nconfig = <Monitoring><Host address="localhost" interval="1"><CPU percpu="true"/><Memory/><Net/><Disk/><System/><Kernel/><Netstat/></Host></Monitoring>\n%s[prometheus]\nlisten = 127.0.0.1:%s\n' \
    "$common" "$influx" "$prom_port" >"$work/on.ini"

# One run: prints "cpu_seconds responses".
run() {
    local dir="$work/run-$1-$2"
    mkdir -p "$dir"
    local scraper=""
    if [ "$1" = on ]; then
        (while sleep 1; do curl -sf "http://127.0.0.1:$prom_port/metrics" >/dev/null || true; done) &
        scraper=$!
    fi
    (cd "$dir" && /usr/bin/time -f "%U %S" -o "$dir/time" "$tank" -c "$work/$1.ini" >"$dir/out" 2>&1) \
        || { echo "run $1 failed:" >&2; tail -20 "$dir/out" >&2; exit 1; }
    if [ -n "$scraper" ]; then kill "$scraper" 2>/dev/null; wait "$scraper" 2>/dev/null || true; fi
    # Show that the exporters and monitoring did their work in the "on" runs.
    grep -hE "influx:|prometheus|monitoring" "$dir/out" | sed "s/^/  $1: /" >&2 || true
    [ "$1" = off ] || ls "$dir"/logs/*/monitoring.log >/dev/null 2>&1 || echo "  on: no monitoring.log" >&2
    local phout
    phout="$(find "$dir" -name phout.log | head -1)"
    awk '{printf "%.2f ", $1 + $2}' "$dir/time"
    wc -l <"$phout"
}

off=(); on=()
for pair in $(seq "$pairs"); do
    read -r cpu n < <(run off "$pair"); off+=("$cpu"); echo "pair $pair: off ${cpu} s CPU, $n responses" >&2
    read -r cpu n < <(run on "$pair"); on+=("$cpu"); echo "pair $pair: on  ${cpu} s CPU, $n responses" >&2
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
m_off="$(median "${off[@]}")"; m_on="$(median "${on[@]}")"
echo "| side | $(seq -s ' | ' "$pairs" | sed 's/[0-9]\+/run &/g') | median CPU s |"
echo "|---|$(printf -- '---:|%.0s' $(seq "$pairs"))---:|"
echo "| off | $(IFS='|'; echo "${off[*]}" | sed 's/|/ | /g') | $m_off |"
echo "| on  | $(IFS='|'; echo "${on[*]}" | sed 's/|/ | /g') | $m_on |"
awk -v a="$m_on" -v b="$m_off" 'BEGIN {d = 100 * (a - b) / b; printf "more CPU with monitoring and exporters on: %+.1f%% (goal: under 2%%)\n", d; exit !(d < 2)}'
