#!/usr/bin/env python3
"""Fails when the root Package.swift and the packages' own manifests drift apart.

For every package under Packages/, each of its targets must appear in the root manifest with the same kind, the same
path (relative to the repository), the same dependencies, the same resources and the same Swift settings, and the
root must declare nothing under Packages/<X>/ that X's manifest does not. Package dependencies must follow the DAG of
Documentation/Architecture.md. `--self-test` proves the comparison fails on drifted manifests.
"""
import copy
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ["TextCodecs", "FileRange", "HLSPlaylist", "MPEGTS", "FragmentedMP4", "HTTPWire", "Sockets", "LoopbackHTTP", "HTTPClient", "HLSAdFilter", "HLSDownload", "TSPlayback", "HLSProxy", "MediaCache", "TSPlayerKit", "TestSupport"]
# Test-only packages: any package may use them in its test targets, and no library or tool target may depend on them.
TEST_ONLY = {"TestSupport"}
# The dependency DAG: each package may depend on these siblings and nothing else.
DAG = {
    "TextCodecs": set(),
    "FileRange": {"TextCodecs"},
    "HLSPlaylist": {"TextCodecs"},
    "MPEGTS": {"FileRange"},
    "FragmentedMP4": {"MPEGTS", "TextCodecs"},
    "HTTPWire": {"TextCodecs"},
    "Sockets": {"FileRange"},
    "LoopbackHTTP": {"HTTPWire", "Sockets", "FileRange", "TextCodecs"},
    "HTTPClient": {"HTTPWire", "Sockets", "FileRange", "TextCodecs"},
    "HLSAdFilter": {"HLSPlaylist", "MPEGTS", "TextCodecs"},
    "HLSDownload": {"HLSPlaylist", "MPEGTS", "HTTPClient", "FileRange"},
    "TSPlayback": {"FileRange", "MPEGTS", "FragmentedMP4", "HLSPlaylist", "LoopbackHTTP", "TextCodecs"},
    "HLSProxy": {"FileRange", "MPEGTS", "FragmentedMP4", "HLSPlaylist", "HLSAdFilter", "HTTPClient", "LoopbackHTTP", "TextCodecs"},
    "MediaCache": {"FileRange", "HTTPClient", "LoopbackHTTP"},
    "TSPlayerKit": {"FileRange", "HTTPClient", "LoopbackHTTP", "TSPlayback", "HLSProxy", "MediaCache", "HLSDownload"},
    "TestSupport": {"FileRange"},
}


def dump(package_dir):
    out = subprocess.run(
        ["swift", "package", "--package-path", package_dir, "dump-package"],
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out)


def dependency_names(target):
    names = []
    for dep in target.get("dependencies", []):
        for kind in ("byName", "target", "product"):
            if kind in dep:
                names.append(dep[kind][0])
    return sorted(names)


def describe(target, package_rel):
    kind = target["type"]
    default = ("Tests/" if kind == "test" else "Sources/") + target["name"]
    path = os.path.normpath(os.path.join(package_rel, target.get("path") or default))
    settings = sorted(json.dumps(s, sort_keys=True) for s in target.get("settings", []))
    resources = sorted(json.dumps(r, sort_keys=True) for r in target.get("resources", []))
    exclude = sorted(target.get("exclude", []))
    return {"type": kind, "path": path, "dependencies": dependency_names(target),
            "settings": settings, "resources": resources, "exclude": exclude}


def compare(root, packages):
    """Returns a list of problems; empty when the manifests agree."""
    problems = []
    root_targets = {t["name"]: describe(t, ".") for t in root["targets"]}
    if root.get("dependencies"):
        problems.append("the root manifest must have no package dependencies")
    for product in root.get("products", []):
        if set(product.get("targets", [])) & TEST_ONLY:
            problems.append(f"the root's product {product['name']} offers the test-only {sorted(TEST_ONLY)}")
    claimed = set()
    for name, manifest in packages.items():
        rel = os.path.join("Packages", name)
        deps = {os.path.basename(d["fileSystem"][0]["path"]) if "fileSystem" in d else json.dumps(d)
                for d in manifest.get("dependencies", [])}
        if not deps <= DAG[name] | (TEST_ONLY - {name}):
            problems.append(f"{name} depends on {sorted(deps - DAG[name] - TEST_ONLY)}, outside the DAG")
        for target in manifest["targets"]:
            mine = describe(target, rel)
            claimed.add(target["name"])
            theirs = root_targets.get(target["name"])
            if theirs is None:
                problems.append(f"{name}: target {target['name']} is missing from the root manifest")
                continue
            for field in ("type", "path", "dependencies", "settings", "resources", "exclude"):
                if mine[field] != theirs[field]:
                    problems.append(f"{name}: target {target['name']} {field} differs: "
                                    f"package {mine[field]} vs root {theirs[field]}")
    for tname, target in root_targets.items():
        if target["type"] != "test" and set(target["dependencies"]) & TEST_ONLY:
            problems.append(f"target {tname} is not a test target but depends on "
                            f"{sorted(set(target['dependencies']) & TEST_ONLY)}, which is for tests only")
        if target["path"].startswith("Packages/") and tname not in claimed:
            problems.append(f"root target {tname} at {target['path']} is in no package manifest")
    return problems


def main():
    root = dump(ROOT)
    packages = {name: dump(os.path.join(ROOT, "Packages", name)) for name in PACKAGES}
    if "--self-test" in sys.argv:
        # Each mutation must be caught.
        mutations = []
        m = copy.deepcopy(root)
        next(t for t in m["targets"] if t["name"] == "MPEGTS")["dependencies"] = []
        mutations.append(("a dependency dropped from the root", m, packages))
        m = copy.deepcopy(root)
        m["targets"] = [t for t in m["targets"] if t["name"] != "HLSPlaylistTests"]
        mutations.append(("a test target missing from the root", m, packages))
        p = copy.deepcopy(packages)
        p["FileRange"]["dependencies"] = [{"fileSystem": [{"path": "/x/Packages/MPEGTS"}]}]
        mutations.append(("a package dependency outside the DAG", root, p))
        m = copy.deepcopy(root)
        next(t for t in m["targets"] if t["name"] == "LoopbackHTTP")["settings"] = []
        mutations.append(("Swift settings changed", m, packages))
        m = copy.deepcopy(root)
        next(t for t in m["targets"] if t["name"] == "MPEGTS")["dependencies"].append({"byName": ["TestSupport", None]})
        mutations.append(("a library depending on the test support", m, packages))
        m = copy.deepcopy(root)
        m["products"] = m.get("products", []) + [{"name": "TestSupport", "targets": ["TestSupport"]}]
        mutations.append(("the test support made a product of the root", m, packages))
        failed = False
        for label, r, p in mutations:
            if not compare(r, p):
                print(f"check-manifests self-test: '{label}' was NOT detected", file=sys.stderr)
                failed = True
        if failed:
            sys.exit(1)
        print(f"check-manifests self-test: all {len(mutations)} drifts detected")
    problems = compare(root, packages)
    for problem in problems:
        print(f"check-manifests: {problem}", file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"check-manifests: root and {len(packages)} package manifests agree")


if __name__ == "__main__":
    main()
