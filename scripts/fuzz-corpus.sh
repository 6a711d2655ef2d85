#!/usr/bin/env bash
# Regenerates the fuzzer's seed corpus (Fuzz/corpus/, committed so CI need not build packs) with
# the real `ba pack build` and `ba pack publish`: two small packs, one in two versions, published
# with a merged extension key (format 2), signed in Apple's shape (format 3), and a format 3
# manifest written by hand. Each seed is the selector byte PackMetadataFuzzing reads (0 an
# index, 1 a download manifest, 2 two indexes split by a NUL byte, 3 an index described in binary,
# 0xF0 a format 2 root, a NUL byte and its parts' frames) and the document.
# The inputs are fixed bytes (AES-CTR of zeros), so the same `ba` writes the same seeds.
#
# Usage: scripts/fuzz-corpus.sh   (BA_SCRATCH: the scratch path to build `ba` in, default .build)
set -euo pipefail
cd "$(dirname "$0")/.."
scratch="${BA_SCRATCH:-.build}"
swift build --scratch-path "$scratch" --product ba
ba="$(swift build --scratch-path "$scratch" --show-bin-path)/ba"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# N deterministic bytes from the number SEED.
bytes() { head -c "$1" /dev/zero | openssl enc -aes-128-ctr -nosalt -K "$(printf '%032x' "$2")" -iv "$(printf "%032x" 0)"; }

mkdir -p "$work/levels/Levels" "$work/extras"
cat >"$work/levels/Manifest.json" <<'JSON'
{ "assetPackID": "levels",
  "downloadPolicy": { "prefetch": { "installationEventTypes": ["firstInstallation", "subsequentUpdate"] } },
  "fileSelectors": [ { "directory": "Levels" }, { "file": "intro.bin" } ],
  "platforms": ["linux"], "userInfo": { "tier": 1, "name": "Levels" } }
JSON
cat >"$work/extras/Manifest.json" <<'JSON'
{ "assetPackID": "extras", "downloadPolicy": { "onDemand": {} }, "fileSelectors": [ { "file": "a.bin" } ] }
JSON
bytes 1500 1 >"$work/levels/Levels/a.bin"
bytes 700 2 >"$work/levels/Levels/b.bin"
printf 'intro' >"$work/levels/intro.bin"
cp "$work/levels/Levels/b.bin" "$work/extras/a.bin"
publish="$work/public"
small=(--chunk-size 256 --bundle-size 1024 --index-format 1)
"$ba" pack build "$work/levels/Manifest.json" --version 1 -o "$publish" "${small[@]}"
"$ba" pack build "$work/extras/Manifest.json" --version 1 -o "$publish" "${small[@]}"
# Version 2: a.bin changed in its middle, intro.bin the same, b.bin gone.
{ bytes 600 1; bytes 100 3; bytes 1500 1 | tail -c 800; } >"$work/levels/Levels/a2.bin"
mv "$work/levels/Levels/a2.bin" "$work/levels/Levels/a.bin"
rm "$work/levels/Levels/b.bin"
"$ba" pack build "$work/levels/Manifest.json" --version 2 -o "$publish" "${small[@]}"
printf '{"applicationGroupIdentifier":"group.example","assets":[{"identifier":"catalog","fileSize":809}]}' \
    >"$work/merge.json"
"$ba" pack publish "$publish" --base-url https://cdn.example.com/game --merge "$work/merge.json" --manifest-format 2
cp "$publish/manifest.json" "$work/manifest-format-2.json"
# Format 3, Apple's self-hosted shape (the default): signed, so that it has sequence, expiry and app.
"$ba" pack keygen -o "$work/signing.key" >/dev/null
"$ba" pack publish "$publish" --base-url https://cdn.example.com/game --key "$work/signing.key" --app com.example.game
# And as a person writes it by hand from Apple's description: no formatVersion, `host`, a key of
# nobody's, our indexSHA256 beside Apple's keys.
sha="$(sha256sum "$publish/packs/extras/1.json" | cut -d' ' -f1)"
cat >"$work/manifest-hand.json" <<JSON
{"assetPacks": [{"id": "extras", "url": "https://cdn.example.com/game/packs/extras/1.json", "version": 1,
  "downloadSize": 729, "downloadPolicy": {"onDemand": {}}, "host": {"thirdParty": {}},
  "userInfo": {"note": "by hand"}, "indexSHA256": "$sha", "comment": "unknown keys are ignored"}]}
JSON

corpus=Fuzz/corpus
rm -rf "$corpus"
mkdir -p "$corpus"
seed() { # NAME SELECTOR FILE [FILE]: the selector byte, FILE, and a NUL and the second FILE if given
    { printf "\\x$2"; cat "$3"; if [ $# -gt 3 ]; then printf '\0'; cat "$4"; fi; } >"$corpus/$1"
}
seed index-levels-1 00 "$publish/packs/levels/1.json"
seed index-levels-2 00 "$publish/packs/levels/2.json"
seed index-extras-1 00 "$publish/packs/extras/1.json"
seed manifest-merged 01 "$work/manifest-format-2.json"
seed manifest-apple-shape 01 "$publish/manifest.json"
seed manifest-apple-hand-written 01 "$work/manifest-hand.json"
seed two-indexes-levels-2-over-1 02 "$publish/packs/levels/2.json" "$publish/packs/levels/1.json"
seed two-indexes-extras-beside-levels 02 "$publish/packs/extras/1.json" "$publish/packs/levels/1.json"
# A binary-described index (selector 3, PackMetadataFuzzing.structuredIndex): one file "a" of 10
# bytes, mode 0644, in two chunks (4 and 6 bytes; stored 5 and 7) that make one bundle; version 1.
le64() { for shift in 0 8 16 24 32 40 48 56; do printf '\\x%02x' $((($1 >> shift) & 255)); done; }
printf "\x03\x01\x00$(le64 10)$(le64 420)\x01\x02\x02$(le64 4)$(le64 5)\x03$(le64 6)$(le64 7)\x02$(le64 12)$(le64 2)$(le64 1)" \
    >"$corpus/structured-one-file-two-chunks-one-bundle"
# A format 2 index (selector 0xF0): version 2 of levels again, as a root and its parts' frames.
"$ba" pack build "$work/levels/Manifest.json" --version 2 -o "$work/tree" --chunk-size 256 --bundle-size 1024
tree_seed() { # NAME ROOT: 0xF0, the root, a NUL, each part's frame in the root's order
    {
        printf '\xf0'
        cat "$2"
        printf '\0'
        /usr/bin/python3 -c 'import json,sys; [print(p["sha256"]) for p in json.load(open(sys.argv[1]))["parts"]]' "$2" |
            while read -r sha; do cat "$work/tree/meta/${sha:0:2}/$sha"; done
    } >"$corpus/$1"
}
tree_seed tree-levels-2 "$work/tree/packs/levels/2.json"
# A Steam depot build script (selector 0xE0, `ba pack convert`), in Steamworks' documented form.
cat >"$work/depot.vdf" <<'VDF'
"DepotBuildConfig"
{
	// a depot's script, as Steamworks documents it
	"DepotID" "1001"
	"ContentRoot" "content\"
	"FileMapping"
	{
		"LocalPath" "*"
		"DepotPath" "."
		"recursive" "1"
	}
	"FileMapping"
	{
		"LocalPath" "voice\en\*.ogg"
		"DepotPath" "audio\voice"
	}
	"FileExclusion" "*.pdb"
	"FileExclusion" "bin/*.map"
	"InstallScript" "installscript.vdf"
}
VDF
seed depot-script.vdf e0 "$work/depot.vdf"
ls -l "$corpus"
