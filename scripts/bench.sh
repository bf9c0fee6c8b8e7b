#!/usr/bin/env bash
# One command for every performance figure (PERFORMANCE.md P1-P10 and the
# agent rollout; zero downtime against no drain), each against its baseline measured in the same run:
# installs dependencies, builds with -c opt, runs each benchmark --runs times
# (default 5; P9/P10 once) and writes bench-results.md and bench-results.json
# (machine, commit, command, median and spread). Options: --quick (short
# runs, no P9/P10), --runs N, --compare OLD.json (names every figure worse
# beyond its noise; exit 1), --out STEM, --reference COMMIT (builds COMMIT
# beside this tree, in a worktree of its own, and runs its benchmarks in
# turn with this tree's, run for run: every figure worse than the
# reference's in the same run is named; exit 1). Long: about an hour in
# full, twice that with --reference.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
TARGETS=(//tests/bench:all //daemon:mariposad //cli:mariposa //deploy/tritonsim)
# The zero-downtime figures come from the end-to-end test (this tree only:
# a reference before it has none, and its rows say "not measured").
bazel build -c opt "${TARGETS[@]}" //tests:zero_downtime_e2e_test
ARGS=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--reference" ] && [ $# -ge 2 ]; then
    REF=$(git rev-parse --short "$2^{commit}")
    WT=/tmp/mariposa-bench-ref
    [ -d "$WT" ] || git worktree add --detach "$WT" "$REF" >/dev/null
    git -C "$WT" checkout -q -f "$REF"
    (cd "$WT" && bazel build -c opt "${TARGETS[@]}")
    ARGS+=(--reference-bin "$WT/bazel-bin/tests/bench" --reference-commit "$REF")
    shift 2
  else
    ARGS+=("$1")
    shift
  fi
done
exec python3 scripts/bench.py --command "bash scripts/bench.sh" "${ARGS[@]}"
