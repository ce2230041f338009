#!/usr/bin/env python3
"""Type-checks every library and tool target against a real iOS SDK (Apple's headers and Swift interfaces).

Each module of the root manifest (`swift package dump-package`) except the test targets, TestSupport and the
Linux-only targets under Tests/ (the AVFoundation and UniformTypeIdentifiers stand-ins, the glue built against them)
is compiled by this toolchain's swiftc for `arm64-apple-ios16.0` against the SDK, in dependency order, with the
manifests' upcoming features and Swift 6 language mode:

1. `-typecheck`: every declaration and every function body is type-checked against the SDK's standard library,
   Foundation, Dispatch, AVFoundation and UniformTypeIdentifiers, including availability (iOS 16 is the deployment
   target, so an unguarded API newer than iOS 16 is an error) and the concurrency rules the type checker applies
   (Sendable captures and conformances, actor isolation).
2. `-emit-sil` for the modules in SIL_MODULES: SIL generation and the mandatory passes, where Swift 6's region-based
   isolation checks run (a non-Sendable value sent into a task, a `sending` value used after it was sent). The other
   modules cannot get there: SILGen with the SDK's Swift 5.10 standard library crashes on typed throws.
3. `-emit-module` with `-experimental-skip-all-function-bodies` for the modules others import (no SILGen).

A module passes with zero errors and zero warnings; the script prints one row per module and fails unless every
row is clean. When no SDK is found it prints one line saying the check was skipped and exits 0.

The resource directory is this toolchain's, minus its Linux `dispatch` module map (which would redefine the SDK's
`Dispatch`): a folder holding links to its `shims`, `apinotes` and `clang`.

Usage: Scripts/check-ios-sdk.sh [--self-test] [--verbose]
  TSPLAYERKIT_IOS_SDK   the SDK (default /opt/apple-sdks/iPhoneOS17.4.sdk)
  --self-test           first proves that the check refuses wrong code and accepts the same code written right
                        (SELF_TEST), then checks the project
  --verbose             prints the compiler's diagnostics of every module, not only of failing ones
See Documentation/Platforms.md.
"""

import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_SDK = "/opt/apple-sdks/iPhoneOS17.4.sdk"
TARGET = "arm64-apple-ios16.0"
WORK = os.path.join(ROOT, ".build", "check-ios-sdk")
PACKAGE_NAME = "tsplayerkit"  # every target is in one package, as SwiftPM builds them (`package` access)

# Modules that also go through SILGen and the mandatory passes (region-based isolation). Every other module declares
# or calls typed-throws functions, and SILGen of those crashes Swift 6.3 when the standard library is the SDK's 5.10
# one (tried on each: the compiler stops in "silgen emitFunction" of a `throws(...)` function). A module listed here
# fails the check if SILGen crashes on it. Documentation/Platforms.md lists both.
SIL_MODULES = {"SparseCacheCrashWriter", "loopback-http-testserver", "HLSAdFilter"}

DIAGNOSTIC = re.compile(r"^(?:(?P<file>[^:\n]+):(?P<line>\d+):\d+: |<unknown>:0: |)(?P<kind>error|warning): ", re.M)


def fail(message: str) -> None:
    print(f"check-ios-sdk: {message}", file=sys.stderr)
    sys.exit(1)


def toolchain_resource_dir() -> str:
    run = subprocess.run(["swiftc", "-print-target-info"], capture_output=True, text=True, check=True)
    info = json.loads(run.stdout)
    return info["paths"]["runtimeResourcePath"]


def make_resource_dir(work: str) -> str:
    """A resource folder with the toolchain's shims, API notes and clang headers, and no Linux dispatch module map."""
    source = toolchain_resource_dir()
    resources = os.path.join(work, "resource-dir")
    shutil.rmtree(resources, ignore_errors=True)
    os.makedirs(resources)
    for name in ("shims", "apinotes", "clang"):
        path = os.path.join(source, name)
        if not os.path.exists(path):
            fail(f"the toolchain has no {path}")
        os.symlink(path, os.path.join(resources, name))
    return resources


class Module:
    def __init__(self, name: str, kind: str, path: str, dependencies: list[str], features: list[str],
                 exclude: list[str], has_resources: bool):
        self.name = name
        self.module_name = re.sub(r"[^A-Za-z0-9_]", "_", name)
        self.kind = kind
        self.path = path
        self.dependencies = dependencies
        self.features = features
        self.exclude = exclude
        self.has_resources = has_resources

    def sources(self) -> list[str]:
        root = os.path.join(ROOT, self.path)
        excluded = [os.path.join(root, e) for e in self.exclude]
        found = []
        for folder, _, files in os.walk(root):
            if any(folder == e or folder.startswith(e + os.sep) for e in excluded):
                continue
            found += [os.path.join(folder, f) for f in files if f.endswith(".swift")]
        return sorted(found)


