#!/usr/bin/env bash
# `tank import` throughput on a large pcap, and its memory: MB/s of capture read and peak
# RSS (from /usr/bin/time -v), against `tcpdump -r FILE -w /dev/null` on the same file
# (reading and writing every packet, no reassembly: the floor any importer sits above).
#
#   benches/import/throughput.sh [SIZE_MB] [CONNECTIONS] [RUNS]   (default 1100 MB, 2000, 3)
#
# benches/import/gen_pcap.py writes the capture once (kept in $IMPORT_BENCH_DIR, default
# /tmp/tank-import-bench, as it takes a while): CONNECTIONS keep-alive connections
# interleaved packet by packet, GETs and 1-64 KiB POSTs, some segments out of order or
# retransmitted, every connection closed at the end. Each run imports it to /dev/null;
# the generator's own counts are checked against the import's summary (a lossless import
# has exactly its sessions and requests and no warnings). Prints each run and the median.
# Goal: at least 300 MB/s, and a peak RSS that does not grow with SIZE_MB (run it at two
# sizes to see). Needs python3, /usr/bin/time; tcpdump is optional (the ratio is left out
# without it).
set -euo pipefail
cd "$(dirname "$0")/../.."
size_mb="${1:-1100}"
connections="${2:-2000}"
runs="${3:-3}"

tank="${TANK_BIN:-}"
if [ -z "$tank" ]; then
    cargo build --release --quiet --bin tank
    tank="${CARGO_TARGET_DIR:-target}/release/tank"
fi
tank="$(realpath "$tank")"
dir="${IMPORT_BENCH_DIR:-/tmp/tank-import-bench}"
mkdir -p "$dir"
capture="$dir/capture-${size_mb}MB-${connections}c.pcap"
if [ ! -s "$capture" ] || [ ! -s "$capture.counts" ]; then
    echo "generating $capture ..."
    python3 benches/import/gen_pcap.py "$capture" "$size_mb" "$connections" | tee "$capture.counts"
fi
bytes=$(stat -c %s "$capture")
read -r want_sessions want_requests < <(sed -E 's/.* ([0-9]+) connections, ([0-9]+) requests.*/\1 \2/' "$capture.counts")

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# One timed command: prints "seconds peak_rss_kib".
timed() {
    local log
    log="$(mktemp)"
    /usr/bin/time -v -o "$log" "$@" >/dev/null 2>"$log.stderr"
    awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i] }
                /Maximum resident set size/ { rss = $2 } END { print s, rss }' "$log"
    cat "$log.stderr" >&2
    rm -f "$log" "$log.stderr"
}

printf '%s: %.0f MB, %s sessions, %s requests\n' "$capture" "$(echo "$bytes / 1000000" | bc -l)" "$want_sessions" "$want_requests"
tank_rates=()
for run in $(seq "$runs"); do
    summary="$(mktemp)"
    # $(...) waits for timed to finish, so its stderr is all in $summary.
    result="$(timed "$tank" import "$capture" -o /dev/null 2>"$summary")"
    read -r seconds rss <<<"$result"
    line="$(tail -n 1 "$summary")"
    rm -f "$summary"
    case "$line" in
        *"pcap: $want_sessions sessions, $want_requests requests"*"; 0 warnings;"*) ;;
        *) echo "run $run: the import is not lossless: $line" >&2; exit 1 ;;
    esac
    rate=$(echo "$bytes / 1000000 / $seconds" | bc -l)
    tank_rates+=("$rate")
    printf 'tank import run %d: %.1f s, %.0f MB/s, peak RSS %.0f MiB  [%s]\n' "$run" "$seconds" "$rate" "$(echo "$rss / 1024" | bc -l)" "${line#tank import: }"
done
tank_median=$(printf '%s\n' "${tank_rates[@]}" | median)
printf 'tank import: median %.0f MB/s (goal >= 300)\n' "$tank_median"

if command -v tcpdump >/dev/null; then
    dump_rates=()
    for run in $(seq "$runs"); do
        result="$(timed tcpdump -r "$capture" -w /dev/null 2>/dev/null)"
        read -r seconds rss <<<"$result"
        rate=$(echo "$bytes / 1000000 / $seconds" | bc -l)
        dump_rates+=("$rate")
        printf 'tcpdump -r -w /dev/null run %d: %.1f s, %.0f MB/s, peak RSS %.0f MiB\n' "$run" "$seconds" "$rate" "$(echo "$rss / 1024" | bc -l)"
    done
    dump_median=$(printf '%s\n' "${dump_rates[@]}" | median)
    printf 'tcpdump: median %.0f MB/s; tank import at %.2f of it\n' "$dump_median" "$(echo "$tank_median / $dump_median" | bc -l)"
else
    echo "tcpdump not installed: no reference run"
fi
