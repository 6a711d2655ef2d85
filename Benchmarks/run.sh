#!/usr/bin/env bash
# One command for the benchmarks: builds in release and runs them, printing medians, p99s and
# ratios against a baseline measured on this machine in the same run.
#   Benchmarks/run.sh [calls] [downloads]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build -c release
build="$(swift build -c release --show-bin-path)"
"$build/ExtensionHostBenchmark" "$build" "${1:-50}" "${2:-1000}"
