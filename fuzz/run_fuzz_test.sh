#!/usr/bin/env bash
# One fuzz target as a test: BINARY CORPUS_DIR [MORE_SEED_DIRS…].
# Built with libFuzzer (scripts/fuzz.sh), it fuzzes for $FUZZ_SECONDS
# (default 5) from the seeds, and fails on any crash, leak, timeout (10 s an
# input) or memory over 2 GiB; what it found is left in $FUZZ_FINDINGS (or
# the test's outputs). Built plainly (bazel test //...), it replays every
# seed once.
set -uo pipefail
bin=$1
shift
dirs=()
for d in "$@"; do [ -e "$d" ] && dirs+=("$d"); done
if [ "$("$bin" -help=1 2>&1 | grep -c libFuzzer)" -gt 0 ]; then
  work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/corpus.XXXXXX")
  findings=${FUZZ_FINDINGS:-${TEST_UNDECLARED_OUTPUTS_DIR:-/tmp}}
  mkdir -p "$findings"
  name=$(basename "$bin")
  # FUZZ_SEED fixes libFuzzer's seed (the test run's smoke: the same inputs
  # every time, so it does not fail at random); unset, a new seed each run.
  seed=()
  [ -n "${FUZZ_SEED:-}" ] && seed=(-seed="$FUZZ_SEED")
  exec "$bin" "${seed[@]}" -max_total_time="${FUZZ_SECONDS:-5}" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$findings/$name-" "$work" "${dirs[@]}"
fi
exec "$bin" "${dirs[@]}"
