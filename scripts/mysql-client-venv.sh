#!/usr/bin/env bash
# Create (idempotently) the venv .venv-mysql/ with the MySQL clients the tests
# capture (tests/mysql.rs): mysql-connector-python (its pure-Python protocol,
# so the bytes are a real client's: text queries and server-side prepared
# statements) from PyPI, and print the path of its python on stdout. Everything
# else goes to stderr.
#
#   export TANK_MYSQL_PYTHON=$(scripts/mysql-client-venv.sh)
#
# A second run is a fast no-op. Set PYTHON to pick the interpreter (default: python3).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv-mysql"
py="$venv/bin/python"
version="9.1.0"

installed() {
    [ -x "$py" ] && "$py" - "$version" >/dev/null 2>&1 <<'PY'
import sys, importlib.metadata as md
assert md.version("mysql-connector-python") == sys.argv[1]
import mysql.connector  # noqa: F401
PY
}

if installed; then
    echo "$py"
    exit 0
fi

base="${PYTHON:-python3}"
echo "mysql-client-venv: installing mysql-connector-python==$version into $venv" >&2
"$base" -m venv "$venv" >&2
"$py" -m pip install --quiet --disable-pip-version-check "mysql-connector-python==$version" >&2

if ! installed; then
    echo "mysql-client-venv: $venv was created but mysql-connector-python $version does not import" >&2
    exit 1
fi
echo "$py"