def manifest_modules() -> list[Module]:
    """The root manifest's library and tool targets, dependencies first."""
    dump = subprocess.run(["swift", "package", "dump-package"], cwd=ROOT, capture_output=True, text=True)
    if dump.returncode != 0:
        fail("swift package dump-package failed:\n" + dump.stderr)
    targets = json.loads(dump.stdout)["targets"]
    modules: dict[str, Module] = {}
    for target in targets:
        path = target.get("path") or ""
        if target["type"] not in ("regular", "executable") or target["name"] == "TestSupport":
            continue
        if path.startswith("Tests/"):  # the Linux-only stand-ins and the glue compiled against them
            continue
        dependencies = []
        for dependency in target["dependencies"]:
            kind, value = next(iter(dependency.items()))
            dependencies.append(value[0])
        features = []
        for setting in target.get("settings") or []:
            kind = setting.get("kind", {})
            if "enableUpcomingFeature" in kind:
                features.append(kind["enableUpcomingFeature"]["_0"])
            elif setting.get("tool") == "swift" and "define" not in kind:
                fail(f"{target['name']}: a Swift setting this script does not pass on: {setting}")
        modules[target["name"]] = Module(target["name"], target["type"], path, dependencies, features,
                                         target.get("exclude") or [], bool(target.get("resources")))
    ordered: list[Module] = []
    seen: set[str] = set()

    def visit(name: str, trail: tuple[str, ...]) -> None:
        if name in seen:
            return
        if name in trail:
            fail("dependency cycle: " + " -> ".join(trail + (name,)))
        if name not in modules:
            fail(f"{trail[-1]} depends on {name}, which this check leaves out")
        for dependency in modules[name].dependencies:
            visit(dependency, trail + (name,))
        seen.add(name)
        ordered.append(modules[name])

    for name in modules:
        visit(name, ())
    return ordered


class Result:
    def __init__(self, module: str):
        self.module = module
        self.errors = 0
        self.warnings = 0
        self.seconds = 0.0
        self.sil = "—"
        self.log = ""
        self.locations: list[tuple[str, str, int]] = []  # (kind, file, line)


def count(result: Result, output: str) -> None:
    result.log += output
    for match in DIAGNOSTIC.finditer(output):
        if match.group("kind") == "error":
            result.errors += 1
        else:
            result.warnings += 1
        if match.group("file"):
            result.locations.append((match.group("kind"), os.path.basename(match.group("file")),
                                     int(match.group("line"))))


def compile_module(module: Module, sources: list[str], sdk: str, resources: str, modules_dir: str, emit: bool,
                   sil: bool) -> Result:
    result = Result(module.name)
    # -continue-building-after-errors: the driver would otherwise stop after the first failing file, and a module's
    # count would leave out what the files after it hold.
    common = ["swiftc", "-continue-building-after-errors", "-target", TARGET, "-sdk", sdk, "-resource-dir", resources, "-swift-version", "6",
              "-module-name", module.module_name, "-package-name", PACKAGE_NAME, "-I", modules_dir,
              "-module-cache-path", os.path.join(WORK, "module-cache")]
    for feature in module.features:
        common += ["-enable-upcoming-feature", feature]
    if module.kind == "regular" or not any(os.path.basename(s) == "main.swift" for s in sources):
        common.append("-parse-as-library")
    start = time.monotonic()
    steps = [["-emit-sil", "-wmo", "-Onone", "-o", os.devnull] if sil else ["-typecheck"]]
    if emit:
        interface = os.path.join(modules_dir, module.module_name + ".swiftmodule")
        steps.append(["-emit-module", "-emit-module-path", interface,
                      "-Xfrontend", "-experimental-skip-all-function-bodies"])
    for index, step in enumerate(steps):
        run = subprocess.run(common + step + sources, capture_output=True, text=True)
        output = run.stdout + run.stderr
        if index == 0:
            count(result, output)
            if sil:
                result.sil = "ok" if run.returncode == 0 else ("crashed" if run.returncode < 0 or
                                                               "Stack dump" in output else "failed")
        elif run.returncode != 0:
            # Bodies are skipped here, so what fails is a declaration the first step already reported; count it
            # only when the first step was clean.
            if result.errors == 0:
                count(result, output)
                result.errors = max(result.errors, 1)
        if run.returncode != 0 and result.errors == 0:
            result.errors = 1  # a crash or a failure with no diagnostic still fails
            result.log += output
    result.seconds = time.monotonic() - start
    return result


