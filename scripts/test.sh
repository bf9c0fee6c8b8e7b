#!/usr/bin/env bash
# One command: install dependencies, build everything, run every test.
# Ends with "N passed, N failed" counting individual test cases.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh || exit 1
# Joyent's sdc-clients for the conformance test, pinned by the lockfile.
(cd tests/conformance && npm ci --no-audit --no-fund --loglevel=error) || exit 1
# axe-core for the console's accessibility check in the browser test.
(cd tests/console && npm ci --no-audit --no-fund --loglevel=error) || exit 1
# Time is injected: no clock reads or sleeps outside common/clock.h and main().
python3 scripts/check_clock.py --self-test || exit 1
# The benchmark table's parser (scripts/bench.sh) against the benchmarks' line formats.
python3 scripts/bench.py --self-test || exit 1
bazel build //... || exit 1
bazel test //... "$@"
rc=$?
plain_logs=$(realpath bazel-testlogs)
# The parser, store, planner and service tests again under AddressSanitizer
# and UndefinedBehaviorSanitizer, in their own output tree (bazel-testlogs
# then points there); the count covers both runs.
bazel test --config=asan //projects:all //convergence:planner_test //daemon:backups_test //daemon:controller_state_test //cli:registry_test //common:sqlite_wal_test //common:bounded_test "$@"
asan_rc=$?
asan_logs=$(realpath bazel-testlogs)
# Every fuzz target (fuzz/) built with libFuzzer and the sanitizers, 5 s each
# from its seeds with a fixed seed, so the smoke tries the same inputs every
# time (scripts/fuzz.sh; its own output base). Its table of
# executions is printed; its tests are counted below.
FUZZ_SEED=1 bash scripts/fuzz.sh --seconds 5
fuzz_rc=$?
fuzz_logs=$(cat "${FUZZ_OUTPUT_BASE:-${HOME:-/tmp}/.cache/mariposa-fuzz}/testlogs-path" 2>/dev/null)
# Two data centers cut apart during a rollout, in network namespaces (root
# only: namespaces and veth pairs; link-local addresses).
if [ "$(id -u)" = 0 ]; then
  # Its build puts bazel-bin back on the plain binaries (the ASan run moved it).
  bash scripts/dc_partition.sh
  dc_rc=$?
else
  echo "dc_partition: skipped (needs root: network namespaces)"
  dc_rc=0
fi
python3 scripts/count_tests.py "$plain_logs" "$asan_logs" $fuzz_logs
[ $rc -ne 0 ] && exit $rc
[ $dc_rc -ne 0 ] && exit $dc_rc
[ $asan_rc -ne 0 ] && exit $asan_rc
exit $fuzz_rc
