#!/usr/bin/env bash
# The alerting and recording rules load (promtool check rules) and every
# alert fires exactly when its unit test says (promtool test rules).
set -euo pipefail
if ! command -v promtool >/dev/null 2>&1; then
  echo "promtool is missing: apt-get install prometheus (scripts/install-deps.sh does)" >&2
  exit 1
fi
cd deploy/prometheus
promtool check rules rules.yml
promtool test rules rules_test.yml
