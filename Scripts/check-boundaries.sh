#!/usr/bin/env bash
# Only FileRange, Sockets, LoopbackHTTP and HTTPClient make system calls; only Sockets and FileRange make sockets,
# connect, rename or retry EINTR by hand; and no source file is over 600 lines without a reason at its top
# (Scripts/check-boundaries.py says how). With --self-test it first proves it can fail: a copy of the tree with a
# package that imports Glibc and calls open() and rename(), a server package that makes a socket and loops on EINTR,
# and a 601-line file, must be refused; the same calls in Sockets, FileRange and TestSupport must pass. Then no test
# code blocks a thread while it waits (Scripts/check-test-waits.py says what and where it may); its self-test plants
# a test that sleeps, waits for a process and waits on a semaphore on its own thread, and the same calls where they
# may block (the pool's closures, a thread of the test's own, a line that gives its reason), and only the first three
# must be refused.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == --self-test ]]; then
    scratch="$(mktemp -d)"
    trap 'rm -rf "$scratch"' EXIT
    mkdir -p "$scratch/Packages/Bad/Sources/Bad" "$scratch/Tools/tool" "$scratch/Packages/LoopbackHTTP/Sources/LoopbackHTTP"
    for allowed in Sockets FileRange TestSupport; do
        mkdir -p "$scratch/Packages/$allowed/Sources/$allowed"
        printf 'import Glibc\nfunc f() { _ = socket(2, 1, 0); _ = Glibc.connect(3, nil, 0); _ = rename("/a", "/b") }\nfunc g() { while errno == EINTR {} }\n' \
            >"$scratch/Packages/$allowed/Sources/$allowed/Raw.swift"
    done
    printf 'import Glibc\nstatic func connect(_ x: Int) {}\nfunc f() { let fd = socket(2, 1, 0); _ = Darwin.connect(fd, nil, 0) }\nfunc g() { repeat {} while errno == EINTR }\nlet e = Errno.interrupted // EINTR in a comment\nlet s = "connect(1)"; _ = socket.connect(1)\n' \
        >"$scratch/Packages/LoopbackHTTP/Sources/LoopbackHTTP/Raw.swift"
    printf 'import Glibc\nfunc f() { _ = open("/x", 0); _ = rename("/a", "/b"); _ = x.write(1) }\n// open( in a comment\nlet s = "write(1)"\n' \
        >"$scratch/Packages/Bad/Sources/Bad/Bad.swift"
    for _ in $(seq 601); do echo "let x = 1"; done >"$scratch/Tools/tool/Long.swift"
    if out="$(python3 Scripts/check-boundaries.py "$scratch" 2>/dev/null)"; then
        echo "check-boundaries: the self-test tree passed; the check is broken" >&2
        exit 1
    fi
    for expected in "Bad.swift:1: imports Glibc" "Bad.swift:2: calls open()" "Bad.swift:2: calls rename()" \
        "Long.swift: 601 lines" "LoopbackHTTP/Raw.swift:3: calls socket()" "LoopbackHTTP/Raw.swift:3: calls connect()" \
        "LoopbackHTTP/Raw.swift:4: retries EINTR" "LoopbackHTTP/Raw.swift:5: retries EINTR"; do
        grep -qF "$expected" <<<"$out" || { echo "check-boundaries: the self-test missed '$expected'" >&2; exit 1; }
    done
    if [[ "$(grep -c . <<<"$out")" != 8 ]]; then
        echo "check-boundaries: the self-test found more than it should (comments, strings or methods):" >&2
        echo "$out" >&2
        exit 1
    fi
fi
if [[ "${1:-}" == --self-test ]]; then
    waits="$(mktemp -d)"
    trap 'rm -rf "$scratch" "$waits"' EXIT
    mkdir -p "$waits/Packages/X/Tests/XTests" "$waits/Tests/Fuzz"
    printf '%s\n' \
        'func a() async { usleep(1000) }' \
        'func b(_ p: Process) async { p.waitUntilExit() }' \
        'func c(_ s: DispatchSemaphore) async { _ = s.wait(timeout: .now() + 1) }' \
        'func d(_ s: DispatchSemaphore) async { await blocking { s.wait() } }' \
        'func e() { Thread.detachNewThread {' \
        '    Thread.sleep(forTimeInterval: 1)' \
        '} }' \
        'func f(_ done: Completion) async { await done.wait(within: 1) }' \
        '// blocks: a test of what holding a thread does' \
        'func g() { usleep(1) }' \
        'let s = "usleep(1)" // usleep( in a comment' \
        >"$waits/Packages/X/Tests/XTests/Waits.swift"
    echo 'usleep(1)' >"$waits/Tests/Fuzz/main.swift"
    if out="$(python3 Scripts/check-test-waits.py "$waits" 2>/dev/null)"; then
        echo "check-boundaries: the test-waits self-test passed; the check is broken" >&2
        exit 1
    fi
    for expected in "Waits.swift:1: blocks a test thread (usleep(" "Waits.swift:2: blocks a test thread (waitUntilExit" \
        "Waits.swift:3: blocks a test thread (.wait("; do
        grep -qF "$expected" <<<"$out" || { echo "check-boundaries: the test-waits self-test missed '$expected'" >&2; exit 1; }
    done
    if [[ "$(grep -c . <<<"$out")" != 3 ]]; then
        echo "check-boundaries: the test-waits self-test found more than it should:" >&2
        echo "$out" >&2
        exit 1
    fi
fi
python3 Scripts/check-boundaries.py .
python3 Scripts/check-test-waits.py .
