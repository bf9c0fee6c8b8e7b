#!/usr/bin/env bash
# One command for every performance figure (PERFORMANCE.md P1-P10 and the
# agent rollout), each against its baseline measured in the same run:
# installs dependencies, builds with -c opt, runs each benchmark --runs times
# (default 5; P9/P10 once) and writes bench-results.md and bench-results.json
# (machine, commit, command, median and spread). Options: --quick (short
# runs, no P9/P10), --runs N, --compare OLD.json (names every figure worse
# beyond its noise; exit 1), --out STEM. Long: about an hour in full.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bazel build -c opt //tests/bench:all //daemon:mariposad //cli:mariposa //deploy/tritonsim
exec python3 scripts/bench.py --command "bash scripts/bench.sh" "$@"
