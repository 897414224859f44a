# Local targets for the benchmark scripts, sourced by them (bash). Each start_*
# function starts one target on 127.0.0.1 and sets `origin_addr` (host:port) and
# `origin_pid`; `stop_origin` stops it. The caller sets `work` (a temp dir) and `tank`
# (the binary); sourcing this arranges for the target to be stopped and `work` removed
# on exit. `nginx` is the nginx binary, empty when not installed.

origin_pid=''
trap 'stop_origin; rm -rf "$work"' EXIT

nginx=$(command -v nginx || { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; } || true)

# `tank origin` with the recipe given as JSON.
start_origin() { # recipe-json -> sets origin_addr, origin_pid
    echo "$1" > "$work/recipe.json"
    "$tank" origin --listen 127.0.0.1:0 --recipe "$work/recipe.json" > "$work/origin.out" 2>&1 &
    origin_pid=$!
    for _ in $(seq 100); do
        origin_addr=$(grep -oE '127\.0\.0\.1:[0-9]+' "$work/origin.out" | head -1 || true)
        [ -n "$origin_addr" ] && return 0
        sleep 0.1
    done
    echo "the origin simulator did not start:"; cat "$work/origin.out"; exit 1
}
stop_origin() { kill "$origin_pid" 2>/dev/null || true; wait "$origin_pid" 2>/dev/null || true; origin_pid=''; }

# nginx, one worker, keep-alive, access log off, a 100-byte /small. The first
# argument, if any, is added to `listen` (`http2`: h2c with prior knowledge); the
# second, if any, to the server (other locations).
start_nginx() { # [listen-options [server-lines]] -> sets origin_addr, origin_pid
    local port; port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    cat > "$work/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $work/nginx.pid;
events { worker_connections 8192; }
http {
    access_log off;
    keepalive_requests 100000000;
    server {
        listen 127.0.0.1:$port ${1:-};
        location /small { return 200 "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"; }
        ${2:-}
    }
}
CONF
    "$nginx" -p "$work" -c "$work/nginx.conf" -e "$work/nginx-error.log" &
    origin_pid=$!
    origin_addr=127.0.0.1:$port
    for _ in $(seq 50); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "nginx did not start:"; cat "$work/nginx-error.log"; exit 1
}

# The fast target: nginx when installed, else `tank origin` answering at once.
# Sets `target_name` too.
start_fast_target() {
    if [ -n "$nginx" ]; then
        target_name="nginx (1 worker)"
        start_nginx
    else
        target_name="tank origin (nginx not installed)"
        start_origin '{"random_content": "100b", "stages": [{"at": 0, "status": 200, "latency": 0}]}'
    fi
}

# CPU seconds (user + system) a command took, from /usr/bin/time (its last line: a
# command that exits non-zero adds one before it); the command's output goes to $work/out.
cpu_seconds() {
    /usr/bin/time -f '%U %S' -o "$work/time" "$@" > "$work/out" 2>&1 || true
    tail -1 "$work/time" | awk '{print $1 + $2}'
}

# $1 over $2, as a whole number with thousands separators ("n/a" for no time).
per_cpu_second() {
    python3 -c "import sys; r, c = float(sys.argv[1]), float(sys.argv[2]); print(f'{r / c:,.0f}' if c else 'n/a')" "$1" "$2"
}
