#!/usr/bin/env bash
# The systemd units parse (systemd-analyze verify; the binaries are not
# installed here, which is the one complaint allowed) and stay hardened
# (systemd-analyze security: exposure at most 2.0, "OK").
set -euo pipefail
if ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "systemd-analyze is missing: apt-get install systemd (scripts/install-deps.sh does)" >&2
  exit 1
fi
cd deploy/systemd
out=$(systemd-analyze verify --man=no ./mariposad.service ./mariposa-health.service 2>&1 | grep -v "is not executable: No such file or directory" || true)
if [ -n "$out" ]; then
  echo "systemd-analyze verify:" >&2
  echo "$out" >&2
  exit 1
fi
for unit in mariposad.service mariposa-health.service; do
  level=$(systemd-analyze security --offline=yes "./$unit" 2>&1 | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
  echo "$unit exposure $level"
  awk -v l="$level" 'BEGIN { exit !(l != "" && l <= 2.0) }' || { echo "$unit: exposure $level is over 2.0" >&2; exit 1; }
done
