#!/usr/bin/env bash
# Makes the upgrade fixtures of tests/fixtures/stores: for each earlier
# store schema, the store an earlier release of mariposad wrote. Each commit
# named below is the last one at its schema (schema 1 was never released:
# the store's first commit made schema 2); its own demo (scripts/demo.sh
# of that commit: a local mariposad on SQLite, the example projects applied,
# scaled, rolled out and rolled back, against tritonsim from schema 3 on)
# is run, then one
# more project is applied whose manifest has a volume with no network (a
# key those releases stored with a warning), and the data directory is kept.
#
#   bash scripts/make_store_fixtures.sh [OUT_DIR] [SCHEMA:COMMIT...]
#
# It builds each commit in a worktree of its own (/tmp/mariposa-fixtures-wt)
# and takes about 5 minutes per commit on 2 cores. tests/store_upgrade_test
# opens each fixture with today's mariposad (see docs/operations.md,
# "Upgrades").
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-tests/fixtures/stores}
shift || true
# schema -> the last commit that wrote it
COMMITS=("$@")
if [ ${#COMMITS[@]} -eq 0 ]; then
  COMMITS=(
    "2:249e2b7^"   # before tasks in the store (schema 3)
    "3:ce47b45^"   # before the executor's throttles (4)
    "4:cdb52dc^"   # before start/stop tasks (5)
    "5:bba2031^"   # before the convergence core (6)
    "6:1bb2053^"   # before RBAC (schema 7)
    "7:22f804d^"   # before controller states (8)
    "8:7df0195^"   # before the controller's memory (9)
    "9:6caee75^"   # before store integrity (10)
    "10:7cb30e1^"  # before instance_times (11)
    "11:4d3bb12^"  # before leases (12)
    "12:f9a00e8^"  # before instance_times.health (13)
    "13:3603f5e^"  # schema 13, before volumes were a manifest key
  )
fi
WT=/tmp/mariposa-fixtures-wt
LOGS=${TMPDIR:-/tmp}  # each demo's output: schema-N.log
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
[ -d "$WT" ] || git worktree add --detach "$WT" HEAD >/dev/null
for entry in "${COMMITS[@]}"; do
  schema=${entry%%:*}
  commit=${entry#*:}
  sha=$(git rev-parse --short "$commit")
  echo "== schema $schema: $commit ($sha)"
  git -C "$WT" checkout -q -f "$sha"
  # The demo as that commit wrote it, with three changes: no dependency
  # install (this machine has them), one more project at the end, and on
  # exit, after mariposad has stopped, the data directory copied out (the
  # demo of schema 2 ran no tritonsim: SPID may be unset).
  sed -e 's|^bash scripts/install-deps.sh$|:|' \
      -e "s|^trap '\(.*\)' EXIT$|trap 'kill \"\$DPID\" \${SPID:-} 2>/dev/null; wait \"\$DPID\" \${SPID:-} 2>/dev/null \|\| true; rm -rf \"\$FIXTURE_OUT\"; cp -r \"\$WORK/data\" \"\$FIXTURE_OUT\"' EXIT|" \
      "$WT/scripts/demo.sh" > "$WT/scripts/fixture-demo.sh"
  grep -q 'FIXTURE_OUT' "$WT/scripts/fixture-demo.sh" || { echo "no trap line to patch in $sha" >&2; exit 1; }
  # The volume project is applied as the demo's last step.
  cat >> "$WT/scripts/fixture-demo.sh" <<'EOF'
cat > "$WORK/uploads.yaml" <<'YAML'
project: uploads
services:
  web:
    image: autopilotpattern/nginx@1.4.0
    package: g4-highcpu-512M
    count: 1
volumes:
  uploads:
    size: 10g
YAML
m apply -f "$WORK/uploads.yaml" --yes || echo "(uploads refused by this release)"
EOF
  (cd "$WT" && FIXTURE_OUT="$OUT/schema-$schema" bash scripts/fixture-demo.sh > "$LOGS/schema-$schema.log" 2>&1) ||
    { echo "demo at $sha failed: see $LOGS/schema-$schema.log" >&2; exit 1; }
  # mariposad stopped cleanly: its WAL was checkpointed into mariposa.db.
  if [ -s "$OUT/schema-$schema/mariposa.db-wal" ]; then
    echo "schema $schema: mariposad left a write-ahead log; see $LOGS/schema-$schema.log" >&2
    exit 1
  fi
  rm -rf "$OUT/schema-$schema"/*.sock "$OUT/schema-$schema"/*-wal "$OUT/schema-$schema"/*-shm \
    "$OUT/schema-$schema/backups" "$OUT/schema-$schema/mariposad.lock"
  echo "$sha" > "$OUT/schema-$schema/COMMIT"
  ls -la "$OUT/schema-$schema"
done
git worktree remove --force "$WT"
