#!/usr/bin/env bash
# The test command: installs what the build needs, checks the format (swift format lint, the
# rules in .swift-format) and that every import is declared, builds every product with warnings
# as errors (the tests run the built runner, ba and plugin libraries as real processes), runs
# the whole test suite, then fuzzes the pack metadata decoders for a minute (scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift format lint --strict --recursive Sources Tests Plugins Examples Benchmarks Package.swift
# Every import declared in Package.swift, checked twice. scripts/check-imports.sh reads the imports
# and wants direct dependencies: the gate to trust, as SwiftPM's check (Swift 6.3.1) checks nothing
# on a first build into an empty .build, as CI's is. That check runs at `warn`, its findings made
# fatal here but one, which at `error` fails every build: swift-argument-parser's Mutex.swift has
# `#if canImport(os) internal import os` (meant for Apple's), which finds our `os` target when it is
# built first (docs/apple-api-compatibility.md#logging-import-os-and-import-oslog); a dependency's
# import, not ours to declare.
scripts/check-imports.sh
build_log=$(mktemp)
trap 'rm -f "$build_log"' EXIT
swift build --build-tests -Xswiftc -warnings-as-errors --explicit-target-dependency-import-check warn 2>&1 \
    | tee "$build_log"
if grep 'imports another target' "$build_log" | grep -v 'Target ArgumentParser imports another target (os) '; then
    echo "error: declare those dependencies in Package.swift" >&2
    exit 1
fi
# The release package, as a distribution would get it: InstalledPackageTests installs it with dpkg
# into a scratch root and uses it with the toolchain hidden (BA_PACKAGE). A release build: minutes
# the first time, seconds when nothing changed (.build-release is kept). BA_SKIP_PACKAGE=1 skips
# it, and the suite then says it did not run.
if [ "${BA_SKIP_PACKAGE:-0}" != 1 ]; then
    package_dir="$(mktemp -d)"
    trap 'rm -f "$build_log"; rm -rf "$package_dir"' EXIT
    BA_PACKAGE="$(scripts/package-deb.sh --output "$package_dir")"
    export BA_PACKAGE
fi
# Swift Testing starts every test at once unless told otherwise: on 2 cores that is dozens of basd
# processes, compilers and servers together, and tests that have started but get no CPU run out
# their time limits (measured: under two busy loops nothing finished for the first 80 s, 63
# failures; with 6 at a time, 0 failures and the same 2.3 minutes). Three tests per core.
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH="${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-$(($(nproc) * 3))}"
swift test --skip-build "$@"
# The pack metadata fuzzer (docs/fuzzing.md), bounded: BA_FUZZ_SECONDS of libFuzzer (default 60)
# after its own release build with libFuzzer and ASan into .build-fuzzer (measured from clean on
# 2 cores: about a minute, so about 2 minutes in all; seconds of build once .build-fuzzer exists).
# A finding fails the run and prints the input in base64. BA_SKIP_FUZZ=1 skips it.
if [ "${BA_SKIP_FUZZ:-0}" != 1 ]; then
    scripts/fuzz.sh "${BA_FUZZ_SECONDS:-60}"
fi
