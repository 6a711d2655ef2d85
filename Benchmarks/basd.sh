#!/usr/bin/env bash
# basd benchmark: an app scheduling through BADownloadManager against curl, same loopback
# server (ba-asset-server), same run. Prints medians over RUNS runs and ratios (ours / curl).
#   (d) 5,000 x 16 KiB scheduled one by one by an app, to the last finished callback
#       vs curl --parallel --parallel-max 16 (to tmpfs)
#   (e) N downloads queued one by one: schedules per second, fetchCurrentDownloads latency,
#       basd RSS and descriptors
#   (f) idle basd: wake-ups per second and RSS over 30 s
#   (g) an app installed and not running: its extension (Benchmarks/BenchExtension, built here
#       with cc) returns EVENTS x 16 KiB; from the returned set until basd recorded the
#       EVENTS-th finished event, and from the install until the EVENTS-th call reached the
#       extension, once, against the median of RUNS curl --parallel --parallel-max 16 over the
#       same files; basd's CPU per download
#   (r) another client's `status` asked in a loop while `ba install` of an app whose extension
#       returns 10,000 downloads (to a listener that never answers) runs: the worst answer,
#       non-essential then essential (issue 33; not in the default sections)
# Usage: Benchmarks/basd.sh [RUNS=3] [BUILD_DIR] [QUEUED=100000] [EVENTS=5000]
#   (an empty BUILD_DIR builds the products it needs in release)
# Environment: BASD_SECTIONS (default defg) picks sections, e.g. BASD_SECTIONS=g;
#   EXTENSION_TIMEOUT (default 900) bounds (g) in seconds.
set -euo pipefail
runs=${1:-3}
build=${2:-}
queued=${3:-100000}
events=${4:-5000}
sections=${BASD_SECTIONS:-defg}
extension_timeout=${EXTENSION_TIMEOUT:-900}
cd "$(dirname "$0")/.."
command -v curl >/dev/null || { echo "curl is needed" >&2; exit 1; }
if [ "$events" -lt 1 ] || [ "$events" -gt 5000 ]; then echo "EVENTS must be 1 to 5000" >&2; exit 64; fi
if [ -z "$build" ]; then
    for product in basd ba ba-extension-runner ba-asset-server BasdBenchmark; do swift build -c release --product "$product" >/dev/null; done
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
# time_curl LIST: seconds curl --parallel --parallel-max 16 takes for LIST's URLs, into a fresh tmpfs folder.
time_curl() {
    rm -rf "$shm/out" && mkdir -p "$shm/out"
    local start
    start=$(date +%s.%N)
    (cd "$shm/out" && curl -sf --no-progress-meter --parallel --parallel-max 16 --remote-name-all $(cat "$1"))
    calc "$(date +%s.%N) - $start"
}

if [[ "$sections" == *d* ]]; then
echo "== (d) 5,000 x 16 KiB scheduled one by one by an app through basd, median of $runs"
ours=(); cpu=(); theirs=()
for _ in $(seq 1 "$runs"); do
    # basd's state on the disk, as in use (fsyncs included); curl writes to tmpfs.
    line=$("$build/BasdBenchmark" "$build" small "$base" 5000)
    echo "  $line" >&2
    ours+=("$(echo "$line" | sed -n 's/.*: \([0-9.]*\) s to the last callback.*/\1/p')")
    cpu+=("$(echo "$line" | sed -n 's/.*(\([0-9.]*\) ms per download).*/\1/p')")
    theirs+=("$(time_curl "$work/small.list")")
done
d_ours=$(printf '%s\n' "${ours[@]}" | median)
d_cpu=$(printf '%s\n' "${cpu[@]}" | median)
d_curl=$(printf '%s\n' "${theirs[@]}" | median)
printf '  basd (app)       %8.3f s   basd CPU %.3f ms per download\n  curl parallel    %8.3f s\n' "$d_ours" "$d_cpu" "$d_curl"
printf '  ratio basd/curl: %.2f   (target <= 3)\n' "$(calc "$d_ours / $d_curl")"
fi

if [[ "$sections" == *e* ]]; then
echo "== (e) $queued downloads queued one by one"
"$build/BasdBenchmark" "$build" queue "$queued" | sed 's/^/  /'
fi
if [[ "$sections" == *f* ]]; then
echo "== (f) idle basd, 30 s"
"$build/BasdBenchmark" "$build" idle 30 | sed 's/^/  /'
fi

if [[ "$sections" == *g* ]]; then
echo "== (g) $events x 16 KiB returned by the extension of an app that is not running (one run; curl: median of $runs)"
command -v cc >/dev/null || { echo "cc is needed to build Benchmarks/BenchExtension" >&2; exit 1; }
cc -shared -fPIC -O2 -Wall -Werror -I Sources/CBAExtension/include -o "$work/libBenchExtension.so" \
    Benchmarks/BenchExtension/bench_extension.c
# The manifest (IDENTIFIER SIZE URL per line) is served next to the files; the extension returns
# each line as a download.
head -n "$events" "$work/small.list" | awk '{ printf "f%05d 16384 %s\n", NR - 1, $0 }' > "$work/root/bench-manifest.txt"
head -n "$events" "$work/small.list" > "$work/events.list"
line=$("$build/BasdBenchmark" "$build" extension "$base/bench-manifest.txt" "$events" "$work/libBenchExtension.so" \
    "$extension_timeout") || { echo "  $line"; exit 1; }
echo "  $line" >&2
g_recorded=$(echo "$line" | sed -n 's/.* recorded \([0-9.]*\) s after the install.*/\1/p')
g_returned=$(echo "$line" | sed -n 's/.*(\([0-9.]*\) s after the extension returned them.*/\1/p')
g_delivered=$(echo "$line" | sed -n 's/.*delivered to the extension \([0-9.]*\) s after the install.*/\1/p')
g_cpu=$(echo "$line" | sed -n 's/.*to delivered (\([0-9.]*\) ms per download).*/\1/p')
theirs=()
for _ in $(seq 1 "$runs"); do theirs+=("$(time_curl "$work/events.list")"); done
g_curl=$(printf '%s\n' "${theirs[@]}" | median)
printf '  returned set -> last finished event recorded   %8.3f s   (from the install: %.3f s)\n' "$g_returned" "$g_recorded"
printf '  install -> last call delivered to the extension %8.3f s\n' "$g_delivered"
printf '  curl parallel                                   %8.3f s\n' "$g_curl"
printf '  basd CPU %.3f ms per download (install to the last call)\n' "$g_cpu"
printf '  ratio recorded/curl: %.2f (target <= 2)   delivered/curl: %.2f (target <= 10)\n' \
    "$(calc "$g_returned / $g_curl")" "$(calc "$g_delivered / $g_curl")"
fi

if [[ "$sections" == *r* ]]; then
echo "== (r) another client's status during an install whose extension returns 10,000 downloads"
command -v cc >/dev/null || { echo "cc is needed to build Benchmarks/BenchExtension" >&2; exit 1; }
cc -shared -fPIC -O2 -Wall -Werror -I Sources/CBAExtension/include -o "$work/libBenchExtension.so" \
    Benchmarks/BenchExtension/bench_extension.c
for essential in 0 1; do
    for _ in $(seq 1 "$runs"); do
        BENCH_ESSENTIAL=$essential "$build/BasdBenchmark" "$build" responsive "$work/root" "$base" 10000 \
            "$work/libBenchExtension.so" | sed "s/^/  essential=$essential /"
    done
done
fi
