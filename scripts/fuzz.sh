#!/usr/bin/env bash
# The long fuzz run (not part of scripts/test.sh): the manifest parser and the
# Apply/Scale/Meta RPC inputs under AddressSanitizer + UBSan.
#   bash scripts/fuzz.sh            # 1,000,000 cases each
#   bash scripts/fuzz.sh 200000     # another count
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh || exit 1
CASES=${1:-1000000}
MARIPOSA_FUZZ_CASES=$CASES bazel test --config=asan --test_env=MARIPOSA_FUZZ_CASES --test_timeout=7200 \
  --cache_test_results=no //projects:manifest_fuzz_test //projects:projects_service_fuzz_test
