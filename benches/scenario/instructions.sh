#!/usr/bin/env bash
# Instructions and syscalls per request of tank's scenario path: the cost of
# benches/scenario/pandora.sh's run in units the machine's load does not move.
#
#   benches/scenario/instructions.sh [RATE [SECONDS [INSTANCES]]]     (defaults 40 5 200)
#   TANK_BIN=/tmp/tank-main benches/scenario/instructions.sh   # a binary built elsewhere
#
# Runs benches/scenario/flow.hcl (five requests a run) against nginx as pandora.sh
# does (rps_schedule = const(RATE, ...), INSTANCES instances) under
# `valgrind --tool=callgrind`, twice: for 2 s and for 2 + SECONDS s. The difference of
# the two instruction counts over the difference of their phout rows is the marginal
# cost of a request in tank's own threads (user space), start-up and exit cancelled
# out; the per-second work (aggregation) stays in it, so a low RATE overstates the
# cost a little. Callgrind slows tank some 50 times: RATE must be one it keeps up with
# (40 runs/s is). Then prints the functions that cost the most in the longer run, and
# `strace -c -f` over a run of SECONDS s at STRACE_RATE runs/s (default 400, pandora.sh's)
# gives the syscalls per request.
#
# Needs: nginx, valgrind (callgrind_annotate comes with it), strace. Takes about
# 3 × SECONDS plus start-up.
set -euo pipefail
cd "$(dirname "$0")/../.."
rate=${1:-40}
seconds=${2:-5}
instances=${3:-200}
# strace slows tank far less than callgrind: syscalls are counted at pandora.sh's rate.
strace_rate=${STRACE_RATE:-400}
base=2
for tool in valgrind strace; do
    command -v "$tool" > /dev/null || { echo "$tool not found (Debian: apt-get install -y $tool)"; exit 1; }
done
if [ -n "${TANK_BIN:-}" ]; then
    tank=$TANK_BIN
else
    cargo build --release --quiet --bin tank
    tank=$PWD/target/release/tank
fi
work=$(mktemp -d)
. benches/targets.sh
[ -n "$nginx" ] || { echo "nginx not found (Debian: apt-get install -y nginx-light)"; exit 1; }
. benches/scenario/nginx.sh
start_flow_nginx
cp benches/scenario/flow.hcl benches/scenario/users.csv "$work/"

# A load.ini running the flow for $1 seconds (at ${2:-$rate} runs/s), its artifacts in run-$1.
config() {
    local at=${2:-$rate}
    cat > "$work/load-$1.ini" <<INI
[core]
artifacts_dir = $work/run-$1
[phantom]
address = 127.0.0.1:$port
ammo_type = scenario
ammofile = flow.hcl
rps_schedule = const($at, ${1%%[sc]*}s)
instances = $instances
arrivals_seed = 1
INI
}

# Rows of run $1's phout; every one must be a 200 without a net code.
rows() {
    local phout=$work/run-$1/phout.log
    local bad; bad=$(awk -F'\t' '$11 != 0 || $12 != 200' "$phout" | wc -l)
    [ "$bad" -eq 0 ] || { echo "run $1: $bad rows failed:"; awk -F'\t' '$11 != 0 || $12 != 200' "$phout" | head -3; exit 1; }
    wc -l < "$phout"
}

# "rows instructions" of a run of $1 seconds under callgrind.
counted() {
    config "$1"
    (cd "$work" && valgrind --tool=callgrind --callgrind-out-file="$work/cg-$1.out" \
        "$tank" -q -c "load-$1.ini" > "$work/out-$1" 2> "$work/cg-$1.err") || { tail "$work/cg-$1.err"; exit 1; }
    echo "$(rows "$1") $(grep -oE 'Collected : [0-9]+' "$work/cg-$1.err" | grep -oE '[0-9]+$')"
}

long=$((base + seconds))
read -r r1 i1 <<< "$(counted $base)"
read -r r2 i2 <<< "$(counted $long)"
echo "## Scenario instructions per request (callgrind): benches/scenario/flow.hcl, $rate runs/s, $instances instances, nginx (1 worker)"
echo
echo "| run | rows | instructions | per request, marginal |"
echo "|---|---|---|---|"
printf '| %s s | %s | %s | |\n' "$base" "$r1" "$i1"
printf '| %s s | %s | %s | **%s** |\n' "$long" "$r2" "$i2" $(( (i2 - i1) / (r2 - r1) ))
echo
echo "Functions with the most instructions (inclusive) in the $long s run:"
echo
echo '```'
callgrind_annotate --inclusive=yes "$work/cg-$long.out" 2>/dev/null | grep -E '^ *[0-9,]+ \(' \
    | grep -E 'tank_|html5ever|sxd_|scraper|serde_json' | head -25 | cut -c1-200 || true  # head closes the pipe
echo '```'
[ -z "${KEEP_CALLGRIND:-}" ] || cp "$work/cg-$long.out" "$KEEP_CALLGRIND"

config "${seconds}strace" "$strace_rate"
(cd "$work" && strace -c -f -o "$work/strace.txt" "$tank" -q -c "load-${seconds}strace.ini" > "$work/out-strace" 2>&1) \
    || { cat "$work/out-strace"; exit 1; }
sr=$(rows "${seconds}strace")
echo
echo "Syscalls over a run of $seconds s at $strace_rate runs/s, not under callgrind ($sr rows; per request, start-up included):"
echo
echo '```'
awk -v rows="$sr" '$NF != "total" && $4 ~ /^[0-9]+$/ && $4 + 0 >= rows / 100 {
    printf "%-16s %9d  %6.2f per request\n", $NF, $4, $4 / rows }' "$work/strace.txt"
awk -v rows="$sr" '$NF == "total" { printf "%-16s %9d  %6.2f per request\n", "total", $4, $4 / rows }' "$work/strace.txt"
echo '```'

