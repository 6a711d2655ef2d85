#!/usr/bin/env bash
# Download engine benchmark: ba fetch against curl and aria2c, same machine, same loopback
# server (ba-asset-server), same run. Prints medians over RUNS runs and ratios (ours / theirs).
#   (a) one 1 GiB file:            ba fetch        vs curl -o
#   (b) 5,000 x 16 KiB files:      ba fetch -c 16  vs aria2c -j16 -i list, curl --parallel --parallel-max 16
#   (c) kill -9 at 50% of 1 GiB, then resume: bytes fetched twice
# Usage: Benchmarks/downloads.sh [RUNS=5] [BUILD_DIR]
set -euo pipefail
runs=${1:-5}
build=${2:-}
cd "$(dirname "$0")/.."
if ! command -v aria2c >/dev/null || ! command -v curl >/dev/null; then
    sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq aria2 curl
fi
if [ -z "$build" ]; then
    swift build -c release --product ba >/dev/null
    swift build -c release --product ba-asset-server >/dev/null
    build="$(swift build -c release --show-bin-path)"
fi
ba="$build/ba"

work="$(mktemp -d /tmp/ba-bench.XXXXXX)"
# The small-file runs write to tmpfs, each into a fresh folder: on ext4, creating files soon
# after deleting thousands makes the inode allocator scan the recently deleted ones, which taxes
# whichever tool runs next and measures the file system, not the downloader.
shm="$(mktemp -d /dev/shm/ba-bench.XXXXXX)"
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work" "$shm"; }
trap cleanup EXIT

mkdir -p "$work/out" "$work/root"
echo "preparing files in $work ..." >&2
head -c $((1 << 30)) /dev/urandom > "$work/root/big.bin"
. "$(dirname "$0")/common.sh"
make_small_files "$work/root/small"
start_server "$build" "$work/root" "$work/server.out"
cp "$work/server.out.list" "$work/small.list"
sha_big="$(sha256sum "$work/root/big.bin" | cut -d' ' -f1)"

now() { date +%s.%N; }
# time_it NAME COMMAND...: runs the command after clearing the output folder, prints seconds.
time_it() {
    rm -rf "$work/out" "$shm/out" && mkdir -p "$work/out" "$shm/out"
    local start end
    start=$(now)
    "$@" >/dev/null 2>"$work/last.err" || { echo "FAILED: $*" >&2; cat "$work/last.err" >&2; exit 1; }
    end=$(now)
    calc "$end - $start"
}
measure() { # measure LABEL COMMAND...: median of $runs
    local label=$1; shift
    local values=()
    for _ in $(seq 1 "$runs"); do values+=("$(time_it "$@")"); done
    printf '%s\n' "${values[@]}" | median
}

echo "== (a) one 1 GiB file, median of $runs"
a_ours=$(measure ours "$ba" fetch "$base/big.bin" -o "$work/out")
a_sync=$(measure ours-sync "$ba" fetch --sync "$base/big.bin" -o "$work/out")
a_curl=$(measure curl curl -sf -o "$work/out/big.bin" "$base/big.bin")
printf '  ba fetch         %8.3f s\n  ba fetch --sync  %8.3f s   (fsync before rename, as basd)\n  curl -o          %8.3f s\n' "$a_ours" "$a_sync" "$a_curl"
printf '  ratio ba/curl: %.3f (--sync: %.3f)   (goal <= 1.03)\n' "$(calc "$a_ours / $a_curl")" "$(calc "$a_sync / $a_curl")"

echo "== (b) 5,000 x 16 KiB files over 16 connections (to tmpfs), median of $runs"
b_ours=$(measure ours "$ba" fetch --input-file "$work/small.list" -o "$shm/out" --concurrency 16)
b_sync=$(measure ours-sync "$ba" fetch --sync --input-file "$work/small.list" -o "$shm/out" --concurrency 16)
b_aria=$(measure aria2c aria2c -q -j16 -x1 --max-connection-per-server=16 --allow-overwrite=true --auto-file-renaming=false -d "$shm/out" -i "$work/small.list")
b_curl=$(measure curl bash -c "cd '$shm/out' && curl -sf --parallel --parallel-max 16 --remote-name-all \$(cat '$work/small.list')")
printf '  ba fetch         %8.3f s\n  ba fetch --sync  %8.3f s\n  aria2c -j16      %8.3f s\n  curl parallel    %8.3f s\n' "$b_ours" "$b_sync" "$b_aria" "$b_curl"
printf '  ratio ba/aria2c: %.3f   ratio ba/curl: %.3f   (goal <= 0.8; --sync: %.3f / %.3f)\n' "$(calc "$b_ours / $b_aria")" "$(calc "$b_ours / $b_curl")" "$(calc "$b_sync / $b_aria")" "$(calc "$b_sync / $b_curl")"

echo "== (c) kill -9 at 50% of 1 GiB, then resume, $runs runs"
refetched=()
for _ in $(seq 1 "$runs"); do
    rm -rf "$work/out" && mkdir -p "$work/out"
    "$ba" fetch "$base/big.bin" -o "$work/out" --sha256 "$sha_big" >/dev/null 2>&1 &
    pid=$!
    # Wait (bounded) for half the file, then kill without warning.
    for _ in $(seq 1 20000); do
        size=$(stat -c %s "$work/out/.ba-partial/big.bin.part" 2>/dev/null || echo 0)
        [ "$size" -ge $((1 << 29)) ] && break
        kill -0 "$pid" 2>/dev/null || break
    done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    kept=$(stat -c %s "$work/out/.ba-partial/big.bin.part" 2>/dev/null || echo 0)
    received=$("$ba" fetch "$base/big.bin" -o "$work/out" --sha256 "$sha_big" --json | tail -1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["receivedBytes"])')
    refetched+=($((kept + received - (1 << 30))))
    echo "  killed with $kept bytes on disk; the resume received $received bytes" >&2
done
c=$(printf '%s\n' "${refetched[@]}" | median)
printf '  bytes fetched twice (median): %d   (goal <= 1048576)\n' "$c"
