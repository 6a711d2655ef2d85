# Shared by the benchmark scripts (sourced): helpers, the 5,000 small files and the loopback server.
calc() { python3 -c "print($1)"; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# make_small_files DIR: 5,000 files of 16 KiB, fNNNNN.bin, each a rotation of one random block.
make_small_files() {
    mkdir -p "$1"
    python3 - "$1" <<'PY'
import os, sys
root = sys.argv[1]
block = os.urandom(16384)
for i in range(5000):
    with open(os.path.join(root, f"f{i:05d}.bin"), "wb") as f:
        f.write(block[i % 64:] + block[:i % 64])
PY
}

# start_server BUILD ROOT OUT: starts ba-asset-server on ROOT (pid in $server_pid, base URL in
# $base), logging to OUT; then writes OUT.list, the URLs of ROOT/small's 5,000 files.
start_server() {
    "$1/ba-asset-server" --root "$2" --port 0 > "$3" &
    server_pid=$!
    for _ in $(seq 1 100); do grep -q listening "$3" 2>/dev/null && break; sleep 0.05; done
    base="$(sed -n 's/^listening on //p' "$3")"
    [ -n "$base" ] || { echo "the asset server did not start" >&2; exit 1; }
    for i in $(seq -f "%05g" 0 4999); do echo "$base/small/f$i.bin"; done > "$3.list"
}

# start_nginx WORK ROOT [DIRECTIVES]: nginx on a free loopback port serving ROOT as plain files,
# its configuration, logs and temporary folders in WORK/nginx, DIRECTIVES added to its server
# block (`etag off;`, `limit_rate 16m;`); its workers run as the user who starts it (root's would
# otherwise be nobody, who cannot read the temporary folder). Sets nginx_pid, port, base
# (http://127.0.0.1:PORT) and log, whose lines are `BYTES STATUS "REQUEST"`; returns once it
# listens (curl ROOT's first URL that answers), or stops the run.
start_nginx() {
    local work=$1 root=$2 directives=${3:-}
    mkdir -p "$work/nginx"
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    base="http://127.0.0.1:$port"
    cat > "$work/nginx/nginx.conf" <<CONF
user $(id -un) $(id -gn);
worker_processes auto;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log;
events { worker_connections 1024; }
http {
    log_format bench '\$body_bytes_sent \$status "\$request"';
    access_log $work/nginx/access.log bench;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 100000;
    keepalive_timeout 60s;
    default_type application/octet-stream;
    client_body_temp_path $work/nginx/body;
    proxy_temp_path $work/nginx/proxy;
    fastcgi_temp_path $work/nginx/fastcgi;
    uwsgi_temp_path $work/nginx/uwsgi;
    scgi_temp_path $work/nginx/scgi;
    server {
        listen 127.0.0.1:$port;
        root $root;
        $directives
    }
}
CONF
    nginx -e "$work/nginx/error.log" -p "$work/nginx/" -c "$work/nginx/nginx.conf" -g 'daemon off;' &
    nginx_pid=$!
    log="$work/nginx/access.log"
    for _ in $(seq 1 100); do curl -s -o /dev/null "$base/" && return 0; sleep 0.05; done
    echo "nginx did not start:" >&2
    cat "$work/nginx/error.log" >&2
    exit 1
}

# log_mark: nginx's access log's line count now. log_bytes MARK / log_requests MARK [PATTERN]:
# bytes sent and requests since MARK (whose line matches PATTERN).
log_mark() { wc -l < "$log"; }
log_bytes() { tail -n +$(($1 + 1)) "$log" | awk -v p="${2:-}" '$0 ~ p {s += $1} END {printf "%.0f\n", s}'; }
log_requests() { tail -n +$(($1 + 1)) "$log" | awk -v p="${2:-}" '$0 ~ p {n++} END {print n + 0}'; }
