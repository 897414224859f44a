#!/usr/bin/env bash
# Create (idempotently) the reference venv .venv-ref/ with yandextank 2.0.11 from PyPI,
# and print the path of its python on stdout. Everything else goes to stderr.
#
#   export TANK_REFERENCE_PYTHON=$(scripts/reference-venv.sh)
#
# The differential test (tests/differential.rs) runs tests/reference/ref_stepper.py with
# that python. A second run is a fast no-op. Needs Python >= 3.11 (tomllib); set PYTHON to
# pick the interpreter (default: python3).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv-ref"
py="$venv/bin/python"
version="2.0.11"

installed() {
    [ -x "$py" ] && "$py" - "$version" >/dev/null 2>&1 <<'PY'
import sys, importlib.metadata as md
assert md.version("yandextank") == sys.argv[1]
import tomllib, pkg_resources  # noqa: F401  (ref_stepper needs both)
import yandextank.stepper, yandextank.config_converter.converter  # noqa: F401
PY
}

if installed; then
    echo "$py"
    exit 0
fi

base="${PYTHON:-python3}"
if ! "$base" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "reference-venv: $base is missing or older than 3.11; set PYTHON=/path/to/python3.11+" >&2
    exit 1
fi

echo "reference-venv: installing yandextank==$version into $venv" >&2
"$base" -m venv "$venv" >&2
# yandextank imports pkg_resources, which setuptools 81 drops and Python 3.12 venvs lack.
"$py" -m pip install --quiet --disable-pip-version-check \
    "yandextank==$version" "setuptools<81" >&2

if ! installed; then
    echo "reference-venv: $venv was created but yandextank $version does not import" >&2
    exit 1
fi
echo "$py"
