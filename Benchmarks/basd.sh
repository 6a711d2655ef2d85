#!/usr/bin/env bash
# basd benchmark: an app scheduling through BADownloadManager against curl, same loopback
# server (ba-asset-server), same run. Prints medians over RUNS runs and ratios (ours / curl).
#   (d) 5,000 x 16 KiB scheduled one by one by an app, to the last finished callback
#       vs curl --parallel --parallel-max 16 (to tmpfs)
#   (e) N downloads queued one by one: schedules per second, fetchCurrentDownloads latency,
#       basd RSS and descriptors
#   (f) idle basd: wake-ups per second and RSS over 30 s
# Usage: Benchmarks/basd.sh [RUNS=3] [BUILD_DIR] [QUEUED=100000]
set -euo pipefail
runs=${1:-3}
build=${2:-}
queued=${3:-100000}
cd "$(dirname "$0")/.."
command -v curl >/dev/null || { echo "curl is needed" >&2; exit 1; }
if [ -z "$build" ]; then
    for product in basd ba-asset-server BasdBenchmark; do swift build -c release --product "$product" >/dev/null; done
    build="$(swift build -c release --show-bin-path)"
fi
work="$(mktemp -d /tmp/ba-bench-basd.XXXXXX)"
shm="$(mktemp -d /dev/shm/ba-bench-basd.XXXXXX)"
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work" "$shm"; }
trap cleanup EXIT
. "$(dirname "$0")/common.sh"
make_small_files "$work/root/small"
start_server "$build" "$work/root" "$work/server.out"
cp "$work/server.out.list" "$work/small.list"

echo "== (d) 5,000 x 16 KiB scheduled one by one by an app through basd, median of $runs"
ours=(); cpu=(); theirs=()
for _ in $(seq 1 "$runs"); do
    # basd's state on the disk, as in use (fsyncs included); curl writes to tmpfs.
    line=$("$build/BasdBenchmark" "$build" small "$base" 5000)
    echo "  $line" >&2
    ours+=("$(echo "$line" | sed -n 's/.*: \([0-9.]*\) s to the last callback.*/\1/p')")
    cpu+=("$(echo "$line" | sed -n 's/.*(\([0-9.]*\) ms per download).*/\1/p')")
    rm -rf "$shm/out" && mkdir -p "$shm/out"
    start=$(date +%s.%N)
    (cd "$shm/out" && curl -sf --no-progress-meter --parallel --parallel-max 16 --remote-name-all $(cat "$work/small.list"))
    theirs+=("$(calc "$(date +%s.%N) - $start")")
done
d_ours=$(printf '%s\n' "${ours[@]}" | median)
d_cpu=$(printf '%s\n' "${cpu[@]}" | median)
d_curl=$(printf '%s\n' "${theirs[@]}" | median)
printf '  basd (app)       %8.3f s   basd CPU %.3f ms per download\n  curl parallel    %8.3f s\n' "$d_ours" "$d_cpu" "$d_curl"
printf '  ratio basd/curl: %.2f   (target <= 3)\n' "$(calc "$d_ours / $d_curl")"

echo "== (e) $queued downloads queued one by one"
"$build/BasdBenchmark" "$build" queue "$queued" | sed 's/^/  /'
echo "== (f) idle basd, 30 s"
"$build/BasdBenchmark" "$build" idle 30 | sed 's/^/  /'
