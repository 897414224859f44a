#!/usr/bin/env bash
# `tank import`'s peak memory on captures made to stress it (benches/import/gen_hostile.py):
# one 300 MB POST, 100,000 uploads that never finish, 1,000,000 connections that only send a
# SYN. Each is imported with the default --memory and with --memory 16M under
# /usr/bin/time -v, and its peak RSS printed beside the import's summary line. Peak RSS
# depends on what is held, not on how busy the machine is, so this may run anywhere.
#
#   benches/import/memory.sh [SCALE]     (SCALE 1: the sizes above; 0.1: a tenth of each)
#
# The captures are written once to $IMPORT_BENCH_DIR (default /tmp/tank-import-bench):
# about 1.3 GB at scale 1. Needs python3 and /usr/bin/time.
set -euo pipefail
cd "$(dirname "$0")/../.."
scale="${1:-1}"
tank="${TANK_BIN:-}"
if [ -z "$tank" ]; then
    cargo build --release --quiet --bin tank
    tank="${CARGO_TARGET_DIR:-target}/release/tank"
fi
tank="$(realpath "$tank")"
dir="${IMPORT_BENCH_DIR:-/tmp/tank-import-bench}"
mkdir -p "$dir"
n() { python3 -c "print(max(1, int($1 * $scale)))"; }
cases=("bigpost $(n 300)" "openconns $(n 100000)" "synonly $(n 1000000) GET")
for case in "${cases[@]}"; do
    name="$dir/hostile-${case// /-}.pcap"
    [ -s "$name" ] || python3 benches/import/gen_hostile.py "$name" $case
    for memory in 256MiB 16M; do
        log="$(mktemp)"
        /usr/bin/time -v -o "$log.time" "$tank" import "$name" --memory "$memory" -o /dev/null 2>"$log"
        rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$log.time")
        printf '%-28s --memory %-6s peak RSS %5.0f MiB  %s\n' "$case" "$memory" \
            "$(echo "$rss / 1024" | bc -l)" "$(tail -n 1 "$log" | sed 's/^tank import: //')"
        rm -f "$log" "$log.time"
    done
done
