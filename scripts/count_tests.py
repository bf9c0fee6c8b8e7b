#!/usr/bin/env python3
"""Counts test cases from Bazel's JUnit XML files and prints 'N passed, N failed'."""
import os
import sys
import xml.etree.ElementTree as ET

root = sys.argv[1] if len(sys.argv) > 1 else "bazel-testlogs"
passed = failed = skipped = 0
for dirpath, _, files in os.walk(os.path.realpath(root)):
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
