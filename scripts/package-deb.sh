#!/usr/bin/env bash
# Builds a .deb of swift-background-assets: what scripts/install.sh installs, under /usr, with
# the systemd user units in /usr/lib/systemd/user (ExecStart=/usr/bin/basd). `Depends:` is what
# dpkg-shlibdeps finds for the libraries the binaries load directly; the Swift runtime is in the
# package (/usr/lib/swift-background-assets). lintian runs on the result when it is installed.
#
# Usage: scripts/package-deb.sh [--output DIR] [--skip-build]
#   --output DIR   where the .deb goes (default: the current folder)
#   --skip-build   package what scripts/install.sh built last
# Then: sudo dpkg -i swift-background-assets_VERSION_ARCH.deb; the user units (basd.service,
#   basd.socket, basd.timer) are enabled for every user from their next login (or at once:
#   systemctl --user daemon-reload && systemctl --user start basd.socket basd.timer)
# and `sudo dpkg -r swift-background-assets` removes it all.
set -euo pipefail

output="$PWD"
install_args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --output) output="$2"; shift 2 ;;
        --skip-build) install_args+=(--skip-build); shift ;;
        -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "package-deb.sh: unknown argument $1 (see --help)" >&2; exit 64 ;;
    esac
done
case "$output" in /*) ;; *) output="$PWD/$output" ;; esac
root="$(cd "$(dirname "$0")/.." && pwd)"
for tool in dpkg-deb dpkg-shlibdeps; do
    command -v "$tool" > /dev/null || { echo "package-deb.sh: $tool is missing: apt-get install dpkg-dev" >&2; exit 69; }
done
staging="$(mktemp -d)"
trap 'rm -rf "$staging"' EXIT
package="$staging/package"

"$root/scripts/install.sh" --prefix "$package/usr" --unit-basd /usr/bin/basd "${install_args[@]}" >&2
version="$("$package/usr/bin/ba" --version)"
arch="$(dpkg --print-architecture)"
# The C client's pkg-config file goes where Debian's pkg-config looks for this architecture's
# (lintian: pkg-config-unavailable-for-cross-compilation), one folder deeper: its prefix follows.
multiarch="$(dpkg-architecture -qDEB_HOST_MULTIARCH)"
install -d "$package/usr/lib/$multiarch/pkgconfig"
sed 's#^prefix=${pcfiledir}/../..$#prefix=${pcfiledir}/../../..#' "$package/usr/lib/pkgconfig/ba-client.pc" \
    > "$package/usr/lib/$multiarch/pkgconfig/ba-client.pc"
rm -r "$package/usr/lib/pkgconfig"
doc="$package/usr/share/doc/swift-background-assets"

# Debian policy 12.3: documentation over 4 kB is compressed (read with zless; the copyright stays).
find "$doc" -type f -size +4k ! -name copyright ! -name '*.gz' -exec gzip -9n {} +
# A native package's changelog, in Debian's format.
{
    echo "swift-background-assets ($version) unstable; urgency=medium"
    echo
    echo "  * Release $version: see /usr/share/doc/swift-background-assets/README.md."
    echo
    echo " -- swift-background-assets <noreply@example.invalid>  $(date -R -d "@${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || date +%s)}")"
} | gzip -9n > "$doc/changelog.gz"

# Depends: the packages of the libraries the ELF files name in NEEDED (not what those pull in),
# with the versions their shlibs/symbols files ask for. The private runtime folder is searched too.
mkdir -p "$staging/debian"
printf 'Source: swift-background-assets\n\nPackage: swift-background-assets\nArchitecture: any\n' > "$staging/debian/control"
elves=("$package/usr/bin/"* "$package/usr/lib/swift-background-assets/"*.so)
depends="$(cd "$staging" && dpkg-shlibdeps -O -l"$package/usr/lib/swift-background-assets" "${elves[@]}" 2> "$staging/shlibdeps.log" \
    | sed -n 's/^shlibs:Depends=//p')" || { cat "$staging/shlibdeps.log" >&2; exit 1; }

install -d "$package/DEBIAN"
(cd "$package" && find usr -type f -print0 | LC_ALL=C sort -z | xargs -0 md5sum) > "$package/DEBIAN/md5sums"
size="$(du -sk --apparent-size "$package/usr" | cut -f1)"
cat > "$package/DEBIAN/control" <<CONTROL
Package: swift-background-assets
Version: $version
Architecture: $arch
Maintainer: swift-background-assets <noreply@example.invalid>
Installed-Size: $size
Depends: $depends
Section: net
Priority: optional
Description: Background Assets for Linux: basd, ba and the extension runner
 Apple's Background Assets rebuilt for Linux. The per-user daemon basd
 downloads app assets and asset packs in the background, before an app
 is first opened, and wakes app extensions; ba installs, updates and
 uninstalls apps and watches basd. Apps installed by any package manager
 register in /usr/share/background-assets/apps and are picked up by
 every user's basd.
 .
 The package also ships what an app or an extension built against it
 needs: the BackgroundAssets library and modules, the C extension header
 and the Swift runtime they all share; and for apps in C, the client
 library of their asset packs (ba_client.h, pkg-config ba-client).
CONTROL
mkdir -p "$output"
deb="$output/swift-background-assets_${version}_${arch}.deb"
# xz at its default level, with every core (dpkg-deb compresses with one thread otherwise).
dpkg-deb --root-owner-group -Zxz --threads-max="$(nproc)" --build "$package" "$deb" > /dev/null
if command -v lintian > /dev/null; then
    lintian --suppress-tags-from-file "$root/packaging/lintian-explained" "$deb" >&2 || true
fi
echo "$deb"
