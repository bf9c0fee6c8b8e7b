#!/usr/bin/env bash
# The truth oracle (scripts/oracle.py) on the real binaries in the default
# test run: two seeds, 1.5 minutes in all. A long run: scripts/oracle.py
# --seeds 1-20 --minutes 60 (docs/development.md, "The truth oracle").
set -euo pipefail
exec python3 scripts/oracle.py --bin . --seeds "${ORACLE_SEEDS:-1-2}" --minutes "${ORACLE_MINUTES:-1.5}"
