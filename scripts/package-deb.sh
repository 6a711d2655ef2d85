#!/usr/bin/env bash
# Builds a .deb of swift-background-assets: what scripts/install.sh installs, under /usr, with
# the systemd user units in /usr/lib/systemd/user (ExecStart=/usr/bin/basd). Debian dependencies
# are the packages holding the system libraries the binaries load (found with ldd and dpkg -S).
#
# Usage: scripts/package-deb.sh [--output DIR] [--skip-build]
#   --output DIR   where the .deb goes (default: the current folder)
#   --skip-build   package what scripts/install.sh built last
# Then: sudo dpkg -i swift-background-assets_VERSION_ARCH.deb; every user who wants basd runs
#   systemctl --user enable --now basd.socket
# and `sudo dpkg -r swift-background-assets` removes it all.
set -euo pipefail

output="$PWD"
install_args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --output) output="$2"; shift 2 ;;
        --skip-build) install_args+=(--skip-build); shift ;;
        -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "package-deb.sh: unknown argument $1 (see --help)" >&2; exit 64 ;;
    esac
done
case "$output" in /*) ;; *) output="$PWD/$output" ;; esac
root="$(cd "$(dirname "$0")/.." && pwd)"
staging="$(mktemp -d)"
trap 'rm -rf "$staging"' EXIT

"$root/scripts/install.sh" --prefix "$staging/usr" --unit-basd /usr/bin/basd "${install_args[@]}"
version="$("$staging/usr/bin/ba" --version)"
arch="$(dpkg --print-architecture)"

# The Debian packages of the system libraries the binaries load (the Swift runtime is shipped).
depends="$(
    for binary in "$staging/usr/bin/"* "$staging/usr/lib/libBackgroundAssets.so"; do
        LD_LIBRARY_PATH="$staging/usr/lib/swift-background-assets" ldd "$binary" | awk '$3 ~ /^\// {print $3}'
    done | grep -v "^$staging" | sort -u | while read -r library; do
        dpkg -S "$(readlink -f "$library")" 2>/dev/null || dpkg -S "$library" 2>/dev/null || true
    done | cut -d: -f1 | sort -u | paste -sd, | sed 's/,/, /g'
)"

install -d "$staging/DEBIAN"
size="$(du -sk "$staging/usr" | cut -f1)"
cat > "$staging/DEBIAN/control" <<CONTROL
Package: swift-background-assets
Version: $version
Architecture: $arch
Maintainer: swift-background-assets <noreply@example.invalid>
Installed-Size: $size
Depends: $depends
Section: net
Priority: optional
Description: Background Assets for Linux: basd, ba and the extension runner
 Apple's Background Assets rebuilt for Linux: the per-user daemon basd downloads app assets in the
 background and wakes app extensions; ba installs, updates and uninstalls apps and watches basd.
CONTROL
mkdir -p "$output"
deb="$output/swift-background-assets_${version}_${arch}.deb"
dpkg-deb --root-owner-group --build "$staging" "$deb" > /dev/null
echo "$deb"
