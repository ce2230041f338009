#!/usr/bin/env bash
# Fails when the root Package.swift drifts from the packages' own manifests. --self-test also proves it can fail.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 Scripts/check-manifests.py "$@"
