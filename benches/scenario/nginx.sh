# nginx answering benches/scenario/flow.hcl's four pages at once, one worker,
# keep-alive; sourced by the scenario benches after benches/targets.sh (which
# stops it on exit). `start_flow_nginx` sets `port` and `origin_pid`.

start_flow_nginx() {
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    cat > "$work/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $work/nginx.pid;
events { worker_connections 8192; }
http {
    access_log off;
    keepalive_requests 100000000;
    server {
        listen 127.0.0.1:$port;
        location = /login { default_type application/json; return 200 '{"token": "tok-1", "expires": 3600}'; }
        location = /items { default_type application/json; return 200 '{"items": [11, 12, 13, 14, 15]}'; }
        location = /profile { default_type text/html; return 200 '<!DOCTYPE html><html><body><h1>Profile</h1><div class="user">user1</div></body></html>'; }
        location /buy/ { add_header X-Receipt R-1; return 200 ''; }
    }
}
CONF
    "$nginx" -p "$work" -c "$work/nginx.conf" -e "$work/nginx-error.log" &
    origin_pid=$!
    for _ in $(seq 50); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "nginx did not start:"; cat "$work/nginx-error.log"; exit 1
}
