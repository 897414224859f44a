#!/usr/bin/env bash
# Timing accuracy and footprint of `tank -c`, against tank's origin simulator
# on 127.0.0.1 (the only target traffic goes to).
#
#   benches/engine/accuracy.sh [--quick]
#
# 1. const(R, T) for R = 1k, 10k, 30k rps against nginx (one worker, 100-byte
#    /small; Debian's nginx-light) when installed, else tank's origin simulator:
#    achieved rate (responses / T),
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
. benches/targets.sh

start_fast_target
target=$target_name
echo "## Rate accuracy: const(R, ${seconds}s), keep-alive, 100-byte replies from $target"
echo
# CPU time the hypervisor gave to other guests during a run (all CPUs): on a shared VM,
# the noise behind a bad lag tail; nothing runs while it is stolen.
steal_ticks() { awk '/^cpu /{print $9}' /proc/stat; }
echo "| R rps | sent / planned | achieved rps | achieved / R | lag p50 ms | lag p99 ms | interval_real p99 ms | tank CPU s | tank RSS MiB | CPU steal s |"
echo "|---|---|---|---|---|---|---|---|---|---|"
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
    steal0=$(steal_ticks)
    (cd "$work" && /usr/bin/time -f "%U %S %M" -o time.txt "$tank" -c load.ini > summary.txt 2> err.txt) || { cat "$work/err.txt"; exit 1; }
    steal=$(echo "scale=2; ($(steal_ticks) - $steal0) / $(getconf CLK_TCK)" | bc)
    read -r user sys rss_kb < "$work/time.txt"
    run=$(ls -d "$work"/logs/*/ | tail -1)
    python3 - "$run/summary.json" "$rate" "$seconds" "$user" "$sys" "$rss_kb" "$work/summary.txt" "$steal" <<'PY'
import json, re, sys
summary, rate, seconds, user, sys_s, rss_kb, text, steal = sys.argv[1:]
s = json.load(open(summary))
q = {row["q"]: row for row in s["quantiles"]}
queue = re.search(r"planned (\d+), sent (\d+), unsent (\d+)", open(text).read())
planned, sent = (int(queue.group(1)), int(queue.group(2))) if queue else (0, 0)
achieved = s["shots"]["responses"] / float(seconds)
print("| %s | %d / %d | %.1f | %.4f | %.3f | %.3f | %.3f | %.2f | %d | %s |" % (
    rate, sent, planned, achieved, achieved / float(rate), q[50.0]["lag_ms"], q[99.0]["lag_ms"],
    q[99.0]["service_ms"], float(user) + float(sys_s), int(rss_kb) // 1024, steal))
PY
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
python3 - "$(ls -d "$work"/logs/*/ | tail -1)summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
q = {row["q"]: row["service_ms"] for row in s["quantiles"]}
print("    responses %d; HTTP codes %s; net codes %s; interval_real p50 %.0f ms, p99 %.0f ms"
      % (s["shots"]["responses"], s["proto_codes"], s["net_codes"], q[50.0], q[99.0]))
PY
echo
echo "| instances | peak RSS MiB | idle RSS MiB | KiB per instance | tank CPU s |"
echo "|---|---|---|---|---|"
printf '| %s | %s | %s | %s | %s |\n' "$instances" "$((rss_kb / 1024))" "$((idle_kb / 1024))" \
    "$(( (rss_kb - idle_kb) / instances ))" "$(echo "$user + $sys" | bc)"
