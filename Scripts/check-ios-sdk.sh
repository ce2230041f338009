#!/usr/bin/env bash
# Type-checks every library and tool target for arm64-apple-ios16.0 against a real iOS SDK (TSPLAYERKIT_IOS_SDK,
# default /opt/apple-sdks/iPhoneOS17.4.sdk), module by module (one per core at a time, each after the modules it
# imports), and fails on any error or warning; prints one line and exits 0 when there is no SDK. With --self-test it
# first proves it refuses wrong code. See Documentation/Platforms.md.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 Scripts/check-ios-sdk.py "$@"
