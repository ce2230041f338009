#!/usr/bin/env bash
# HLSPlaylist and m3u8lint against Python m3u8, side by side in one run, as ratios.
#   1. a 10,000-segment media playlist and a 200-variant multivariant playlist, parsed and resolved in-process
#      (m3u8lint --benchmark) vs m3u8.loads in-process; fastest run and median of each; then the same 10,000
#      segments in the shapes of issue 17: dot segments (../media/seg_00001.ts), absolute URIs, query strings, a
#      PROGRAM-DATE-TIME on every segment, byte ranges, keys, and "realistic" (dates, dots and queries together);
#      each shape twice: parse+resolve (URIs left as views, as m3u8.loads leaves absolute_uri unbuilt) and with
#      every resolved URI read (absolute_uri read in Python);
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
[[ -f "$work/iptv100m.m3u" && -f "$work/realistic.m3u8" ]] || python3 "$helper" make "$work"
url="https://cdn.example.com/live/v1/index.m3u8"

ratio() { python3 -c "import sys; print('%.1f' % (float(sys.argv[1]) / float(sys.argv[2])))" "$1" "$2"; }

printf '%-34s %14s %14s %8s\n' "case" "ours min/med" "python min/med" "ratio"
shortfalls=()
for f in media10k multi200 dots absolute query dates byteranges keys realistic; do
    runs=300; pyruns=30
    [[ $f == multi200 ]] && { runs=3000; pyruns=300; }
    ours=$("$lint" --benchmark $runs --url "$url" "$work/$f.m3u8")
    for mode in resolve uris; do
        if [[ $mode == resolve ]]; then
            pattern='.*parse\+resolve min ([0-9.]+) ms median ([0-9.]+) ms.*'
            label="parse+resolve $f"
            read -r pmin pmed < <(python3 "$helper" loads "$work/$f.m3u8" "$url" $pyruns)
        else
            pattern='.*with uris min ([0-9.]+) ms median ([0-9.]+) ms.*'
            label="  + every URI $f"
            read -r pmin pmed < <(python3 "$helper" loads "$work/$f.m3u8" "$url" $pyruns uris)
        fi
        omin=$(sed -E "s/$pattern/\1/" <<<"$ours")
        omed=$(sed -E "s/$pattern/\2/" <<<"$ours")
        r=$(ratio "$pmin" "$omin")
        printf '%-34s %6.3f/%-7.3f %6.2f/%-7.2f %7sx (median %sx)\n' "$label" "$omin" "$omed" \
            "$pmin" "$pmed" "$r" "$(ratio "$pmed" "$omed")"
        python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 50 else 1)" "$r" || shortfalls+=("$label ${r}x")
    done
done
if ((${#shortfalls[@]})); then
    echo "below the 50x budget (fastest runs): ${shortfalls[*]}"
else
    echo "every shape at least 50x Python m3u8 (fastest runs)"
fi

read -r lmin lmed < <(python3 "$helper" procs 30 "$lint" "$work/media10k.m3u8")
read -r qmin qmed < <(python3 "$helper" procs 10 python3 -c 'import m3u8, sys; m3u8.load(sys.argv[1])' \
    "$work/media10k.m3u8")
printf '%-34s %6.2f/%-7.2f %6.2f/%-7.2f %7sx (median %sx)\n' "process: m3u8lint vs m3u8.load" "$lmin" "$lmed" \
    "$qmin" "$qmed" "$(ratio "$qmin" "$lmin")" "$(ratio "$qmed" "$lmed")"

echo "IPTV 100 MB list, streamed (1 MiB chunks):"
"$lint" --iptv-json --benchmark 3 "$work/iptv100m.m3u"
