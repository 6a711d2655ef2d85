#!/usr/bin/env bash
# Builds a release of swift-background-assets and installs it under a prefix:
#
#   PREFIX/bin/ba, basd                      the Swift standard library linked in statically
#   PREFIX/bin/ba-extension-runner           dynamic (extensions share its Swift runtime), rpath to:
#   PREFIX/lib/swift-background-assets/      the Swift runtime libraries the runner and
#                                            libBackgroundAssets.so need (copied from the toolchain)
#   PREFIX/lib/libBackgroundAssets.so        what a Swift extension or app links (rpath to the above)
#   PREFIX/include/ba_extension.h            the C extension ABI
#   PREFIX/share/man/man1/ba*.1, basd.1      man pages made from the commands' --help
#   PREFIX/share/bash-completion/completions/ba, share/zsh/site-functions/_ba, share/fish/vendor_completions.d/ba.fish
#   PREFIX/lib/systemd/user/basd.service, basd.socket   ExecStart= is PREFIX/bin/basd (or --unit-basd)
#
# Usage: scripts/install.sh [--prefix DIR] [--unit-basd PATH] [--skip-build]
#   --prefix DIR       where to install (default /usr/local)
#   --unit-basd PATH   the basd the systemd units run (default PREFIX/bin/basd; a package builder
#                      staging into a folder passes the final path)
#   --skip-build       install what the last run built (.build-release-static, .build-release)
# docs/operations.md, "Deploying", says what goes where and why.
set -euo pipefail

prefix=/usr/local
unit_basd=""
build=1
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix="$2"; shift 2 ;;
        --unit-basd) unit_basd="$2"; shift 2 ;;
        --skip-build) build=0; shift ;;
        -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "install.sh: unknown argument $1 (see --help)" >&2; exit 64 ;;
    esac
done
case "$prefix" in /*) ;; *) prefix="$PWD/$prefix" ;; esac
unit_basd="${unit_basd:-$prefix/bin/basd}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

static=.build-release-static
dynamic=.build-release
private_lib="lib/swift-background-assets"

if [ "$build" -eq 1 ]; then
    # ba and basd: one file each, no Swift runtime to ship or find.
    swift build -c release --static-swift-stdlib --scratch-path "$static" --product basd
    swift build -c release --static-swift-stdlib --scratch-path "$static" --product ba
    # The runner and the library stay dynamic: a Swift extension loaded into the runner must share
    # its Swift runtime (a statically linked host would load a second one). They find the runtime
    # next to them, not in the toolchain.
    for product in ba-extension-runner BackgroundAssets; do
        swift build -c release --scratch-path "$dynamic" --product "$product" \
            -Xswiftc -no-toolchain-stdlib-rpath \
            -Xlinker -rpath -Xlinker "\$ORIGIN/../$private_lib" \
            -Xlinker -rpath -Xlinker "\$ORIGIN/swift-background-assets"
    done
fi

install -d "$prefix/bin" "$prefix/$private_lib" "$prefix/include" "$prefix/share/man/man1" \
    "$prefix/lib/systemd/user" "$prefix/share/bash-completion/completions" "$prefix/share/zsh/site-functions" \
    "$prefix/share/fish/vendor_completions.d"
install -m 0755 "$static/release/ba" "$static/release/basd" "$prefix/bin/"
install -m 0755 "$dynamic/release/ba-extension-runner" "$prefix/bin/"
install -m 0755 "$dynamic/release/libBackgroundAssets.so" "$prefix/lib/"
install -m 0644 Sources/CBAExtension/include/ba_extension.h "$prefix/include/"

# The Swift runtime libraries the dynamic parts need, found by ldd in the toolchain (not the
# system's: libc, libcurl and the rest come from Debian packages).
toolchain_lib="$(dirname "$(dirname "$(readlink -f "$(command -v swiftc)")")")/lib/swift/linux"
for binary in "$prefix/bin/ba-extension-runner" "$prefix/lib/libBackgroundAssets.so"; do
    LD_LIBRARY_PATH="$toolchain_lib" ldd "$binary" | awk '{print $3}' | grep "^$toolchain_lib/" || true
done | sort -u | while read -r library; do
    install -m 0644 "$library" "$prefix/$private_lib/"
done

# Man pages from --help: one per command and subcommand.
ba="$prefix/bin/ba"
man_page() {  # NAME FALLBACK-TITLE HELP-COMMAND...
    local name=$1 title=$2; shift 2
    local overview
    overview="$("$@" --help | awk '/^OVERVIEW: /{on=1; sub(/^OVERVIEW: /, "")} on && /^$/{exit} on{printf "%s%s", sep, $0; sep=" "}')"
    title="${overview:-$title}"
    {
        printf '.TH %s 1 "" "swift-background-assets %s" "User Commands"\n' "$(echo "$name" | tr a-z A-Z)" \
            "$("$ba" --version)"
        printf '.SH NAME\n%s \\- %s\n.SH DESCRIPTION\n.nf\n' "$name" "$title"
        "$@" --help | sed -e 's/\\/\\e/g' -e 's/^\./\\\&./'
        printf '.fi\n'
    } > "$prefix/share/man/man1/$name.1"
}
subcommands() {  # the names under SUBCOMMANDS: in a help text (help excluded)
    awk '/^SUBCOMMANDS:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{if (seen) exit} on{seen=1}' | grep -v '^help$' || true
}
man_page ba "Background Assets for Linux: run extensions, fetch assets, watch and steer basd" "$ba"
man_page basd "the Background Assets daemon" "$prefix/bin/basd"
for sub in $("$ba" --help | subcommands); do
    man_page "ba-$sub" "ba $sub" "$ba" "$sub"
    for subsub in $("$ba" "$sub" --help | subcommands); do
        man_page "ba-$sub-$subsub" "ba $sub $subsub" "$ba" "$sub" "$subsub"
    done
done

"$ba" --generate-completion-script bash > "$prefix/share/bash-completion/completions/ba"
"$ba" --generate-completion-script zsh > "$prefix/share/zsh/site-functions/_ba"
"$ba" --generate-completion-script fish > "$prefix/share/fish/vendor_completions.d/ba.fish"

# The systemd user units, written by ba itself (the same text `ba service install` writes), then
# pointed at the basd they will run.
units="$(mktemp -d)"
"$ba" service install --basd "$prefix/bin/basd" --unit-directory "$units" --no-systemctl > /dev/null
for unit in basd.service basd.socket; do
    sed "s#^ExecStart=$prefix/bin/basd#ExecStart=$unit_basd#" "$units/$unit" > "$prefix/lib/systemd/user/$unit"
    chmod 0644 "$prefix/lib/systemd/user/$unit"
done
rm -r "$units"

echo "installed swift-background-assets $("$ba" --version) under $prefix"
