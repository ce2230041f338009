#!/usr/bin/env bash
# The README's two commands as a new user runs them: clones the current commit (HEAD; uncommitted changes are not
# in it) into an empty folder and runs, there, with no .build of any earlier run:
#   1. `swift run tsplayer serve`: passes when it prints the playlist URL, ffprobe reads the presentation from that
#      URL (a video and an audio stream, a duration), and it stops with exit status 0 on SIGINT;
#   2. `Scripts/test.sh`: passes when it exits 0.
# Prints the time each took. What it cannot catch: programs and packages this machine already has (Scripts/deps.sh
# installs only what is missing, so a package whose install step is broken or missing from deps.sh goes unseen
# here), and anything outside the clone (the toolchain, /opt/apple-sdks). Documentation/Testing.md says more.
# Not part of Scripts/test.sh: it builds everything twice from nothing and runs the whole suite.
#
# Usage: Scripts/fresh-check.sh [--no-test]   (--no-test runs the first command only)
set -euo pipefail
cd "$(dirname "$0")/.."
run_tests=1
for arg in "$@"; do
    case "$arg" in
        --no-test) run_tests=0 ;;
        *) echo "usage: Scripts/fresh-check.sh [--no-test]" >&2; exit 64 ;;
    esac
done
command -v ffprobe >/dev/null || { echo "fresh-check: ffprobe is needed to read what serve serves; run Scripts/deps.sh" >&2; exit 1; }

commit=$(git rev-parse HEAD)
work=$(mktemp -d "${TMPDIR:-/tmp}/tsplayerkit-fresh-XXXXXX")
serve_pid=""
cleanup() {
    if [[ -n "$serve_pid" ]] && kill -0 "$serve_pid" 2>/dev/null; then kill -KILL -- "-$serve_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
git clone -q --no-local . "$work/TSPlayerKit"
git -C "$work/TSPlayerKit" checkout -q "$commit"
cd "$work/TSPlayerKit"
echo "fresh-check: commit $commit in $work/TSPlayerKit (no .build: $([[ -e .build ]] && echo no || echo yes))"

# 1. swift run tsplayer serve, in a process group of its own so that SIGINT reaches whatever swift run started.
started=$SECONDS
setsid swift run tsplayer serve >"$work/serve.out" 2>"$work/serve.err" &
serve_pid=$!
url=""
while kill -0 "$serve_pid" 2>/dev/null && (( SECONDS - started < 1800 )); do
    url=$(grep -m1 -oE '^https?://[^ ]+' "$work/serve.out" || true)
    [[ -n "$url" ]] && break
    sleep 1
done
serve_seconds=$((SECONDS - started))
if [[ -z "$url" ]]; then
    tail -n 30 "$work/serve.err" >&2
    echo "fresh-check: FAIL: swift run tsplayer serve printed no URL in ${serve_seconds}s" >&2
    exit 1
fi
echo "fresh-check: swift run tsplayer serve printed $url after ${serve_seconds}s (build included)"
probe=$(ffprobe -v error -show_entries stream=codec_type:format=duration -of json "$url")
video=$(python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(s.get("codec_type")=="video" for s in d.get("streams",[])))' <<<"$probe")
audio=$(python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(s.get("codec_type")=="audio" for s in d.get("streams",[])))' <<<"$probe")
duration=$(python3 -c 'import json,sys; print(json.load(sys.stdin).get("format",{}).get("duration","none"))' <<<"$probe")
if (( video < 1 || audio < 1 )) || [[ "$duration" == none ]]; then
    echo "fresh-check: FAIL: ffprobe read $video video and $audio audio streams, duration $duration: $probe" >&2
    exit 1
fi
echo "fresh-check: ffprobe reads $video video and $audio audio stream(s), $duration s"
kill -INT -- "-$serve_pid"
stopped=$SECONDS
while kill -0 "$serve_pid" 2>/dev/null && (( SECONDS - stopped < 15 )); do sleep 0.2; done
if kill -0 "$serve_pid" 2>/dev/null; then
    echo "fresh-check: FAIL: serve still running 15 s after SIGINT" >&2
    exit 1
fi
set +e
wait "$serve_pid"
serve_status=$?
set -e
serve_pid=""
if (( serve_status != 0 )); then
    tail -n 20 "$work/serve.err" >&2
    echo "fresh-check: FAIL: serve exited $serve_status on SIGINT" >&2
    exit 1
fi
echo "fresh-check: PASS swift run tsplayer serve (${serve_seconds}s to the URL; stopped on SIGINT with status 0)"

# 2. Scripts/test.sh
if (( run_tests )); then
    started=$SECONDS
    set +e
    Scripts/test.sh >"$work/test.log" 2>&1
    test_status=$?
    set -e
    test_seconds=$((SECONDS - started))
    tail -n 5 "$work/test.log"
    if (( test_status != 0 )); then
        echo "fresh-check: FAIL: Scripts/test.sh exited $test_status after ${test_seconds}s" >&2
        exit 1
    fi
    echo "fresh-check: PASS Scripts/test.sh (${test_seconds}s)"
fi
