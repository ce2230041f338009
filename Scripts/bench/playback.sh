#!/usr/bin/env bash
# Local playback on a large file, measured beside `cat` in the same run:
#  - time to the first playlist byte after `tsplayer serve` printed its URL (no sidecar: a growing EVENT playlist)
#  - full index throughput (time until the playlist ends) against `cat FILE > /dev/null`
#  - reopen with the sidecar index: time to the first (VOD) playlist byte
#  - time to first byte of 1 MiB Range requests in the middle of the file (median of 21)
#  - fragmented MP4 (`--container fmp4`, cold, no sidecar, the index still running): curl's time for the first video
#    playlist that lists a segment plus that first segment (made on request) over the same connection, median of 5
#    launches (curl's own transfer times: starting curl and date processes on a loaded machine once added 30-80 ms);
#    then every video and audio segment fetched once with the server's resident memory sampled every 0.2 s (the
#    segment cache is bounded at 48 MiB)
# The large file: a small fixture looped with `ffmpeg -stream_loop -c copy` to a piece of about 1.13 GiB, and that
# piece joined end to end (`cat`) to the size asked for (ffmpeg looping 12 GiB took half an hour on a loaded 2-core
# machine), so its time stamps reset at each join, as in a joined recording (the index closes each reset up; the
# playlists have a discontinuity there).
# Variants (VARIANT=...): `ts` (the default: 188-byte packets, all of the above), `m2ts` (192-byte packets, served as
# 188-byte TS made on the fly), `dvb` (204-byte packets, likewise) and `looped` (188-byte packets): these three are
# the piece repeated by `tsrepeat` (tsrepeat.c, built here), its PCR, PTS and DTS moved on by the piece's duration at
# each repetition and its continuity counters running on, so that they are one long recording with continuous time
# stamps in each packet size, the same content, for comparing indexing speed across packet sizes; `programs` (two
# programs, 720p and 360p, each H.264 + AAC, served with `--container ts --program 2`: each segment filtered on the
# fly; the Range figure is then the median time to first byte and to the last byte of 21 whole filtered segments).
# The variants stop before the fMP4 figures. KEEP=0 deletes the large file at the end (it is 12 GiB).
# Usage: [VARIANT=ts|m2ts|dvb|looped|programs] [TSPLAYER=PATH] [KEEP=0] Scripts/bench/playback.sh [SIZE_GIB]
# (default 12)
set -euo pipefail
cd "$(dirname "$0")/../.."
size_gib="${1:-12}"
variant="${VARIANT:-ts}"
work=.bench
mkdir -p "$work"
piece_bytes=1214518728
joined() {  # joined PIECE OUT: OUT is PIECE repeated to at least SIZE_GIB GiB
    local copies=$(( (size_gib * 1073741824 + $(stat -c %s "$1") - 1) / $(stat -c %s "$1") ))
    for _ in $(seq "$copies"); do cat "$1"; done > "$2"
}
if [[ ! -f "$work/piece.ts" ]]; then
    seed="$work/loop-seed.ts"
    ffmpeg -v error -y -f lavfi -i "testsrc2=size=1280x720:rate=30" -f lavfi -i "sine=frequency=440:sample_rate=48000" \
        -t 20 -c:v libx264 -preset ultrafast -g 60 -b:v 8M -c:a aac -f mpegts "$seed"
    ffmpeg -v error -y -stream_loop $(( piece_bytes / $(stat -c %s "$seed") )) -i "$seed" -c copy -f mpegts \
        "$work/piece.ts"
fi
serve_options=()
case "$variant" in
    ts)
        big="$work/big-${size_gib}g.ts"
        [[ -f "$big" ]] || joined "$work/piece.ts" "$big"
        ;;
    m2ts | dvb | looped)
        declare -A packet_sizes=([m2ts]=192 [dvb]=204 [looped]=188)
        declare -A extensions=([m2ts]=m2ts [dvb]=ts [looped]=ts)
        big="$work/big-${size_gib}g-${variant}.${extensions[$variant]}"
        if [[ ! -f "$big" ]]; then
            [[ "$work/tsrepeat" -nt Scripts/bench/tsrepeat.c ]] || cc -O2 -o "$work/tsrepeat" Scripts/bench/tsrepeat.c
            # The piece is 30 fps video: one frame is 3000 ticks of 90 kHz.
            "$work/tsrepeat" "$work/piece.ts" "$big" $(( size_gib * 1073741824 )) "${packet_sizes[$variant]}" 3000
        fi
        ;;
    programs)
        big="$work/big-${size_gib}g-programs.ts"
        if [[ ! -f "$big" ]]; then
            pseed="$work/loop-seed-programs.ts"
            ffmpeg -v error -y -f lavfi -i "testsrc2=size=1280x720:rate=30" \
                -f lavfi -i "sine=frequency=440:sample_rate=48000" -f lavfi -i "testsrc=size=640x360:rate=30" \
                -f lavfi -i "sine=frequency=880:sample_rate=48000" -t 20 -map 0:v -map 1:a -map 2:v -map 3:a \
                -c:v libx264 -preset ultrafast -g 60 -b:v:0 6M -b:v:1 2M -c:a aac \
                -program program_num=1:st=0:st=1 -program program_num=2:st=2:st=3 -f mpegts "$pseed"
            ffmpeg -v error -y -stream_loop $(( piece_bytes / $(stat -c %s "$pseed") )) -i "$pseed" -map 0 -c copy \
                -program program_num=1:st=0:st=1 -program program_num=2:st=2:st=3 -f mpegts \
                "$work/piece-programs.ts"
            joined "$work/piece-programs.ts" "$big"
        fi
        serve_options=(--container ts --program 2)
        ;;
    *) echo "unknown VARIANT $variant" >&2; exit 64 ;;
