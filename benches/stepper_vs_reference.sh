#!/usr/bin/env bash
# Side by side: `tank plan --stpd` vs yandex-tank 2.0.11's stepper on the same
# 1,000,000-shot plan, in the same run on the same machine. Prints wall time,
# CPU time and peak RSS of each, the speed ratio, and checks that both wrote
# the same bytes.
#
#   benches/stepper_vs_reference.sh [SHOTS [RUNS]]   (defaults 1000000 and 3)
#
# Each tool runs RUNS times and the best run counts: the machines are shared
# and noisy, and the best run is the one least disturbed.
# Needs the reference venv (scripts/reference-venv.sh makes it) and /usr/bin/time.
set -euo pipefail
cd "$(dirname "$0")/.."
shots=${1:-1000000}
runs=${2:-3}
python=$(scripts/reference-venv.sh)
cargo build --release --quiet
tank=$PWD/target/release/tank

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# 1000 request-style chunks with tags, looped as needed.
"$python" - "$work/ammo.txt" <<'PY'
import sys
with open(sys.argv[1], 'wb') as f:
    for i in range(1000):
        req = b"GET /api/v1/items/%d?fields=all HTTP/1.1\r\nHost: example.org\r\nUser-Agent: tank\r\n\r\n" % i
        f.write(b"%d tag%d\n%s\n" % (len(req), i % 7, req))
PY
seconds=$(( shots / 10000 ))
cat > "$work/load.ini" <<INI
[phantom]
address = 127.0.0.1:8080
rps_schedule = line(1, 10000, ${seconds}s) const(10000, ${seconds}s)
ammofile = ammo.txt
INI
# line(1,10000,T) gives ~5000·T shots and const gives 10000·T: cap at exactly $shots.
echo "ammo_limit = $shots" >> "$work/load.ini"

measure() { # name, output file, command...
    local name=$1 out=$2; shift 2
    local best_wall='' best_cpu='' best_rss=''
    for _ in $(seq "$runs"); do
        # Every run starts from the same state: no earlier output to truncate and no
        # dirty pages of it still being written back (ext4 flushes a truncated file's
        # delayed allocation, ~50 ms per 100 MB here, whoever truncates it).
        [ "$out" = /dev/null ] || rm -f "$out"
        sync
        /usr/bin/time -f "%e %U %S %M" -o "$work/$name.time" "$@" > /dev/null 2> "$work/$name.err" || {
            echo "$name failed:"; cat "$work/$name.err"; exit 1; }
        read -r wall user sys rss_kb < "$work/$name.time"
        if [ -z "$best_wall" ] || [ "$(echo "$wall < $best_wall" | bc)" = 1 ]; then
            best_wall=$wall; best_cpu=$(echo "$user + $sys" | bc); best_rss=$((rss_kb / 1024))
        fi
    done
    printf '| %-22s | %8.2f | %8.2f | %9d |\n' "$name" "$best_wall" "$best_cpu" "$best_rss"
    eval "${name//[^a-z]/_}_wall=$best_wall"
}

cd "$work"
echo "plan: $shots shots, $(grep rps_schedule load.ini | cut -d= -f2-); best of $runs runs each"
ref=$OLDPWD/tests/reference/ref_stepper.py
for target in file devnull; do
    if [ $target = file ]; then tank_out=tank.stpd; ref_out=ref.stpd; else tank_out=/dev/null; ref_out=/dev/null; fi
    echo
    echo "stpd written to: $( [ $target = file ] && echo 'a file on this disk' || echo '/dev/null (the stepper alone, no disk)')"
    echo
    echo '| tool                   | wall, s  | CPU, s   | RSS, MiB  |'
    echo '|------------------------|----------|----------|-----------|'
    sed -i "s/^ammo_limit = .*/ammo_limit = $shots/" load.ini
    measure tank $tank_out "$tank" plan -c load.ini --stpd $tank_out
    # The reference writes M + 1 records for ammo_limit = M (tank departs: exactly M);
    # give it M - 1 so that both write M.
    sed -i "s/^ammo_limit = .*/ammo_limit = $((shots - 1))/" load.ini
    measure yandex_tank_stepper $ref_out "$python" "$ref" load.ini phantom $ref_out
    echo
    echo "tank is $(echo "scale=1; $yandex_tank_stepper_wall / $tank_wall" | bc)x faster (wall time)"
done
echo
echo "$(stat -c %s tank.stpd) bytes of stpd"
if cmp -s tank.stpd ref.stpd; then echo "outputs: identical"; else echo "outputs: DIFFER"; cmp tank.stpd ref.stpd | head -1; exit 1; fi
