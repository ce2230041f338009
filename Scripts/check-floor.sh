#!/usr/bin/env bash
# Fails when a Swift source uses an API whose Apple availability is newer than the deployment floor (macOS 13,
# iOS 16, tvOS 16, visionOS 1) outside an @available/#available scope. The list of such APIs is derived from the
# toolchain's own .swiftinterface files and symbol graphs (cached in .build/check-floor). --self-test proves it can
# fail; --list prints the derived list. See Documentation/Platforms.md.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 Scripts/check-floor.py "$@"
