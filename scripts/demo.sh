#!/usr/bin/env bash
# One command: install dependencies, build, start a local mariposad on SQLite,
# apply the example projects, and show diff, versions and a rollback.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bazel build -c opt //daemon:mariposad //cli:mariposa
BIN=bazel-bin
WORK=$(mktemp -d /tmp/mariposa-demo.XXXXXX)
"$BIN/daemon/mariposad" --listen 127.0.0.1:0 --data-dir "$WORK/data" --addr-file "$WORK/addr" 2>"$WORK/mariposad.log" &
DPID=$!
trap 'kill "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$WORK/addr" ] && break; sleep 0.1; done
export MARIPOSA_ADDR=$(cat "$WORK/addr")
m() { echo; echo "\$ mariposa $*"; "$BIN/cli/mariposa" "$@"; }
echo "mariposad pid $DPID on $MARIPOSA_ADDR, data in $WORK/data"
for f in deploy/examples/*.yaml; do m apply -f "$f" --yes; done
m project list
m -j jupiter project get
sed -e 's/wordpress@1.2.0/wordpress@1.3.0/' -e 's/count: 3/count: 5/' deploy/examples/jupiter.yaml > "$WORK/jupiter-v2.yaml"
m diff -f "$WORK/jupiter-v2.yaml"
m apply -f "$WORK/jupiter-v2.yaml" --yes
m -j jupiter meta set mysql.password 'correct horse' --secret
m -j jupiter meta list
m -j jupiter versions
m -j jupiter rollback 1 --yes
m -j jupiter versions
m -j jupiter version get 3
m events --all
echo
echo "Demo done. Convergence against tritonsim is not built yet (see docs/status.md)."
