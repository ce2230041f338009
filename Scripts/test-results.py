#!/usr/bin/env python3
"""Counts the tests of a `swift test --xunit-output FILE` run from its result files (FILE for XCTest and
FILE's `-swift-testing` twin for Swift Testing): one test case is one test, whatever number of issues it recorded
and whatever its arguments. Prints the failed tests by name, then one line `tests: N passed, N failed, N skipped`.
Exits 1 when a test failed or no result file was found.

Usage: Scripts/test-results.py FILE"""
import os
import sys
import xml.etree.ElementTree as ElementTree


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 64
    base = sys.argv[1]
    stem, extension = os.path.splitext(base)
    files = [path for path in (base, stem + "-swift-testing" + extension) if os.path.exists(path)]
    if not files:
        print(f"test-results: no result file at {base}", file=sys.stderr)
        return 1
    passed, failed, skipped = 0, [], 0
    for path in files:
        for case in ElementTree.parse(path).getroot().iter("testcase"):
            name = f"{case.get('classname', '')}.{case.get('name', '')}"
            if case.find("failure") is not None or case.find("error") is not None:
                failed.append(name)
            elif case.find("skipped") is not None:
                skipped += 1
            else:
                passed += 1
    if failed:
        print("failed tests:")
        for name in failed:
            print(f"  {name}")
    print(f"tests: {passed} passed, {len(failed)} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
