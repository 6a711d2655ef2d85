#!/usr/bin/env bash
# The README's first command: installs what the build needs, builds, and runs `ba demo`
# (the whole system on a loopback asset server, ending with a verified summary).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build
.build/debug/ba demo "$@"
