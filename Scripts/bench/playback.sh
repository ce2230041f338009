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
# The large file is made by looping a small fixture with `ffmpeg -stream_loop -c copy`.
# Usage: Scripts/bench/playback.sh [SIZE_GIB]   (default 12)
set -euo pipefail
cd "$(dirname "$0")/../.."
size_gib="${1:-12}"
work=.bench
mkdir -p "$work"
big="$work/big-${size_gib}g.ts"
seed="$work/loop-seed.ts"
if [[ ! -f "$big" ]]; then
    ffmpeg -v error -y -f lavfi -i "testsrc2=size=1280x720:rate=30" -f lavfi -i "sine=frequency=440:sample_rate=48000" \
        -t 20 -c:v libx264 -preset ultrafast -g 60 -b:v 8M -c:a aac -f mpegts "$seed"
    seed_bytes=$(stat -c %s "$seed")
    loops=$(( size_gib * 1073741824 / seed_bytes ))
    ffmpeg -v error -y -stream_loop "$loops" -i "$seed" -c copy -f mpegts "$big"
fi
rm -f "$big.tsindex"
swift build -c release --product tsplayer >/dev/null
tsplayer="$(swift build -c release --show-bin-path)/tsplayer"
bytes=$(stat -c %s "$big")
echo "file: $big, $bytes bytes"
cat "$big" > /dev/null
t0=$(date +%s.%N); cat "$big" > /dev/null; t1=$(date +%s.%N)
cat_s=$(echo "$t1 - $t0" | bc -l)

serve() {  # starts tsplayer serve; sets $pid, $url (the media playlist) and $launch (seconds from launch to URL)
    local out; out=$(mktemp)
    local start; start=$(date +%s.%N)
    "$tsplayer" serve "$big" > "$out" 2>/dev/null & pid=$!
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
ttfb=$(for i in $(seq 21); do
    off=$(( bytes / 2 + i * 7340033 ))
    curl -s -o /dev/null -r "$off-$((off + 1048575))" -w '%{time_starttransfer}\n' "$media"
done | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
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
printf '1 MiB Range in the middle: median time to first byte %.3f ms\n' "$(echo "$ttfb * 1000" | bc -l)"

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
