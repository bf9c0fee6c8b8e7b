#!/usr/bin/env python3
"""Reads the fuzz targets' test logs (libFuzzer's final stats) and prints a
table: target, executions, executions/s, coverage, result; then
"fuzz: N targets, N passed, N failed".

Usage: scripts/fuzz_table.py TESTLOGS_DIR TARGET...
"""
import os
import re
import sys

logs, targets = sys.argv[1], sys.argv[2:]
passed = failed = 0
print(f"{'target':<22} {'executions':>12} {'exec/s':>8} {'edges':>7}  result")
for t in targets:
    path = os.path.join(logs, "fuzz", f"{t}_test", "test.log")
    text = open(path, errors="replace").read() if os.path.exists(path) else ""
    runs = re.findall(r"stat::number_of_executed_units:\s*(\d+)", text)
    speed = re.findall(r"stat::average_exec_per_sec:\s*(\d+)", text)
    cov = re.findall(r"cov: (\d+)", text)
    bad = re.search(r"ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)[^\n]*|runtime error:[^\n]*|SUMMARY: [^\n]*", text)
    ok = bool(runs) and not bad and "Done " in text
    if ok:
        passed += 1
    else:
        failed += 1
    result = "ok" if ok else ("FAILED: " + bad.group(0)[:90] if bad else "FAILED (no statistics: see " + path + ")")
    print(f"{t:<22} {runs[-1] if runs else '-':>12} {speed[-1] if speed else '-':>8} {cov[-1] if cov else '-':>7}  {result}")
print(f"fuzz: {len(targets)} targets, {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
