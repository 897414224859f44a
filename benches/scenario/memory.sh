#!/usr/bin/env bash
# Memory per scenario instance: tank's peak RSS running benches/scenario/flow.hcl
# with few and with many instances (closed model, every instance running the flow
# twice against nginx), and the difference over the extra instances. RSS does not
# move with the machine's load the way time does.
#
#   benches/scenario/memory.sh [FEW [MANY]]     (defaults 100 2000)
#
# Needs: nginx. Takes under a minute.
set -euo pipefail
cd "$(dirname "$0")/../.."
few=${1:-100}
many=${2:-2000}
cargo build --release --quiet --bin tank
tank=$PWD/target/release/tank
work=$(mktemp -d)
. benches/targets.sh
[ -n "$nginx" ] || { echo "nginx not found (Debian: apt-get install -y nginx-light)"; exit 1; }
. benches/scenario/nginx.sh
start_flow_nginx
cp benches/scenario/flow.hcl benches/scenario/users.csv "$work/"

# Peak RSS (KiB) of a run of $1 instances, each running the flow twice.
peak() {
    cat > "$work/load.ini" <<INI
[core]
artifacts_dir = $work/run-$1
[phantom]
address = 127.0.0.1:$port
ammo_type = scenario
ammofile = flow.hcl
instances_schedule = const($1, 1s)
ammo_limit = $(( $1 * 2 ))
INI
    (cd "$work" && "$tank" -q -c load.ini > "$work/run-$1.out" 2>&1) || { tail "$work/run-$1.out"; exit 1; }
    rows=$(wc -l < "$work/run-$1/phout.log")
    [ "$rows" -eq $(( $1 * 10 )) ] || { echo "expected $(( $1 * 10 )) rows, phout has $rows"; exit 1; }
    python3 -c "import json; print(json.load(open('$work/run-$1/shard.json'))['max_rss_kib'])"
}
small=$(peak "$few")
large=$(peak "$many")
echo "## Memory per scenario instance (benches/scenario/flow.hcl, nginx)"
echo
echo "| instances | peak RSS KiB |"
echo "|---|---|"
echo "| $few | $small |"
echo "| $many | $large |"
echo
python3 -c "print('per instance: %.1f KiB' % (($large - $small) / ($many - $few)))"
