#!/usr/bin/env bash
# The Apple glue (Packages/TSPlayerKit/Sources/TSPlayerKit/Apple) compiles on Linux as a module of its own against the
# AVFoundation and UniformTypeIdentifiers stand-ins (Tests/AppleStandIn), with warnings as errors; and the check can
# fail: the same sources with one public-facing import made internal (as the glue had it before) must not compile.
# Tests/AppleGlue/README.md says what this proves and what it cannot.
#
# Usage: Scripts/check-apple-glue.sh   (after `swift build --build-tests`; it builds the glue target itself too)
set -euo pipefail
cd "$(dirname "$0")/.."

swift build --target TSPlayerKitAppleGlue -Xswiftc -warnings-as-errors >/dev/null
modules="$(swift build --show-bin-path)/Modules"
glue=Packages/TSPlayerKit/Sources/TSPlayerKit/Apple
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Type-checks the .swift files in a folder as one module, as the glue target compiles them.
typecheck() {
    swiftc -typecheck -swift-version 6 -parse-as-library -warnings-as-errors \
        -enable-upcoming-feature ExistentialAny -enable-upcoming-feature MemberImportVisibility \
        -enable-upcoming-feature InternalImportsByDefault \
        -D TSPLAYERKIT_APPLE_GLUE -module-name TSPlayerKitAppleGlueCheck -I "$modules" "$1"/*.swift
}

mkdir "$work/same" "$work/broken"
cp "$glue"/*.swift "$work/same/"
if ! typecheck "$work/same" >"$work/same.log" 2>&1; then
    cat "$work/same.log" >&2
    echo "check-apple-glue: the glue does not type-check on its own against the stand-ins" >&2
    exit 1
fi

cp "$glue"/*.swift "$work/broken/"
sed -i 's/^    public import AVFoundation$/    import AVFoundation/' "$work/broken/TSPlayerItem.swift"
if cmp -s "$glue/TSPlayerItem.swift" "$work/broken/TSPlayerItem.swift"; then
    echo "check-apple-glue: self-test could not break TSPlayerItem.swift (no 'public import AVFoundation' line)" >&2
    exit 1
fi
if typecheck "$work/broken" >"$work/broken.log" 2>&1; then
    echo "check-apple-glue: self-test failed: a glue whose public API uses an internally imported type compiled" >&2
    exit 1
fi
if ! grep -q "internal" "$work/broken.log"; then
    cat "$work/broken.log" >&2
    echo "check-apple-glue: self-test failed for another reason than the internal import" >&2
    exit 1
fi
echo "check-apple-glue: the glue compiles against the stand-ins; with 'import AVFoundation' it does not ($(grep -m1 -o "error: .*" "$work/broken.log" | cut -c1-110))"
