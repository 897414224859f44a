# nginx answering benches/scenario/flow.hcl's four pages at once (one worker,
# keep-alive: benches/targets.sh's, with these locations), for the scenario
# benches; sourced after benches/targets.sh, which stops it on exit.
# `start_flow_nginx` sets `port`, `origin_addr` and `origin_pid`.

start_flow_nginx() {
    start_nginx "" "
        location = /login { default_type application/json; return 200 '{\"token\": \"tok-1\", \"expires\": 3600}'; }
        location = /items { default_type application/json; return 200 '{\"items\": [11, 12, 13, 14, 15]}'; }
        location = /profile { default_type text/html; return 200 '<!DOCTYPE html><html><body><h1>Profile</h1><div class=\"user\">user1</div></body></html>'; }
        location /buy/ { add_header X-Receipt R-1; return 200 ''; }"
    port=${origin_addr##*:}
}
