#!/usr/bin/env bash
# Two data centers cut apart during a rollout (issue 52, point 4): each in a
# network namespace of its own with its tritonsim and its mariposad, on
# link-local addresses (169.254.203.0/24); scripts/dc_partition.py says
# what is checked. Needs root. Part of scripts/test.sh when run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" != "--no-build" ]; then
  bazel build //daemon:mariposad //cli:mariposa //deploy/tritonsim
fi
exec python3 scripts/dc_partition.py
