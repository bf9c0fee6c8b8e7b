#!/usr/bin/env python3
"""Counts test cases from Bazel's JUnit XML files under one or more testlogs
folders (e.g. the plain and the sanitizer run) and prints 'N passed, N failed'."""
import os
import re
import sys
import xml.etree.ElementTree as ET

roots = sys.argv[1:] or ["bazel-testlogs"]
passed = failed = skipped = 0
walked = set()
for dirpath, dirs, files in (w for root in roots for w in os.walk(os.path.realpath(root))):
    if dirpath in walked:  # the same folder named twice
        continue
    walked.add(dirpath)
    # --runs_per_test and sharding leave run_N_of_M / shard_N_of_M folders
    # behind; the target's own test.xml is the result of the last run.
    dirs[:] = [d for d in dirs if not re.match(r"(run|shard)_\d+_of_\d+$", d)]
    if "test.xml" not in files:
        continue
    try:
        tree = ET.parse(os.path.join(dirpath, "test.xml"))
    except ET.ParseError:
        failed += 1
        continue
    cases = tree.getroot().iter("testcase")
    found = False
    for case in cases:
        found = True
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None or case.get("status") == "notrun":
            skipped += 1
        else:
            passed += 1
    if not found:  # a test binary that crashed before writing cases
        failed += 1
line = f"{passed} passed, {failed} failed"
if skipped:
    line += f", {skipped} skipped"
print(line)
