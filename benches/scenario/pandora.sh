#!/usr/bin/env bash
# tank beside Pandora on the same scenario file (benches/scenario/flow.hcl, five
# requests a run), against the same nginx (one worker, every step answered at once):
# requests per CPU-second, and p99 at a fixed rate of scenario runs.
#
#   benches/scenario/pandora.sh [RATE [SECONDS [INSTANCES]]]     (defaults 400 30 200)
#
# Each tool starts RATE runs a second for SECONDS seconds with INSTANCES instances
# (tank: rps_schedule = const(RATE, SECONDS), instances; Pandora: rps const, startup
# once INSTANCES), one after the other, on the same nginx. CPU is the tool's user +
# system time (/usr/bin/time); requests are its phout's rows; p99 is computed by
# `tank report` from each phout alike; errors are rows with a net code or a status
# other than 200 (there should be none). tank's phout tags are the requests', Pandora's
# `scenario.request`: the report counts rows, not tags.
#
# Pandora: $PANDORA (a binary), else built from $PANDORA_SRC (a checkout of
# github.com/yandex/pandora, v0.5.29 here) with `go build` (its dependencies come
# through the Go module proxy). The proxy does not serve Pandora itself, so a plain
# `go install github.com/yandex/pandora@...` fails; clone or download its source first.
# Needs: nginx, /usr/bin/time, go (to build Pandora). Takes about 2 × SECONDS.
set -euo pipefail
cd "$(dirname "$0")/../.."
rate=${1:-400}
seconds=${2:-30}
instances=${3:-200}
root=$PWD
[ -x /usr/bin/time ] || { echo "/usr/bin/time not found (Debian: apt-get install -y time)"; exit 1; }
cargo build --release --quiet --bin tank
tank=$root/target/release/tank
work=$(mktemp -d)
. benches/targets.sh
[ -n "$nginx" ] || { echo "nginx not found (Debian: apt-get install -y nginx-light)"; exit 1; }

pandora=${PANDORA:-}
if [ -z "$pandora" ]; then
    [ -n "${PANDORA_SRC:-}" ] || {
        echo "set PANDORA=/path/to/pandora, or PANDORA_SRC=/path/to/a/checkout/of/yandex/pandora to build it"
        exit 1
    }
    pandora=$work/pandora
    (cd "$PANDORA_SRC" && go build -o "$pandora" .)
fi

cp benches/scenario/flow.hcl benches/scenario/users.csv "$work/"

. benches/scenario/nginx.sh
start_flow_nginx

cat > "$work/load.ini" <<INI
[core]
artifacts_dir = $work/tank-run
[phantom]
address = 127.0.0.1:$port
ammo_type = scenario
ammofile = flow.hcl
rps_schedule = const($rate, ${seconds}s)
instances = $instances
arrivals_seed = 1
INI
cat > "$work/pandora.yaml" <<YAML
pools:
  - id: scenario
    gun:
      type: http/scenario
      target: 127.0.0.1:$port
    ammo:
      type: http/scenario
      file: flow.hcl
    result:
      type: phout
      destination: $work/pandora-phout.log
    rps:
      - {type: const, ops: $rate, duration: ${seconds}s}
    startup:
      - {type: once, times: $instances}
log:
  level: error
YAML

# Run a tool in $work; its CPU seconds (user + system) on stdout.
measured() {
    local name=$1; shift
    (cd "$work" && /usr/bin/time -f "%e %U %S" -o "$work/$name.time" "$@" > "$work/$name.out" 2>&1) || {
        echo "$name failed:"; tail -20 "$work/$name.out"; exit 1
    }
    awk '{ printf "%.2f", $2 + $3 }' "$work/$name.time"
}

# Rows, errors (a net code, or a status other than 200) and p99 ms of a phout.
judge() {
    local phout=$1 out=$2
    local rows errors p99
    rows=$(wc -l < "$phout")
    errors=$(awk -F'\t' '$11 != 0 || $12 != 200' "$phout" | wc -l)
    "$tank" report "$phout" --out "$out" > /dev/null
    p99=$(python3 -c "import json,sys; s=json.load(open('$out/summary.json')); print('%.3f' % next(r['service_ms'] for r in s['quantiles'] if r['q'] == 99))")
    echo "$rows $errors $p99"
}

tank_cpu=$(measured tank "$tank" -q -c load.ini)
read -r tank_rows tank_errors tank_p99 < <(judge "$work/tank-run/phout.log" "$work/tank-report")
pandora_cpu=$(measured pandora "$pandora" pandora.yaml)
read -r pandora_rows pandora_errors pandora_p99 < <(judge "$work/pandora-phout.log" "$work/pandora-report")

echo "## Scenarios: tank and Pandora on benches/scenario/flow.hcl, $rate runs/s for ${seconds}s, $instances instances, nginx (1 worker)"
echo
echo "| tool | requests | errors | CPU s | requests per CPU-second | p99 ms |"
echo "|---|---|---|---|---|---|"
for tool in tank pandora; do
    rows=${tool}_rows errors=${tool}_errors cpu=${tool}_cpu p99=${tool}_p99
    python3 -c "print('| $tool | ${!rows} | ${!errors} | ${!cpu} | %.0f | ${!p99} |' % (${!rows} / max(${!cpu}, 0.01)))"
done
python3 -c "
t = $tank_rows / max($tank_cpu, 0.01); p = $pandora_rows / max($pandora_cpu, 0.01)
print()
print('tank / Pandora: requests per CPU-second %.2fx, p99 %.2fx' % (t / max(p, 1e-9), $tank_p99 / max($pandora_p99, 1e-9)))"
