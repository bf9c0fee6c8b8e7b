#!/usr/bin/env bash
# The chaos run of issue 33 (its own command, not the default test run):
# three mariposad nodes, each in a network namespace of its own, on a
# PostgreSQL primary with a synchronous standby, against tritonsim; a node
# killed with kill -9 every 20 s for 5 minutes (restarted after), one
# SIGSTOP/SIGCONT, one partition from the database (Triton still reachable),
# one database failover; then it checks for duplicate creates, orphans, lost
# acknowledged writes and unconverged projects, and reports each takeover.
# Options: scripts/chaos.py --help (--minutes, --nodes, --projects,
# --instances, --lease-ttl, --kill-every, --out). Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bazel build //daemon:mariposad //cli:mariposa //deploy/tritonsim
exec python3 scripts/chaos.py "$@"
