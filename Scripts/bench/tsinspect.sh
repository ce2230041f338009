#!/usr/bin/env bash
# Benchmarks tsinspect against a plain C loop and ffprobe on the same ~1 GiB file, in one run, and prints ratios.
#   1. C loop counting packets per PID          vs  tsinspect FILE          (target: tsinspect <= 1.5x)
#   2. C loop printing every PES's PTS/DTS      vs  tsinspect --pts FILE    (target: tsinspect <= 2x)
#   3. ffprobe -show_entries packet=pts,dts     (the peer most people would reach for)
#   4. tsinspect --probe (head and tail only) vs ffprobe's format probe; tsinspect --probe on a sparse 12 GiB file,
#      as a process and measured inside the process (--probe --timing: the probe call alone, target < 10 ms)
#   5. peak memory of the summary (flat: no growth with file size)
#   6. the same ratios in CPU time (user + sys, median of 7), steadier than wall time on a shared machine
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
swift build -c release --product tsinspect --scratch-path /tmp/build-bench-tsinspect >/tmp/bench-tsinspect-build.log 2>&1 \
    || { cat /tmp/bench-tsinspect-build.log >&2; exit 1; }
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

# A sparse 12 GiB file: the fixture at the start, 10 hours later another clip at the end, holes between.
sparse="$bench/sparse-12g.ts"
if [[ ! -s "$sparse" ]]; then
    ffmpeg -hide_banner -loglevel error -nostdin -y -f lavfi -i "testsrc2=size=320x240:rate=25" \
        -f lavfi -i "sine=frequency=440:sample_rate=48000" -t 2 -c:v libx264 -preset veryfast -g 25 \
        -pix_fmt yuv420p -c:a aac -output_ts_offset 36001.4587 -f mpegts -pes_payload_size 0 -muxrate 0 \
        "$bench/tail.ts"
    truncate -s $((12 * 1024 * 1024 * 1024)) "$sparse.tmp"
    dd if=.fixtures/h264_aac.ts of="$sparse.tmp" conv=notrunc status=none
    tail_size=$(stat -c %s "$bench/tail.ts")
    dd if="$bench/tail.ts" of="$sparse.tmp" bs=188 seek=$(( (12 * 1024 * 1024 * 1024 - tail_size) / 188 )) \
        conv=notrunc status=none
    mv "$sparse.tmp" "$sparse"
fi

# cpu RUNS COMMAND...: the median user+sys CPU seconds over RUNS runs (less sensitive than wall time to other
# processes on a shared machine; the copy out of the page cache is the sys part for both sides).
cpu() {
    local runs=$1
    shift
    for ((i = 0; i < runs; i++)); do
        /usr/bin/time -o /tmp/bench-tsinspect-time -f "%U %S" "$@" >/dev/null 2>/dev/null || true
        awk '{ print $1 + $2 }' /tmp/bench-tsinspect-time
    done | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

bytes=$(stat -c %s "$big")
c_count=$(best 5 "$bench/tspidcount" count "$big")
ts_summary=$(best 5 "$tsinspect" "$big")
c_pts=$(best 5 "$bench/tspidcount" pts "$big")
ts_pts=$(best 5 "$tsinspect" --pts "$big")
ff_pts=$(best 1 ffprobe -v error -show_entries packet=pts,dts -of csv "$big")
ts_probe=$(best 5 "$tsinspect" --probe "$big")
ff_probe=$(best 5 ffprobe -v error -show_entries format=duration -of csv "$big")
ts_probe_sparse=$(best 5 "$tsinspect" --probe "$sparse")
# In-process: the fastest of 5 runs of the probe call itself (no process start), from --probe --timing --json.
probe_seconds() { "$tsinspect" --probe --timing --json "$1" | awk -F': ' '/"probeSeconds"/ { gsub(",", "", $2); print $2 }'; }
ts_probe_inproc=$(for _ in 1 2 3 4 5; do probe_seconds "$sparse"; done | sort -g | head -1)
ts_probe_inproc_big=$(for _ in 1 2 3 4 5; do probe_seconds "$big"; done | sort -g | head -1)
cpu_c_count=$(cpu 7 "$bench/tspidcount" count "$big")
cpu_summary=$(cpu 7 "$tsinspect" "$big")
cpu_c_pts=$(cpu 7 "$bench/tspidcount" pts "$big")
cpu_pts=$(cpu 7 "$tsinspect" --pts "$big")
rss_summary=$(/usr/bin/time -f %M "$tsinspect" "$big" 2>&1 >/dev/null | tail -1)
rss_small=$(/usr/bin/time -f %M "$tsinspect" .fixtures/h264_aac.ts 2>&1 >/dev/null | tail -1)

report() { awk -v name="$1" -v t="$2" -v b="$bytes" 'BEGIN { printf "  %-44s %8.3f s  %7.2f GB/s\n", name, t, b / t / 1e9 }'; }
ratio() { awk -v a="$2" -v b="$3" -v label="$1" 'BEGIN { printf "  %-44s %6.2fx\n", label, a / b }'; }
echo "tsinspect benchmark: $big ($bytes bytes, in page cache; best of 5, ffprobe packet dump once)"
report "C loop: count packets per PID" "$c_count"
report "tsinspect FILE (summary)" "$ts_summary"
report "C loop: print PES PTS/DTS" "$c_pts"
report "tsinspect --pts FILE" "$ts_pts"
report "ffprobe -show_entries packet=pts,dts" "$ff_pts"
awk -v t="$ts_probe" 'BEGIN { printf "  %-44s %8.4f s\n", "tsinspect --probe FILE", t }'
awk -v t="$ff_probe" 'BEGIN { printf "  %-44s %8.4f s\n", "ffprobe -show_entries format=duration FILE", t }'
awk -v t="$ts_probe_sparse" 'BEGIN { printf "  %-44s %8.4f s\n", "tsinspect --probe (12 GiB sparse file)", t }'
awk -v t="$ts_probe_inproc" 'BEGIN { printf "  %-44s %8.3f ms\n", "  in process (12 GiB, --timing; target < 10)", t * 1000 }'
awk -v t="$ts_probe_inproc_big" 'BEGIN { printf "  %-44s %8.3f ms\n", "  in process (bench file, --timing)", t * 1000 }'
echo "  --probe duration of the 12 GiB file: $("$tsinspect" --probe --json "$sparse" | grep durationSeconds | tr -d ' ,')"
echo "  (ffprobe is not run on the sparse file: it reads through the holes, minutes for 12 GiB)"
echo "  peak RSS of the summary: $rss_summary KiB on $bytes bytes, $rss_small KiB on the 247 KB fixture"
echo "ratios (lower is better for tsinspect)"
ratio "summary / C count        (target <= 1.5)" "$ts_summary" "$c_count"
ratio "--pts / C pts            (target <= 2.0)" "$ts_pts" "$c_pts"
ratio "summary / C count, CPU time (median of 7: $cpu_summary s / $cpu_c_count s)" "$cpu_summary" "$cpu_c_count"
ratio "--pts / C pts, CPU time (median of 7: $cpu_pts s / $cpu_c_pts s)" "$cpu_pts" "$cpu_c_pts"
ratio "ffprobe packet dump / summary" "$ff_pts" "$ts_summary"
ratio "ffprobe packet dump / --pts" "$ff_pts" "$ts_pts"
ratio "ffprobe format probe / --probe" "$ff_probe" "$ts_probe"
