#!/usr/bin/env bash
# Replay timing accuracy, measured at the server: a sessions file of 1,000
# sessions at 10,000 requests/s for ~20 s, replayed by `tank -c` (release
# build, ammo_type = sessions) against a logging target on 127.0.0.1
# (benches/replay/arrivals.c: one epoll thread, CLOCK_MONOTONIC at each
# request's first byte). Goal: arrival error p99 <= 1 ms (issue 16).
#
#   benches/replay/accuracy.sh [--quick] [--speed F]
#   TANK=target/debug/tank benches/replay/accuracy.sh --quick   (a smoke check, no release build)
#
# Each request's path carries its captured offset; its error is its arrival
# minus (offset / speed), the two clocks aligned by the median of those
# differences (tank's start and the server's clock have no common origin).
# Reports error p50/p99/p99.9/max, how many arrived, tank's own lag p99 and
# its CPU seconds. --quick: 1,000 requests/s over 100 sessions for 5 s.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=20 sessions=1000 rate=10000 speed=1
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) seconds=5 sessions=100 rate=1000 ;;
        --speed) speed=$2; shift ;;
        *) echo "usage: $0 [--quick] [--speed F]"; exit 2 ;;
    esac
    shift
done
if [ -n "${TANK:-}" ]; then
    tank=$(realpath "$TANK")
else
    cargo build --release --quiet
    tank=$PWD/target/release/tank
fi
work=$(mktemp -d)
server_pid=''
trap 'kill "$server_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
cc -O2 -D_GNU_SOURCE -o "$work/arrivals" benches/replay/arrivals.c

# The capture: every session sends every sessions/rate s, its phase its own,
# with up to 50 µs of jitter, so that the requests are spread evenly.
python3 - "$work/capture.sessions" "$sessions" "$rate" "$seconds" <<'PY'
import random, sys
path, sessions, rate, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
random.seed(16)
period = sessions * 1_000_000 // rate          # µs between a session's requests
records = []
for s in range(sessions):
    phase = s * period // sessions
    offsets = [phase + i * period + random.randrange(50) for i in range(seconds * 1_000_000 // period)]
    records.append((offsets[0], 0, s, None))
    records.extend((o, 1, s, o) for o in offsets)
    records.append((offsets[-1], 2, s, None))
records.sort()
with open(path, "w") as out:
    out.write("tank-sessions 1\n# benches/replay/accuracy.sh\n")
    for offset, kind, s, o in records:
        if kind == 0:
            out.write(f"S {s} {offset} bench\n")
        elif kind == 1:
            body = f"GET /o/{o}/{s} HTTP/1.1\r\nHost: bench\r\n\r\n"
            out.write(f"R {len(body)} {offset} {s} /o\n{body}\n")
        else:
            out.write(f"E {s} {offset}\n")
PY

"$work/arrivals" "$work/port" "$work/arrivals.log" &
server_pid=$!
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
cat > "$work/load.ini" <<INI
[phantom]
address = 127.0.0.1:$(cat "$work/port")
ammo_type = sessions
ammofile = $work/capture.sessions
replay_speed = $speed
INI
(cd "$work" && "$tank" plan -c load.ini | sed 's/^/    /')
(cd "$work" && /usr/bin/time -f "%U %S %M" -o time.txt "$tank" -c load.ini --quiet > summary.txt 2> err.txt) \
    || { cat "$work/err.txt"; exit 1; }
kill -TERM "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=''
read -r user sys rss_kb < "$work/time.txt"
run=$(ls -d "$work"/logs/*/ | tail -1)
echo
echo "## Replay accuracy: $sessions sessions, $rate requests/s for ${seconds}s, speed $speed, measured at the server"
echo
python3 - "$work/arrivals.log" "$speed" "$run/summary.json" "$user" "$sys" "$rss_kb" <<'PY'
import json, sys
log, speed, summary, user, sys_s, rss_kb = sys.argv[1:]
speed = float(speed)
rows = [tuple(map(int, line.split())) for line in open(log) if not line.startswith("-1")]
diffs = sorted(at / 1000.0 - offset / speed for offset, at in rows)   # µs
median = diffs[len(diffs) // 2]
errors = sorted(abs(d - median) for d in diffs)
pick = lambda q: errors[min(len(errors) - 1, int(q * len(errors)))] / 1000.0
s = json.load(open(summary))
lag = {row["q"]: row["lag_ms"] for row in s["quantiles"]}
print("| arrived | error p50 ms | error p99 ms | error p99.9 ms | error max ms | tank lag p99 ms | tank CPU s | tank RSS MiB |")
print("|---|---|---|---|---|---|---|---|")
print("| %d | %.3f | %.3f | %.3f | %.3f | %.3f | %.2f | %d |" % (
    len(rows), pick(0.5), pick(0.99), pick(0.999), errors[-1] / 1000.0,
    lag.get(99.0) or 0.0, float(user) + float(sys_s), int(rss_kb) // 1024))
PY
grep -E '^replay:' "$work/summary.txt" || true
