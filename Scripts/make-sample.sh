#!/usr/bin/env bash
# Makes the built-in sample that `tsplayer serve` plays when given no file: 12 seconds of a test pattern with a
# tone, H.264 + AAC in MPEG-TS, a keyframe every 2 seconds. Written to Tools/tsplayer/Resources/sample.ts.
set -euo pipefail
cd "$(dirname "$0")/.."
ffmpeg -v error -y -f lavfi -i "testsrc2=size=320x180:rate=25" -f lavfi -i "sine=frequency=440:sample_rate=48000" \
    -t 12 -c:v libx264 -profile:v main -preset veryfast -g 50 -keyint_min 50 -sc_threshold 0 -b:v 150k \
    -c:a aac -b:a 64k -ac 2 -f mpegts Tools/tsplayer/Resources/sample.ts
ls -l Tools/tsplayer/Resources/sample.ts