def resource_accessor(work: str, module: Module) -> str:
    """What SwiftPM generates for a target with resources: `Bundle.module` (only its type matters here)."""
    path = os.path.join(work, f"{module.module_name}-resource-accessor.swift")
    with open(path, "w") as file:
        file.write("import Foundation\n\nextension Foundation.Bundle {\n"
                   "    static let module: Bundle = Bundle.main\n}\n")
    return path


def sdk_path() -> str | None:
    sdk = os.environ.get("TSPLAYERKIT_IOS_SDK") or DEFAULT_SDK
    stdlib = os.path.join(sdk, "usr", "lib", "swift", "Swift.swiftmodule", "arm64-apple-ios.swiftinterface")
    if not os.path.isfile(stdlib):
        return None
    return sdk


def check(sdk: str, verbose: bool) -> int:
    os.makedirs(WORK, exist_ok=True)
    resources = make_resource_dir(WORK)
    modules = manifest_modules()
    imported = {dependency for module in modules for dependency in module.dependencies}
    modules_dir = tempfile.mkdtemp(prefix="modules-", dir=WORK)
    started = time.monotonic()
    results: dict[str, Result] = {}
    failed_modules: set[str] = set()
    # Modules are checked one per core at a time, each once every module it imports has produced its interface.
    names = {module.name for module in modules}
    waiting = list(modules)
    running: dict[concurrent.futures.Future, Module] = {}

    def finished(module: Module, result: Result) -> None:
        if module.name in imported and not os.path.exists(
                os.path.join(modules_dir, module.module_name + ".swiftmodule")):
            failed_modules.add(module.name)
        results[module.name] = result
        errors = "n/a" if result.errors < 0 else result.errors
        print(f"  {module.name}: {errors} errors, {result.warnings} warnings, {result.seconds:.1f} s",
              file=sys.stderr, flush=True)

    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            while waiting or running:
                before = len(waiting)
                for module in list(waiting):
                    dependencies = [d for d in module.dependencies if d in names]
                    if any(d not in results for d in dependencies):
                        continue
                    waiting.remove(module)
                    blocked = [d for d in dependencies if d in failed_modules]
                    if blocked:
                        result = Result(module.name)
                        result.errors = -1
                        result.log = f"not checked: {', '.join(blocked)} did not produce a module\n"
                        failed_modules.add(module.name)
                        finished(module, result)
                        continue
                    sources = module.sources()
                    if module.has_resources:
                        sources.append(resource_accessor(WORK, module))
                    running[pool.submit(compile_module, module, sources, sdk, resources, modules_dir,
                                        module.name in imported, module.name in SIL_MODULES)] = module
                if not running:
                    if len(waiting) < before:
                        continue
                    if waiting:  # a cycle: nothing could start
                        raise SystemExit(f"check-ios-sdk: cannot order {', '.join(m.name for m in waiting)}")
                    break
                done, _ = concurrent.futures.wait(running, return_when=concurrent.futures.FIRST_COMPLETED)
                for future in done:
                    finished(running.pop(future), future.result())
    finally:
        shutil.rmtree(modules_dir, ignore_errors=True)
    results = [results[module.name] for module in modules]

    width = max(len(r.module) for r in results)
    print(f"{'module'.ljust(width)}  errors  warnings  SIL      seconds")
    for r in results:
        errors = "n/a" if r.errors < 0 else str(r.errors)
        print(f"{r.module.ljust(width)}  {errors:>6}  {r.warnings:>8}  {r.sil:<7}  {r.seconds:>7.1f}")
    bad = [r for r in results if r.errors != 0 or r.warnings != 0 or r.sil not in ("ok", "—")]
    for r in results:
        if r in bad or verbose:
            print(f"\n--- {r.module} ---\n{r.log}", file=sys.stderr)
    total = f"{sum(r.seconds for r in results):.0f} s of compiling in {time.monotonic() - started:.0f} s"
    if bad:
        print(f"check-ios-sdk: {len(bad)} of {len(results)} modules are not clean against {os.path.basename(sdk)} "
              f"for {TARGET} ({total})", file=sys.stderr)
        return 1
    print(f"check-ios-sdk: {len(results)} modules, 0 errors, 0 warnings against {os.path.basename(sdk)} for {TARGET}; "
          f"SIL checked in {sum(r.sil == 'ok' for r in results)} ({total})")
    return 0


