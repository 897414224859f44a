#!/usr/bin/env bash
# The suite on a busy machine: scripts/test.sh RUNS times (default 5) in a row
# beside stress-ng, one CPU hog per core. The suite is meant to pass so: its
# tests assert order, counts and bytes, and time only with margins such a
# machine meets. Stops at the first failing run; the hog is stopped on any exit.
#
#   scripts/busy-test.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5}"
command -v stress-ng > /dev/null || {
    echo "busy-test: stress-ng not found (Debian: apt-get install --no-install-recommends stress-ng)" >&2
    exit 1
}
stress-ng --cpu "$(nproc)" --timeout 6h --quiet &
hog=$!
trap 'kill "$hog" 2> /dev/null || true; wait "$hog" 2> /dev/null || true' EXIT
for run in $(seq 1 "$runs"); do
    start=$(date +%s)
    if ! scripts/test.sh > "target/busy-test-$run.log" 2>&1; then
        echo "run $run of $runs failed after $(($(date +%s) - start)) s: target/busy-test-$run.log" >&2
        grep -E '^    [A-Za-z0-9_:]+$' "target/busy-test-$run.log" >&2 || true
        exit 1
    fi
    echo "run $run of $runs passed in $(($(date +%s) - start)) s"
done
