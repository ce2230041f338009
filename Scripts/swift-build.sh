#!/usr/bin/env bash
# `swift build` with the arguments given, tried once more without its plan when it fails. SwiftPM does not always
# plan again when a package or a path dependency gains or loses a file: the build then stops on "missing inputs"
# that no longer exist, or on a symbol of the new file not found. The plan (debug.yaml or release.yaml, and
# llbuild's build.db) sits in the scratch path: --scratch-path's value, else the package's .build.
# Prints the output of the try that counts (the first when it succeeds, else the second); exits with its status.
set -uo pipefail
package=.
scratch=
args=("$@")
for ((i = 0; i < ${#args[@]} - 1; i++)); do
    case ${args[i]} in
    --package-path) package=${args[i + 1]} ;;
    --scratch-path) scratch=${args[i + 1]} ;;
    esac
done
scratch=${scratch:-$package/.build}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if swift build "$@" >"$log" 2>&1; then
    cat "$log"
    exit 0
fi
echo "swift-build: swift build $* failed; once more without its plan ($scratch/*.yaml, build.db)" >&2
rm -f "$scratch/debug.yaml" "$scratch/release.yaml" "$scratch/build.db"
swift build "$@" 2>&1
