#!/usr/bin/env bash
# The load benchmark: tank against its peers (wrk, oha, and vegeta where present) on
# the same targets on 127.0.0.1, in the same run on the same machine.
#
#   benches/load/run.sh [--quick] [--runs N] [--out FILE] [--only A,B,...]
#
# Builds tank in release mode, raises the open-files limit to the hard limit, and hands
# over to benches/load/bench.py, which starts the targets (nginx with one worker, and
# `tank origin` for slow targets), runs every scenario for every tool found on PATH
# (a missing tool is skipped with a message), repeats each run (3 times, 1 with --quick),
# and prints a markdown table of min/median and the ratios tank ÷ each peer, also
# written to FILE (default target/load-bench/results.md, raw runs beside it as .json).
# Everything it starts is stopped when it exits, however it exits.
#
# --quick runs every scenario once, shortened: under 2 minutes after the build.
# Needs: python3, /usr/bin/time, nginx (Debian: apt-get install -y nginx-light);
# peers: wrk (apt-get install -y wrk), oha (cargo install oha --locked), vegeta.
set -euo pipefail
cd "$(dirname "$0")/../.."

# TANK_BIN=path uses a tank built elsewhere (say, from a clean checkout) instead.
tank="${TANK_BIN:-}"
if [ -z "$tank" ]; then
    cargo build --release --quiet --bin tank
    tank="${CARGO_TARGET_DIR:-target}/release/tank"
fi
# One descriptor per connection: the many-instances scenario needs the hard limit.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
exec python3 benches/load/bench.py --tank "$tank" "$@"
