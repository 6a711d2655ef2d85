#!/usr/bin/env bash
# Asset packs, the publisher's side (issue 21, under way): what a new version costs to publish and
# fetch, by average chunk size, against casync on the same trees.
#   v1: FILES files of random bytes (as compressed assets are) plus one BIG-MiB file;
#   v2: CHANGED of the files rewritten and one byte inserted in the middle of the big file.
# For each average chunk size: `ba pack build` of v1 then v2 into one publish folder; the bytes of
# the chunks v2 added (what a device that has v1 fetches, compressed), their count (requests), and
# v1's chunk count (requests of a first install without a bundle); then casync (its default 64 KiB
# average) on the same trees: `casync make` of v1 then v2 into one store, and the bytes v2 added.
# Usage: Benchmarks/packs.sh [FILES=300] [SIZE_KIB=512] [BIG_MIB=64] [CHANGED=15] [BUILD_DIR]
set -euo pipefail
files=${1:-300}
size_kib=${2:-512}
big_mib=${3:-64}
changed=${4:-15}
build=${5:-}
cd "$(dirname "$0")/.."
if [ -z "$build" ]; then
    swift build -c release --product ba >/dev/null
    build="$(swift build -c release --show-bin-path)"
fi
work="$(mktemp -d /tmp/ba-bench-packs.XXXXXX)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/v1/Levels"
for i in $(seq -w 1 "$files"); do head -c $((size_kib * 1024)) /dev/urandom > "$work/v1/Levels/f$i.bin"; done
head -c $((big_mib << 20)) /dev/urandom > "$work/v1/Levels/big.bin"
cp -a "$work/v1" "$work/v2"
for i in $(seq -w 1 "$changed"); do head -c $((size_kib * 1024)) /dev/urandom > "$work/v2/Levels/f$i.bin"; done
half=$((big_mib << 19))
{ head -c "$half" "$work/v1/Levels/big.bin"; printf 'x'; tail -c +$((half + 1)) "$work/v1/Levels/big.bin"; } > "$work/v2/Levels/big.bin"
changed_bytes=$((changed * size_kib * 1024 + (big_mib << 20) + 1))
total=$(du -sb "$work/v1" | cut -f1)
cat > "$work/Manifest.json" <<'JSON'
{ "assetPackID": "levels", "downloadPolicy": { "onDemand": {} },
  "fileSelectors": [ { "directory": "Levels" } ], "platforms": ["linux"] }
JSON
echo "== v1 $((total >> 20)) MiB in $((files + 1)) files; v2 rewrites $changed files ($((changed * size_kib)) KiB) and inserts 1 byte into the $big_mib MiB file"
printf '  %-18s %12s %12s %14s %10s %10s\n' "tool, average" "v1 chunks" "v2 new" "v2 new bytes" "ratio*" "build s"
dir_bytes() { find "$1" -type f -printf '%s\n' | awk '{s+=$1} END {printf "%.0f\n", s}'; }
for average in 16384 32768 65536 131072 262144; do
    out="$work/public-$average"
    start=$(date +%s.%N)
    "$build/ba" pack build "$work/Manifest.json" --root "$work/v1" --version 1 -o "$out" --chunk-size "$average" >/dev/null
    end=$(date +%s.%N)
    v1_chunks=$(find "$out/chunks" -type f | wc -l)
    v1_bytes=$(dir_bytes "$out/chunks")
    "$build/ba" pack build "$work/Manifest.json" --root "$work/v2" --version 2 -o "$out" --chunk-size "$average" >/dev/null
    new_chunks=$(( $(find "$out/chunks" -type f | wc -l) - v1_chunks ))
    new_bytes=$(( $(dir_bytes "$out/chunks") - v1_bytes ))
    printf '  %-18s %12d %12d %14d %10.3f %10.2f\n' "ba pack $((average / 1024)) KiB" "$v1_chunks" "$new_chunks" "$new_bytes" \
        "$(echo "$new_bytes / ($changed * $size_kib * 1024)" | bc -l)" "$(echo "$end - $start" | bc -l)"
    rm -rf "$out"
done
if command -v casync >/dev/null; then
    store="$work/casync-store"
    start=$(date +%s.%N)
    casync make --store="$store" "$work/v1.caidx" "$work/v1" >/dev/null
    end=$(date +%s.%N)
    v1_chunks=$(find "$store" -name '*.cacnk' | wc -l)
    v1_bytes=$(dir_bytes "$store")
    casync make --store="$store" "$work/v2.caidx" "$work/v2" >/dev/null
    new_chunks=$(( $(find "$store" -name '*.cacnk' | wc -l) - v1_chunks ))
    new_bytes=$(( $(dir_bytes "$store") - v1_bytes ))
    printf '  %-18s %12d %12d %14d %10.3f %10.2f\n' "casync 64 KiB" "$v1_chunks" "$new_chunks" "$new_bytes" \
        "$(echo "$new_bytes / ($changed * $size_kib * 1024)" | bc -l)" "$(echo "$end - $start" | bc -l)"
else
    echo "  (casync not installed: apt-get install casync)"
fi
echo "  * v2's new chunk bytes / the bytes of the rewritten files (the 1-byte insertion adds only its chunks; 1.0 is the floor)"
