#!/usr/bin/env bash
# Every key of the three-node config is a mariposad flag: mariposad reads it
# and stops only at the first file it cannot open (the TLS files, absent
# here), never at an unknown key.
set -euo pipefail
out=$(daemon/mariposad --config deploy/multinode/mariposad.yaml --data-dir "$TEST_TMPDIR/d" 2>&1 || true)
if echo "$out" | grep -q "unknown argument"; then
  echo "$out" >&2
  exit 1
fi
echo "$out" | grep -q "cannot serve TLS on 10.0.0.11:7740" || { echo "unexpected: $out" >&2; exit 1; }
echo ok
