#!/usr/bin/env bash
# Fails when a Glibc- or Linux-only symbol appears in Swift code that Darwin compiles: outside every
# `#if os(Linux)` / `#if canImport(Glibc)` / `#if canImport(Musl)` branch, an `#else` of `#if canImport(Darwin)`,
# and the like. Each `#if`/`#elseif`/`#else` branch is evaluated for Darwin (os(Linux), canImport(Glibc),
# canImport(Musl) false; canImport(Darwin) true; anything it cannot decide, such as DEBUG or os(macOS), counts as
# compiled there), nesting included, so a file whose whole body sits in such a branch passes. Comments are
# skipped; string literals are searched (a "/proc/..." path is a Linux-only use too).
#
# Searched: the Swift files git knows (tracked, or new and not ignored) under Packages/, Tools/, Tests/ and
# Scripts/bench/. Nothing is excluded.
#
# Usage: Scripts/check-platform-symbols.sh               check the repository
#        Scripts/check-platform-symbols.sh FILE ...      check these files
#        Scripts/check-platform-symbols.sh --self-test   prove on a bad and a good sample that it fails and passes
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 - "$@" <<'PYTHON'
import os
import re
import subprocess
import sys
import tempfile

# Each entry: a regular expression, and why it breaks Darwin (shown with every hit). Keep the list sorted by
# theme; add a symbol here when a Linux-only use slips through review.
SYMBOLS = [
    (r"\bimport\s+Glibc\b", "Glibc does not exist on Darwin (import Darwin there)"),
    (r"\bimport\s+Musl\b", "Musl does not exist on Darwin (import Darwin there)"),
    (r"\bGlibc\.", "Glibc does not exist on Darwin (name the function unqualified, or wrap it)"),
    (r"\b__socket_type\b", "Glibc's socket type enum; Darwin's SOCK_* are plain Int32"),
    (r"\bSOCK_[A-Z]+\.rawValue\b", "Glibc imports SOCK_* as an enum; on Darwin they are Int32 (no .rawValue)"),
    (r"\bRUSAGE_[A-Z]+\.rawValue\b", "Glibc imports RUSAGE_* as an enum; on Darwin they are Int32 (no .rawValue)"),
    (r"\bMSG_NOSIGNAL\b", "Linux's send(2) flag; on Darwin set SO_NOSIGPIPE on the socket instead"),
    (r"\bMSG_MORE\b", "Linux-only send(2) flag"),
    (r"\bSOCK_CLOEXEC\b|\bSOCK_NONBLOCK\b", "Linux-only socket(2) type flags (use fcntl on Darwin)"),
    (r"\baccept4\b", "Linux-only (accept, then fcntl, on Darwin)"),
    (r"\bpipe2\b", "Linux-only (pipe, then fcntl, on Darwin)"),
    (r"\bTCP_CORK\b|\bTCP_QUICKACK\b", "Linux-only TCP options (TCP_NOPUSH on Darwin)"),
    (r"\bPOLLRDHUP\b", "Linux-only poll(2) event"),
    (r"\bSO_PEERCRED\b", "Linux-only (LOCAL_PEERCRED on Darwin)"),
    (r"\w*epoll_\w*|\bEPOLL\w*", "epoll is Linux-only (kqueue on Darwin)"),
    (r"\beventfd\w*|\bEFD_\w+", "eventfd is Linux-only"),
    (r"\btimerfd_\w*|\bsignalfd\w*|\binotify_\w*", "Linux-only descriptor APIs"),
    (r"\bsplice\s*\(|\bvmsplice\b|\bSPLICE_F_\w+", "splice is Linux-only"),
    (r"\bcopy_file_range\b|\bsync_file_range\b", "Linux-only (fcopyfile / fcntl(F_FULLFSYNC) on Darwin)"),
    (r"\bst_[amc]tim\b", "Linux's stat field names (st_atimespec, st_mtimespec, st_ctimespec on Darwin)"),
    (r"/proc/", "there is no /proc on Darwin"),
    (r"\"/sys/", "there is no /sys on Darwin"),
    (r"\bmallinfo2?\b|\bmalloc_trim\b|\bmalloc_usable_size\b|\bmallopt\b", "glibc malloc introspection"),
    (r"\bO_DIRECT\b", "Linux-only open(2) flag (fcntl F_NOCACHE on Darwin)"),
    (r"\bO_TMPFILE\b|\bO_NOATIME\b|\bO_PATH\b", "Linux-only open(2) flags"),
    (r"\bposix_fallocate\b|\bfallocate\s*\(", "not on Darwin (fcntl F_PREALLOCATE there)"),
    (r"\bmemfd_create\b|\bgetrandom\b|\bgettid\b|\bsysinfo\s*\(", "Linux-only system calls"),
    (r"\bsched_[gs]etaffinity\b|\bprctl\b|\bmremap\b|\bMAP_POPULATE\b", "Linux-only system calls"),
    (r"\bCLOCK_BOOTTIME\b|\bCLOCK_MONOTONIC_COARSE\b|\bSIGRTMIN\b|\bSIGRTMAX\b", "Linux-only constants"),
    (r"\benviron\b", "`environ` is not visible to Swift on Darwin (pass ProcessInfo's environment instead)"),
    (r"\bposix_spawn_file_actions_t\s*\(\s*\)|\bposix_spawnattr_t\s*\(\s*\)",
     "an opaque pointer on Darwin: declare `var actions: posix_spawn_file_actions_t?` there"),
    (r"\bpthread_t\s*\(\s*\)", "pthread_t is a pointer on Darwin and cannot be made with ()"),
]
# sendfile(2) takes 4 arguments on Linux (out, in, offset, count) and 6 on Darwin: only the Linux form is flagged.
SENDFILE = re.compile(r"\bsendfile\s*\(")

