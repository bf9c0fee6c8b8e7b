#!/usr/bin/env bash
# Builds the fuzz targets (fuzz/) with clang's libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer, and runs each from its seeds:
#   scripts/fuzz.sh                 5 s a target (the test run's smoke)
#   scripts/fuzz.sh --seconds 60    a minute each
#   scripts/fuzz.sh --minutes 30    half an hour each (a long run)
#   scripts/fuzz.sh --minutes 30 --only http_request_fuzz
#   scripts/fuzz.sh --mutations 1000000   also the seeded mutation tests of the
#                                         manifest parser and the Apply/Scale/Meta
#                                         RPCs under ASan + UBSan, that many cases
# A crash, leak, timeout (10 s an input) or 2 GiB of memory fails its target;
# the input is left in fuzz/findings/ to be added to fuzz/corpus/TARGET/ with
# its fix. Ends with "fuzz: N targets, N passed, N failed" and a table of
# executions; exit 1 when one failed. The build lives in its own output base
# ($FUZZ_OUTPUT_BASE, default ~/.cache/mariposa-fuzz), so the gcc build's cache stays.
# FUZZ_JOBS=1 fuzzes one target at a time (default: two at once).
# FUZZ_SEED=N fixes libFuzzer's seed (scripts/test.sh's smoke uses 1, so the
# same inputs are tried at every run); unset, each run draws a new one.
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=5
only=""
mutations=0
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --minutes) seconds=$(( $2 * 60 )); shift 2 ;;
    --only) only=$2; shift 2 ;;
    --mutations) mutations=$2; shift 2 ;;
    *) echo "fuzz.sh: unknown option $1 (--seconds N, --minutes N, --only TARGET)" >&2; exit 2 ;;
  esac
done
command -v clang-14 >/dev/null || { echo "fuzz.sh: clang-14 is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
base=${FUZZ_OUTPUT_BASE:-${HOME:-/tmp}/.cache/mariposa-fuzz}
bz=(bazel --output_base="$base")
targets=$(ls fuzz/*_fuzz.cc | xargs -n1 basename | sed 's/\.cc$//')
[ -n "$only" ] && targets=$only
labels=()
for t in $targets; do labels+=("//fuzz:${t}_test"); done
findings=$(pwd)/fuzz/findings
mkdir -p "$findings"
# Each target runs for $seconds; bazel's own timeout is set above that.
timeout_s=$(( seconds + 120 ))
"${bz[@]}" test --config=fuzz --symlink_prefix=/ --cache_test_results=no --jobs=2 --local_test_jobs="${FUZZ_JOBS:-2}" \
  --test_env=FUZZ_SECONDS="$seconds" --test_env=FUZZ_FINDINGS="$findings" --test_env=FUZZ_SEED="${FUZZ_SEED:-}" \
  --test_timeout="$timeout_s" --test_output=errors "${labels[@]}"
rc=$?
logs=$("${bz[@]}" info --config=fuzz bazel-testlogs 2>/dev/null)
echo "$logs" > "$base/testlogs-path"
python3 scripts/fuzz_table.py "$logs" $targets || rc=1
if [ "$mutations" -gt 0 ]; then
  MARIPOSA_FUZZ_CASES=$mutations bazel test --config=asan --test_env=MARIPOSA_FUZZ_CASES --test_timeout=7200 \
    --cache_test_results=no //projects:manifest_fuzz_test //projects:projects_service_fuzz_test || rc=1
fi
exit $rc
