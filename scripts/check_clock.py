#!/usr/bin/env python3
"""Fails on a direct clock read or sleep in Mariposa's production code.

Time is injected (common/clock.h): decisions are pure functions of their
inputs and `now`, and tests drive time with SimulatedClock. Only the clock
code itself and the bodies of main() may read the wall clock or wait on it.

Scanned: the .cc/.h files of auth/, common/, convergence/, health/, projects/,
daemon/, cli/ and deploy/tritonsim/ (the simulator's latencies and job
durations run on its injected clock too), without tests (*_test.cc,
*_testing.h) and tests/ (with its benchmarks).

Usage: scripts/check_clock.py [--self-test] [ROOT]
"""
import os
import re
import sys
import tempfile

DIRS = ["auth", "common", "convergence", "health", "projects", "daemon", "cli", os.path.join("deploy", "tritonsim")]
ALLOWED_FILES = {os.path.join("common", "clock.h")}
FORBIDDEN = [
    (re.compile(r"\babsl::Now\s*\("), "absl::Now()"),
    (re.compile(r"\babsl::SleepFor\s*\("), "absl::SleepFor()"),
    (re.compile(r"\bsleep_for\s*\("), "sleep_for()"),
    (re.compile(r"\bsleep_until\s*\("), "sleep_until()"),
    (re.compile(r"_clock::now\s*\("), "std::chrono clock now()"),
    (re.compile(r"(?<![\w.>])(u|nano)?sleep\s*\("), "sleep()"),
    (re.compile(r"\btime\s*\(\s*(nullptr|NULL|0)\s*\)"), "time()"),
    (re.compile(r"\b(gettimeofday|clock_gettime)\s*\("), "the system clock"),
    (re.compile(r"[.>]wait_(for|until)\s*\(\s*[^)\s]"), "a timed condition-variable wait"),
    (re.compile(r"\b(Await|Wait|LockWhen)With(Timeout|Deadline)\s*\("), "a timed absl::Mutex wait"),
    (re.compile(r"\bRealClock::Get\s*\("), "RealClock outside main()"),
]
MAIN = re.compile(r"^\s*int\s+main\s*\(")


def strip_comments_and_strings(line, in_block):
    """The code of one line, without comments and string literals."""
    out = []
    i = 0
    while i < len(line):
        if in_block:
            end = line.find("*/", i)
            if end < 0:
                return "".join(out), True
            i = end + 2
            in_block = False
            continue
        if line.startswith("//", i):
            break
        if line.startswith("/*", i):
            in_block = True
            i += 2
            continue
        c = line[i]
        if c in "\"'":
            j = i + 1
            while j < len(line) and line[j] != c:
                j += 2 if line[j] == "\\" else 1
            i = j + 1
            out.append(c + c)
            continue
        out.append(c)
        i += 1
    return "".join(out), in_block


def check_text(path, text):
    """Violations in one file: (line number, what, the line)."""
    found = []
    in_block = False
    main_depth = None  # brace depth inside main(), or None outside
    depth = 0
    for n, raw in enumerate(text.splitlines(), 1):
        code, in_block = strip_comments_and_strings(raw, in_block)
        if main_depth is None and MAIN.search(code):
            main_depth = depth
        in_main = main_depth is not None
        if not in_main:
            for pattern, what in FORBIDDEN:
                if pattern.search(code):
                    found.append((n, what, raw.strip()))
        depth += code.count("{") - code.count("}")
        if main_depth is not None and depth <= main_depth and "}" in code:
            main_depth = None
    return found


def scan(root):
    problems = []
    for d in DIRS:
        for dirpath, _, files in os.walk(os.path.join(root, d)):
            for f in sorted(files):
                if not f.endswith((".cc", ".h")) or f.endswith(("_test.cc", "_testing.h")):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                if rel in ALLOWED_FILES:
                    continue
                with open(path, encoding="utf-8", errors="replace") as fh:
                    for n, what, line in check_text(rel, fh.read()):
                        problems.append(f"{rel}:{n}: {what}: {line}")
    return problems


def self_test():
    """The check catches what it must and passes what it may."""
    bad = {
        "a.cc": "void F() { auto t = absl::Now(); }\n",
        "b.cc": "void F() {\n  std::this_thread::sleep_for(std::chrono::seconds(1));\n}\n",
        "c.cc": "void F() { cv_.wait_for(l, d); }\n",
        "d.cc": "void F() { mu_.AwaitWithTimeout(c, d); }\n",
        "e.cc": "void F() { auto t = std::chrono::steady_clock::now(); }\n",
        "f.cc": "const Clock* c = RealClock::Get();\n",
    }
    good = {
        "g.cc": "// absl::Now() in a comment\nvoid F(const Clock* c) { c->Now(); log(\"sleep(1)\"); }\n",
        "h.cc": "int main(int argc, char** argv) {\n  auto* c = RealClock::Get();\n  if (x) {\n    absl::SleepFor(d);\n  }\n"
                "  server->Shutdown(std::chrono::system_clock::now());\n}\nvoid G() {}\n",
    }
    ok = True
    for name, text in bad.items():
        if not check_text(name, text):
            print(f"self-test: {name} not caught: {text!r}")
            ok = False
    for name, text in good.items():
        if check_text(name, text):
            print(f"self-test: {name} wrongly caught: {check_text(name, text)}")
            ok = False
    after_main = "int main() {\n  return 0;\n}\nvoid G() { absl::Now(); }\n"
    if len(check_text("i.cc", after_main)) != 1:
        print("self-test: code after main() is not checked")
        ok = False
    return ok


def main(argv):
    args = argv[1:]
    if args and args[0] == "--self-test":
        if not self_test():
            return 1
        args = args[1:]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    problems = scan(root)
    for p in problems:
        print(p)
    if problems:
        print(f"check_clock: {len(problems)} direct clock reads or sleeps outside common/clock.h and main(); "
              "take a `const Clock*` (common/clock.h) instead")
        return 1
    print("check_clock: no direct clock reads or sleeps outside common/clock.h and main()")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
