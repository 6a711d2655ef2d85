#!/usr/bin/env bash
# Asset packs, content-addressed fetching (issue 34): what a first install writes, and what it
# fetches when basd is killed with SIGKILL mid-install by a server that sends no validators.
#   One on-demand pack of FILES files of 1 MiB of random bytes (default 256: 256 MiB), ba pack
#   build's defaults (16 MiB bundles), served by nginx on loopback with `etag off` and
#   `add_header Last-Modified ""` (no ETag, no Last-Modified) and each response paced at RATE
#   (default 16m, nginx's limit_rate) so that the kills land mid-install.
#   written: basd's write_bytes (/proc/PID/io: what it sent toward the disk) over a first
#            install, per byte of the pack's files (target <= 1.1: the files, written once);
#   fetched: nginx's $body_bytes_sent over the pack's bundle and chunk requests of a first install
#            during which basd is killed three times, a fifth of the whole install's time after
#            each (re)start (basd restarted each time, `ba packs ensure` again after the third,
#            which parks the job), per byte of the pack's bundles (target <= 1.05).
# Usage: Benchmarks/packs-resume.sh [FILES=256] [BUILD_DIR]; RATE=16m in the environment.
set -euo pipefail
files=${1:-256}
build=${2:-}
rate=${RATE:-16m}
cd "$(dirname "$0")/.."
command -v nginx >/dev/null || { echo "nginx is needed (apt-get install nginx-light)" >&2; exit 1; }
if [ -z "$build" ]; then
    for product in ba basd; do swift build -c release --product "$product" >/dev/null; done
    build="$(swift build -c release --show-bin-path)"
fi
. "$(dirname "$0")/common.sh"

work="$(mktemp -d /tmp/ba-bench-packs-resume.XXXXXX)"
nginx_pid=""
basd_pid=""
cleanup() {
    if [ -n "$basd_pid" ]; then kill "$basd_pid" 2>/dev/null || true; wait "$basd_pid" 2>/dev/null || true; fi
    if [ -n "$nginx_pid" ]; then kill "$nginx_pid" 2>/dev/null || true; wait "$nginx_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/v1/data" "$work/srv/pub" "$work/nginx" "$work/App"
for i in $(seq -w 1 "$files"); do head -c $((1 << 20)) /dev/urandom > "$work/v1/data/f$i.bin"; done
pack_bytes=$((files << 20))

start_nginx "$work" "$work/srv" "etag off; add_header Last-Modified \"\"; limit_rate $rate;"
cat > "$work/Manifest.json" <<'JSON'
{ "assetPackID": "game", "downloadPolicy": { "onDemand": {} },
  "fileSelectors": [ { "directory": "data" } ], "platforms": ["linux"] }
JSON
"$build/ba" pack build "$work/Manifest.json" --root "$work/v1" --version 1 -o "$work/srv/pub" >/dev/null
"$build/ba" pack publish "$work/srv/pub" --base-url "$base/pub" >/dev/null
for _ in $(seq 1 100); do curl -sf -o /dev/null "$base/pub/manifest.json" && break; sleep 0.05; done
bundle_bytes=$(find "$work/srv/pub/packs" -name '*.bundle' -printf '%s\n' | awk '{s+=$1} END {printf "%.0f\n", s}')
app=com.example.bench.resume
cat > "$work/App/Info.plist" <<PLIST
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
    <key>CFBundleIdentifier</key><string>$app</string>
    <key>CFBundleShortVersionString</key><string>1.0</string>
    <key>BAAppGroupID</key><string>group.$app</string>
    <key>BAManifestURL</key><string>$base/pub/manifest.json</string>
    <key>BAHasManagedAssetPacks</key><true/>
</dict>
</plist>
PLIST
echo '{"allowedHosts": ["127.0.0.1", "localhost", "::1"]}' > "$work/basd-config.json"

# start_basd STATE: basd of its own on STATE (pid in $basd_pid), once it answers.
start_basd() {
    "$build/basd" --state-dir "$1" --socket "$work/basd.sock" --config "$work/basd-config.json" \
        >>"$work/basd.log" 2>&1 &
    basd_pid=$!
    for _ in $(seq 1 200); do "$build/ba" status --socket "$work/basd.sock" >/dev/null 2>&1 && return; sleep 0.05; done
    echo "basd did not start:" >&2; cat "$work/basd.log" >&2; exit 1
}
# pack_field FIELD: the pack's FIELD in ba packs --json (empty when absent).
pack_field() {
    "$build/ba" packs --app "$app" --json --socket "$work/basd.sock" 2>/dev/null | python3 -c '
import json, sys
packs = json.load(sys.stdin)["packs"]
value = packs[0].get(sys.argv[1]) if packs else None
print("" if value is None else value)' "$1" || true
}
written() { awk '/^write_bytes/ {print $2}' "/proc/$basd_pid/io"; }
unit_bytes() { log_bytes "$1" '[.]bundle |/chunks/'; }
ensure() { "$build/ba" packs ensure "$app" game "$@" --socket "$work/basd.sock" >/dev/null; }

echo "== $files files, $pack_bytes bytes; $bundle_bytes bytes of bundles; nginx without ETag or Last-Modified, $rate per response"
# A first install, whole: basd's write_bytes over it.
start_basd "$work/state1"
"$build/ba" install "$work/App" --socket "$work/basd.sock" >/dev/null
sync
before=$(written)
m=$(log_mark)
start=$(date +%s.%N)
ensure
end=$(date +%s.%N)
after=$(written)
first_fetched=$(unit_bytes "$m")
diff -rq "$work/v1/data" "$work/state1/groups/group.$app/AssetPacks/game/data" >/dev/null || { echo "the pack differs from its source" >&2; exit 1; }
kill "$basd_pid"; wait "$basd_pid" 2>/dev/null || true; basd_pid=""

# A first install killed three times.
start_basd "$work/state2"
"$build/ba" install "$work/App" --socket "$work/basd.sock" >/dev/null
m=$(log_mark)
ensure --no-wait
kills=0
# A bundle counts in `ba packs` only once it is whole, so the kills go by time: a fifth of the
# whole install's after each (re)start.
fifth_s=$(calc "($end - $start) / 5")
for _ in 1 2 3; do
    sleep "$fifth_s"
    [ -z "$(pack_field localVersion)" ] && kills=$((kills + 1))
    kill -9 "$basd_pid"; wait "$basd_pid" 2>/dev/null || true
    start_basd "$work/state2"
done
ensure
killed_fetched=$(unit_bytes "$m")
diff -rq "$work/v1/data" "$work/state2/groups/group.$app/AssetPacks/game/data" >/dev/null || { echo "the pack differs from its source after the kills" >&2; exit 1; }

printf '  %-44s %14s %10s\n' "first install" "bytes" "ratio"
printf '  %-44s %14d %10.3f   (target <= 1.1)\n' "written by basd / the pack's bytes" "$((after - before))" \
    "$(calc "($after - $before) / $pack_bytes")"
printf '  %-44s %14d %10.3f\n' "fetched / the bundles' bytes" "$first_fetched" "$(calc "$first_fetched / $bundle_bytes")"
printf '  %-44s %14d %10.3f   (target <= 1.05; %d kills landed mid-install)\n' \
    "fetched with 3 kill -9s, no validators / bundles" "$killed_fetched" "$(calc "$killed_fetched / $bundle_bytes")" "$kills"
