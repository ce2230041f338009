#!/usr/bin/env bash
# FileStreamer against cat and dd, on the same 1 GiB file from page cache, in one run. Each figure is the median of
# five runs; ratios are FileStreamer's throughput over the peer's. Target: sequential >= 0.9x cat.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=.bench
mkdir -p "$work"
file="$work/1GiB.bin"
[[ -f "$file" && $(stat -c %s "$file") == 1073741824 ]] || head -c 1073741824 /dev/urandom > "$file"
swift build -c release --package-path Scripts/bench/FileRangeBench --scratch-path "$work/build-filerange" >/dev/null
bench="$(swift build -c release --package-path Scripts/bench/FileRangeBench --scratch-path "$work/build-filerange" --show-bin-path)/filerange-bench"
cat "$file" > /dev/null  # into page cache

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_cmd() {  # seconds for one run of a shell command
    local t0 t1; t0=$(date +%s.%N); eval "$1" >/dev/null; t1=$(date +%s.%N); echo "$t1 - $t0" | bc -l
}
runs=5
cat_s=$(for _ in $(seq $runs); do time_cmd "cat '$file' > /dev/null"; done | median)
dd_s=$(for _ in $(seq $runs); do time_cmd "dd if='$file' of=/dev/null bs=64k 2>/dev/null"; done | median)
seq_s=$(for _ in $(seq $runs); do "$bench" sequential "$file" | awk '{print $2}'; done | median)
rnd_s=$(for _ in $(seq $runs); do "$bench" random "$file" | awk '{print $2}'; done | median)
gib=1.073741824
printf '%-34s %10s %10s\n' "1 GiB from page cache, 64 KiB" "seconds" "GB/s"
for row in "cat:$cat_s" "dd bs=64k:$dd_s" "FileStreamer sequential:$seq_s" "FileStreamer random:$rnd_s"; do
    printf '%-34s %10.4f %10.2f\n' "${row%%:*}" "${row##*:}" "$(echo "$gib / ${row##*:}" | bc -l)"
done
printf 'ratio sequential / cat: %.2fx   sequential / dd: %.2fx   random / cat: %.2fx\n' \
    "$(echo "$cat_s / $seq_s" | bc -l)" "$(echo "$dd_s / $seq_s" | bc -l)" "$(echo "$cat_s / $rnd_s" | bc -l)"
