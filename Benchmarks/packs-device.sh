#!/usr/bin/env bash
# Asset packs, the device's side (issue 21): a first install and a delta update of one pack,
# served by nginx on loopback, against casync and a plain curl | tar of the same content, in one
# run. Bytes per phase are nginx's $body_bytes_sent summed over that phase's access-log lines.
#   v1: 1,161 files of 750 kB and one of 200 MB, random bytes (as compressed game assets are),
#       1.07 GB in all;
#   v2: 58 of the files rewritten (779 kB each, 45.2 MB in all) and one byte inserted in the middle
#       of the big one.
#   curl | tar: v1.tar.zst (zstd's default level) piped into tar --zstd -x; also v2 whole, which
#               is what starting over costs (an update must never be slower);
#   casync:     casync make of v1 and v2 into one store; casync extract of v1, then of v2 with
#               --seed on v1's extracted folder;
#   ba:         ba pack build + publish of v1 (one essential pack), ba install of an app that names
#               the manifest (returns once the pack is local), then v2 published and
#               ba packs ensure --latest (returns once v2 is local); basd's CPU time and peak RSS.
# Every result is compared with its source tree (diff -r). Nothing but the fetch is timed; before
# each timed step the files nginx will serve are read into the page cache and the dirty pages are
# written back (sync), so that no tool pays for the one before. Results are kept, but for
# curl | tar's, which go a minute before casync starts: on ext4, creating files soon after
# deleting thousands makes the inode allocator read past the recently deleted ones, which taxes
# whichever tool runs next (0.56 s of basd's first install when they were deleted just before).
# curl | tar and casync do not fsync (basd does); "; sync" is curl | tar with a sync after it,
# what durable files cost. curl | tar runs PACKS_TAR_RUNS times (default 3; the median), casync
# and ba once each.
# Usage: Benchmarks/packs-device.sh [SCALE_PERCENT=100] [BUILD_DIR]
#   SCALE_PERCENT scales every size (not the file count): 10 is 107 MB.
#   An empty BUILD_DIR builds ba and basd in release.
# Environment: PACKS_RTT_MS=50 puts every tool behind a link of 50 ms round trip
# (Benchmarks/delay-proxy.py in front of nginx; casync is left out there unless PACKS_CASYNC=1).
# PACKS_KEEP=1 keeps the temporary folder (basd's log, nginx's log, basd's CPU and RSS
# sampled every 0.5 s during each ba phase in ba1.samples and ba2.samples); PACKS_PERF=1 also
# records basd with perf during each ba phase (ba1.perf.txt, ba2.perf.txt: where its CPU went).
set -euo pipefail
scale=${1:-100}
build=${2:-}
cd "$(dirname "$0")/.."
if ! [[ "$scale" =~ ^[0-9]+$ ]] || [ "$scale" -lt 1 ] || [ "$scale" -gt 1000 ]; then
    echo "SCALE_PERCENT must be 1 to 1000" >&2
    exit 64
fi
missing=()
command -v nginx >/dev/null || missing+=(nginx-light)
command -v casync >/dev/null || missing+=(casync)
command -v zstd >/dev/null || missing+=(zstd)
command -v curl >/dev/null || missing+=(curl)
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
if [ -z "$build" ]; then
    for product in ba basd; do swift build -c release --product "$product" >/dev/null; done
    build="$(swift build -c release --show-bin-path)"
fi
. "$(dirname "$0")/common.sh"

