#!/usr/bin/env bash
# Builds a release of swift-background-assets and installs it under a prefix:
#
#   PREFIX/bin/ba, basd, ba-extension-runner     the CLI, the daemon (one binary: basd is a symlink to
#                                                ba, which runs as basd under that name), the process
#                                                an extension call runs in
#   PREFIX/lib/swift-background-assets/          everything the three and an app or extension load:
#       libswiftCore.so, libFoundation.so, …         the Swift runtime, one copy (from the toolchain)
#       libBackgroundAssets.so, libos.so             Apple's API and Apple's logging API
#       modules/                                     what `import BackgroundAssets` (os, OSLog,
#                                                    ExtensionFoundation) compiles against
#   PREFIX/include/ba_extension.h                the C extension ABI
#   PREFIX/include/ba_client.h, PREFIX/lib/pkgconfig/ba-client.pc   the C client of an app's asset
#                                                packs (libba_client.so.1 in the private folder below:
#                                                plain C, no Swift runtime; `pkg-config ba-client`)
#   PREFIX/share/man/man1/ba*.1.gz, basd.1.gz, ba-extension-runner.1.gz
#   PREFIX/share/doc/swift-background-assets/    README.md, the docs, copyright
#   PREFIX/share/background-assets/apps/         the drop-in folder apps' packages register in
#   PREFIX/share/bash-completion/completions/ba, share/zsh/site-functions/_ba, share/fish/vendor_completions.d/ba.fish
#   PREFIX/lib/systemd/user/basd.service, basd.socket, basd.timer   ExecStart= is PREFIX/bin/basd (or
#                                                --unit-basd); enabled for every user (*.wants/ links)
#
# Every binary is stripped and finds the runtime through its rpath ($ORIGIN-relative, so the prefix
# can move), never in the toolchain. Apps and extensions built against the prefix use the same
# runtime and library: docs/building-against-the-package.md.
#
# Usage: scripts/install.sh [--prefix DIR] [--unit-basd PATH] [--skip-build]
#   --prefix DIR       where to install (default /usr/local)
#   --unit-basd PATH   the basd the systemd units run (default PREFIX/bin/basd; a package builder
#                      staging into a folder passes the final path)
#   --skip-build       install what the last run built (.build-release)
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
        -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "install.sh: unknown argument $1 (see --help)" >&2; exit 64 ;;
    esac
