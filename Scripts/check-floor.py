#!/usr/bin/env python3
"""Fails when the project uses an API whose Apple availability is newer than the deployment floor.

The list of such APIs comes from the toolchain itself: the public .swiftinterface files under
<toolchain>/usr/lib/swift/linux (Swift, _Concurrency, Synchronization, _StringProcessing, RegexBuilder, Testing, ...),
whose @available attributes are already expanded (the SwiftStdlib x.y macros become `macOS 15.0, iOS 18.0, ...`),
and, for the Foundation modules that ship only binary modules, swift-symbolgraph-extract's availability, which
includes what a declaration inherits from its extension or type. A declaration is "above the floor" when its
introduced version on macOS, iOS, tvOS or visionOS is newer than FLOOR, or it is unavailable there.

The project's Swift sources are then scanned with comments and string literals blanked: a use is an identifier
(a type, a free function, `.member`, or `Type(label:` for an initialiser) that names such a declaration. Names that
are overloaded with declarations at the floor are told apart by argument labels (the call's labels must fit the new
declaration's and fit none of the old ones); names that cannot be told apart by labels are not reported (the type
checker picks those by type; only a build for the Apple platforms proves them). A use passes when it is inside an
`@available(...)` declaration or an `if #available(...)` block (or after a `guard #available(...)`) that reaches the
needed versions, inside a `#if` branch that is never compiled for Apple platforms, or is allow-listed below.

Usage: Scripts/check-floor.sh [--self-test] [--list] [--verbose] [FILE...]
"""

import glob
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLOOR = {"macOS": (13, 0), "iOS": (16, 0), "tvOS": (16, 0), "visionOS": (1, 0)}
PLATFORMS = tuple(FLOOR)
NEVER = (9999, 0)  # "unavailable on this platform"

# What is scanned (relative to the repository root). Package.swift manifests are left out: they run on the build
# host with PackageDescription, not on the deployment target.
SCAN_GLOBS = [
    "Packages/*/Sources/**/*.swift",
    "Packages/*/Tests/**/*.swift",
    "Tools/**/*.swift",
    "Tests/**/*.swift",
    "Scripts/bench/**/*.swift",
]
EXCLUDE_NAMES = {"Package.swift"}

# Uses that are fine although the name matches: (path glob, symbol, regex the source line must match, reason).
# Every entry needs a reason.
ALLOW = [
    ("*", "attoseconds", r"\.components\.attoseconds\b",
     "Duration.components (macOS 13) is a (seconds:, attoseconds:) tuple of Int64; its element is not "
     "Duration.attoseconds, the Int128 property that needs macOS 15"),
]

# Modules whose public .swiftinterface carries Apple availability, and the binary-only ones read through
# swift-symbolgraph-extract.
SYMBOLGRAPH_MODULES = ["FoundationEssentials", "FoundationInternationalization", "Foundation"]


def toolchain_lib():
    swiftc = os.environ.get("SWIFTC") or shutil_which("swiftc") or "/opt/swift/usr/bin/swiftc"
    usr = os.path.dirname(os.path.dirname(os.path.realpath(swiftc)))
    return os.path.join(usr, "lib", "swift", "linux"), os.path.join(usr, "bin")


