#!/usr/bin/env bash
# HLSPlaylist and m3u8lint against Python m3u8, side by side in one run, as ratios.
#   1. a 10,000-segment media playlist and a 200-variant multivariant playlist, parsed and resolved in-process
#      (m3u8lint --benchmark) vs m3u8.loads in-process; fastest run and median of each;
#   2. m3u8lint as a whole process vs a whole `python3 -c 'm3u8.load(...)'` process;
#   3. a 100 MB IPTV list streamed through IPTVStreamParser: MB/s and peak memory.
# Usage: Scripts/bench/playlist.sh [workdir]     (needs python3 with m3u8: Scripts/deps.sh)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-/tmp/tsplayerkit-bench-playlist}
helper="$root/Scripts/bench/playlist_bench.py"
python3 -c 'import m3u8' 2>/dev/null || { echo "python3 m3u8 is missing; run Scripts/deps.sh" >&2; exit 1; }

echo "building m3u8lint (release)..." >&2
swift build -c release --package-path "$root" --scratch-path "$work/build" --product m3u8lint >&2
lint="$work/build/release/m3u8lint"
[[ -f "$work/iptv100m.m3u" ]] || python3 "$helper" make "$work"
url="https://cdn.example.com/live/index.m3u8"

ratio() { python3 -c "import sys; print('%.1f' % (float(sys.argv[1]) / float(sys.argv[2])))" "$1" "$2"; }

printf '%-34s %14s %14s %8s\n' "case" "ours min/med" "python min/med" "ratio"
for f in media10k multi200; do
    runs=300; pyruns=30
    [[ $f == multi200 ]] && { runs=3000; pyruns=300; }
    ours=$("$lint" --benchmark $runs --url "$url" "$work/$f.m3u8")
    omin=$(sed -E 's/.*parse\+resolve min ([0-9.]+) ms median ([0-9.]+) ms.*/\1/' <<<"$ours")
    omed=$(sed -E 's/.*parse\+resolve min ([0-9.]+) ms median ([0-9.]+) ms.*/\2/' <<<"$ours")
    read -r pmin pmed < <(python3 "$helper" loads "$work/$f.m3u8" "$url" $pyruns)
    printf '%-34s %6.3f/%-7.3f %6.2f/%-7.2f %7sx (median %sx)\n' "in-process parse+resolve $f" "$omin" "$omed" \
        "$pmin" "$pmed" "$(ratio "$pmin" "$omin")" "$(ratio "$pmed" "$omed")"
done

read -r lmin lmed < <(python3 "$helper" procs 30 "$lint" "$work/media10k.m3u8")
read -r qmin qmed < <(python3 "$helper" procs 10 python3 -c 'import m3u8, sys; m3u8.load(sys.argv[1])' \
    "$work/media10k.m3u8")
printf '%-34s %6.2f/%-7.2f %6.2f/%-7.2f %7sx (median %sx)\n' "process: m3u8lint vs m3u8.load" "$lmin" "$lmed" \
    "$qmin" "$qmed" "$(ratio "$qmin" "$lmin")" "$(ratio "$qmed" "$lmed")"

echo "IPTV 100 MB list, streamed (1 MiB chunks):"
"$lint" --iptv-json --benchmark 3 "$work/iptv100m.m3u"
