#!/usr/bin/env bash
# Makes the MPEG-TS media fixtures that the end-to-end tests and benchmarks use, with ffmpeg, into .fixtures/
# (gitignored). Each file is a few seconds of low-resolution test pattern, so this runs in seconds.
# Existing files are kept; --force remakes them all.
#
# Usage: Scripts/make-fixtures.sh [--force]
set -euo pipefail
cd "$(dirname "$0")/.."
out=.fixtures
force=0
for arg in "$@"; do
    case "$arg" in
        --force) force=1 ;;
        *) echo "usage: Scripts/make-fixtures.sh [--force]" >&2; exit 64 ;;
    esac
done
command -v ffmpeg >/dev/null || { echo "make-fixtures: ffmpeg is not installed; run Scripts/deps.sh" >&2; exit 1; }
mkdir -p "$out"

ff() { ffmpeg -hide_banner -loglevel error -nostdin -y "$@"; }
video="testsrc2=size=320x240:rate=25"
audio="sine=frequency=440:sample_rate=48000"
# One PES per audio frame, so ffprobe's packets and our PES packets line up one to one.
ts_opts=(-f mpegts -pes_payload_size 0 -muxrate 0)

# make NAME COMMAND...: runs COMMAND with $tmp as the output, then moves it into place.
make() {
    local name=$1
    shift
    if [[ $force == 0 && -s "$out/$name" ]]; then return; fi
    tmp="$out/.$name.tmp"
    "$@"
    mv "$tmp" "$out/$name"
    echo "make-fixtures: $out/$name" >&2
}

h264_aac() {
    ff -f lavfi -i "$video" -f lavfi -i "$audio" -t 4 -c:v libx264 -preset veryfast -g 25 -bf 2 -pix_fmt yuv420p \
        -c:a aac -b:a 64k -ac 2 "${ts_opts[@]}" "$tmp"
}
hevc_ac3() {
    ff -f lavfi -i "$video" -f lavfi -i "$audio" -t 3 -c:v libx265 -preset ultrafast \
        -x265-params keyint=25:log-level=error -pix_fmt yuv420p -c:a ac3 -b:a 96k "${ts_opts[@]}" "$tmp"
}
programs() {
    ff -f lavfi -i "$video" -f lavfi -i "$audio" -f lavfi -i "testsrc=size=160x120:rate=30" \
        -f lavfi -i "sine=frequency=880:sample_rate=44100" -t 3 \
        -map 0:v -map 1:a -map 2:v -map 3:a -c:v libx264 -preset veryfast -g 25 -pix_fmt yuv420p -c:a aac -b:a 48k \
        -program title=One:st=0:st=1 -program title=Two:st=2:st=3 "${ts_opts[@]}" "$tmp"
}
m2ts() {
    ff -f lavfi -i "$video" -f lavfi -i "$audio" -t 3 -c:v libx264 -preset veryfast -g 25 -pix_fmt yuv420p \
        -c:a aac -b:a 64k "${ts_opts[@]}" -mpegts_m2ts_mode 1 "$tmp"
}
wrap() {
    # Starts 2 s before the 33-bit PTS wrap (2^33 / 90000 = 95443.717688 s) and runs 4 s.
    ff -f lavfi -i "$video" -f lavfi -i "$audio" -t 4 -c:v libx264 -preset veryfast -g 25 -bf 2 -pix_fmt yuv420p \
        -c:a aac -b:a 64k -output_ts_offset 95441.7 "${ts_opts[@]}" "$tmp"
}
mpeg2_multiframe() {
    # MPEG-2 video (a sequence header and GOP before every I picture) and AAC packed several frames to a PES
    # (ffmpeg's default PES size), 4.01 s so the last audio PES holds fewer frames than the ones before it.
    ff -f lavfi -i "$video" -f lavfi -i "$audio" -t 4.01 -c:v mpeg2video -g 12 -bf 2 -q:v 4 \
        -c:a aac -b:a 64k -ac 2 -f mpegts -muxrate 0 "$tmp"
}
cut() {
    # h264_aac.ts cut 100 bytes into a packet.
    local size
    size=$(stat -c %s "$out/h264_aac.ts")
    head -c $(( (size / 188 / 2) * 188 + 100 )) "$out/h264_aac.ts" > "$tmp"
}
garbage() {
    # h264_aac.ts with 1000 bytes of garbage inserted after packet 300 and 77 bytes in the middle of packet 600.
    { head -c $((300 * 188)) "$out/h264_aac.ts"
      head -c 1000 /dev/zero | tr '\0' '\125'
      dd if="$out/h264_aac.ts" iflag=skip_bytes,count_bytes skip=$((300 * 188)) count=$((300 * 188 + 50)) status=none
      head -c 77 /dev/zero | tr '\0' '\252'
      tail -c +$((600 * 188 + 51)) "$out/h264_aac.ts"
    } > "$tmp"
}
concat() {
    # Two recordings joined end to end (`cat a.ts b.ts`): both start at the same time stamps, so they reset 3 s
    # into the file.
    ff -f lavfi -i "$video" -f lavfi -i "$audio" -t 3 -c:v libx264 -preset veryfast -g 25 -bf 2 -pix_fmt yuv420p \
        -c:a aac -b:a 64k -ac 2 "${ts_opts[@]}" "$tmp.a"
    ff -f lavfi -i "smptebars=size=320x240:rate=25" -f lavfi -i "sine=frequency=550:sample_rate=48000" -t 4 \
        -c:v libx264 -preset veryfast -g 25 -bf 2 -pix_fmt yuv420p -c:a aac -b:a 64k -ac 2 "${ts_opts[@]}" "$tmp.b"
    cat "$tmp.a" "$tmp.b" > "$tmp"
    rm -f "$tmp.a" "$tmp.b"
}

make h264_aac.ts h264_aac
make hevc_ac3.ts hevc_ac3
make programs.ts programs
make m2ts.m2ts m2ts
make wrap.ts wrap
make cut.ts cut
make garbage.ts garbage
make mpeg2_multiframe.ts mpeg2_multiframe
make concat.ts concat
