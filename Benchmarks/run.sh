#!/usr/bin/env bash
# One command for the benchmarks: builds in release and runs them, printing medians, p99s and
# ratios against a baseline measured on this machine in the same run.
#   Benchmarks/run.sh [calls] [downloads]     (then the download benchmark: Benchmarks/downloads.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build -c release
build="$(swift build -c release --show-bin-path)"
"$build/ExtensionHostBenchmark" "$build" "${1:-50}" "${2:-1000}"
echo
"$(dirname "$0")/downloads.sh" 5 "$build"
