#!/usr/bin/env bash
# The test command: installs what the build needs, checks the format (swift format lint, the
# rules in .swift-format), builds every product with warnings as errors (the tests run the built
# runner, ba and plugin libraries as real processes), and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift format lint --strict --recursive Sources Tests Plugins Examples Benchmarks Package.swift
swift build --build-tests -Xswiftc -warnings-as-errors
swift test --skip-build "$@"
