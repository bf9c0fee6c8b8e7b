#!/usr/bin/env bash
# The oracle checks itself (scripts/oracle.py --self-test): a wrong goal
# planted in a short history must be reported as a `converged` violation
# and shrunk to the three steps that show it (apply, plant, settle). Fails
# when the oracle stops seeing violations or stops shrinking them.
set -euo pipefail
exec python3 scripts/oracle.py --bin . --self-test
