#!/usr/bin/env bash
# The test command: installs what the build needs, builds every product (the tests run the
# built runner, ba and plugin libraries as real processes), and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build --build-tests
swift test --skip-build "$@"
