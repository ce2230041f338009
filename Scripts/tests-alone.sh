#!/usr/bin/env bash
# Prints the pattern (for `--filter` and `--skip`) of the few tests that cannot share a test process with the
# others, so they run in a second process, one at a time: Scripts/test.sh and the macOS workflow
# (.github/workflows/apple.yml) both run the suite as one parallel process plus these.
# Each for one reason:
set -euo pipefail
alone=(
    # The process's CPU time while the server's loops sit on a dead listener: other tests' CPU counts too.
    '^LoopbackHTTPTests\.RevivalTests/aShutDownListenerFailsTheServerAndReviveRebindsTheSamePort\(\)'
    # The process's CPU time after a cancelled load: other tests' CPU counts too.
    '^AppleGlueTests\.CachingResourceLoaderTests/cancellation\(\)'
    # A revived server gets its port back: other tests' connects may take that ephemeral port meanwhile.
    '^EndToEndTests\.PlaybackEndToEndTests/revivedServerKeepsSessions\(\)'
    '^TSPlayerKitTests\.OneServerTests/reviveCoversTheProxies\(\)'
    '^TSPlayerKitTests\.PlaybackServerTests/listenerLossAndRevival\(\)'
    # Bounds the whole process's thread count (other tests' threads count too) and a good host's answer time.
    '^HTTPClientTests\.HostileOriginClientTests/aSilentHostQueuesItsRequestsAndDelaysNoOtherHost\(\)'
    # Set the process-wide umask: every file other tests create meanwhile would get it, and two such tests
    # interleaved could leave the process with the wrong one.
    '^FileRangeTests\.DurableFileTests/theNewFileHasExactlyItsMode\(\)'
    '^HLSDownloadTests\.HostileOriginDownloadTests/downloadedKeysAreOwnerOnly\(\)'
    '^MediaCacheTests\.HostileOriginCacheTests/theCacheFolderAndItsFilesAreOwnerOnly\(\)'
)
(IFS='|'; echo "${alone[*]}")
