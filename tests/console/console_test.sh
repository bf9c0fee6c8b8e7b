#!/usr/bin/env bash
# Debian's python3 has python3-selenium (a python3 earlier in PATH may not).
exec /usr/bin/python3 "$(dirname "$0")/console_test.py" "$@"
