#!/usr/bin/env bash
# Formats every Swift file in place with the repository's .swift-format, then lints strictly.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.swift')
swift format --in-place --configuration .swift-format "${files[@]}"
swift format lint --strict --configuration .swift-format "${files[@]}"
