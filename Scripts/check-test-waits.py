#!/usr/bin/env python3
"""No blocking wait in test code outside the places allowed to block (Scripts/check-boundaries.sh runs this).

The tests run in parallel inside one process (Scripts/test.sh), on Swift's cooperative threads: one per core. A test
that blocks one of them (waiting for a child process, sleeping, waiting on a semaphore or a group) leaves the rest
of the process's async work, and Foundation's reports of child processes ending, without a thread. So in test code
(Packages/<X>/Tests, Tests/ but the fuzzers, and TestSupport's sources) these are refused: `waitUntilExit`,
`Thread.sleep`, `usleep(`, `sleep(` of the C library, a `.wait(` call not awaited (a semaphore's, a group's), and
`DispatchQueue.global().async {` (a hop that blocks a Dispatch thread in its place). A test waits instead with `await`:
TestSupport's `suspend(_:)`, `Completion`, `ChildProcess.waitForExit(within:)` and `ExternalProgram.run`.

They are allowed where a thread may block:
- inside the closure given to `blocking {`, `BlockingPool.shared.run {` / `.submit {` (FileRange's pool), or to a
  thread of the test's own (`Thread {`, `Thread.detachNewThread {`, `serveConnections(on:)`'s handler);
- on a line that says why, in a comment starting with `// blocks:` on that line or the line above (a thread of an
  origin, a test of the pool itself, a synchronous test that must stay on its thread).

Usage: check-test-waits.py [ROOT]; exits 1 and lists every offence.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from importlib import import_module

strip = import_module("check-boundaries").strip

BLOCKING = re.compile(
    r"\bwaitUntilExit\b|\bThread\.sleep\b|(?<![\w.])usleep\s*\(|(?<![\w.])sleep\s*\(\s*\d|\.wait\s*\("
    r"|\bDispatchQueue\.global\s*\([^)]*\)\s*\.(?:a?sync)\s*\{")
# Closures whose body may block: FileRange's pool, and threads of the test's own.
OPENERS = re.compile(
    r"(?:\bblocking\s*(?:\(\s*)?|\bBlockingPool\.shared\.(?:run|submit)\s*(?:\(\s*)?|\bpool\.(?:run|submit)\s*(?:\(\s*)?"
    r"|\.submit\s*(?:\(\s*)?|\bThread\s*(?:\(\s*)?|\bThread\.detachNewThread\s*(?:\(\s*)?"
    r"|\bserveConnections\s*\([^)]*\)\s*)\{")
REASON = "// blocks:"


def test_files(root):
    folders = [os.path.join(root, "Tests")]
    packages = os.path.join(root, "Packages")
    if os.path.isdir(packages):
        for name in sorted(os.listdir(packages)):
            folders.append(os.path.join(packages, name, "Tests"))
        folders.append(os.path.join(packages, "TestSupport", "Sources"))
    for folder in folders:
        for base, dirs, files in os.walk(folder):
            dirs[:] = [d for d in dirs if not d.startswith(".") and not (base == folders[0] and d == "Fuzz")]
            for name in sorted(files):
                if name.endswith(".swift"):
                    yield os.path.join(base, name)


def offences_in(path, root):
    text = open(path, encoding="utf-8").read()
    raw = text.splitlines()
    code = strip(text).splitlines()
    found = []
    # The brace depths at which an allowed closure was opened; code deeper than the innermost one may block.
    allowed = []
    depth = 0
    for number, line in enumerate(code, 1):
        opens = {m.end() - 1 for m in OPENERS.finditer(line)}
        inside = bool(allowed)
        for match in BLOCKING.finditer(line):
            # An allowed closure opened earlier on this line covers what follows its brace.
            if inside or any(o < match.start() for o in opens):
                continue
            if match.group(0).startswith(".wait") and re.search(r"\bawait\b", line[:match.start()]):
                continue  # an awaited wait (TestSupport's Completion): suspends, holds no thread
            reason = REASON in raw[number - 1] or (number >= 2 and raw[number - 2].strip().startswith(REASON))
            if not reason:
                found.append(f"{os.path.relpath(path, root)}:{number}: blocks a test thread ({match.group(0).strip()}); "
                             "await instead (TestSupport's suspend, Completion, blocking { })")
        for index, char in enumerate(line):
            if char == "{":
                depth += 1
                if index in opens:
                    allowed.append(depth)
            elif char == "}":
                if allowed and allowed[-1] == depth:
                    allowed.pop()
                depth -= 1
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    offences = [o for path in test_files(root) for o in offences_in(path, root)]
    for offence in offences:
        print(offence)
    if offences:
        print(f"check-test-waits: {len(offences)} blocking wait(s) in test code", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
