#!/usr/bin/env bash
# 50,000 connections held open at once by `tank -c load.ini --processes 3`.
#
#   benches/shards/connections.sh [CONNECTIONS] [LATENCY]   (default 50000, 20s; ~35 s)
#
# Three slow targets (`tank origin`, every answer after LATENCY) on three loopback
# ports, each its own process under its own open-files limit; one queue per port
# ([phantom], [phantom-1], [phantom-2]), the instances split evenly, one shot per
# instance, the instances ramped over 5 s. `--processes 3` runs three shards, so each
# process holds a third of the connections (this machine's open-files limit is 20,000
# per process). Reports, from the merged phout and each shard's shard.json:
#   - connections established (phout rows with connect_time > 0) and answered 200,
#   - the most held open at one moment (the shots' [start, end] intervals overlapped),
#   - each shard's peak RSS and RSS per instance (peak RSS / instances).
# Builds tank in release mode; installs nothing.
set -euo pipefail
cd "$(dirname "$0")/../.."

CONNECTIONS="${1:-50000}"
LATENCY="${2:-20s}"
cargo build --release --quiet --bin tank
TANK="$PWD/target/release/tank"
WORK="$(mktemp -d)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

ulimit -n "$(ulimit -Hn)" # the targets hold a third of the connections each
echo "open-files limit per process: soft $(ulimit -Sn), hard $(ulimit -Hn)"
printf '{"route": "/*", "random_content": "100b", "stages": [{"at": 0, "status": 200, "latency": "%s"}]}\n' \
    "$LATENCY" >"$WORK/slow.json"
: >"$WORK/load.ini"
for i in 0 1 2; do
    "$TANK" origin --listen 127.0.0.1:0 --recipe "$WORK/slow.json" >"$WORK/origin$i.out" 2>&1 &
    pids+=($!)
    addr=""
    for _ in $(seq 100); do
        addr="$(grep -o 'listening on http://127\.0\.0\.1:[0-9]*' "$WORK/origin$i.out" | sed 's|.*http://||' || true)"
        [ -n "$addr" ] && break
        sleep 0.1
    done
    [ -n "$addr" ] || { cat "$WORK/origin$i.out"; exit 1; }
    share=$((CONNECTIONS / 3 + (i < CONNECTIONS % 3 ? 1 : 0)))
    section=$([ "$i" = 0 ] && echo "[phantom]" || echo "[phantom-$i]")
    cat >>"$WORK/load.ini" <<INI
$section
address = $addr
uris = /
loop = $share
instances = $share
instances_schedule = line(1, $share, 5s)
timeout = 60s
INI
done

start=$(date +%s.%N)
(cd "$WORK" && "$TANK" -q -c load.ini --processes 3 -o "tank.artifacts_dir=$WORK/run" >"$WORK/tank.out" 2>&1) || {
    tail -20 "$WORK/tank.out"
    exit 1
}
end=$(date +%s.%N)

python3 - "$WORK/run" "$CONNECTIONS" "$start" "$end" <<'PY'
import json, pathlib, sys
run, want, start, end = pathlib.Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
rows = connected = ok = 0
events = []
with open(run / "phout.log") as f:
    for line in f:
        col = line.split("\t")
        t0 = round(float(col[0]) * 1000)
        events += [(t0, 1), (t0 + int(col[2]) // 1000, -1)]
        rows += 1
        connected += int(col[3]) > 0
        ok += col[10] == "0" and col[11].strip() == "200"
events.sort()
open_now = most = 0
for _, step in events:
    open_now += step
    most = max(most, open_now)
print(f"connections: {want} wanted, {connected} established, {ok} answered 200, "
      f"{most} open at once ({rows} shots; the run took {end - start:.1f} s)")
for shard in sorted(run.glob("shard-*/shard.json")):
    s = json.loads(shard.read_text())
    rss, n = s["max_rss_kib"], s["instances"]
    print(f"{shard.parent.name}: {n} instances, peak RSS {rss / 1024:.0f} MiB, "
          f"{rss / n:.1f} KiB per instance")
sys.exit(0 if connected == most == ok == want else 1)
PY
