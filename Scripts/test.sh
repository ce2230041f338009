#!/usr/bin/env bash
# The one test command (README.md and .ci/run call it). It installs the outside programs the tests use when they
# are missing, makes the media fixtures, checks formatting, the manifests, that no Linux-only symbol sits where
# Darwin compiles, and the linkage of the pure cores, builds everything with warnings as errors, builds the
# packages through their own manifests, and runs every test (in parallel in one process, then the few that cannot
# share it in a second).
# Any failure fails it.
#
# Usage: Scripts/test.sh [--no-standalone]   (--no-standalone skips the builds through the packages' own manifests)
set -euo pipefail
cd "$(dirname "$0")/.."
standalone=1
for arg in "$@"; do
    case "$arg" in
        --no-standalone) standalone=0 ;;
        *) echo "usage: Scripts/test.sh [--no-standalone]" >&2; exit 64 ;;
    esac
done
export SWIFT_BACKTRACE="${SWIFT_BACKTRACE:-enable=yes,interactive=no}"
start=$SECONDS
step() { printf '\n==> %s (%ss)\n' "$*" "$((SECONDS - start))"; }

step "Outside programs the tests use"
Scripts/deps.sh

if [[ -x Scripts/make-fixtures.sh ]]; then
    step "Media fixtures"
    Scripts/make-fixtures.sh
fi

step "swift format lint --strict"
mapfile -t swift_files < <(git ls-files --cached --others --exclude-standard '*.swift')
swift format lint --strict --configuration .swift-format "${swift_files[@]}"

step "Manifests agree (and the check can fail)"
Scripts/check-manifests.sh --self-test

step "No Linux-only symbol where Darwin compiles (and the check can fail)"
Scripts/check-platform-symbols.sh --self-test && Scripts/check-platform-symbols.sh

step "Linkage of the pure cores (and the check can fail)"
Scripts/check-linkage.sh

step "API floor (and the check can fail)"
Scripts/check-floor.sh --self-test && Scripts/check-floor.sh

step "System calls only in FileRange, Sockets, LoopbackHTTP and HTTPClient; sockets, renames and EINTR loops only in Sockets and FileRange; long files give a reason (and the check can fail)"
Scripts/check-boundaries.sh --self-test

step "Build everything with warnings as errors"
Scripts/swift-build.sh --build-tests -Xswiftc -warnings-as-errors | { grep -vE '^\[[0-9]+/[0-9]+\]' || true; }

step "Apple glue against the AVFoundation stand-in (and the check can fail)"
Scripts/check-apple-glue.sh

step "Every library and tool type-checked against a real iOS SDK when there is one (and the check can fail)"
Scripts/check-ios-sdk.sh --self-test

if [[ $standalone == 1 ]]; then
    # TSPlayerKit depends on every other package by path, so building it on its own builds every library through
    # its own package's manifest; the test targets are the same sources the root builds, and check-manifests.sh
    # proves the declarations agree.
    step "Every package's manifest builds on its own (through Packages/TSPlayerKit)"
    build_or_fail() {  # a build through Scripts/swift-build.sh; on failure its errors and warnings, and the run ends
        local log
        if ! log="$(Scripts/swift-build.sh "$@")"; then
            grep -E 'error|warning: ' <<<"$log" >&2 || true
            exit 1
        fi
    }
    build_or_fail --package-path Packages/TSPlayerKit --scratch-path .build/standalone -Xswiftc -warnings-as-errors
    step "FileRange's tests pass on their own"
    build_or_fail --package-path Packages/FileRange --scratch-path .build/standalone-FileRange --build-tests \
        -Xswiftc -warnings-as-errors
    swift test --package-path Packages/FileRange --scratch-path .build/standalone-FileRange --skip-build 2>&1 |
        grep -E '^(✘|✔ Test run)|recorded an issue|error:'
fi

step "Every fuzzer, a short smoke run each (Scripts/fuzz.sh; long campaigns are run by hand)"
Scripts/fuzz.sh --smoke "${FUZZ_SMOKE_SECONDS:-10}"