esac
rm -f "$big.tsindex"
cleanup() { if [[ ${KEEP:-1} == 0 ]]; then rm -f "$big" "$big.tsindex"; fi; }
trap cleanup EXIT
if [[ -n "${TSPLAYER:-}" ]]; then
    tsplayer="$TSPLAYER"
else
    swift build -c release --product tsplayer >/dev/null
    tsplayer="$(swift build -c release --show-bin-path)/tsplayer"
fi
echo "variant: $variant, tsplayer: $tsplayer"
bytes=$(stat -c %s "$big")
echo "file: $big, $bytes bytes"
cat "$big" > /dev/null
t0=$(date +%s.%N); cat "$big" > /dev/null; t1=$(date +%s.%N)
cat_s=$(echo "$t1 - $t0" | bc -l)

serve() {  # starts tsplayer serve; sets $pid, $url (the media playlist) and $launch (seconds from launch to URL)
    local out; out=$(mktemp)
    local start; start=$(date +%s.%N)
    "$tsplayer" serve "$big" "${serve_options[@]}" > "$out" 2>/dev/null & pid=$!
    while [[ ! -s "$out" ]]; do sleep 0.001; done
    launch=$(echo "$(date +%s.%N) - $start" | bc -l)
    url=$(head -1 "$out" | sed 's/master.m3u8$/index.m3u8/')
}

