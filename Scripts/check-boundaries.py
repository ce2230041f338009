#!/usr/bin/env python3
"""The system-call boundary and the file-size rule (Scripts/check-boundaries.sh runs this).

1. Only the floor (FileRange), the socket layer (Sockets), the server (LoopbackHTTP) and the client (HTTPClient) make
   system calls. Every other
   package's sources (Packages/<X>/Sources) and the tools (Tools/) must not import a C library (Glibc, Musl, Darwin,
   ucrt, WinSDK) and must not call a system function unqualified (socket, connect, getaddrinfo, open, write,
   rename, ...; reachable through Foundation too). A name the package itself declares as a function is its own, not
   the C library's. The wire layer (HTTPWire) makes none at all. Of the tools, only their shared toolkit
   (Tools/CLIToolkit) touches the terminal and signals directly.
2. One socket layer and one system-call helper: outside Sockets and FileRange (and the test-only TestSupport, whose
   raw test clients keep their sockets), no source in Packages/<X>/Sources or Tools/ calls socket(), connect() or
   rename() (unqualified or as Glibc./Darwin./Musl.), and none retries EINTR by hand (EINTR, Errno.interrupted or a
   comparison with .interrupted in code): sockets come from Sockets, renames from FileRange's durable writer, and
   retries from FileRange's retryingOnInterrupt / syscall.
3. No Swift source file in Packages/ or Tools/ is longer than 600 lines unless its first lines say why, in a comment
   starting with "// Long file:".

Usage: check-boundaries.py [ROOT]; exits 1 and lists every offence.
"""
import os
import re
import sys

SYSCALL_PACKAGES = {"FileRange", "Sockets", "LoopbackHTTP", "HTTPClient"}
# The socket layer and the floor: the only places that make sockets, connect, rename or loop on EINTR.
SOCKET_LAYER = {"Sockets", "FileRange"}
# Test-only code, no product: the test support starts and stops peer processes (nginx) and probes their ports.
SYSCALL_TEST_PACKAGES = {"TestSupport"}
# The tools' shared toolkit owns the terminal: isatty, signals, the exit status.
SYSCALL_TOOLS = {"CLIToolkit"}
C_LIBRARIES = {"Glibc", "Musl", "Darwin", "ucrt", "WinSDK", "CRT"}
CALLS = [
    "socket", "connect", "bind", "listen", "accept", "getaddrinfo", "freeaddrinfo", "setsockopt", "getsockopt",
    "send", "recv", "sendfile", "splice", "poll", "kevent", "epoll_wait", "open", "openat", "close", "read", "write",
    "pread", "pwrite", "rename", "unlink", "mkdir", "rmdir", "stat", "lstat", "fstat", "fsync", "fcntl", "ftruncate",
    "flock", "opendir", "readdir", "closedir", "lseek", "memcmp", "memchr", "memcpy", "strerror", "getpid", "kill",
]
LIMIT = 600
STRICT_CALL = re.compile(r"(?<![\w.$])(socket|connect|rename)\s*\(|\b(?:Glibc|Darwin|Musl)\.(socket|connect|rename)\s*\(")
EINTR_LOOP = re.compile(r"\bEINTR\b|\bErrno\.interrupted\b|[!=]=\s*\.interrupted\b")

IMPORT = re.compile(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:public |package |internal |private |fileprivate )?import\s+(?:(?:struct|func|class|enum|var|let)\s+)?(\w+)")
CALL = re.compile(r"(?<![\w.$])(" + "|".join(CALLS) + r")\s*\(")
# Names the package declares: functions, and closures held in parameters or constants (`read: (Int) -> ...`).
DECLARED = re.compile(r"\bfunc\s+(\w+)|\b(\w+)\s*:\s*(?:@escaping\s+|@Sendable\s+|\(\s*)*\([^)]*\)\s*(?:async\s+)?(?:throws\s*(?:\(\w+\))?\s*)?->")


def strip(text):
    """The text with comments and string literals blanked (line structure kept), so that only code is searched."""
    out = []
    i, n = 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('"""', i):
            j = text.find('"""', i + 3)
            j = n if j < 0 else j + 3
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(" " * (j - i))
            i = j
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def swift_files(folder):
    for base, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in sorted(files):
            if name.endswith(".swift"):
                yield os.path.join(base, name)


def units(root):
    """(name, source files) of every package above the floor and of the tools."""
    packages = os.path.join(root, "Packages")
    for name in sorted(os.listdir(packages)):
        sources = os.path.join(packages, name, "Sources")
        if os.path.isdir(sources):
            yield name, list(swift_files(sources))
    tools = os.path.join(root, "Tools")
    if os.path.isdir(tools):
        for name in sorted(os.listdir(tools)):
            if os.path.isdir(os.path.join(tools, name)):
                yield "Tools/" + name, list(swift_files(os.path.join(tools, name)))


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    offences = []
    strict = set()
    for name, files in units(root):
        texts = {path: open(path, encoding="utf-8").read() for path in files}
        for path, text in texts.items():
            lines = text.count("\n")
            if lines > LIMIT and "// Long file:" not in "\n".join(text.splitlines()[:5]):
                offences.append(f"{os.path.relpath(path, root)}: {lines} lines, over {LIMIT}, with no '// Long file:' reason at its top")
        code = {path: strip(text) for path, text in texts.items()}
        if name not in SOCKET_LAYER | SYSCALL_TEST_PACKAGES:
            for path, c in code.items():
                rel = os.path.relpath(path, root)
                for number, line in enumerate(c.splitlines(), 1):
                    for call in STRICT_CALL.finditer(line):
                        if re.search(r"\bfunc\s+$", line[:call.start()]):
                            continue  # a declaration of the package's own, not a call
                        strict.add((rel, number, call.group(1) or call.group(2)))
                        offences.append(f"{rel}:{number}: calls {call.group(1) or call.group(2)}(); sockets come from Sockets, renames from FileRange")
                    if EINTR_LOOP.search(line):
                        offences.append(f"{rel}:{number}: retries EINTR by hand; use FileRange's retryingOnInterrupt or syscall")
        if name in SYSCALL_PACKAGES | SYSCALL_TEST_PACKAGES or name.removeprefix("Tools/") in SYSCALL_TOOLS:
            continue
        own = {m.group(1) or m.group(2) for c in code.values() for m in DECLARED.finditer(c)}
        for path, c in code.items():
            rel = os.path.relpath(path, root)
            for number, line in enumerate(c.splitlines(), 1):
                m = IMPORT.match(line)
                if m and m.group(1) in C_LIBRARIES:
                    offences.append(f"{rel}:{number}: imports {m.group(1)}; only {', '.join(sorted(SYSCALL_PACKAGES))} make system calls")
                for call in CALL.finditer(line):
                    if call.group(1) not in own and (rel, number, call.group(1)) not in strict:
                        offences.append(f"{rel}:{number}: calls {call.group(1)}() directly; use FileRange (files, processes) or HTTPClient (network)")
    for offence in offences:
        print(offence)
    if offences:
        print(f"check-boundaries: {len(offences)} offence(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
