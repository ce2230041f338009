#!/usr/bin/env bash
# Runs one libFuzzer target of the nested fuzz package (Tests/Fuzz) for SECONDS seconds.
# The working corpus lives in Tests/Fuzz/.build/corpus/NAME (gitignored), seeded from the media fixtures and
# Tests/Fuzz/Crashers/NAME; crashing inputs are written to Tests/Fuzz/Crashers/NAME/, where the MPEGTS unit
# tests replay them (commit them with the fix).
# Usage: Scripts/fuzz.sh NAME SECONDS      e.g. Scripts/fuzz.sh FuzzDemuxer 60
#        Scripts/fuzz.sh --smoke SECONDS    every fuzzer for SECONDS each, one per core at a time (Scripts/test.sh);
#                                          fails on any crash
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $# -ne 2 || ! $2 =~ ^[0-9]+$ ]]; then
    echo "usage: Scripts/fuzz.sh NAME|--smoke SECONDS   (NAME: one of the fuzzers in Tests/Fuzz/Package.swift)" >&2
    exit 64
fi
export SWIFT_BACKTRACE=enable=no
build() {  # builds the named products (all of them with no argument) with libFuzzer and ASan; fails when the build
    # does, so that a failed build never leaves an older binary to be run in its place (Scripts/swift-build.sh
    # tries a failed build once more without its plan).
    local products=() log status=0
    for product in "$@"; do products+=(--product "$product"); done
    log=$(Scripts/swift-build.sh -c release --package-path Tests/Fuzz "${products[@]}" \
        -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING) || status=$?
    grep -vE 'warning: Cannot export local symbol|^\[[0-9]+/[0-9]+\]' <<<"$log" || true
    if [[ $status != 0 ]]; then
        echo "fuzz: the fuzz package did not build (swift build exited $status)" >&2
        return "$status"
    fi
}
if [[ $1 == --smoke ]]; then
    # One build, then the fuzzers a few at a time (one per core), each run by this script with the build skipped.
    build || exit 1
    FUZZ_BIN_PATH=$(swift build -c release --package-path Tests/Fuzz --show-bin-path)
    export FUZZ_BIN_PATH
    logs=$(mktemp -d)
    names=()
    for main in Tests/Fuzz/Sources/*/main.swift; do names+=("$(basename "$(dirname "$main")")"); done
    jobs=$(nproc 2>/dev/null || echo 2)
    for name in "${names[@]}"; do
        while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
        { Scripts/fuzz.sh "$name" "$2" >"$logs/$name.log" 2>&1; echo $? >"$logs/$name.status"; } &
    done
    wait
    failed=0
    for name in "${names[@]}"; do
        log=$(<"$logs/$name.log")
        if [[ $(<"$logs/$name.status") != 0 ]]; then
            echo "$log" | tail -30 >&2
            echo "fuzz: $name failed its smoke run" >&2
            failed=1
        else
            echo "fuzz: $name: $(grep -oE 'stat::number_of_executed_units: *[0-9]+' <<<"$log" | grep -oE '[0-9]+$') runs, \
$(grep -oE 'cov: [0-9]+' <<<"$log" | tail -1)"
        fi
    done
    rm -rf "$logs"
    exit "$failed"
fi
name=$1
seconds=$2
[[ -f "Tests/Fuzz/Sources/$name/main.swift" ]] || { echo "fuzz: no fuzzer named $name" >&2; exit 64; }
if [[ -z ${FUZZ_BIN_PATH:-} ]]; then  # set by --smoke, which has built every fuzzer
    build "$name" || exit 1
    FUZZ_BIN_PATH=$(swift build -c release --package-path Tests/Fuzz --show-bin-path)
fi
binary=$FUZZ_BIN_PATH/$name
[[ -x $binary ]] || { echo "fuzz: build of $name failed" >&2; exit 1; }

corpus=Tests/Fuzz/.build/corpus/$name
crashers=Tests/Fuzz/Crashers/$name
mkdir -p "$corpus" "$crashers"
cp -n "$crashers"/* "$corpus"/ 2>/dev/null || true
if [[ $name == FuzzDemuxer ]]; then
    Scripts/make-fixtures.sh >/dev/null 2>&1 || true
    for fixture in .fixtures/*.ts .fixtures/*.m2ts; do
        [[ -f $fixture ]] && head -c 6000 "$fixture" > "$corpus/seed-$(basename "$fixture")"
    done
fi
seed() {  # copies files (up to 8 KiB each, the fuzzers' max_len) into the corpus
    for file in "$@"; do [[ -f $file ]] && head -c 8192 "$file" >"$corpus/seed-$(basename "$file")"; done
}
case $name in
    PlaylistFuzzer) seed Packages/HLSPlaylist/Tests/HLSPlaylistTests/Fixtures/*/*.m3u8* ;;
    AdFilterFuzzer) seed Packages/HLSAdFilter/Tests/HLSAdFilterTests/Fixtures/*.m3u8 ;;
    TaskStoreFuzzer)
        printf '%s' '{"version":1,"nextOrder":2,"tasks":[{"id":"a","url":"http://h/i.m3u8","folder":"a","state":"paused","order":1}]}' \
            >"$corpus/seed-tasks.json" ;;
    RangeHeaderFuzzer) printf '\x10\x00bytes=0-99,200-,-5' >"$corpus/seed-range" ;;
    HTTPResponseFuzzer)
        printf '\x12\x34HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n5;x=1\r\nhello\r\n0\r\nT: v\r\n\r\n' \
            >"$corpus/seed-chunked"
        printf '\x00\x07HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nabc' >"$corpus/seed-length" ;;
    DownloadPlannerFuzzer)
        seed Packages/HLSPlaylist/Tests/HLSPlaylistTests/Fixtures/*/*.m3u8*
        printf '#EXTM3U\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="en",URI="a/en.m3u8"\n#EXT-X-STREAM-INF:BANDWIDTH=1,AUDIO="a"\nv/index.m3u8\n\0#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXT-X-KEY:METHOD=AES-128,URI="k.key"\n#EXT-X-MAP:URI="init.mp4",BYTERANGE="100@0"\n#EXT-X-BYTERANGE:500@100\n#EXTINF:4,\nseg.m4s\n#EXTINF:4,\n../s2.ts\n#EXT-X-ENDLIST\n' \
            >"$corpus/seed-multivariant" ;;
esac
echo "fuzz: running $name for $seconds s (corpus $corpus, crashers $crashers)" >&2
dictionary=()
for candidate in "Tests/Fuzz/Sources/$name"/*.dict; do
    [[ -f $candidate ]] && dictionary=(-dict="$candidate")
done
"$binary" -max_total_time="$seconds" -max_len=8192 -artifact_prefix="$crashers/" -print_final_stats=1 \
    "${dictionary[@]}" "$corpus"