def shutil_which(name):
    for d in os.environ.get("PATH", "").split(os.pathsep):
        p = os.path.join(d, name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


# ---------------------------------------------------------------------------------------------------------------
# Blanking comments and string literals (keeps offsets and newlines, so line numbers stay right)


def blank(src):
    out = list(src)
    i, n = 0, len(src)

    def fill(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            fill(i, j)
            i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            fill(i, j)
            i = j
        elif c == '"' or (c == "#" and re.match(r'#+"', src[i:i + 8])):
            hashes = 0
            j = i
            while j < n and src[j] == "#":
                hashes, j = hashes + 1, j + 1
            if src.startswith('"""', j):
                close = '"""' + "#" * hashes
                k = src.find(close, j + 3)
                k = n if k < 0 else k + len(close)
            else:
                close = '"' + "#" * hashes
                k = j + 1
                while k < n:
                    if src[k] == "\\" and hashes == 0:
                        k += 2
                        continue
                    if src.startswith(close, k) or src[k] == "\n":
                        break
                    k += 1
                k = min(n, k + len(close))
            # keep the quotes so the text stays a string literal
            fill(j + 1, max(j + 1, k - 1 - hashes))
            i = k
        else:
            i += 1
    return "".join(out)


# ---------------------------------------------------------------------------------------------------------------
# Availability attributes


def parse_version(text):
    parts = [int(p) for p in re.findall(r"\d+", text)[:2]]
    while len(parts) < 2:
        parts.append(0)
    return tuple(parts)


def parse_available(args):
    """The platform versions an @available(...) / #available(...) argument list states; None if it states none."""
    args = args.strip()
    result = {}
    items = [a.strip() for a in args.split(",")]
    # long form: @available(macOS, introduced: 15.0) / @available(macOS, unavailable)
    if items and items[0] in PLATFORMS + ("macOSApplicationExtension", "iOSApplicationExtension"):
        plat = items[0]
        if plat not in PLATFORMS:
            return None
        for it in items[1:]:
            if it.startswith("introduced:"):
                result[plat] = parse_version(it.split(":", 1)[1])
            elif it == "unavailable":
                result[plat] = NEVER
        return result or None
    for it in items:
        m = re.match(r"^(macOS|iOS|tvOS|visionOS)\s+([\d.]+)$", it)
        if m:
            result[m.group(1)] = parse_version(m.group(2))
    return result or None


def merge(a, b):
    out = dict(a)
    for k, v in b.items():
        out[k] = max(out.get(k, (0, 0)), v)
    return out


def above_floor(av):
    return {p: v for p, v in av.items() if p in FLOOR and v > FLOOR[p]}


def fmt_versions(av):
    return ", ".join(f"{p} {'unavailable' if v == NEVER else '.'.join(map(str, v))}" for p, v in sorted(av.items()))


def balanced(text, i, open_c="(", close_c=")"):
    """Index just past the bracket that closes the one at text[i]."""
    depth = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == open_c:
            depth += 1
        elif c == close_c:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


# ---------------------------------------------------------------------------------------------------------------
# Declarations from .swiftinterface files

MODIFIERS = (
    r"(?:(?:public|open|internal|package|fileprivate|private|final|static|class|mutating|nonmutating|override|"
    r"convenience|required|indirect|nonisolated(?:\(unsafe\))?|dynamic|optional|lazy|weak|unowned|__consuming|"
    r"consuming|borrowing|prefix|postfix|infix|distributed|isolated|__owned|__shared|_const)\s+)*"
)
DECL_RE = re.compile(
    r"^\s*" + MODIFIERS + r"(func|init|subscript|var|let|case|struct|class|enum|protocol|actor|typealias|extension|"
    r"associatedtype|macro|operator|precedencegroup|deinit)\b(.*)$"
)
ATTR_RE = re.compile(r"@[A-Za-z_][A-Za-z0-9_]*")
IDENT = r"`?([A-Za-z_][A-Za-z0-9_]*)`?"
TYPE_KINDS = {"struct", "class", "enum", "protocol", "actor", "typealias"}
MODULE_NAMES = {"Swift", "_Concurrency", "_StringProcessing", "Synchronization", "RegexBuilder", "Foundation",
                "FoundationEssentials", "FoundationInternationalization", "Testing", "Observation", "Distributed",
                "Runtime", "Dispatch", "Glibc", "_Differentiation", "Cxx", "CxxStdlib"}


def strip_attributes(line):
    """Returns (@available argument lists, the line with every attribute removed)."""
    avail = []
    out = []
    i, n = 0, len(line)
    while i < n:
        m = ATTR_RE.match(line, i) if line[i] == "@" else None
        if m:
            j = m.end()
            args = None
            if j < n and line[j] == "(":
                k = balanced(line, j)
                args = line[j + 1:k - 1]
                j = k
            if m.group(0) == "@available" and args is not None:
                avail.append(args)
            i = j
        else:
            out.append(line[i])
            i += 1
    return avail, "".join(out)


def param_labels(text):
    """Argument labels of a parameter clause starting at text[0] == '('; '_' for an unlabeled parameter."""
    end = balanced(text, 0)
    inner = text[1:end - 1]
    labels = []
    for param in split_top(inner):
        head = param.split(":", 1)[0].split()
        if not param.strip():
            continue
        labels.append(head[0].strip("`") if head else "_")
    return labels


def split_top(inner, opening="([{<", closing=")]}>"):
    """Splits at the commas outside any bracket pair."""
    parts, depth, cur = [], 0, []
    for c in inner:
        if c in opening:
            depth += 1
        elif c in closing:
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return [p for p in parts if p.strip()]


def after_generics(rest):
    rest = rest.lstrip()
    if rest.startswith("<"):
        rest = rest[balanced(rest, 0, "<", ">"):]
    return rest.lstrip()


def parse_interface(text, module, decls):
    text = blank(text)
    stack = []  # (open depth, kind 'type'|'skip', name, availability)
    depth = 0
    pending = []
    for line in text.split("\n"):
        stripped = line.strip()
        in_skip = any(s[1] == "skip" for s in stack)
        if not in_skip and stripped:
            if stripped.startswith("#"):
                if not stripped.startswith("#if"):
                    pending = []
            else:
                attrs, rest = strip_attributes(line)
                pending += attrs
                m = DECL_RE.match(rest)
                if m:
                    kind, tail = m.group(1), m.group(2)
                    own = {}
                    for a in pending:
                        st = parse_available(a)
                        if st:
                            own = merge(own, st)
                    pending = []
                    enclosing = stack[-1][3] if stack else {}
                    parent_path = stack[-1][4] if stack else []
                    parent = parent_path[-1] if parent_path else None
                    eff = merge(enclosing, own)
                    name, labels = decl_name(kind, tail)
                    if name is not None and kind != "extension":
                        decls.append({
                            "kind": kind, "name": name, "parent": parent, "labels": labels,
                            "avail": eff, "module": module, "spi": False, "path": parent_path + [name],
                        })
                    opens = line.count("{") - line.count("}")
                    if opens > 0:
                        if kind == "extension":
                            ext = re.match(r"([A-Za-z_][A-Za-z0-9_.]*)", tail.strip())
                            comps = ext.group(1).split(".") if ext else [name]
                            if len(comps) > 1 and comps[0] in MODULE_NAMES:
                                comps = comps[1:]
                            stack.append((depth + 1, "type", comps[-1], eff, comps))
                        elif kind in TYPE_KINDS:
                            stack.append((depth + 1, "type", name, eff, parent_path + [name]))
                        else:
                            stack.append((depth + 1, "skip", name, eff, parent_path + [name]))
                elif rest.strip():
                    pending = []
        for c in line:
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                while stack and depth < stack[-1][0]:
                    stack.pop()
        # a declaration whose '{' is on the line itself was pushed with the depth before this line's braces
    return decls


def decl_name(kind, tail):
    tail = tail.strip()
    if kind in ("deinit", "subscript", "operator", "precedencegroup", "associatedtype"):
        return None, None
    if kind == "extension":
        m = re.match(r"([A-Za-z_][A-Za-z0-9_.]*)", tail)
        return (m.group(1).split(".")[-1] if m else None), None
    if kind == "init":
        rest = tail.lstrip("?!")
        rest = after_generics(rest)
        return "init", (param_labels(rest) if rest.startswith("(") else [])
    m = re.match(IDENT, tail)
    if not m:
        return None, None
    name = m.group(1)
    if kind in ("func", "macro"):
        rest = after_generics(tail[m.end():])
        return name, (param_labels(rest) if rest.startswith("(") else [])
    if kind == "case":
        rest = tail[m.end():].lstrip()
        return name, (param_labels(rest) if rest.startswith("(") else None)
    return name, None


# ---------------------------------------------------------------------------------------------------------------
# Declarations from symbol graphs (modules shipped without a .swiftinterface)

SG_KINDS = {
    "swift.struct": "struct", "swift.class": "class", "swift.enum": "enum", "swift.protocol": "protocol",
    "swift.typealias": "typealias", "swift.actor": "actor", "swift.func": "func", "swift.method": "func",
    "swift.type.method": "func", "swift.property": "var", "swift.type.property": "var", "swift.var": "var",
    "swift.init": "init", "swift.enum.case": "case", "swift.macro": "macro",
}


def parse_symbolgraph(path, decls):
    with open(path) as f:
        graph = json.load(f)
    module = graph["module"]["name"]
    for s in graph["symbols"]:
        kind = SG_KINDS.get(s["kind"]["identifier"])
        if not kind:
            continue
        comps = s["pathComponents"]
        title = comps[-1]
        av = {}
        for a in s.get("availability", []):
            dom = a.get("domain")
            if dom not in FLOOR:
                continue
            if a.get("isUnconditionallyUnavailable"):
                av[dom] = NEVER
            elif "introduced" in a:
                i = a["introduced"]
                av[dom] = (i.get("major", 0), i.get("minor", 0))
        m = re.match(r"^([^(]+)\((.*)\)$", title)
        labels = None
        if m:
            name = m.group(1)
            labels = [x for x in m.group(2).split(":") if x != ""] if m.group(2) else []
        else:
            name = title
        if kind == "init":
            name = "init"
            labels = labels or []
        if kind in ("func", "macro") and labels is None:
            labels = []
        parent = comps[-2] if len(comps) > 1 else None
        decls.append({"kind": kind, "name": name, "parent": parent, "labels": labels, "avail": av,
                      "module": module, "spi": bool(s.get("spi")), "path": comps[:-1] + [name]})
    return decls


# ---------------------------------------------------------------------------------------------------------------
# The symbol table, cached by the toolchain files it came from


def derive(lib, bindir, verbose=False):
    interfaces = sorted(glob.glob(os.path.join(lib, "*.swiftmodule", "*-unknown-linux-gnu.swiftinterface")))
    interfaces = [p for p in interfaces if not p.endswith(".private.swiftinterface")
                  and os.path.basename(os.path.dirname(p)) not in ("Cxx.swiftmodule", "CxxStdlib.swiftmodule")]
    binaries = [os.path.join(lib, m + ".swiftmodule") for m in SYMBOLGRAPH_MODULES]
    key = hashlib.sha256()
    with open(os.path.abspath(__file__), "rb") as f:
        key.update(f.read())
    for p in interfaces + [b for b in binaries if os.path.isdir(b)]:
        for q in ([p] + sorted(glob.glob(os.path.join(p, "*")))) if os.path.isdir(p) else [p]:
            st = os.stat(q)
            key.update(f"{q}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    cache_dir = os.path.join(ROOT, ".build", "check-floor")
    cache = os.path.join(cache_dir, key.hexdigest()[:16] + ".json")
    if os.path.exists(cache):
        with open(cache) as f:
            return tuples(json.load(f))
    decls = []
    procs = []
    tmp = tempfile.mkdtemp(prefix="check-floor-")
    extract = os.path.join(bindir, "swift-symbolgraph-extract")
    triple = os.path.basename(interfaces[0]).replace(".swiftinterface", "") if interfaces else "x86_64-unknown-linux-gnu"
    for m in SYMBOLGRAPH_MODULES:
        if not os.path.isdir(os.path.join(lib, m + ".swiftmodule")) or not os.path.exists(extract):
            continue
        out = os.path.join(tmp, m)
        os.makedirs(out)
        procs.append((m, out, subprocess.Popen(
            [extract, "-module-name", m, "-target", triple, "-I", lib, "-output-dir", out],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)))
    sources = []
    for p in interfaces:
        module = os.path.basename(os.path.dirname(p)).replace(".swiftmodule", "")
        with open(p, encoding="utf-8", errors="replace") as f:
            parse_interface(f.read(), module, decls)
        sources.append(p)
    for m, out, proc in procs:
        _, err = proc.communicate()
        if proc.returncode != 0:
            sys.exit(f"check-floor: swift-symbolgraph-extract failed for {m}:\n{err.decode(errors='replace')}")
        for g in sorted(glob.glob(os.path.join(out, "*.symbols.json"))):
            parse_symbolgraph(g, decls)
        sources.append(os.path.join(lib, m + ".swiftmodule"))
    table = build_table(decls)
    table["sources"] = sources
    os.makedirs(cache_dir, exist_ok=True)
    for old in glob.glob(os.path.join(cache_dir, "*.json")):
        os.remove(old)
    with open(cache, "w") as f:
        json.dump(table, f)
    return tuples(json.loads(json.dumps(table)))


def tuples(table):
    """JSON gives versions back as lists; comparisons need tuples."""
    for t in table["types"].values():
        t["avail"] = {p: tuple(v) for p, v in t["avail"].items()}
    for entries in table["new"].values():
        for e in entries:
            e["avail"] = {p: tuple(v) for p, v in e["avail"].items()}
    return table


def build_table(decls):
    """new[key] = list of {labels, avail, where}; old[key] = list of label lists (None for no parameter clause)."""
    new, old = {}, {}
    new_types = {}
    old_types = set()
    protocols = {d["name"] for d in decls if d["kind"] == "protocol"}
    new_type_paths = {".".join(d["path"]) for d in decls
                      if d["kind"] in TYPE_KINDS and above_floor(d["avail"]) and not d["spi"]}
    for d in decls:
        if d["spi"] or d["name"].startswith("_"):
            continue  # underscored and SPI names are not API
        need = above_floor(d["avail"])
        if d["kind"] in TYPE_KINDS:
            if need:
                prev = new_types.get(d["name"])
                new_types[d["name"]] = merge(prev, need) if prev else need
                new_types[d["name"] + "@where"] = d["module"]
            else:
                old_types.add(d["name"])
            continue
        if d["kind"] == "init":
            key = "init " + (d["parent"] or "")
        elif d["parent"] is None:
            key = "free " + d["name"]
        else:
            key = "member " + d["name"]
        if need:
            where = f"{d['module']}.{d['parent'] + '.' if d['parent'] else ''}{d['name']}"
            parents = [".".join(d["path"][:i]) for i in range(1, len(d["path"]))]
            if any(p in new_type_paths for p in parents):
                continue  # a member of a type above the floor: found through the type's name
            new.setdefault(key, []).append({"labels": d["labels"], "avail": need, "where": where,
                                            "parent": d["parent"], "module": d["module"]})
        else:
            old.setdefault(key, []).append({"labels": d["labels"], "parent": d["parent"], "module": d["module"]})
    # Members and initialisers of a type that is itself above the floor are found through the type's name.
    types = {}
    for name, need in new_types.items():
        if name.endswith("@where"):
            continue
        if name in old_types:
            continue  # the same name at the floor elsewhere (a nested type); cannot tell by name
        types[name] = {"avail": need, "where": new_types[name + "@where"] + "." + name,
                       "module": new_types[name + "@where"]}
    pruned = {}
    for key, entries in new.items():
        keep = [e for e in entries if e["parent"] not in types]
        if keep:
            pruned[key] = keep
    old = {k: list({json.dumps(v, sort_keys=True): v for v in vs}.values()) for k, vs in old.items()}
    return {"types": types, "new": pruned, "old": old, "protocols": sorted(protocols)}


# ---------------------------------------------------------------------------------------------------------------
# Scanning the project's sources

APPLE_EXCLUDED = re.compile(r"^\s*(os\((Linux|Android|Windows|FreeBSD|OpenBSD|WASI|Cygwin)\)|canImport\((Glibc|Musl|Bionic|"
                            r"WinSDK|Android)\)|!\s*canImport\(Darwin\)|!\s*os\(macOS\)\s*&&\s*!\s*os\(iOS\).*)\s*$")
APPLE_ONLY = re.compile(r"^\s*canImport\(Darwin\)\s*$")


def non_apple_lines(lines):
    """Line numbers (1-based) inside #if branches that are never compiled for an Apple platform."""
    out = set()
    stack = []  # [this branch is never compiled for Apple, an earlier branch of this #if was canImport(Darwin)]
    for no, line in enumerate(lines, 1):
        s = line.strip()
        m = re.match(r"^#(if|elseif|else|endif)\b(.*)$", s)
        if m:
            d, cond = m.group(1), m.group(2)
            if d == "if":
                stack.append([bool(APPLE_EXCLUDED.match(cond)), bool(APPLE_ONLY.match(cond))])
            elif d == "elseif" and stack:
                # after a canImport(Darwin) branch, every Apple build has taken that one
                darwin_before = stack[-1][1]
                stack[-1] = [darwin_before or bool(APPLE_EXCLUDED.match(cond)),
                             darwin_before or bool(APPLE_ONLY.match(cond))]
            elif d == "else" and stack:
                stack[-1] = [stack[-1][1], stack[-1][1]]
            elif d == "endif" and stack:
                stack.pop()
            continue
        if any(b[0] for b in stack):
            out.add(no)
    return out


DECL_START = re.compile(r"^\s*(@|(?:" + MODIFIERS + r")(func|init|var|let|case|struct|class|enum|protocol|actor|"
                        r"typealias|extension|subscript|deinit)\b|\}|#)")


def coverage(text):
    """(start, end, availability) ranges from @available declarations and #available checks."""
    ranges = []
    n = len(text)
    for m in re.finditer(r"([@#])(available|unavailable)\s*\(", text):
        lp = m.end() - 1
        rp = balanced(text, lp)
        st = parse_available(text[lp + 1:rp - 1])
        if not st:
            continue
        if m.group(1) == "@":
            # the declaration after the attribute: up to its body's closing brace, or to the end of the
            # declaration when it has no body
            i = rp
            pdepth = 0
            end = n
            while i < n:
                c = text[i]
                if c in "([":
                    pdepth += 1
                elif c in ")]":
                    pdepth -= 1
                elif c == "{" and pdepth == 0:
                    end = balanced(text, i, "{", "}")
                    break
                elif c == "\n" and pdepth == 0:
                    nl = text.find("\n", i + 1)
                    nxt = text[i + 1: nl if nl >= 0 else n]
                    decl_seen = DECL_RE.match(strip_attributes(text[rp:i])[1].strip() or "x")
                    if decl_seen and nxt.strip() and DECL_START.match(nxt) and not nxt.strip().startswith("@"):
                        end = i
                        break
                i += 1
            ranges.append((m.start(), end, st))
        elif m.group(2) == "available":
            # `if #available` / `, #available` in a condition list: the next block; `guard #available`: the
            # rest of the enclosing block after the else block
            line_start = text.rfind("\n", 0, m.start()) + 1
            head = text[line_start:m.start()]
            i = rp
            while i < n and text[i] != "{":
                i += 1
            body_end = balanced(text, i, "{", "}")
            if re.search(r"\bguard\b", head):
                # the enclosing block ends where depth drops below the guard's
                depth, j = 0, body_end
                while j < n:
                    if text[j] == "{":
                        depth += 1
                    elif text[j] == "}":
                        if depth == 0:
                            break
                        depth -= 1
                    j += 1
                ranges.append((body_end, j, st))
            else:
                ranges.append((m.start(), body_end, st))
    return ranges


def infer_vision(av):
    if "visionOS" not in av and "iOS" in av and av["iOS"] >= (17, 0):
        ios = av["iOS"]
        av = dict(av)
        av["visionOS"] = ios if ios >= (26, 0) else (ios[0] - 16, ios[1])
    return av


def covered(need, scopes):
    have = {}
    for st in scopes:
        have = merge(have, infer_vision(st))
    return all(have.get(p, FLOOR[p]) >= v for p, v in need.items())


def is_subsequence(call, decl):
    it = iter(decl)
    return all(any(c == d for d in it) for c in call)


def call_labels(text, i):
    """Labels of the call whose name ends at text[i], or None when no '(' follows."""
    n = len(text)
    j = i
    while j < n and text[j] in " \t":
        j += 1
    if j < n and text[j] == "<":
        k = balanced(text, j, "<", ">")
        if k < n and text[k] == "(":
            j = k
    if j >= n or text[j] != "(":
        return None
    end = balanced(text, j)
    labels = []
    for arg in split_args(text[j + 1:end - 1]):
        m = re.match(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*:(?!:)", arg)
        labels.append(m.group(1) if m else "_")
    return labels


def split_args(inner):
    # In a call, < and > are operators, not brackets.
    return split_top(inner, "([{", ")]}")


def project_declared(files):
    """Names the project itself declares, as (types and functions, members): its own uses of them are not the
    toolchain's. Members are typed properties (`var name: T`), functions and enum cases; a local `let x = ...`
    hides nothing."""
    names, members = set(), set()
    pat = re.compile(r"\b(?:func|var|let|case|struct|class|enum|protocol|actor|typealias)\s+`?([A-Za-z_][A-Za-z0-9_]*)")
    member = re.compile(r"\b(?:(?:var|let)\s+`?([A-Za-z_][A-Za-z0-9_]*)`?\s*:|func\s+`?([A-Za-z_][A-Za-z0-9_]*)|"
                        r"case\s+`?([A-Za-z_][A-Za-z0-9_]*))")
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = blank(f.read())
        for m in pat.finditer(text):
            names.add(m.group(1))
        for m in member.finditer(text):
            members.add(m.group(1) or m.group(2) or m.group(3))
    return names, members


IDENT_RE = re.compile(r"(?<![A-Za-z0-9_$])([A-Za-z_][A-Za-z0-9_]*)")


def scan(files, table, rel=lambda p: p, shadow=None, member_shadow=None):
    types, new, old = table["types"], table["new"], table["old"]
    member_shadow = member_shadow if member_shadow is not None else set()
    protocols = set(table["protocols"])
    shadow = shadow if shadow is not None else set()
    hits = []
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as f:
            src = f.read()
        text = blank(src)
        lines = text.split("\n")
        line_starts = [0]
        for ln in lines:
            line_starts.append(line_starts[-1] + len(ln) + 1)
        excluded = non_apple_lines(lines)
        words = set(IDENT_RE.findall(text))
        visible = visible_modules(text)
        ranges = coverage(text)
        import bisect
        for m in IDENT_RE.finditer(text):
            name = m.group(1)
            pos = m.start()
            prev = text[:pos].rstrip()[-1:] if pos else ""
            dotted = prev == "."
            found = None
            if (name in types and name not in shadow and types[name]["module"] in visible
                    and not dotted_member_of_other(text, pos)):
                found = (name, types[name]["avail"], types[name]["where"])
            elif (not (name in shadow and not dotted) and not (dotted and name in member_shadow)) or (
                    dotted and receiver_type(text, pos)):
                labels = None
                receiver = receiver_type(text, pos) if dotted else None
                computed = False
                keys = []
                if dotted:
                    keys.append("member " + name)
                else:
                    keys.append("free " + name)
                    if name in types or re.match(r"[A-Z]", name):
                        keys.append("init " + name)
                for key in keys:
                    entries = [e for e in new.get(key, []) if e["module"] in visible]
                    if not entries:
                        continue
                    if not computed:
                        labels = call_labels(text, m.end())
                        computed = True
                    olds = [o for o in old.get(key, []) if o["module"] in visible]
                    if receiver and any(e["parent"] == receiver for e in entries):
                        # `Task.name`: the receiver names the type, so only that type's declarations count
                        entries = [e for e in entries if e["parent"] == receiver]
                        olds = [o for o in olds if o["parent"] == receiver]
                    if key.startswith("init "):
                        if labels is None:
                            continue
                    fit_new = [e for e in entries if fits(labels, e["labels"])]
                    # An old declaration of the same name and labels makes the use ambiguous, unless it is a
                    # member of a concrete type this file never names (`.span` is old on MutableSpan, new on
                    # Array: a file that never says MutableSpan means Array's).
                    parents = {e["parent"] for e in fit_new}
                    fit_old = [o for o in olds if fits(labels, o["labels"]) and (
                        o["parent"] is None or o["parent"] in protocols or o["parent"] in words or
                        o["parent"] in parents or not key.startswith("member "))]
                    if fit_new and not fit_old:
                        # the least any of the fitting declarations needs
                        need = above_floor({p: min(e["avail"].get(p, FLOOR[p]) for e in fit_new) for p in FLOOR})
                        found = (name + ("(" + "".join(l + ":" for l in labels) + ")" if labels is not None else ""),
                                 need, fit_new[0]["where"])
                        break
            if not found:
                continue
            line = bisect.bisect_right(line_starts, pos)
            if line in excluded:
                continue
            scopes = [st for (a, b, st) in ranges if a <= pos < b]
            if covered(found[1], scopes):
                continue
            hits.append((rel(path), line, found[0], found[1], found[2]))
        for pos, label, need in feature_uses(text):
            line = bisect.bisect_right(line_starts, pos)
            if line in excluded or covered(need, [st for (a, b, st) in ranges if a <= pos < b]):
                continue
            hits.append((rel(path), line, label, need, "language feature"))
    return hits


IMPLICIT_MODULES = {"Swift", "_Concurrency", "_StringProcessing", "SwiftOnoneSupport"}
REEXPORTS = {
    "Foundation": {"FoundationEssentials", "FoundationInternationalization"},
    "FoundationNetworking": {"Foundation", "FoundationEssentials", "FoundationInternationalization"},
    "RegexBuilder": {"_StringProcessing"},
}


def visible_modules(text):
    """The modules a file imports (MemberImportVisibility is on: members, too, come only from these)."""
    mods = set(IMPLICIT_MODULES)
    for m in re.finditer(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?"
                         r"import\s+(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?([A-Za-z_][A-Za-z0-9_]*)",
                         text, re.M):
        mods.add(m.group(1))
        mods |= REEXPORTS.get(m.group(1), set())
    return mods


# Language features whose runtime support is newer than the floor on Apple platforms. The compiler diagnoses these
# only when it builds for an Apple target; the Linux compiler never does. Conservative: each match needs an
# @available scope, a non-Apple #if branch, or an allow-list entry saying why it is fine.
MACOS15 = {"macOS": (15, 0), "iOS": (18, 0), "tvOS": (18, 0), "visionOS": (2, 0)}
FEATURES = [
    (re.compile(r"\b(?:struct|class|enum|actor)\s+[A-Za-z_][A-Za-z0-9_]*\s*<[^>{]*\beach\s+[A-Z]"),
     "a parameter pack in a generic type", {"macOS": (14, 0), "iOS": (17, 0), "tvOS": (17, 0)}),
    (re.compile(r"@isolated\s*\(\s*any\s*\)"),
     "an @isolated(any) function type (erasing or casting one needs the Swift 6.0 runtime)", MACOS15),
    (re.compile(r"^\s*(?:@\w+\s+)*(?:(?:public|package|internal|fileprivate|private|static|final|nonisolated|lazy)\s+)*"
                r"(?:typealias\s+\w+(?:<[^>]*>)?\s*=|(?:var|let)\s+\w+\s*:)[^=\n]*\bthrows\s*\(\s*(?!any\b)", re.M),
     "a typed-throws function type as a type of its own (its metadata needs the Swift 6.0 runtime)", MACOS15),
    (re.compile(r"~\s*(?:Copyable|Escapable)\b"),
     "a ~Copyable/~Escapable generic (review its runtime needs on an Apple build)", MACOS15),
]


def feature_uses(text):
    for pattern, label, need in FEATURES:
        for m in pattern.finditer(text):
            yield m.start() + (len(m.group(0)) - len(m.group(0).lstrip())), label, need


def receiver_type(text, pos):
    """`Task` in `Task.name`: a capitalised identifier right before the dot (a type, as far as a name tells)."""
    m = re.search(r"(?<![A-Za-z0-9_.])([A-Z][A-Za-z0-9_]*)\s*\.\s*$", text[max(0, pos - 80):pos])
    return m.group(1) if m else None


def dotted_member_of_other(text, pos):
    """`Foo.Span` where Foo is not a module: a nested type of the project's, not the toolchain's."""
    before = text[:pos].rstrip()
    if not before.endswith("."):
        return False
    m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*\.$", before)
    return bool(m) and m.group(1) not in ("Swift", "Foundation", "FoundationEssentials", "_Concurrency",
                                          "Synchronization", "Testing")


def fits(call, decl):
    """Can a use with these labels (None: no call) refer to a declaration with these labels (None: no clause)?"""
    if call is None:
        return True  # a reference without a call can name anything with that name
    if decl is None:
        return False
    return is_subsequence(call, decl)


def allowed(hit, source_line):
    import fnmatch
    for pattern, symbol, context, reason in ALLOW:
        assert reason.strip(), "every allow-list entry needs a reason"
        if fnmatch.fnmatch(hit[0], pattern) and hit[2].split("(")[0] == symbol and re.search(context, source_line):
            return True
    return False


def source_line(path, line):
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    return lines[line - 1] if 0 < line <= len(lines) else ""


def project_files():
    files = set()
    for g in SCAN_GLOBS:
        for p in glob.glob(os.path.join(ROOT, g), recursive=True):
            if os.path.basename(p) in EXCLUDE_NAMES or "/.build/" in p:
                continue
            files.add(p)
    return sorted(files)


def report(hits):
    for path, line, sym, need, where in hits:
        print(f"{path}:{line}: {sym} needs {fmt_versions(need)} ({where}); the floor is "
              f"{fmt_versions(FLOOR)}", file=sys.stderr)


# ---------------------------------------------------------------------------------------------------------------

SELF_TEST_BAD = '''
import Foundation
func drain() async {
    await withDiscardingTaskGroup { group in group.addTask {} }
}
let wide: Int128 = 1
let text = String(validating: [UInt8](), as: UTF8.self); let current = Task.name
struct S { var bytes: [UInt8] = []; func f() { _ = bytes.span } }
struct Pack<each T> {}
typealias Thrower = () throws(CancellationError) -> Void
@available(macOS 15.0, iOS 18.0, tvOS 18.0, visionOS 2.0, *)
func fine() -> Int128 { 1 }
func checked() {
    if #available(macOS 13.4, iOS 16.4, tvOS 16.4, *) { }
    if #available(macOS 15.0, iOS 18.0, tvOS 18.0, visionOS 2.0, *) { _ = UInt128(1) }
}
'''
SELF_TEST_BAD_EXPECT = {"withDiscardingTaskGroup", "Int128", "String(validating:as:)", "span", "name"}

SELF_TEST_CLEAN = '''
import Foundation
// withDiscardingTaskGroup in a comment, and "Int128 in a string", are not uses.
func drain() async {
    await withTaskGroup(of: Void.self) { group in group.addTask {}; for await _ in group {} }
    let s = String(decoding: [UInt8](), as: UTF8.self)
    let task = Task(name: "drain", priority: .low) { await Task.yield() }
    _ = s.count
}
@available(macOS 15.0, iOS 18.0, tvOS 18.0, visionOS 2.0, *)
struct Wide { var value: Int128 = 0 }
func rethrowing<E: Error>(_ body: () throws(E) -> Void) throws(E) { try body() }
func variadic<each T>(_ value: repeat each T) {}
func guarded() {
    guard #available(macOS 15.0, iOS 18.0, tvOS 18.0, visionOS 2.0, *) else { return }
    _ = Int128(1)
}
#if os(Linux)
let linuxOnly: Int128 = 1
#endif
'''


def self_test(table):
    tmp = tempfile.mkdtemp(prefix="check-floor-self-test-")
    bad = os.path.join(tmp, "Bad.swift")
    clean = os.path.join(tmp, "Clean.swift")
    with open(bad, "w") as f:
        f.write(SELF_TEST_BAD)
    with open(clean, "w") as f:
        f.write(SELF_TEST_CLEAN)
    ok = True
    bad_hits = scan([bad], table, rel=os.path.basename)
    syms = {h[2] for h in bad_hits}
    lines = {h[1] for h in bad_hits}
    if not SELF_TEST_BAD_EXPECT <= syms or any(ln >= 11 for ln in lines) or len(bad_hits) != 7:
        print(f"check-floor self-test: the bad sample gave {sorted(syms)} on lines {sorted(lines)}; expected "
              f"{sorted(SELF_TEST_BAD_EXPECT)}, a pack and a typed-throws type, and nothing from line 11 on", file=sys.stderr)
        report(bad_hits)
        ok = False
    clean_hits = scan([clean], table, rel=os.path.basename)
    if clean_hits:
        print("check-floor self-test: the clean sample should pass but gave:", file=sys.stderr)
        report(clean_hits)
        ok = False
    if not ok:
        sys.exit(1)
    print(f"check-floor self-test: the bad sample fails ({len(bad_hits)} uses: {', '.join(sorted(syms))}), "
          f"the clean one passes")


def main(argv):
    args = [a for a in argv if a.startswith("--")]
    paths = [a for a in argv if not a.startswith("--")]
    for a in args:
        if a not in ("--self-test", "--list", "--verbose"):
            print("usage: Scripts/check-floor.sh [--self-test] [--list] [--verbose] [FILE...]", file=sys.stderr)
            return 64
    lib, bindir = toolchain_lib()
    table = derive(lib, bindir)
    count = len(table["types"]) + sum(len(v) for v in table["new"].values())
    if "--list" in args:
        for name, t in sorted(table["types"].items()):
            print(f"type   {name}: {fmt_versions(t['avail'])} ({t['where']})")
        for key, entries in sorted(table["new"].items()):
            for e in entries:
                labels = "(" + "".join(l + ":" for l in e["labels"]) + ")" if e["labels"] is not None else ""
                print(f"{key.split()[0]:6} {key.split()[1] if key.split()[0] != 'init' else key.split()[1] + '.init'}"
                      f"{labels}: {fmt_versions(e['avail'])} ({e['where']})")
        return 0
    if "--self-test" in args:
        self_test(table)
        return 0
    files = [os.path.abspath(p) for p in paths] if paths else project_files()
    shadow, member_shadow = project_declared(project_files())
    toolchain_names = set(table["types"]) | {k.split()[1] for k in table["new"]}
    rel = lambda p: os.path.relpath(p, ROOT)
    hits = scan(files, table, rel=rel, shadow=shadow & toolchain_names, member_shadow=member_shadow & toolchain_names)
    hits = [h for h in hits if not allowed(h, source_line(h[0], h[1]))]
    if "--verbose" in args:
        print("check-floor: types and functions the project declares itself (its bare uses of them are not "
              f"checked): {', '.join(sorted(shadow & toolchain_names))}")
        print("check-floor: members the project declares itself (`.name` uses are not checked): "
              f"{', '.join(sorted(member_shadow & toolchain_names))}")
    if hits:
        report(hits)
        print(f"check-floor: {len(hits)} use(s) of APIs newer than the floor ({fmt_versions(FLOOR)}); replace them, "
              f"put them under @available/#available, or allow-list them with a reason in Scripts/check-floor.py",
              file=sys.stderr)
        return 1
    print(f"check-floor: {len(files)} files use none of the {count} declarations newer than the floor "
          f"({fmt_versions(FLOOR)}) found in {len(table['sources'])} toolchain modules")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
