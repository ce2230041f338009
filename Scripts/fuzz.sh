#!/usr/bin/env bash
# Runs one libFuzzer target of the nested fuzz package (Tests/Fuzz) for SECONDS seconds.
# The working corpus lives in Tests/Fuzz/.build/corpus/NAME (gitignored), seeded from the media fixtures and
# Tests/Fuzz/Crashers/NAME; crashing inputs are written to Tests/Fuzz/Crashers/NAME/, where the MPEGTS unit
# tests replay them (commit them with the fix).
# Usage: Scripts/fuzz.sh NAME SECONDS      e.g. Scripts/fuzz.sh FuzzDemuxer 60
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $# -ne 2 || ! $2 =~ ^[0-9]+$ ]]; then
    echo "usage: Scripts/fuzz.sh NAME SECONDS   (NAME: one of the fuzzers in Tests/Fuzz/Package.swift)" >&2
    exit 64
fi
name=$1
seconds=$2
[[ -f "Tests/Fuzz/Sources/$name/main.swift" ]] || { echo "fuzz: no fuzzer named $name" >&2; exit 64; }
export SWIFT_BACKTRACE=enable=no
swift build -c release --package-path Tests/Fuzz --product "$name" -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING \
    2>&1 | grep -vE 'warning: Cannot export local symbol|^\[[0-9]+/[0-9]+\]' || true
binary=$(swift build -c release --package-path Tests/Fuzz --show-bin-path)/$name
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
echo "fuzz: running $name for $seconds s (corpus $corpus, crashers $crashers)" >&2
dictionary=()
for candidate in "Tests/Fuzz/Sources/$name"/*.dict; do
    [[ -f $candidate ]] && dictionary=(-dict="$candidate")
done
"$binary" -max_total_time="$seconds" -max_len=8192 -artifact_prefix="$crashers/" -print_final_stats=1 \
    "${dictionary[@]}" "$corpus"