# Processes still running whose environment carries the marker `TSPLAYERKIT_TEST_RUN=$1`: what a run started (the
# test runner hands its environment to everything it starts) and did not stop. Linux only (/proc).
run_leftovers() {
    local dir
    [[ -d /proc/self ]] || return 0
    for dir in /proc/[0-9]*; do
        [[ ${dir#/proc/} == "$$" ]] && continue
        if { tr '\0' '\n' <"$dir/environ"; } 2>/dev/null | grep -qxF "TSPLAYERKIT_TEST_RUN=$1"; then
            echo "${dir#/proc/}"
        fi
    done
}
run_id="run-$$-$RANDOM"

step "The leftover-process check finds a process left running (its self-test)"
TSPLAYERKIT_TEST_RUN="$run_id-self-test" sleep 120 &
planted=$!
found=$(run_leftovers "$run_id-self-test")
kill "$planted" 2>/dev/null || true
wait "$planted" 2>/dev/null || true
if [[ "$found" != "$planted" ]]; then
    echo "test.sh: the leftover check did not find the planted process $planted (found: ${found:-nothing})" >&2
    exit 1
fi

# The tests run in one process, in parallel (Swift Testing, at most 8 at once; most of the suite's time is waiting:
# live streams played in real time, players, deadlines); then a second, small process runs one at a time the few
# that cannot share a process with the others. No test holds a thread while it waits (TestSupport's helpers are
# async; check-boundaries.sh refuses a blocking wait in test code), and no test computes or spawns on Swift's
# cooperative threads (as many as cores): what computes for long runs in TestSupport's `blocking { }`, on a thread
# of its own, or every other test's deadline timers and continuations wait for it (Documentation/Testing.md).
# The second process's tests, each with its reason, are listed in Scripts/tests-alone.sh (the macOS workflow runs
# the same two processes).
alone_pattern=$(Scripts/tests-alone.sh)
alone_count=$(tr '|' '\n' <<<"$alone_pattern" | wc -l)
step "Every test: one process in parallel, then the $alone_count that cannot share it in a second, one at a time"
results="$(mktemp -d)"
tests="$(swift build --show-bin-path)/TSPlayerKitPackageTests.xctest"
listed=$("$tests" --testing-library swift-testing --list-tests | grep -c '/')
status=0
for run in parallel alone; do
    if [[ $run == parallel ]]; then
        arguments=(--skip "$alone_pattern")
    else
        arguments=(--no-parallel --filter "$alone_pattern")
    fi
    SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH="${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-8}" \
        TSPLAYERKIT_TEST_RUN="$run_id" "$tests" --testing-library swift-testing "${arguments[@]}" \
        --xunit-output "$results/$run.xml" >"$results/$run.log" 2>&1 || status=1
    echo "--- $run (done at $((SECONDS - start))s)"
    grep -avE '^(.\[[0-9;]*m)?(􀟈|◇|↳)|Test .* started\.$' "$results/$run.log" || true
done

step "Nothing the tests started is still running"
left=""
for _ in $(seq 1 20); do
    left=$(run_leftovers "$run_id")
    [[ -z "$left" ]] && break
    sleep 0.5
done
if [[ -n "$left" ]]; then
    echo "test.sh: processes started by the tests outlived them:" >&2
    for pid in $left; do
        echo "  $pid: $({ tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | cut -c1-200)" >&2
        kill -9 "$pid" 2>/dev/null || true
    done
    status=1
fi

printf '\n==> done in %ss\n' "$((SECONDS - start))"
# The counts come from the test results (one test case, one test), not from the lines the run prints; every listed
# test must have run in exactly one of the two processes.
counts=$(Scripts/test-results.py "$results/parallel.xml" "$results/alone.xml") || status=1
echo "$counts"
ran=$(sed -nE 's/^tests: ([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped$/\1 + \2 + \3/p' <<<"$counts")
if [[ -z "$ran" || $((ran)) != "$listed" ]]; then
    echo "test.sh: $listed tests listed, ${ran:+$((ran))} run in the two processes" >&2
    status=1
fi
# TEST_RESULTS_KEEP=folder keeps the result files and logs there (each test's time is in the XUnit files).
if [[ -n "${TEST_RESULTS_KEEP:-}" ]]; then
    mkdir -p "$TEST_RESULTS_KEEP" && cp -r "$results"/. "$TEST_RESULTS_KEEP"/
fi
rm -rf "$results"
exit "$status"
