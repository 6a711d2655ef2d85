#!/usr/bin/env bash
# Build, then run the Swift sample extension's install entry point on the sample manifest, in a
# budgeted runner process, with no daemon (the README's tour starts the same way).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build
.build/debug/ba run-extension .build/debug/libSampleSwiftExtension.so \
    --event install --manifest Examples/Manifests/sample-manifest.json "$@"