done
case "$prefix" in /*) ;; *) prefix="$PWD/$prefix" ;; esac
unit_basd="${unit_basd:-$prefix/bin/basd}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

scratch=.build-release
private="lib/swift-background-assets"
built="$scratch/release"

if [ "$build" -eq 1 ]; then
    # One build for all: the modules are compiled once, and every product links the Swift runtime
    # dynamically, so that ba, basd, the runner, the library and every extension and app share one
    # copy of it. Only the link step differs (where the rpath points), so nothing is compiled twice.
    # No debug information (-gnone, -g0): the binaries are stripped anyway, and it is a fifth of
    # the build's time.
    # Linked with -z now (with relro, the default: the relocations are read-only once resolved).
    common=(-c release --scratch-path "$scratch" -Xswiftc -no-toolchain-stdlib-rpath -Xswiftc -gnone -Xcc -g0
        -Xlinker -z -Xlinker now)
    for product in ba ba-extension-runner; do
        swift build "${common[@]}" --product "$product" -Xlinker -rpath -Xlinker "\$ORIGIN/../$private"
    done
    for product in BackgroundAssets os; do
        swift build "${common[@]}" --product "$product" -Xlinker -rpath -Xlinker "\$ORIGIN" \
            -Xlinker -soname -Xlinker "lib$product.so"
    done
    # Modules only (nothing of them is linked: OSLog re-exports os, ExtensionFoundation is empty).
    for target in OSLog ExtensionFoundation; do
        swift build "${common[@]}" --target "$target"
    done
fi

install -d "$prefix/bin" "$prefix/$private/modules" "$prefix/include" "$prefix/share/man/man1" \
    "$prefix/lib/systemd/user" "$prefix/share/bash-completion/completions" "$prefix/share/zsh/site-functions" \
    "$prefix/share/fish/vendor_completions.d" "$prefix/share/doc/swift-background-assets/docs" \
    "$prefix/share/background-assets/apps"
# Stripped as Debian's dh_strip does: the symbol tables and the compiler's notes go, the dynamic
# symbols a library exports stay.
install -m 0755 "$built/ba" "$built/ba-extension-runner" "$prefix/bin/"
ln -sf ba "$prefix/bin/basd"
install -m 0644 "$built/libBackgroundAssets.so" "$built/libos.so" "$prefix/$private/"
install -m 0644 Sources/CBAExtension/include/ba_extension.h "$prefix/include/"
# The C client library (docs/c-client.md): plain C, built here with cc (no Swift, nothing but libc),
# hardened as Debian builds C (fortified, stack protector, relro and -z now).
install -m 0644 Sources/CBAClient/include/ba_client.h "$prefix/include/"
${CC:-cc} -std=c11 -O2 -g0 -fPIC -shared -fvisibility=hidden -Wall -Wextra -Werror -fstack-protector-strong \
    -D_FORTIFY_SOURCE=2 -Wl,-z,relro -Wl,-z,now -Wl,-soname,libba_client.so.1 -I Sources/CBAClient/include \
    -o "$prefix/$private/libba_client.so.1" Sources/CBAClient/*.c
chmod 0644 "$prefix/$private/libba_client.so.1"
ln -sfn libba_client.so.1 "$prefix/$private/libba_client.so"
# Relocatable (${pcfiledir}): the same file serves /usr, /usr/local and a scratch root.
install -d "$prefix/lib/pkgconfig"
cat > "$prefix/lib/pkgconfig/ba-client.pc" <<PC
prefix=\${pcfiledir}/../..
includedir=\${prefix}/include
libdir=\${prefix}/$private

Name: ba-client
Description: An app's asset packs from C, through basd (swift-background-assets)
Version: $(sed -n 's/^#define BA_CLIENT_VERSION_MAJOR \([0-9]*\)$/\1/p' Sources/CBAClient/include/ba_client.h).$(sed -n 's/^#define BA_CLIENT_VERSION_MINOR \([0-9]*\)$/\1/p' Sources/CBAClient/include/ba_client.h)
Cflags: -I\${includedir}
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lba_client
PC

# The Swift runtime: what the binaries load from the toolchain (ldd, transitively), and
# libswiftSwiftOnoneSupport.so, which a debug (-Onone) build of an app or extension needs.
toolchain_lib="$(dirname "$(dirname "$(readlink -f "$(command -v swiftc)")")")/lib/swift/linux"
{
    for binary in "$prefix/bin/ba" "$prefix/bin/ba-extension-runner" "$prefix/$private/"*.so; do
        LD_LIBRARY_PATH="$toolchain_lib" ldd "$binary" | awk '{print $3}' | grep "^$toolchain_lib/" || true
    done
    echo "$toolchain_lib/libswiftSwiftOnoneSupport.so"
} | sort -u | while read -r library; do
    install -m 0644 "$library" "$prefix/$private/"
done
for binary in "$prefix/bin/ba" "$prefix/bin/ba-extension-runner"; do
    strip --remove-section=.comment --remove-section=.note "$binary"
done
for library in "$prefix/$private/"*.so; do
    strip --remove-section=.comment --remove-section=.note --strip-unneeded "$library"
done
if LD_LIBRARY_PATH="" ldd "$prefix/bin/ba" "$prefix/bin/ba-extension-runner" "$prefix/$private/"*.so | grep "not found"; then
    echo "install.sh: a library above is missing from $prefix/$private" >&2
    exit 1
fi

# The modules an app or extension compiles against: BackgroundAssets and what it is built from
# (a module compiled without library evolution needs the modules it imports, even internally),
# swift-system's (BackgroundAssets re-exports FilePath and FileDescriptor), os/OSLog and the
# swift-log module os uses, ExtensionFoundation; and the two C modules among them, in one module
# map. They are for the compiler that built them (`swiftc --version` is in the modules folder).
for module in BackgroundAssets BACore BADaemonProtocol BAExclusiveControl BAExtensionABI BAPackManifest SystemPackage \
    os OSLog Logging ExtensionFoundation; do
    install -m 0644 "$built/Modules/$module.swiftmodule" "$prefix/$private/modules/"
done
install -d "$prefix/$private/modules/CSystem" "$prefix/$private/modules/CBAExtension"
system_headers="$scratch/checkouts/swift-system/Sources/CSystem/include"
install -m 0644 "$system_headers/"*.h "$prefix/$private/modules/CSystem/"
install -m 0644 Sources/CBAExtension/include/ba_extension.h "$prefix/$private/modules/CBAExtension/"
cat > "$prefix/$private/modules/module.modulemap" <<'MODULEMAP'
module CSystem {
    header "CSystem/CSystemShared.h"
    header "CSystem/CSystemLinux.h"
    export *
}
module CBAExtension {
    header "CBAExtension/ba_extension.h"
    export *
}
MODULEMAP
swiftc --version 2>&1 | sed -n 1p > "$prefix/$private/modules/COMPILER"
# The modules are complete: a file importing each public one compiles against them alone.
check="$(mktemp -d)"
printf 'import BackgroundAssets\nimport ExtensionFoundation\nimport OSLog\nimport os\n' > "$check/check.swift"
if ! swiftc -typecheck -I "$prefix/$private/modules" "$check/check.swift"; then
    echo "install.sh: the modules in $prefix/$private/modules are incomplete (see above)" >&2
    exit 1
fi
rm -r "$check"

# Man pages from --help: one per command and subcommand, compressed.
ba="$prefix/bin/ba"
man_page() {  # NAME FALLBACK-TITLE HELP-COMMAND...
    local name=$1 title=$2; shift 2
    local overview
    # (awk reads to the end: a reader that exits early would SIGPIPE the command under pipefail.)
    overview="$("$@" --help | awk 'done{next} /^OVERVIEW: /{on=1; sub(/^OVERVIEW: /, "")} on && /^$/{done=1; next} on{printf "%s%s", sep, $0; sep=" "}')"
    title="${overview:-$title}"
    {
        printf '.TH %s 1 "" "swift-background-assets %s" "User Commands"\n' "$(echo "$name" | tr a-z A-Z)" \
            "$("$ba" --version)"
        printf '.SH NAME\n%s \\- %s\n.SH DESCRIPTION\n.nf\n' "$name" "$title"
        # Escaped for groff: backslashes, and a line starting with . or ' (a request otherwise).
        "$@" --help | sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"
        printf '.fi\n'
    } | gzip -9n > "$prefix/share/man/man1/$name.1.gz"
}
subcommands() {  # the names under SUBCOMMANDS: in a help text (help excluded)
    awk 'done{next} /^SUBCOMMANDS:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{if (seen) done=1; next} on{seen=1}' | grep -v '^help$' || true
}
man_page ba "Background Assets for Linux: run extensions, fetch assets, watch and steer basd" "$ba"
man_page basd "the Background Assets daemon" "$prefix/bin/basd"
for sub in $("$ba" --help | subcommands); do
    man_page "ba-$sub" "ba $sub" "$ba" "$sub"
    for subsub in $("$ba" "$sub" --help | subcommands); do
        man_page "ba-$sub-$subsub" "ba $sub $subsub" "$ba" "$sub" "$subsub"
    done
done
# The runner has no --help: it is started by basd and ba, never by hand.
gzip -9n > "$prefix/share/man/man1/ba-extension-runner.1.gz" <<MAN
.TH BA-EXTENSION-RUNNER 1 "" "swift-background-assets $("$ba" --version)" "User Commands"
.SH NAME
ba-extension-runner \- the process an extension call runs in
.SH DESCRIPTION
basd and \fBba run-extension\fR start it, next to themselves, to load an app's extension library
and make one call in a sandbox (Landlock, namespaces, a deadline and a memory cap). It is not run
by hand; see \fBba-run-extension\fR(1) and /usr/share/doc/swift-background-assets/docs/threat-model.md.
.SH SEE ALSO
\fBba\fR(1), \fBbasd\fR(1)
MAN

# Completions. bash's file is sourced, not run: no #! line.
"$ba" --generate-completion-script bash | sed '1{/^#!/d}' > "$prefix/share/bash-completion/completions/ba"
"$ba" --generate-completion-script zsh > "$prefix/share/zsh/site-functions/_ba"
"$ba" --generate-completion-script fish > "$prefix/share/fish/vendor_completions.d/ba.fish"

# The user-facing docs (error messages point at them), and what the binaries are made of.
install -m 0644 README.md "$prefix/share/doc/swift-background-assets/"
install -m 0644 docs/*.md "$prefix/share/doc/swift-background-assets/docs/"
install -m 0644 packaging/copyright "$prefix/share/doc/swift-background-assets/"
install -d "$prefix/share/doc/swift-background-assets/notices"
install -m 0644 NOTICE "$prefix/share/doc/swift-background-assets/notices/swift-background-assets.NOTICE"
for notice in "$scratch"/checkouts/*/NOTICE.txt; do
    package="$(basename "$(dirname "$notice")")"
    install -m 0644 "$notice" "$prefix/share/doc/swift-background-assets/notices/$package.NOTICE.txt"
