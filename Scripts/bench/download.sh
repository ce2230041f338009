#!/usr/bin/env bash
# HLSDownload benchmark: `tsplayer download` vs `ffmpeg -i URL -c copy` vs yt-dlp, all fetching the same
# ffmpeg-made TS VOD from one nginx on loopback in the same run; then again with nginx throttling each connection
# (`limit_rate 2m`). Prints a table of wall-clock seconds, ratios, and our peak memory; checks our output is
# byte-identical to the origin.
#
# Usage: Scripts/bench/download.sh [--seconds N]   (default 120 s of 1280x720 at 10 fps in 0.2 s segments: 600
#        segments; BENCH_CRF sets the x264 quality, lower is bigger; the default makes about 400 MB; BENCH_RUNS
#        (default 3) runs of each tool on the unthrottled origin, the fastest counts, so a busy machine's noise
#        weighs less; the throttled case runs once; TSPLAYER=PATH times that binary instead of building one)
# Needs: swift, ffmpeg, nginx, python3 (yt-dlp is installed with pip when missing).
set -euo pipefail
cd "$(dirname "$0")/../.."
source Scripts/bench/nginx-origin.sh

seconds=120
[[ "${1:-}" == "--seconds" ]] && seconds="$2"
crf="${BENCH_CRF:-24}"
work="$(mktemp -d /tmp/download-bench.XXXXXX)"
chmod 755 "$work"  # nginx workers run as an unprivileged user
port=$((20000 + RANDOM % 30000))
nginx_pid=""
cleanup() {
    [[ -n "$nginx_pid" ]] && kill "$nginx_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

command -v nginx >/dev/null || PATH="$PATH:/usr/sbin"
for tool in ffmpeg nginx python3; do
    command -v "$tool" >/dev/null || { echo "download.sh: $tool is missing (Scripts/deps.sh --bench)" >&2; exit 1; }
done
if ! python3 -m yt_dlp --version >/dev/null 2>&1; then
    echo "download.sh: installing yt-dlp with pip" >&2
    python3 -m pip install -q yt-dlp >&2
fi

# TSPLAYER names a tsplayer to time instead of building this tree's (e.g. a build of an older commit, to compare).
ours="${TSPLAYER:-}"
if [[ -z "$ours" ]]; then
    echo "building tsplayer (release)..." >&2
    swift build -c release --scratch-path /tmp/build-bench-download --product tsplayer >&2
    ours=/tmp/build-bench-download/release/tsplayer
fi

echo "making the stream (${seconds} s)..." >&2
mkdir -p "$work/www/vod" "$work/tmp"
ffmpeg -nostdin -loglevel error -f lavfi -i "testsrc2=size=1280x720:rate=10" -t "$seconds" \
    -vf "noise=alls=12:allf=t" -c:v libx264 -preset ultrafast -crf "$crf" -g 2 \
    -f hls -hls_time 0.2 -hls_playlist_type vod -hls_segment_filename "$work/www/vod/s%04d.ts" "$work/www/vod/index.m3u8"
segments=$(grep -c '^#EXTINF' "$work/www/vod/index.m3u8")
bytes=$(cat "$work"/www/vod/*.ts | wc -c)

# sendfile would send a whole segment at once: /slow/ turns it off.
nginx_origin_config "$work" "$port" \
    '    location /slow/ { alias '"$work"'/www/; limit_rate 2m; sendfile off; }' >"$work/nginx.conf"
nginx_origin_start "$work" "http://127.0.0.1:$port/vod/index.m3u8"

now() { date +%s.%N; }
elapsed() { python3 -c "print(f'{$2 - $1:.2f}')"; }

# run NAME PREFIX: times one tool fetching http://127.0.0.1:$port/PREFIX/index.m3u8; sets $result.
run() {
    local name="$1" url="http://127.0.0.1:$port/$2/index.m3u8" out="$work/out-$1-$3"
    rm -rf "$out"; mkdir -p "$out"
    local start end
    start=$(now)
    case "$name" in
        ours) /usr/bin/time -f "%M" -o "$out.rss" "$ours" download "$url" -o "$out" --id bench >/dev/null 2>&1 ;;
        ffmpeg) ffmpeg -nostdin -loglevel error -i "$url" -c copy -f mpegts "$out/all.ts" ;;
        yt-dlp) python3 -m yt_dlp -q --no-warnings --no-part -o "$out/all.%(ext)s" "$url" >/dev/null 2>&1 ;;
    esac
    end=$(now)
    result=$(elapsed "$start" "$end")
}

declare -A times
runs="${BENCH_RUNS:-3}"
rss_kb=0
for mode in vod slow; do
    path=$([[ $mode == vod ]] && echo vod || echo slow/vod)
    count=$([[ $mode == vod ]] && echo "$runs" || echo 1)
    for _ in $(seq "$count"); do
        for tool in ours ffmpeg yt-dlp; do
            run "$tool" "$path" "$mode"
            best=${times[$tool-$mode]:-}
            if [[ -z "$best" ]] || python3 -c "import sys; sys.exit(0 if $result < $best else 1)"; then
                times[$tool-$mode]=$result
            fi
            if [[ $tool == ours ]]; then
                rss=$(cat "$work/out-ours-$mode.rss")
                if (( rss > rss_kb )); then rss_kb=$rss; fi
            fi
            echo "  $mode $tool: ${result}s" >&2
        done
    done
done

# Our output must be the origin's bytes.
identical=yes
for f in "$work"/www/vod/s*.ts; do
    n=$(basename "$f" .ts); n=$((10#${n#s}))
    cmp -s "$f" "$work/out-ours-vod/bench/seg$(printf %05d "$n").ts" || identical=no
done

ratio() { python3 -c "print(f'{$1 / $2:.2f}x')"; }
printf '\nstream: %d segments, %d bytes (%.0f MB); nginx on loopback, same run\n' "$segments" "$bytes" \
    "$(python3 -c "print($bytes/1e6)")"
printf '%-28s %10s %10s %10s %14s %14s\n' "origin" "ours (s)" "ffmpeg (s)" "yt-dlp (s)" "ffmpeg/ours" "yt-dlp/ours"
for mode in vod slow; do
    label=$([[ $mode == vod ]] && echo "loopback" || echo "limit_rate 2m per conn")
    printf '%-28s %10s %10s %10s %14s %14s\n' "$label" "${times[ours-$mode]}" "${times[ffmpeg-$mode]}" \
        "${times[yt-dlp-$mode]}" "$(ratio "${times[ffmpeg-$mode]}" "${times[ours-$mode]}")" \
        "$(ratio "${times[yt-dlp-$mode]}" "${times[ours-$mode]}")"
done
printf 'loopback: fastest of %d runs each; ours: peak RSS %d MB (largest of all runs)\n' "$runs" "$((rss_kb / 1024))"
printf 'ours: output byte-identical to the origin: %s\n' "$identical"
