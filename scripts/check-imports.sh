#!/usr/bin/env bash
# Checks that every Swift target declares, in Package.swift, each module of this package (or each
# product of a dependency) it imports: a direct dependency, not one it happens to get through
# another target.
#
# Why a script next to SwiftPM's `--explicit-target-dependency-import-check` (which scripts/test.sh
# also passes): with Swift 6.3.1 on Linux that check does nothing on a first build into an empty
# .build (measured on a two-target package whose `A` imports an undeclared `B`: it reports it only
# from the second build on), skips every target left once its import prescan fails, and accepts a
# module reached through another dependency. This one reads the `import` lines.
#
# Usage: scripts/check-imports.sh   (exit 1 and one line per missing dependency when one is missing)
set -euo pipefail
cd "$(dirname "$0")/.."

manifest=$(swift package dump-package)
# Modules the check knows: this package's targets and the products its targets name.
known=$(jq -r '.targets[].name, (.targets[].dependencies[] | .product? // empty | .[0])' <<<"$manifest" | sort -u)

status=0
while IFS=$'\t' read -r name type path; do
    if [ "$path" = "null" ]; then
        if [ "$type" = "test" ]; then path="Tests/$name"; else path="Sources/$name"; fi
    fi
    [ -d "$path" ] || continue
    declared=$(jq -r --arg name "$name" '.targets[] | select(.name == $name) | .dependencies[]
        | (.byName? // .target? // .product? // empty) | .[0]' <<<"$manifest" | sort -u)
    imported=$(find "$path" -name '*.swift' -print0 | xargs -0 -r grep -hE \
        '^[[:space:]]*(@[A-Za-z_]+[[:space:]]+)*((public|package|internal|fileprivate|private)[[:space:]]+)?import[[:space:]]+((struct|class|enum|protocol|typealias|func|let|var)[[:space:]]+)?[A-Za-z_]' \
        | sed -E 's/.*import[[:space:]]+((struct|class|enum|protocol|typealias|func|let|var)[[:space:]]+)?([A-Za-z_][A-Za-z0-9_]*).*/\3/' \
        | sort -u || true)
    for module in $imported; do
        [ "$module" = "$name" ] && continue
        grep -qxF "$module" <<<"$known" || continue
        if ! grep -qxF "$module" <<<"$declared"; then
            echo "Package.swift: target $name imports $module without declaring it a dependency" >&2
            status=1
        fi
    done
done < <(jq -r '.targets[] | select(.type != "system" and .type != "binary" and .type != "plugin")
    | [.name, .type, (.path // "null")] | @tsv' <<<"$manifest")
exit $status