ROOTS = ("Packages/", "Tools/", "Tests/", "Scripts/bench/")


def scan_code(text):
    """The text with comments blanked (newlines kept), and for each character whether it is code (not inside a
    string literal). String contents are kept, so paths in strings can be matched."""
    out = []
    code = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                out.append(" ")
                code.append(True)
                i += 1
            continue
        if text.startswith("/*", i):
            depth = 0
            while i < n:
                if text.startswith("/*", i):
                    depth += 1
                    out.append("  ")
                    code.extend([True, True])
                    i += 2
                elif text.startswith("*/", i):
                    depth -= 1
                    out.append("  ")
                    code.extend([True, True])
                    i += 2
                    if depth == 0:
                        break
                else:
                    out.append("\n" if text[i] == "\n" else " ")
                    code.append(True)
                    i += 1
            continue
        m = re.compile(r'(#*)("""|")').match(text, i)
        if m and (m.group(1) == "" or text[i] == "#"):
            hashes, quote = m.group(1), m.group(2)
            close = quote + hashes
            start = m.end()
            end = text.find(close, start)
            while end != -1 and not hashes and quote == '"' and _escaped(text, end):
                end = text.find(close, end + 1)
            if quote == '"' and not hashes:
                newline = text.find("\n", start)
                if end == -1 or (newline != -1 and newline < end):
                    end = newline if newline != -1 else n
                    close = ""
            if end == -1:
                end, close = n, ""
            stop = end + len(close)
            out.append(text[i:start])
            code.extend([True] * (start - i))
            out.append(text[start:stop])
            code.extend([False] * (stop - start))
            i = stop
            continue
        out.append(c)
        code.append(True)
        i += 1
    return "".join(out), code


def _escaped(text, index):
    backslashes = 0
    j = index - 1
    while j >= 0 and text[j] == "\\":
        backslashes += 1
        j -= 1
    return backslashes % 2 == 1


# Darwin's answer for each condition atom: True, False, or None (cannot tell: counts as compiled).
FALSE_OS = {"Linux", "Android", "Windows", "FreeBSD", "OpenBSD", "WASI", "Cygwin", "Haiku", "PS4"}
DARWIN_OS = {"macOS", "iOS", "tvOS", "watchOS", "visionOS", "xrOS", "OSX"}
FALSE_IMPORT = {"Glibc", "Musl", "Bionic", "Android", "WinSDK", "ucrt", "CRT", "WASILibc", "FoundationNetworking",
                "FoundationXML"}
TRUE_IMPORT = {"Darwin", "Foundation", "Dispatch"}


def atom(kind, argument):
    if kind == "os":
        return False if argument in FALSE_OS else None
    if kind == "canImport":
        name = argument.split(",")[0].strip()
        if name in FALSE_IMPORT:
            return False
        return True if name in TRUE_IMPORT else None
    return None


TOKEN = re.compile(r"\s*(\|\||&&|!|\(|\)|[A-Za-z_][A-Za-z0-9_]*\s*\([^()]*\)|[A-Za-z_][A-Za-z0-9_]*)")


