#!/usr/bin/env bash
# Proves FileRange, MPEGTS, FragmentedMP4 and HTTPWire link no Foundation library, and HLSPlaylist at most FoundationEssentials, by building
# tiny executables (Tests/LinkageTest) and reading the libraries they link. A canary that imports Foundation must be
# seen linking it, which proves the check can fail.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch="${LINKAGE_SCRATCH:-.build/linkage}"
if ! log="$(Scripts/swift-build.sh --package-path Tests/LinkageTest --scratch-path "$scratch" -Xswiftc -warnings-as-errors)"
then
    echo "$log" | grep -E 'error|warning' | head -20 >&2
    echo "check-linkage: the linkage executables did not build" >&2
    exit 1
fi
bin="$(swift build --package-path Tests/LinkageTest --scratch-path "$scratch" --show-bin-path)"

linked() {  # the Foundation-family libraries an executable links
    if [[ "$(uname)" == Darwin ]]; then
        otool -L "$1" | awk '{print $1}' | grep -oE '(Foundation[A-Za-z]*|_Foundation[A-Za-z]*)' | sort -u || true
    else
        readelf -d "$1" | grep NEEDED | grep -oE 'lib_?Foundation[A-Za-z]*' | sed 's/^lib//' | sort -u || true
    fi
}

fail=0
canary="$(linked "$bin/LinkageCanary")"
if ! grep -qx 'Foundation' <<<"$canary"; then
    echo "check-linkage: the canary imports Foundation but the check did not see it linked; the check is broken" >&2
    fail=1
fi
core="$(linked "$bin/LinkageCore")"
if [[ -n "$core" ]]; then
    echo "check-linkage: FileRange + MPEGTS + FragmentedMP4 + HTTPWire link Foundation libraries: $(echo $core)" >&2
    fail=1
fi
playlist="$(linked "$bin/LinkagePlaylist" | grep -vx 'FoundationEssentials' | grep -vx '_FoundationCShims' || true)"
if [[ -n "$playlist" ]]; then
    echo "check-linkage: HLSPlaylist links more than FoundationEssentials: $(echo $playlist)" >&2
    fail=1
fi
# Foundation in the HTTP stack: the wire layer, the server and the client import none, except the client's URLSession
# backend (https); URLSession appears nowhere else in the download manager, the umbrella or m3u8lint.
foundation_users="$(grep -rlE '^[[:space:]]*(public |internal |@preconcurrency )*import (Foundation|FoundationNetworking|FoundationEssentials)$' \
    Packages/HTTPWire/Sources Packages/LoopbackHTTP/Sources Packages/HTTPClient/Sources \
    | grep -vx 'Packages/HTTPClient/Sources/HTTPClient/URLSessionBackend.swift' || true)"
if [[ -n "$foundation_users" ]]; then
    echo "check-linkage: only HTTPClient's URLSessionBackend.swift may import Foundation in the HTTP stack: $(echo $foundation_users)" >&2
    fail=1
fi
session_users="$(grep -rnw 'URLSession' Packages/HLSDownload/Sources Packages/TSPlayback/Sources Packages/HLSProxy/Sources \
    Packages/MediaCache/Sources Packages/TSPlayerKit/Sources Tools/m3u8lint \
    | grep -vE '^[^:]+:[0-9]+:[[:space:]]*//' | cut -d: -f1 | sort -u || true)"
if [[ -n "$session_users" ]]; then
    echo "check-linkage: URLSession belongs to HTTPClient only: $(echo $session_users)" >&2
    fail=1
fi
[[ $fail == 0 ]] && echo "check-linkage: FileRange, MPEGTS, FragmentedMP4 and HTTPWire link no Foundation; HLSPlaylist at most FoundationEssentials (canary seen); in the HTTP stack only HTTPClient's URLSession backend imports Foundation"
exit $fail
