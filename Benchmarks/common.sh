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
