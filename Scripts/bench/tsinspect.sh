#!/usr/bin/env bash
# Benchmarks tsinspect against a plain C loop and ffprobe on the same ~1 GiB file, in one run, and prints ratios.
#   1. C loop counting packets per PID          vs  tsinspect FILE          (target: tsinspect <= 1.5x)
#   2. C loop printing every PES's PTS/DTS      vs  tsinspect --pts FILE    (target: tsinspect <= 2x)
#   3. ffprobe -show_entries packet=pts,dts     (the peer most people would reach for)
#   4. tsinspect --probe (head and tail only)
# The file is made once by looping .fixtures/h264_aac.ts with ffmpeg (-stream_loop, -c copy) into .bench/.
# Usage: Scripts/bench/tsinspect.sh [SIZE_MIB]   (default 1024)
set -euo pipefail
cd "$(dirname "$0")/../.."
size_mib=${1:-1024}
bench=.bench
mkdir -p "$bench"
Scripts/make-fixtures.sh
big="$bench/loop-${size_mib}m.ts"
if [[ ! -s "$big" ]]; then
    fixture=.fixtures/h264_aac.ts
    loops=$(( size_mib * 1024 * 1024 / $(stat -c %s "$fixture") ))
    echo "bench: making $big ($loops loops of $fixture)" >&2
    ffmpeg -hide_banner -loglevel error -nostdin -y -stream_loop "$loops" -i "$fixture" -map 0 -c copy \
        -f mpegts "$big.tmp"
    mv "$big.tmp" "$big"
fi
echo "bench: building release tsinspect and the C loop" >&2
swift build -c release --product tsinspect --scratch-path /tmp/build-bench-tsinspect >/dev/null
tsinspect=/tmp/build-bench-tsinspect/release/tsinspect
cc -O2 -o "$bench/tspidcount" Scripts/bench/tspidcount.c
cat "$big" >/dev/null  # page cache

# best RUNS COMMAND...: the fastest wall time in seconds over RUNS runs (stdout discarded).
best() {
    local runs=$1
    shift
    local best_ns=
    for ((i = 0; i < runs; i++)); do
        local start end
        start=$(date +%s%N)
        "$@" >/dev/null 2>&1 || true
        end=$(date +%s%N)
        local ns=$((end - start))
        if [[ -z $best_ns || $ns -lt $best_ns ]]; then best_ns=$ns; fi
    done
    awk -v ns="$best_ns" 'BEGIN { printf "%.4f", ns / 1e9 }'
}

bytes=$(stat -c %s "$big")
c_count=$(best 5 "$bench/tspidcount" count "$big")
ts_summary=$(best 5 "$tsinspect" "$big")
c_pts=$(best 5 "$bench/tspidcount" pts "$big")
ts_pts=$(best 5 "$tsinspect" --pts "$big")
ff_pts=$(best 1 ffprobe -v error -show_entries packet=pts,dts -of csv "$big")
ts_probe=$(best 5 "$tsinspect" --probe "$big")
ff_probe=$(best 5 ffprobe -v error -show_entries format=duration -of csv "$big")

report() { awk -v name="$1" -v t="$2" -v b="$bytes" 'BEGIN { printf "  %-44s %8.3f s  %7.2f GB/s\n", name, t, b / t / 1e9 }'; }
ratio() { awk -v a="$2" -v b="$3" -v label="$1" 'BEGIN { printf "  %-44s %6.2fx\n", label, a / b }'; }
echo "tsinspect benchmark: $big ($bytes bytes, in page cache; best of 5, ffprobe packet dump once)"
report "C loop: count packets per PID" "$c_count"
report "tsinspect FILE (summary)" "$ts_summary"
report "C loop: print PES PTS/DTS" "$c_pts"
report "tsinspect --pts FILE" "$ts_pts"
report "ffprobe -show_entries packet=pts,dts" "$ff_pts"
awk -v t="$ts_probe" 'BEGIN { printf "  %-44s %8.4f s\n", "tsinspect --probe FILE", t }'
awk -v t="$ff_probe" 'BEGIN { printf "  %-44s %8.4f s\n", "ffprobe -show_entries format=duration", t }'
echo "ratios (lower is better for tsinspect)"
ratio "summary / C count        (target <= 1.5)" "$ts_summary" "$c_count"
ratio "--pts / C pts            (target <= 2.0)" "$ts_pts" "$c_pts"
ratio "ffprobe packet dump / summary" "$ff_pts" "$ts_summary"
ratio "ffprobe packet dump / --pts" "$ff_pts" "$ts_pts"
ratio "ffprobe format probe / --probe" "$ff_probe" "$ts_probe"
