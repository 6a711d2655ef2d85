#!/usr/bin/env bash
# One command for the benchmarks: builds in release and runs them, printing medians, p99s and
# ratios against a baseline measured on this machine in the same run.
#   Benchmarks/run.sh [calls] [downloads] [queued] [events]
# then the download engine against curl and aria2c (Benchmarks/downloads.sh), then basd at scale
# against curl (Benchmarks/basd.sh: an app's 5,000 small files, N queued, idle basd, and EVENTS
# small files returned by the extension of an app that is not running, to the last event's call),
# then asset packs on the device against casync and curl | tar, served by nginx
# (Benchmarks/packs-device.sh: a first install of 1.07 GB and a delta update; PACKS_SCALE, a
# percentage, default 100, shrinks it for a quicker run), on loopback and again over a link of 50 ms
# round trip; then what a 2-file and a 58-file update of a 300-file pack fetch, metadata included,
# against the bytes they change (Benchmarks/packs-updates.sh); then a first install's bytes written
# and its bytes fetched under kill -9 without validators (Benchmarks/packs-resume.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build -c release
build="$(swift build -c release --show-bin-path)"
"$build/ExtensionHostBenchmark" "$build" "${1:-50}" "${2:-1000}"
echo
echo "as ba run-extension makes them (--repeat, sandbox on):"
for library in SampleCExtension SampleSwiftExtension; do
    "$build/ba" run-extension "$build/lib$library.so" --event install --repeat "${1:-50}" \
        --manifest Examples/Manifests/sample-manifest.json | sed -n 2p | sed "s/^/  $library: /"
done
echo
"$(dirname "$0")/downloads.sh" 5 "$build"
echo
"$(dirname "$0")/basd.sh" 3 "$build" "${3:-100000}" "${4:-5000}"
echo
"$(dirname "$0")/packs-device.sh" "${PACKS_SCALE:-100}" "$build"
echo
# The same over a link of 50 ms round trip (a delay proxy of the benchmark's own in front of
# nginx, for every tool; casync, a round trip per chunk, is left out there).
PACKS_RTT_MS=50 "$(dirname "$0")/packs-device.sh" "${PACKS_SCALE:-100}" "$build"
echo
# Content-addressed fetching (issue 34): bytes written per first install, and bytes fetched per
# first install under kill -9 from a server without validators.
"$(dirname "$0")/packs-resume.sh" 256 "$build"
# Issue 34, point 4: update bytes against changed bytes (2-file and 58-file updates).
echo
"$(dirname "$0")/packs-updates.sh" 2048 "$build"