done

# The systemd user units, written by ba itself (the same text `ba service install` writes), then
# pointed at the basd they will run.
units="$(mktemp -d)"
"$ba" service install --basd "$prefix/bin/basd" --unit-directory "$units" --no-systemctl > /dev/null
# Enabled for every user by the vendor's links below (as dbus-user-session ships dbus.socket's), so
# each unit's [Install] section is left out (systemctl calls them "static": nothing to enable):
# basd starts at each login (default.target), when a client connects (sockets.target) and every 15
# minutes while it is not running (timers.target), so an app a package registers gets its essential
# content before its first launch, with no maintainer script. A user opts out with
# `systemctl --user mask basd.service basd.socket basd.timer`, an administrator for everyone with
# `systemctl --global mask …`.
for unit in basd.service basd.socket basd.timer; do
    {
        printf '# Installed with swift-background-assets, enabled for every user by the *.wants/ links\n'
        printf '# beside it (mask it to opt out). See docs/operations.md.\n'
        sed -e "s#^ExecStart=$prefix/bin/basd#ExecStart=$unit_basd#" -e '/^# Written by `ba service install`/d' \
            -e '/^# It is rewritten by the next `ba service install`/d' -e '/^\[Install\]/,$d' "$units/$unit" \
            | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}'
    } > "$prefix/lib/systemd/user/$unit"
    chmod 0644 "$prefix/lib/systemd/user/$unit"
done
rm -r "$units"
for link in default.target.wants/basd.service sockets.target.wants/basd.socket timers.target.wants/basd.timer; do
    install -d "$prefix/lib/systemd/user/$(dirname "$link")"
    ln -sfn "../$(basename "$link")" "$prefix/lib/systemd/user/$link"
done

echo "installed swift-background-assets $("$ba" --version) under $prefix"
