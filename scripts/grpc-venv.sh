#!/usr/bin/env bash
# Create (idempotently) the gRPC venv .venv-grpc/ with grpcio, grpcio-reflection and
# grpcio-tools from PyPI, build the test service's stubs into it, and print the path of its
# python on stdout. Everything else goes to stderr.
#
#   export TANK_GRPC_PYTHON=$(scripts/grpc-venv.sh)
#
# tests/grpc.rs starts tests/grpc/server.py (an independent gRPC server, with reflection)
# with that python. A second run is a fast no-op.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv-grpc"
py="$venv/bin/python"
stubs="$venv/stubs"
proto="$root/tests/grpc/tankbar.proto"

installed() {
    [ -x "$py" ] && [ "$stubs/tankbar_pb2.py" -nt "$proto" ] && "$py" -c \
        'import grpc, grpc_reflection.v1alpha.reflection, grpc_tools.protoc' >/dev/null 2>&1
}

if installed; then
    echo "$py"
    exit 0
fi

base="${PYTHON:-python3}"
echo "grpc-venv: installing grpcio, grpcio-reflection, grpcio-tools into $venv" >&2
"$base" -m venv "$venv" >&2
"$py" -m pip install --quiet --disable-pip-version-check \
    'grpcio>=1.60' 'grpcio-reflection>=1.60' 'grpcio-tools>=1.60' >&2
mkdir -p "$stubs"
"$py" -m grpc_tools.protoc -I "$root/tests/grpc" --python_out="$stubs" \
    --grpc_python_out="$stubs" "$proto" >&2
echo "$py"
