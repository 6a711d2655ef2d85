#!/usr/bin/env bash
# Installs the Debian packages this project builds against, if they are missing.
# Used by the README's commands and by CI; safe to run again.
set -euo pipefail

# util-linux: `flock`, which the lock tests use to hold a lock from another process (Essential on Debian).
# libzstd-dev: the asset packs' chunk store (BAPacks, through CZstd).
# libsystemd-dev: sd-bus, basd's D-Bus client (BADesktopBus, through CSDBus).
# dbus-daemon, python3-dbus, python3-gi: the desktop tests run a private bus with stand-ins in Python (they skip without).
# jq: docs/writing-an-extension-c.md checks `ba run-extension --json` with it, and DocTests runs that doc.
# dpkg-dev, lintian: scripts/package-deb.sh (dpkg-shlibdeps finds Depends:, lintian checks the result).
packages=(libffi-dev libcurl4-openssl-dev libssl-dev libsqlite3-dev libzstd-dev libsystemd-dev openssl pkg-config
    util-linux jq dbus-daemon python3-dbus python3-gi dpkg-dev lintian)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
echo "installing: ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${missing[@]}"