def evaluate(condition):
    """Three-valued: True, False, or None."""
    tokens = []
    position = 0
    condition = condition.strip()
    while position < len(condition):
        m = TOKEN.match(condition, position)
        if not m:
            return None
        tokens.append(m.group(1))
        position = m.end()
        while position < len(condition) and condition[position].isspace():
            position += 1

    def parse_or(k):
        value, k = parse_and(k)
        while k < len(tokens) and tokens[k] == "||":
            right, k = parse_and(k + 1)
            value = True if value is True or right is True else (False if value is False and right is False else None)
        return value, k

    def parse_and(k):
        value, k = parse_not(k)
        while k < len(tokens) and tokens[k] == "&&":
            right, k = parse_not(k + 1)
            value = False if value is False or right is False else (True if value is True and right is True else None)
        return value, k

    def parse_not(k):
        if k < len(tokens) and tokens[k] == "!":
            value, k = parse_not(k + 1)
            return (None if value is None else not value), k
        return parse_primary(k)

    def parse_primary(k):
        if k >= len(tokens):
            return None, k
        t = tokens[k]
        if t == "(":
            value, k = parse_or(k + 1)
            return value, (k + 1 if k < len(tokens) and tokens[k] == ")" else k)
        if t == "true":
            return True, k + 1
        if t == "false":
            return False, k + 1
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)\s*\((.*)\)", t)
        if m:
            return atom(m.group(1), m.group(2).strip()), k + 1
        return None, k + 1

    try:
        value, k = parse_or(0)
    except RecursionError:
        return None
    return value if k == len(tokens) else None


def all_of(values):
    if any(v is False for v in values):
        return False
    return True if all(v is True for v in values) else None


def hits_in(path, text):
    """(line, symbol text, reason) for each Linux-only use Darwin would compile."""
    stripped, code = scan_code(text)
    line_starts = [0]
    for index, ch in enumerate(stripped):
        if ch == "\n":
            line_starts.append(index + 1)
    lines = stripped.split("\n")
    # For each line: whether Darwin compiles it. A frame per open #if: the conditions of its branches so far.
    compiled = []
    frames = []  # each: {"previous": [values], "current": value-of-this-branch-on-Darwin}
    errors = []
    for number, line in enumerate(lines, start=1):
        offset = line_starts[number - 1]
        first = len(line) - len(line.lstrip())
        is_code = first < len(line) and code[offset + first]
        directive = re.match(r"\s*#(if|elseif|else|endif)\b(.*)", line) if is_code else None
        if directive:
            kind, rest = directive.group(1), directive.group(2)
            if kind == "if":
                value = evaluate(rest)
                frames.append({"previous": [value], "current": value})
            elif not frames:
                errors.append((number, "#" + kind, "without a matching #if"))
            elif kind == "elseif":
                frame = frames[-1]
                value = evaluate(rest)
                negated = [None if v is None else not v for v in frame["previous"]]
                frame["current"] = all_of(negated + [value])
                frame["previous"].append(value)
            elif kind == "else":
                frame = frames[-1]
                frame["current"] = all_of([None if v is None else not v for v in frame["previous"]])
            else:
                frames.pop()
            compiled.append(True)
            continue
        compiled.append(all(frame["current"] is not False for frame in frames))
    if frames:
        errors.append((len(lines), "#if", "not closed by #endif"))

    def line_of(index):
        low, high = 0, len(line_starts) - 1
        while low < high:
            mid = (low + high + 1) // 2
            if line_starts[mid] <= index:
                low = mid
            else:
                high = mid - 1
        return low + 1

    hits = []
    for pattern, reason in SYMBOLS:
        for m in re.finditer(pattern, stripped):
            number = line_of(m.start())
            if compiled[number - 1]:
                hits.append((number, m.group(0), reason))
    for m in SENDFILE.finditer(stripped):
        number = line_of(m.start())
        if compiled[number - 1] and argument_count(stripped, m.end()) == 4:
            hits.append((number, "sendfile( with 4 arguments", "Linux's sendfile(2); Darwin's takes 6"))
    return sorted(hits) + [(n, s, "unbalanced directive: " + r) for n, s, r in errors]


def argument_count(text, start):
    depth, count, saw = 0, 1, False
    for ch in text[start:start + 2000]:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                return count if saw else 0
            depth -= 1
        elif ch == "," and depth == 0:
            count += 1
        elif not ch.isspace():
            saw = True
    return -1


def repository_files():
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", "*.swift"],
        check=True, capture_output=True).stdout.decode().split("\0")
    return sorted(p for p in listed if p and p.startswith(ROOTS) and os.path.isfile(p))