serve
first_launch=$launch
first=$(curl -s -o /dev/null -w '%{time_starttransfer}' "$url")
start=$(date +%s.%N)
until curl -s "$url" | grep -q ENDLIST; do sleep 0.05; done
index_s=$(echo "$(date +%s.%N) - $start" | bc -l)
segments=$(curl -s "$url" | grep -c '^#EXTINF')
playlist_duration=$(curl -s "$url" | grep '^#EXTINF:' | sed 's/#EXTINF:\([0-9.]*\),.*/\1/' | paste -sd+ | bc -l)
ffprobe_duration=$(ffprobe -v error -show_entries format=duration -of csv=p=0 "$big")
media=${url%index.m3u8}media.ts
if [[ $variant == programs ]]; then
    # 21 whole filtered segments from the middle on: time to first byte and to the last byte, medians.
    timings=$(for i in $(seq 21); do
        curl -s -o /dev/null -w '%{time_starttransfer} %{time_total} %{size_download}\n' \
            "${url%index.m3u8}program/$(( segments / 2 + i )).ts"
    done)
    ttfb=$(echo "$timings" | awk '{print $1}' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    segment_total=$(echo "$timings" | awk '{print $2}' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    segment_bytes=$(echo "$timings" | awk '{print $3}' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    master=${url%index.m3u8}master.m3u8
    bandwidth=$(curl -s "$master" | grep -o 'BANDWIDTH=[0-9]*' | head -2 | paste -sd' ')
else
    ttfb=$(for i in $(seq 21); do
        off=$(( bytes / 2 + i * 7340033 ))
        curl -s -o /dev/null -r "$off-$((off + 1048575))" -w '%{time_starttransfer}\n' "$media"
    done | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
fi
kill -INT $pid; wait $pid 2>/dev/null || true
serve
relaunch=$launch
reopen=$(curl -s -o /dev/null -w '%{time_starttransfer}' "$url")
vod=$(curl -s "$url" | grep -c 'PLAYLIST-TYPE:VOD' || true)
kill -INT $pid; wait $pid 2>/dev/null || true

printf 'first playlist byte (cold, growing EVENT playlist): %.1f ms after the URL (launch to URL %.1f ms)\n' \
    "$(echo "$first * 1000" | bc -l)" "$(echo "$first_launch * 1000" | bc -l)"
printf 'full index: %.2f s for %d segments = %.2f GB/s; cat: %.2f s = %.2f GB/s; ratio %.2fx cat\n' \
    "$index_s" "$segments" "$(echo "$bytes / $index_s / 1000000000" | bc -l)" "$cat_s" "$(echo "$bytes / $cat_s / 1000000000" | bc -l)" \
    "$(echo "$cat_s / $index_s" | bc -l)"
printf 'final VOD playlist: %.3f s in %d segments; ffprobe: %.3f s; difference %.3f s (one frame is 0.033 s)\n' \
    "$playlist_duration" "$segments" "$ffprobe_duration" "$(echo "$playlist_duration - $ffprobe_duration" | bc -l)"
printf 'reopen with sidecar: first playlist byte %.1f ms (launch to URL %.1f ms), VOD: %s\n' \
    "$(echo "$reopen * 1000" | bc -l)" "$(echo "$relaunch * 1000" | bc -l)" "$([[ $vod == 1 ]] && echo yes || echo no)"
if [[ $variant == programs ]]; then
    printf 'filtered segment in the middle (median of 21): first byte %.3f ms, whole %.1f ms for %d bytes; master %s\n' \
        "$(echo "$ttfb * 1000" | bc -l)" "$(echo "$segment_total * 1000" | bc -l)" "$segment_bytes" "$bandwidth"
    exit 0
fi
printf '1 MiB Range in the middle: median time to first byte %.3f ms\n' "$(echo "$ttfb * 1000" | bc -l)"
[[ $variant == ts ]] || exit 0

# Fragmented MP4, cold: five launches without a sidecar, each timing one curl (one connection, as a player) that
# fetches the video playlist as soon as it lists a segment and then that segment, while the index runs on; the
# median of the sums of the two transfers' times (curl's own, so that launching processes is not counted).
first_segment_run() {
    rm -f "$big.tsindex"
    local out; out=$(mktemp)
    "$tsplayer" serve "$big" --container fmp4 > "$out" 2>/dev/null & local pid=$!
    while [[ ! -s "$out" ]]; do sleep 0.001; done
    local base; base=$(head -1 "$out" | sed 's/master.m3u8$//')
    until curl -s "${base}video.m3u8" | grep -q '^video/0.m4s'; do sleep 0.001; done
    curl -s -o /dev/null -o /dev/null -w '%{time_total}\n' "${base}video.m3u8" "${base}video/0.m4s" | paste -sd' '
    kill -INT $pid; wait $pid 2>/dev/null || true
    rm -f "$out"
}
first_runs=$(for _ in 1 2 3 4 5; do first_segment_run; done)
first_sums=$(echo "$first_runs" | awk '{print ($1 + $2) * 1000}' | sort -g)
first_segment_ms=$(echo "$first_sums" | sed -n 3p)
first_body_ms=$(echo "$first_runs" | awk '{print $2 * 1000}' | sort -g | sed -n 3p)

rm -f "$big.tsindex"
out=$(mktemp)
"$tsplayer" serve "$big" --container fmp4 > "$out" 2>/dev/null & pid=$!
while [[ ! -s "$out" ]]; do sleep 0.001; done
base=$(head -1 "$out" | sed 's/master.m3u8$//')
until curl -s "${base}video.m3u8" | grep -q ENDLIST; do sleep 0.05; done
rss_start=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
count=$(curl -s "${base}video.m3u8" | grep -c '^video/')
names=$(curl -s "${base}master.m3u8" | grep -o 'audio-[0-9]*' | sort -u)
urls="$work/fmp4-urls.txt"
: > "$urls"
for ((n = 0; n < count; n++)); do
    echo "${base}video/$n.m4s" >> "$urls"
    for name in $names; do echo "${base}$name/$n.m4s" >> "$urls"; done
done
samples="$work/fmp4-rss.txt"
( while kill -0 $pid 2>/dev/null; do awk '/VmRSS/ {print $2}' /proc/$pid/status; sleep 0.2; done ) > "$samples" &
sampler=$!
t2=$(date +%s.%N)
xargs -n 50 curl -s < "$urls" > /dev/null
t3=$(date +%s.%N)
kill $sampler 2>/dev/null || true
rss_max=$(sort -n "$samples" | tail -1)
rss_last=$(tail -1 "$samples")
kill -INT $pid; wait $pid 2>/dev/null || true
rm -f "$out"
printf 'fMP4 first segment (cold, index running; median of 5): playlist then video/0.m4s in %.1f ms (segment alone %.1f ms; all runs: %s ms)\n' \
    "$first_segment_ms" "$first_body_ms" "$(echo "$first_sums" | paste -sd' ')"
printf 'fMP4 every segment (%d video + audio): %.2f s = %.2f GB/s of input; RSS %d MiB before, max %d MiB, last %d MiB (%d samples)\n' \
    "$count" "$(echo "$t3 - $t2" | bc -l)" "$(echo "$bytes / ($t3 - $t2) / 1000000000" | bc -l)" \
    $((rss_start / 1024)) $((rss_max / 1024)) $((rss_last / 1024)) "$(wc -l < "$samples")"
