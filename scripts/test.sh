#!/usr/bin/env bash
# tank's test command: the one the README gives a newcomer, and the one CI runs.
#
# Installs the machine packages the tests use when missing (scripts/deps.sh),
# checks formatting and lints, then runs every test of the workspace, including
# the differential test against yandex-tank 2.0.11's stepper (its venv is made
# on the first run by scripts/reference-venv.sh; later runs reuse it) and the
# gRPC tests against Python's grpcio (scripts/grpc-venv.sh, likewise).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh

TANK_REFERENCE_PYTHON="$(scripts/reference-venv.sh)"
export TANK_REFERENCE_PYTHON
TANK_K8S_VALIDATE="$(scripts/k8s-validate-venv.sh)"
export TANK_K8S_VALIDATE
TANK_GRPC_PYTHON="$(scripts/grpc-venv.sh)"
export TANK_GRPC_PYTHON

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# The tests that measure time (a limit search, a sweep, shards' common start)
# run after the rest, one at a time: on two cores, tests running beside them
# would be measured too.
timed=(limit:: shards::)
cargo test --workspace --locked -- "${timed[@]/#/--skip=}"
cargo test --locked --test tests -- --test-threads=1 "${timed[@]}"
