#!/usr/bin/env bash
# Create (idempotently) the venv .venv-k8s/ with kubernetes-validate from PyPI (offline
# Kubernetes schemas), and print the path of its kubernetes-validate on stdout.
#
#   export TANK_K8S_VALIDATE=$(scripts/k8s-validate-venv.sh)
#
# tests/k8s.rs validates `tank k8s`'s manifests with it. A second run is a fast no-op.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv-k8s"
tool="$venv/bin/kubernetes-validate"

if [ ! -x "$tool" ]; then
    "${PYTHON:-python3}" -m venv "$venv" >&2
    "$venv/bin/pip" install -q "kubernetes-validate>=1.31" >&2
fi
echo "$tool"
