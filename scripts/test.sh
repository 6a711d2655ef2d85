#!/usr/bin/env bash
# The test command: installs what the build needs, checks the format (swift format lint, the
# rules in .swift-format), builds every product with warnings as errors (the tests run the built
# runner, ba and plugin libraries as real processes), and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift format lint --strict --recursive Sources Tests Plugins Examples Benchmarks Package.swift
swift build --build-tests -Xswiftc -warnings-as-errors
# Swift Testing starts every test at once unless told otherwise: on 2 cores that is dozens of basd
# processes, compilers and servers together, and tests that have started but get no CPU run out
# their time limits (measured: under two busy loops nothing finished for the first 80 s, 63
# failures; with 6 at a time, 0 failures and the same 2.3 minutes). Three tests per core.
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH="${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-$(($(nproc) * 3))}"
swift test --skip-build "$@"