work="$(mktemp -d /tmp/ba-bench-packs-device.XXXXXX)"
nginx_pid=""
basd_pid=""
proxy_pid=""
cleanup() {
    if [ -n "$basd_pid" ]; then kill "$basd_pid" 2>/dev/null || true; wait "$basd_pid" 2>/dev/null || true; fi
    if [ -n "$proxy_pid" ]; then kill "$proxy_pid" 2>/dev/null || true; wait "$proxy_pid" 2>/dev/null || true; fi
    if [ -n "$nginx_pid" ]; then kill "$nginx_pid" 2>/dev/null || true; wait "$nginx_pid" 2>/dev/null || true; fi
    if [ -n "${PACKS_KEEP:-}" ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

files=1161
small=$((750000 * scale / 100))
big=$((200000000 * scale / 100))
changed=58
changed_size=$((45200000 * scale / 100 / changed))
echo "preparing v1 and v2 in $work ..." >&2
# data/dNN/fNNNN.bin and data/big.bin; v2 rewrites every 20th small file (58 of them) with new
# bytes of CHANGED_SIZE each, and inserts one byte in the middle of big.bin; the files it does not
# change keep their modification time.
python3 - "$work" "$files" "$small" "$big" "$changed_size" <<'PY'
import os, sys
root, files, small, big, changed_size = sys.argv[1], *map(int, sys.argv[2:])
for version in ("v1", "v2"):
    for d in range((files + 99) // 100):
        os.makedirs(f"{root}/{version}/data/d{d:02d}", exist_ok=True)
for i in range(files):
    name = f"data/d{i // 100:02d}/f{i:04d}.bin"
    data = os.urandom(small)
    with open(f"{root}/v1/{name}", "wb") as f:
        f.write(data)
    with open(f"{root}/v2/{name}", "wb") as f:
        f.write(os.urandom(changed_size) if i % 20 == 0 else data)
    if i % 20 != 0:
        # An unchanged file keeps its time, as after rsync -a: casync's archive records it.
        stat = os.stat(f"{root}/v1/{name}")
        os.utime(f"{root}/v2/{name}", ns=(stat.st_atime_ns, stat.st_mtime_ns))
data = os.urandom(big)
with open(f"{root}/v1/data/big.bin", "wb") as f:
    f.write(data)
with open(f"{root}/v2/data/big.bin", "wb") as f:
    f.write(data[: big // 2] + b"x" + data[big // 2 :])
PY
dir_bytes() { find "$1" -type f -printf '%s\n' | awk '{s+=$1} END {printf "%.0f\n", s}'; }
v1_bytes=$(dir_bytes "$work/v1/data")
v2_bytes=$(dir_bytes "$work/v2/data")
changed_bytes=$((changed * changed_size))
v1_files=$(find "$work/v1/data" -type f | wc -l)

# What nginx serves: srv/ holds the tarballs, casync's indexes and store, and ba's publish folder.
srv="$work/srv"
mkdir -p "$srv/pub" "$work/nginx" "$work/out"
echo "packing v1 and v2 for curl | tar and casync ..." >&2
tar --zstd -cf "$srv/v1.tar.zst" -C "$work/v1/data" .
tar --zstd -cf "$srv/v2.tar.zst" -C "$work/v2/data" .
casync make --store="$srv/store" "$srv/v1.caidx" "$work/v1/data/" >/dev/null
casync make --store="$srv/store" "$srv/v2.caidx" "$work/v2/data/" >/dev/null

# nginx on a free loopback port (common.sh), in the foreground of a background job.
start_nginx "$work" "$srv"
# PACKS_RTT_MS: every tool reaches nginx through Benchmarks/delay-proxy.py, which holds data half
# of that each way (this kernel has no netem), and a new connection's first request one round trip
# more (its handshake). casync, which fetches its chunks one at a time (a round trip each: 16,000
# of them at 50 ms is over 13 minutes), is left out on such a link unless PACKS_CASYNC=1.
rtt_ms=${PACKS_RTT_MS:-0}
run_casync=${PACKS_CASYNC:-1}
if [ "$rtt_ms" -gt 0 ]; then
    run_casync=${PACKS_CASYNC:-0}
    proxy_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    python3 "$(dirname "$0")/delay-proxy.py" "$proxy_port" "$port" "$(calc "$rtt_ms / 2")" > "$work/proxy.out" 2>&1 &
    proxy_pid=$!
    base="http://127.0.0.1:$proxy_port"
    for _ in $(seq 1 100); do grep -qs ready "$work/proxy.out" && break; sleep 0.05; done
    curl -sf -o /dev/null "$base/v1.caidx" || { echo "the delay proxy did not start:" >&2; cat "$work/proxy.out" >&2; exit 1; }
    echo "== over a link of $rtt_ms ms round trip (Benchmarks/delay-proxy.py in front of nginx, for every tool)"
fi

now() { date +%s.%N; }
# timed OUT_VAR COMMAND...: runs the command after a sync, its seconds into OUT_VAR.
timed() {
    local var=$1 start end
    shift
    sync
    start=$(now)
    "$@" >"$work/last.out" 2>&1 || { echo "FAILED: $*" >&2; cat "$work/last.out" >&2; exit 1; }
    end=$(now)
    printf -v "$var" '%s' "$(calc "$end - $start")"
}
# warm PATH...: reads the files into the page cache, so that nginx serves every tool from memory
# (a CDN's hot cache) however much the run wrote since.
warm() { find "$@" -type f -exec cat {} + >/dev/null; }
same() { # same EXPECTED ACTUAL LABEL: the trees are equal, or the run stops
    diff -rq "$1" "$2" >"$work/diff.out" 2>&1 || { echo "$3 differs from its source:" >&2; head "$work/diff.out" >&2; exit 1; }
}

echo "== $v1_files files, $v1_bytes bytes (v1); v2 rewrites $changed files ($changed_bytes bytes) and inserts 1 byte into the $big-byte file"
echo "   load before the runs: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"

# curl | tar, the median of PACKS_TAR_RUNS runs (cheap, and the yardstick of both targets), v1,
# v2 and v1 with a sync taking turns so that a drift of the machine touches each alike.
tar_runs=${PACKS_TAR_RUNS:-3}
# curl_tar NAME VERSION RUN [AFTER]: curl | tar of vVERSION into a fresh folder, then AFTER (e.g.
# "&& sync"); appends the seconds to NAME_all and adds the bytes to NAME_bytes. The first run's
# result is compared with its source.
curl_tar() {
    local name=$1 version=$2 run=$3 after=${4:-} m one out="$work/out/tar-$1-$3" all bytes
    m=$(log_mark)
    warm "$srv/v$version.tar.zst"
    timed one bash -c "set -o pipefail; mkdir '$out' && curl -sf '$base/v$version.tar.zst' | tar --zstd -xf - -C '$out' $after"
    [ "$run" -eq 1 ] && same "$work/v$version/data" "$out" "curl | tar of v$version"
    all="${name}_all"
    bytes="${name}_bytes"
    printf -v "$all" '%s' "${!all:-}$one "
    printf -v "$bytes" '%s' "$((${!bytes:-0} + $(log_bytes "$m")))"
}
for run in $(seq 1 "$tar_runs"); do
    curl_tar tar1 1 "$run"
    curl_tar tar2 2 "$run"
    curl_tar tar1sync 1 "$run" "&& sync"
done
for name in tar1 tar2 tar1sync; do
    all="${name}_all"
    bytes="${name}_bytes"
    printf -v "${name}_s" '%s' "$(printf '%s\n' ${!all} | median)"
    printf -v "$all" '%s' "$(printf '%.2f ' ${!all})"
    printf -v "$bytes" '%s' "$((${!bytes} / tar_runs))"
done
# Their results go now (kept, they would make the page cache evict what the others need), then
# nothing is created for a minute: when ext4 allocates an inode it skips, reading its block, one
# deleted less than 60 s ago (its inode table written back; 300 s if not).
rm -rf "$work/out"/tar-*
sync
deleted_at=$(date +%s)

# ba: one essential pack, "game", its files under data/, published to srv/pub.
app=com.example.bench.packs
group=group.com.example.bench.packs
cat > "$work/Manifest.json" <<'JSON'
{ "assetPackID": "game",
  "downloadPolicy": { "essential": { "installationEventTypes": ["firstInstallation", "subsequentUpdate"] } },
  "fileSelectors": [ { "directory": "data" } ], "platforms": ["linux"] }
JSON
publish() { # publish VERSION: ba pack build of vVERSION into srv/pub, then the download manifest
    "$build/ba" pack build "$work/Manifest.json" --root "$work/v$1" --version "$1" -o "$srv/pub" >/dev/null
    "$build/ba" pack publish "$srv/pub" --base-url "$base/pub" >/dev/null
}
echo "building and publishing v1 with ba pack ..." >&2
publish 1
# ext4's minute, the rest of it.
left=$((deleted_at + 61 - $(date +%s)))
[ "$left" -gt 0 ] && sleep "$left"

# casync
if [ "$run_casync" = 1 ]; then
    m=$(log_mark)
    warm "$srv/v1.caidx" "$srv/store"
    timed ca1_s casync extract --store="$base/store" "$base/v1.caidx" "$work/out/ca1/"
    ca1_bytes=$(log_bytes "$m")
    ca1_requests=$(log_requests "$m")
    same "$work/v1/data" "$work/out/ca1" "casync extract of v1"
    m=$(log_mark)
    warm "$srv/v2.caidx" "$srv/store"
    timed ca2_s casync extract --store="$base/store" --seed="$work/out/ca1/" "$base/v2.caidx" "$work/out/ca2/"
    ca2_bytes=$(log_bytes "$m")
    ca2_requests=$(log_requests "$m")
    same "$work/v2/data" "$work/out/ca2" "casync extract of v2"
    ca_index=$(stat -c %s "$srv/v2.caidx")
fi

mkdir -p "$work/App"
cat > "$work/App/Info.plist" <<PLIST
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
    <key>CFBundleIdentifier</key><string>$app</string>
    <key>CFBundleShortVersionString</key><string>1.0</string>
    <key>BAAppGroupID</key><string>$group</string>
    <key>BAManifestURL</key><string>$base/pub/manifest.json</string>
    <key>BAHasManagedAssetPacks</key><true/>
</dict>
</plist>
PLIST
# basd of its own, downloads to loopback only, its state on the disk.
echo '{"allowedHosts": ["127.0.0.1", "localhost", "::1"]}' > "$work/basd-config.json"
socket="$work/basd.sock"
"$build/basd" --state-dir "$work/state" --socket "$socket" --config "$work/basd-config.json" \
    >"$work/basd.log" 2>&1 &
basd_pid=$!
for _ in $(seq 1 100); do "$build/ba" status --socket "$socket" >/dev/null 2>&1 && break; sleep 0.05; done
"$build/ba" status --socket "$socket" >/dev/null || { echo "basd did not start:" >&2; cat "$work/basd.log" >&2; exit 1; }
ticks=$(getconf CLK_TCK)
# basd_cpu: basd's CPU seconds so far (utime + stime, /proc/PID/stat's fields 14 and 15, counted
# after the parenthesised command name). basd_peak_mib: its peak RSS since basd_reset_peak.
basd_cpu() { sed 's/.*) //' "/proc/$basd_pid/stat" | awk -v t="$ticks" '{printf "%.3f", ($12 + $13) / t}'; }
basd_reset_peak() { echo 5 > "/proc/$basd_pid/clear_refs" 2>/dev/null || true; }
basd_peak_mib() { awk '/^VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$basd_pid/status"; }
# basd_io: bytes basd has read and written through system calls so far (sockets included).
basd_io() { awk '/^rchar/ {r = $2} /^wchar/ {w = $2} END {print r, w}' "/proc/$basd_pid/io"; }
# basd_sample &: every 0.5 s while the phase runs, the time, basd's CPU so far, RSS (kB) and
# bytes read and written so far, for where the time goes.
basd_sample() {
    while kill -0 "$basd_pid" 2>/dev/null; do
        printf '%s %s %s %s\n' "$(now)" "$(basd_cpu)" "$(awk '/^VmRSS/ {print $2}' "/proc/$basd_pid/status")" "$(basd_io)"
        sleep 0.5
    done
}
pack="$work/state/groups/$group/AssetPacks/game"

# ba_phase NAME COMMAND...: a timed phase of basd; sets NAME_s, NAME_bytes, NAME_requests,
# NAME_index_bytes (the download manifest, index roots and the index parts fetched), NAME_cpu, NAME_peak, NAME_read and
# NAME_written (MB through system calls).
ba_phase() {
    local name=$1 cpu0 cpu1 io0 io1 m sampler seconds perf=""
    shift
    basd_reset_peak
    warm "$srv/pub"
    sync
    cpu0=$(basd_cpu)
    io0=$(basd_io)
    m=$(log_mark)
    basd_sample > "$work/$name.samples" &
    sampler=$!
    if [ -n "${PACKS_PERF:-}" ]; then
        # System-wide, then basd's samples: perf -p misses the threads basd starts later.
        perf record -q -F 499 -g -a -o "$work/$name.perf.data" 2>/dev/null &
        perf=$!
    fi
    timed seconds "$@"
    kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null || true
    if [ -n "$perf" ]; then
        kill -INT "$perf"; wait "$perf" 2>/dev/null || true
        perf report -i "$work/$name.perf.data" --pid "$basd_pid" --stdio --no-children --percent-limit 1 2>/dev/null \
            | grep -v '^$' > "$work/$name.perf.txt" || true
    fi
    cpu1=$(basd_cpu)
    io1=$(basd_io)
    printf -v "${name}_read" '%s' "$(calc "(${io1% *} - ${io0% *}) / 1e6")"
    printf -v "${name}_written" '%s' "$(calc "(${io1#* } - ${io0#* }) / 1e6")"
    printf -v "${name}_s" '%s' "$seconds"
    printf -v "${name}_bytes" '%s' "$(log_bytes "$m")"
    printf -v "${name}_requests" '%s' "$(log_requests "$m")"
    printf -v "${name}_index_bytes" '%s' "$(log_bytes "$m" ' /pub/(manifest[.]json|packs/[^/]+/[0-9]+[.]json|meta/[0-9a-f]+/[0-9a-f]+) ')"
    printf -v "${name}_cpu" '%s' "$(calc "$cpu1 - $cpu0")"
    printf -v "${name}_peak" '%s' "$(basd_peak_mib)"
}
ba_phase ba1 "$build/ba" install "$work/App" --socket "$socket"
same "$work/v1/data" "$pack/data" "ba install's pack"
echo "building and publishing v2 with ba pack ..." >&2
publish 2
ba_phase ba2 "$build/ba" packs ensure "$app" game --latest --socket "$socket"
same "$work/v2/data" "$pack/data" "ba packs ensure's pack"

printf '\n  %-34s %10s %16s %10s\n' "first install of v1" "seconds" "bytes fetched" "requests"
printf '  %-34s %10.3f %16d %10d   median of %s\n' "curl | tar --zstd -x" "$tar1_s" "$tar1_bytes" 1 "$tar1_all"
printf '  %-34s %10.3f %16d %10d   median of %s\n' "curl | tar --zstd -x; sync" "$tar1sync_s" "$tar1sync_bytes" 1 "$tar1sync_all"
[ "$run_casync" = 1 ] && printf '  %-34s %10.3f %16d %10d\n' "casync extract" "$ca1_s" "$ca1_bytes" "$ca1_requests"
printf '  %-34s %10.3f %16d %10d   basd CPU %.2f s, peak RSS %s MiB\n' "ba install" "$ba1_s" "$ba1_bytes" \
    "$ba1_requests" "$ba1_cpu" "$ba1_peak"
printf '\n  %-34s %10s %16s %10s\n' "update to v2" "seconds" "bytes fetched" "requests"
printf '  %-34s %10.3f %16d %10d   median of %s\n' "curl | tar --zstd -x (all of v2)" "$tar2_s" "$tar2_bytes" 1 "$tar2_all"
[ "$run_casync" = 1 ] && printf '  %-34s %10.3f %16d %10d\n' "casync extract --seed v1" "$ca2_s" "$ca2_bytes" "$ca2_requests"
printf '  %-34s %10.3f %16d %10d   basd CPU %.2f s, peak RSS %s MiB\n' "ba packs ensure --latest" "$ba2_s" \
    "$ba2_bytes" "$ba2_requests" "$ba2_cpu" "$ba2_peak"
ratio() { calc "$1 / $2"; }
# ca_ratio SECONDS CASYNC_VAR: "   ba / casync: R", or nothing when casync did not run.
ca_ratio() { [ "$run_casync" = 1 ] && printf '   ba / casync: %.3f' "$(ratio "$1" "${!2}")" || true; }
label=""
[ "$rtt_ms" -gt 0 ] && label=" ($rtt_ms ms RTT)"
printf '\n  first install%s  time ba / curl|tar: %.3f (target <= 1.2)   ba / (curl|tar; sync): %.3f%s\n' \
    "$label" "$(ratio "$ba1_s" "$tar1_s")" "$(ratio "$ba1_s" "$tar1sync_s")" "$(ca_ratio "$ba1_s" ca1_s)"
# The update's metadata (manifest, index root, the parts of what changed) is fetched with it: all of
# it over the changed files' bytes, and the content alone.
printf '  update%s         bytes ba / changed files: %.3f (target <= 1.1)   (%d / %d; metadata %d bytes; content alone %.3f)\n' \
    "$label" "$(ratio "$ba2_bytes" "$changed_bytes")" "$ba2_bytes" "$changed_bytes" "$ba2_index_bytes" \
    "$(ratio "$((ba2_bytes - ba2_index_bytes))" "$changed_bytes")"
printf '  update%s         time ba / full curl|tar of v2: %.3f (target <= 1.0)%s\n' \
    "$label" "$(ratio "$ba2_s" "$tar2_s")" "$(ca_ratio "$ba2_s" ca2_s)"
printf '  basd CPU / wall: install %.2f, update %.2f; read / written through system calls: install %.0f / %.0f MB, update %.0f / %.0f MB\n' \
    "$(ratio "$ba1_cpu" "$ba1_s")" "$(ratio "$ba2_cpu" "$ba2_s")" "$ba1_read" "$ba1_written" "$ba2_read" "$ba2_written"
if [ "$run_casync" = 1 ]; then
    printf '  casync update bytes / (changed files + its index): %.3f   (%d / (%d + %d))\n' \
        "$(calc "$ca2_bytes / ($changed_bytes + $ca_index)")" "$ca2_bytes" "$changed_bytes" "$ca_index"
fi