# The self-test module: each case is a line that must be refused, in a function of its own, and the same code in a
# form that must be accepted (and whether the case needs SIL). A case passes when the wrong line draws an error or
# warning at its own line and the right form draws nothing. Nothing reads the compiler's wording.
SELF_TEST = {
    "an API newer than iOS 16, unguarded (withDiscardingTaskGroup, iOS 17)": (
        "func discarding() async {\n    await withDiscardingTaskGroup { _ in }  // WRONG\n}\n",
        "func discarding() async {\n    if #available(iOS 17, *) { await withDiscardingTaskGroup { _ in } }\n}\n",
        False,
    ),
    "a var captured by a task (Task's closure is @Sendable with the 5.10 standard library)": (
        "func counting() {\n    var count = 0\n    count += 1\n    Task { print(count) }  // WRONG\n}\n",
        "func counting() {\n    var count = 0\n    count += 1\n    let seen = count\n    Task { print(seen) }\n}\n",
        False,
    ),
    "an AVFoundation loading request used in a task (not Sendable before iOS 18)": (
        "func answering(_ request: AVAssetResourceLoadingRequest) {\n"
        "    Task { request.finishLoading() }  // WRONG\n}\n",
        "func answering(_ request: AVAssetResourceLoadingRequest) {\n    request.finishLoading()\n}\n",
        False,
    ),
    "a warning fails too (an unused value)": (
        "func unused() {\n    let value = 1  // WRONG\n}\n",
        "func unused() {\n    let value = 1\n    _ = value\n}\n",
        False,
    ),
    "a non-Sendable value used after it was sent (region-based isolation, found only in SIL)": (
        "final class Box {\n    var value = 0\n}\nfunc keep(_ box: sending Box) {}\n"
        "func sendingTwice() {\n    let box = Box()\n    keep(box)  // WRONG\n    box.value += 1\n}\n",
        "final class Box {\n    var value = 0\n}\nfunc keep(_ box: sending Box) {}\n"
        "func sendingOnce() {\n    let box = Box()\n    box.value += 1\n    keep(box)\n}\n",
        True,
    ),
}
SELF_TEST_HEADER = "import AVFoundation\nimport Dispatch\n\n"


def self_test(sdk: str) -> int:
    os.makedirs(WORK, exist_ok=True)
    resources = make_resource_dir(WORK)
    work = tempfile.mkdtemp(prefix="self-test-", dir=WORK)
    failures = []
    try:
        for index, (name, (wrong, right, sil)) in enumerate(SELF_TEST.items()):
            for variant, text in (("wrong", wrong), ("right", right)):
                folder = os.path.join(work, f"{index}-{variant}")
                os.makedirs(folder)
                source = os.path.join(folder, "SelfTest.swift")
                with open(source, "w") as file:
                    file.write(SELF_TEST_HEADER + text)
                module = Module("SelfTest", "regular", folder, [], ["ExistentialAny", "MemberImportVisibility"],
                                [], False)
                result = compile_module(module, [source], sdk, resources, folder, emit=False, sil=sil)
                if variant == "wrong":
                    line = SELF_TEST_HEADER.count("\n") + text.split("\n").index(
                        next(l for l in text.split("\n") if "// WRONG" in l)) + 1
                    if not any(f == "SelfTest.swift" and l == line for _, f, l in result.locations):
                        failures.append(f"{name}: the wrong line {line} was not refused\n{result.log}")
                elif result.errors or result.warnings or result.sil not in ("ok", "—"):
                    failures.append(f"{name}: the right form was refused\n{result.log}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print("check-ios-sdk: self-test failed:\n" + "\n".join(failures), file=sys.stderr)
        return 1
    print(f"check-ios-sdk: self-test passed: {len(SELF_TEST)} wrong lines refused at their line, "
          "the same code in its right form accepted")
    return 0


def main() -> int:
    args = sys.argv[1:]
    if any(a not in ("--self-test", "--verbose") for a in args):
        print("usage: Scripts/check-ios-sdk.sh [--self-test] [--verbose]", file=sys.stderr)
        return 64
    sdk = sdk_path()
    if sdk is None:
        where = os.environ.get("TSPLAYERKIT_IOS_SDK") or DEFAULT_SDK
        print(f"check-ios-sdk: skipped, no iOS SDK at {where} (set TSPLAYERKIT_IOS_SDK to check against one)")
        return 0
    if "--self-test" in args and self_test(sdk) != 0:
        return 1
    return check(sdk, "--verbose" in args)


if __name__ == "__main__":
    sys.exit(main())
