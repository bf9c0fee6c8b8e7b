#!/usr/bin/env bash
# One command: install dependencies, build everything, run every test.
# Ends with "N passed, N failed" counting individual test cases.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh || exit 1
# Joyent's sdc-clients for the conformance test, pinned by the lockfile.
(cd tests/conformance && npm ci --no-audit --no-fund --loglevel=error) || exit 1
bazel build //... || exit 1
bazel test //... "$@"
rc=$?
python3 scripts/count_tests.py bazel-testlogs
exit $rc
