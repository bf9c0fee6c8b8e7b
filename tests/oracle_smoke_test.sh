#!/usr/bin/env bash
# The truth oracle (scripts/oracle.py) on the real binaries in the default
# test run: first the histories that once showed a violation (each must
# pass now; a change to random_manifest changes what their steps draw, so
# re-derive them then), then two random seeds, 1.5 minutes in all. A long
# run: scripts/oracle.py --seeds 1-20 --minutes 60 (docs/development.md,
# "The truth oracle").
set -euo pipefail
# apply --wait exit 1 "no rollout is running" for a rollout that succeeded
# (status froze during back-to-back syncs under 100 ms API latency).
python3 scripts/oracle.py --bin . --seed 3 --plan 0:apply_wait,7:latency,10:apply_wait --shrink-minutes 0
exec python3 scripts/oracle.py --bin . --seeds "${ORACLE_SEEDS:-1-2}" --minutes "${ORACLE_MINUTES:-1.5}"
