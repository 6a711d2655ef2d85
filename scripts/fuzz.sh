#!/usr/bin/env bash
# Fuzzes what a device does with the pack metadata it downloads (PackMetadataFuzzing: the pack
# index and download manifest decoders, the install check, the bundle layout and the plan) with
# libFuzzer for a bounded time, over a copy of the seed corpus (Fuzz/corpus/) with the JSON
# dictionary Fuzz/pack.dict. docs/fuzzing.md says what it covers.
#
# Builds Sources/PackFuzzer in release with libFuzzer and ASan (-sanitize=fuzzer,address) and
# -DFUZZING (libFuzzer's main instead of the replay tool's) into its own scratch path, as no other
# build wants those flags. Exits non-zero on a finding (a trap, a crash, a leak, a hang over
# 10 s, more than 2 GB), printing the file libFuzzer wrote: copy it to Fuzz/regressions/ under a
# name that says what it is (PackFuzzRegressionTests replays that folder).
#
# Usage: scripts/fuzz.sh [SECONDS]   (default 60; BA_FUZZ_SCRATCH, default .build-fuzzer; extra
#        libFuzzer flags in BA_FUZZ_FLAGS, e.g. "-jobs=2 -workers=2")
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
scratch="${BA_FUZZ_SCRATCH:-.build-fuzzer}"
# Not SwiftPM's `--sanitize fuzzer --sanitize address`: SwiftPM 6.3.1 passes those as two -sanitize=
# flags in an order that changes from run to run, and swiftc keeps only the last (measured: builds
# with no coverage counters in the Swift code, or with no ASan). `--sanitize fuzzer` alone tells
# SwiftPM to link libFuzzer's main (without it, it wants PackFuzzer_main), and the -Xswiftc flag,
# which comes last, is the one swiftc keeps.
flags=(--scratch-path "$scratch" -c release --sanitize fuzzer -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING)
run="$(mktemp -d)"
trap 'rm -rf "$run"' EXIT
mkdir -p "$run/corpus" "$run/findings"
# ld.gold warns "Cannot export local symbol '__asan_…'" hundreds of times; harmless, left out.
build_status=0
swift build "${flags[@]}" --product PackFuzzer >"$run/build" 2>&1 || build_status=$?
grep -v 'Cannot export local symbol' "$run/build" || true
[ "$build_status" = 0 ] || exit "$build_status"
fuzzer="$(swift build "${flags[@]}" --show-bin-path)/PackFuzzer"
cp Fuzz/corpus/* "$run/corpus/"
# libFuzzer, not the Swift runtime's backtracer, takes the trap signal, so it writes the input.
status=0
# shellcheck disable=SC2086  # BA_FUZZ_FLAGS is words for libFuzzer
SWIFT_BACKTRACE=enable=no ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" "$fuzzer" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -dict=Fuzz/pack.dict -artifact_prefix="$run/findings/" ${BA_FUZZ_FLAGS:-} "$run/corpus" \
    >"$run/log" 2>&1 || status=$?
# The module line says how much code is instrumented (thousands of counters; hundreds means the
# Swift code is not), DONE the coverage reached.
grep -E '^(INFO: Loaded 1 modules|stat::number_of_executed_units|stat::average_exec_per_sec|#[0-9]+ +DONE)' \
    "$run/log" || true
counters=$(sed -nE 's/^INFO: Loaded 1 modules +\(([0-9]+) inline 8-bit counters.*/\1/p' "$run/log" | head -n 1)
if [ "${counters:-0}" -lt 5000 ]; then
    echo "fuzz: only ${counters:-no} coverage counters: the Swift code was built without -sanitize=fuzzer" >&2
    exit 1
fi
if [ "$status" != 0 ] || [ -n "$(ls -A "$run/findings")" ]; then
    tail -n 60 "$run/log" >&2
    mkdir -p Fuzz/findings
    for finding in "$run/findings"/*; do
        [ -e "$finding" ] || continue
        cp "$finding" Fuzz/findings/
        echo "fuzz: finding written to Fuzz/findings/$(basename "$finding") (replay: $fuzzer FILE);" \
            "its bytes, base64 (for a CI log: base64 -d):" >&2
        base64 -w 0 "$finding" >&2
        echo >&2
    done
    echo "fuzz: libFuzzer exited with $status" >&2
    exit 1
fi
echo "fuzz: no finding in ${seconds} s"