def check(paths):
    total = 0
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
        for number, symbol, reason in hits_in(path, text):
            print(f"{path}:{number}: {symbol}: {reason}, outside a Linux-only branch (Darwin compiles it)")
            total += 1
    return total


BAD = '''import Foundation
import Glibc
let a = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
#if canImport(Glibc)
    let ok = Int32(MSG_NOSIGNAL)
#else
    let wrong = Int32(MSG_NOSIGNAL)
#endif
#if DEBUG
    let b = "/proc/self/fd"
#endif
#if !os(Linux)
    let c = epoll_create1(0)
#elseif canImport(Glibc)
    let fine = epoll_create1(0)
#endif
#if os(Linux)
    #if DEBUG
        let nested = mallinfo()
    #endif
#else
    let d = stat().st_mtim
#endif
#if canImport(Darwin)
    let e = Glibc.send(0, nil, 0, 0)
#elseif canImport(Glibc)
    let f = Glibc.send(0, nil, 0, 0)
#endif
let g = sendfile(1, 2, nil,
                 4)
var actions = posix_spawn_file_actions_t()
let h = environ
// MSG_NOSIGNAL in a comment is fine
let i = "http://x/y" + "/proc/" // "/proc/" in this comment is fine
'''
# Lines of BAD that must be reported, exactly these.
BAD_LINES = [2, 3, 7, 10, 13, 22, 25, 29, 31, 32, 34]

GOOD = '''// A file whose Linux-only parts are all in branches Darwin does not compile. MSG_NOSIGNAL, /proc/, Glibc.send
/* block comment: epoll_wait /* nested */ SOCK_STREAM.rawValue */
import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif
#if canImport(Darwin)
    let fd = socket(AF_INET, SOCK_STREAM, 0)
#else
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
#endif
#if os(Linux) || os(Android)
    let path = "/proc/self/fd"
    #if DEBUG
        let spliced = splice(0, nil, 1, nil, 4096, 0)
    #else
        let info = mallinfo()
    #endif
#endif
#if !canImport(Darwin) && !os(Windows)
    let flags = Int32(MSG_NOSIGNAL)
#endif
let env = ProcessInfo.processInfo.environment
let text = """
    #if is not a directive inside a string
    #endif
    """
let darwinSendfile = sendfile(1, 2, 0, nil, nil, 0)
'''
# Inside a string a line starting with #if is text, not a directive: the check must not be fooled into thinking
# later code is guarded. WHOLE is a file whose whole body sits in one branch.
WHOLE = '''#if os(Linux)
import Glibc
let n = Glibc.send(0, nil, 0, Int32(MSG_NOSIGNAL))
let e = epoll_create1(0)
#endif
'''


def self_test():
    with tempfile.TemporaryDirectory() as folder:
        samples = {}
        for name, text in (("Bad.swift", BAD), ("Good.swift", GOOD), ("Whole.swift", WHOLE)):
            path = os.path.join(folder, name)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
            samples[name] = hits_in(path, text)
    bad_lines = [number for number, _, _ in samples["Bad.swift"]]
    problems = []
    if bad_lines != BAD_LINES:
        problems.append(f"bad sample: reported lines {bad_lines}, expected {BAD_LINES}")
    for name in ("Good.swift", "Whole.swift"):
        if samples[name]:
            problems.append(f"{name}: reported {samples[name]}, expected nothing")
    if problems:
        for problem in problems:
            print("check-platform-symbols self-test FAILED: " + problem, file=sys.stderr)
        return 1
    print(f"check-platform-symbols self-test: the bad sample fails on exactly its {len(BAD_LINES)} lines; "
          "the good and whole-file samples pass")
    return 0


def main(arguments):
    if arguments == ["--self-test"]:
        return self_test()
    if arguments and arguments[0].startswith("-"):
        print("usage: Scripts/check-platform-symbols.sh [--self-test | FILE ...]", file=sys.stderr)
        return 64
    paths = arguments or repository_files()
    total = check(paths)
    if total:
        print(f"check-platform-symbols: {total} Linux-only use(s) that Darwin would compile; wrap each in "
              "#if os(Linux) / #if canImport(Glibc) with a Darwin branch beside it", file=sys.stderr)
        return 1
    print(f"check-platform-symbols: {len(paths)} Swift files, no Linux-only symbol outside a Linux-only branch")
    return 0


sys.exit(main(sys.argv[1:]))
PYTHON
