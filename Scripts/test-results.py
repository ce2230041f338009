#!/usr/bin/env python3
"""Counts the tests of one or more test runs from their result files (for each FILE given to `--xunit-output`: FILE
itself, and for `swift test` FILE's `-swift-testing` twin): one test case is one test, whatever number of issues it
recorded and whatever its arguments. Prints the failed tests by name, then one line
`tests: N passed, N failed, N skipped`. Exits 1 when a test failed or a run left no result file.

Usage: Scripts/test-results.py FILE [FILE ...]"""
import os
import sys
import xml.etree.ElementTree as ElementTree


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 64
    files = []
    for base in sys.argv[1:]:
        stem, extension = os.path.splitext(base)
        found = [path for path in (base, stem + "-swift-testing" + extension) if os.path.exists(path)]
        if not found:
            print(f"test-results: no result file at {base}", file=sys.stderr)
            return 1
        files += found
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
