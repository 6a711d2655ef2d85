#!/usr/bin/env bash
# What a small update costs in bytes, metadata included (issue 34, point 4): a pack of 300 files
# of 2 MiB (about 9,600 chunks of 64 KiB), served by nginx on loopback, installed by basd, then a
# 2-file update (4 MiB) and a 58-file update (116 MiB). Bytes are nginx's $body_bytes_sent summed
# over each update's access-log lines: chunks, bundles, the download manifest, the index root and
# its parts. The target is <= 1.05x the changed bytes for the 2-file update.
#
# Usage: Benchmarks/packs-updates.sh [FILE_KIB=2048] [BUILD_DIR]
#   An empty BUILD_DIR builds ba and basd in release.
# Environment: PACKS_KEEP=1 keeps the temporary folder (basd's log, nginx's log).
set -euo pipefail
size_kib=${1:-2048}
build=${2:-}
cd "$(dirname "$0")/.."
command -v nginx >/dev/null || { echo "needs nginx (apt-get install nginx-light)" >&2; exit 69; }
if [ -z "$build" ]; then
    for product in ba basd; do swift build -c release --product "$product" >/dev/null; done
    build="$(swift build -c release --show-bin-path)"
fi
. "$(dirname "$0")/common.sh"

work="$(mktemp -d /tmp/ba-bench-packs-updates.XXXXXX)"
nginx_pid=""
basd_pid=""
cleanup() {
    if [ -n "$basd_pid" ]; then kill "$basd_pid" 2>/dev/null || true; wait "$basd_pid" 2>/dev/null || true; fi
    if [ -n "$nginx_pid" ]; then kill "$nginx_pid" 2>/dev/null || true; wait "$nginx_pid" 2>/dev/null || true; fi
    if [ -n "${PACKS_KEEP:-}" ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

files=300
size=$((size_kib * 1024))
echo "preparing $files files of $size bytes in $work ..." >&2
mkdir -p "$work/src/data" "$work/srv" "$work/nginx"
for i in $(seq -w 0 $((files - 1))); do
    mkdir -p "$work/src/data/d${i:0:2}"
    head -c "$size" /dev/urandom >"$work/src/data/d${i:0:2}/f$i.bin"
done

start_nginx "$work" "$work/srv"

app=com.example.bench.updates
cat >"$work/Manifest.json" <<'JSON'
{ "assetPackID": "game",
  "downloadPolicy": { "essential": { "installationEventTypes": ["firstInstallation", "subsequentUpdate"] } },
  "fileSelectors": [ { "directory": "data" } ], "platforms": ["linux"] }
JSON
publish() { # publish VERSION
    "$build/ba" pack build "$work/Manifest.json" --root "$work/src" --version "$1" -o "$work/srv/pub" >/dev/null
    "$build/ba" pack publish "$work/srv/pub" --base-url "$base/pub" >/dev/null
}
mkdir -p "$work/App"
cat >"$work/App/Info.plist" <<PLIST
<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0"><dict>
    <key>CFBundleIdentifier</key><string>$app</string>
    <key>CFBundleShortVersionString</key><string>1.0</string>
    <key>BAAppGroupID</key><string>group.$app</string>
    <key>BAManifestURL</key><string>$base/pub/manifest.json</string>
    <key>BAHasManagedAssetPacks</key><true/>
</dict></plist>
PLIST
echo '{"allowedHosts": ["127.0.0.1", "localhost", "::1"]}' >"$work/basd-config.json"
socket="$work/basd.sock"
"$build/basd" --state-dir "$work/state" --socket "$socket" --config "$work/basd-config.json" >"$work/basd.log" 2>&1 &
basd_pid=$!
for _ in $(seq 1 100); do "$build/ba" status --socket "$socket" >/dev/null 2>&1 && break; sleep 0.05; done

echo "publishing and installing v1 ..." >&2
publish 1
"$build/ba" install "$work/App" --socket "$socket" >/dev/null
pack="$work/state/groups/group.$app/AssetPacks/game"

printf '\n  %-22s %14s %14s %12s %12s %10s %8s\n' "update" "changed bytes" "fetched" "metadata" "index parts" "requests" "ratio"
version=1
# update COUNT: rewrites COUNT files spread over the pack, publishes the next version, updates.
update() {
    local count=$1 step m changed bytes meta parts requests
    step=$((files / count))
    for n in $(seq 0 $((count - 1))); do
        i=$(printf '%03d' $((n * step)))
        head -c "$size" /dev/urandom >"$work/src/data/d${i:0:2}/f$i.bin"
    done
    version=$((version + 1))
    publish "$version"
    m=$(log_mark)
    "$build/ba" packs ensure "$app" game --latest --socket "$socket" >/dev/null
    diff -rq "$work/src/data" "$pack/data" >/dev/null || { echo "v$version differs from its source" >&2; exit 1; }
    changed=$((count * size))
    bytes=$(log_bytes "$m")
    meta=$(log_bytes "$m" ' "GET /pub/(manifest[.]json|packs/[^/]+/[0-9]+[.]json|meta/)')
    parts=$(log_requests "$m" ' "GET /pub/meta/')
    requests=$(log_requests "$m")
    printf '  %-22s %14d %14d %12d %12d %10d %8.4f\n' "$count files (v$version)" "$changed" "$bytes" "$meta" \
        "$parts" "$requests" "$(calc "$bytes / $changed")"
}
update 2
update 58
whole=$(stat -c %s "$work/srv/pub/packs/game/$version.json")
format1=$("$build/ba" pack build "$work/Manifest.json" --root "$work/src" --version 1 -o "$work/format1" \
    --index-format 1 >/dev/null && stat -c %s "$work/format1/packs/game/1.json")
parts_total=$(python3 -c 'import json,sys; print(sum(p["storedLength"] for p in json.load(open(sys.argv[1]))["parts"]))' \
    "$work/srv/pub/packs/game/$version.json")
chunks=$(python3 -c 'import json,sys; print(sum(len(f["chunks"]) for f in json.load(open(sys.argv[1]))["files"]))' \
    "$work/format1/packs/game/1.json")
printf '\n  %d files, %d chunks; index: root %d bytes + parts %d bytes (zstd); in format 1: %d bytes, fetched whole by every update\n' \
    "$files" "$chunks" "$whole" "$parts_total" "$format1"

# Point 8: the publish folder after the three versions, then pruned to the newest (what it frees),
# and the device still updates from the pruned folder.
before=$(du -sb "$work/srv/pub" | cut -f1)
"$build/ba" pack prune "$work/srv/pub" --keep 1 --grace 0 >"$work/prune.out"
after=$(du -sb "$work/srv/pub" | cut -f1)
content=$((files * size))
printf '  publish folder: %d bytes for 3 versions of %d bytes of content (%.2fx); pruned to --keep 1: %d bytes (%.2fx); %s\n' \
    "$before" "$content" "$(calc "$before / $content")" "$after" "$(calc "$after / $content")" "$(tail -n 1 "$work/prune.out")"
update 2
