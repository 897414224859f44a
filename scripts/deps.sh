#!/usr/bin/env bash
# The machine packages the tests use, installed when missing (Debian/Ubuntu).
#
# The tests start real components (a headless browser for the HTML report, ...)
# rather than mocks; this installs what a fresh machine lacks. As root it runs
# apt-get itself; otherwise it prints the one command to run and fails.
set -euo pipefail

# command it provides → Debian package
needed=(
    "chromium:chromium"
    # tests/monitoring.rs: a real node_exporter, InfluxDB and Prometheus.
    "prometheus-node-exporter:prometheus-node-exporter"
    "influxd:influxdb"
    "prometheus:prometheus"
    # tests/shard.rs: shards in network namespaces (ip netns).
    "ip:iproute2"
    "memcached:memcached"
    # tests/import.rs: a real capture of loopback traffic.
    "tcpdump:tcpdump"
    # tests/mysql.rs: the captured server and the replays' (mariadb-install-db, mariadbd).
    "mariadbd:mariadb-server"
    "mariadb:mariadb-client"
    # tests/http2.rs: a real HTTP/2 server (h2c and h2 over TLS).
    "nginx:nginx"
)

missing=()
for pair in "${needed[@]}"; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
done
# The yandex-tank reference venv needs Python's venv module (and ensurepip).
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)

[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "the tests need: ${missing[*]}" >&2
    echo "install them with: sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
fi
apt-get update -q
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
