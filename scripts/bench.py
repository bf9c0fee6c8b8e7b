#!/usr/bin/env python3
"""Runs every benchmark (PERFORMANCE.md P1-P10 and the agent rollout) with its
same-run baseline, several times, and writes one table: markdown for people
(bench-results.md) and JSON for tools (bench-results.json), with the machine,
the commit and the command. `--compare OLD.json` names every figure that got
worse by more than its noise. Called by scripts/bench.sh, which builds first.

Each benchmark binary prints its figures; this script only runs them, parses
their lines and summarises: median and spread (min..max) over the runs.
"""
import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys

BIN = "bazel-bin/tests/bench"
TESTS_BIN = "bazel-bin/tests"  # zero_downtime_e2e_test

# name -> (better: "higher" | "lower", target, what it is). A figure is a
# ratio to its same-run baseline where the benchmark has one.
FIGURES = {
    "P1_plan_ratio": ("lower", 3.0, "planner on 100k instances / naive hash join (x)"),
    "P1_replan_ms": ("lower", 1.0, "re-plan after a one-service change (ms)"),
    "P2_ratio_1_client": ("higher", 0.8, "scale 0 -> N end to end / raw single-client CreateVm loop (x)"),
    "P2_rate": ("higher", None, "scale 0 -> N end to end (instances/s)"),
    "P3_ratio": ("higher", 0.5, "apply of 1,000 services / raw SQLite insert, both WAL + synchronous=FULL (x)"),
    "P4_p50_ratio": ("lower", 2.0, "no-op Apply p50 / echo RPC p50 (x)"),
    "P4_p99_ratio": ("lower", 3.0, "no-op Apply p99 / echo RPC p99 (x)"),
    "P3pg_ratio": ("higher", 0.5, "PostgreSQL store: apply of 1,000 services / raw libpq insert, same durability (x)"),
    "P4pg_p50_ratio": ("lower", 2.0, "PostgreSQL store: no-op Apply p50 / (echo RPC + one database round trip) p50 (x)"),
    "P4pg_p99_ratio": ("lower", 3.0, "PostgreSQL store: no-op Apply p99 / (echo RPC + one database round trip) p99 (x)"),
    "WAKE_p99_ms": ("lower", 100.0, "two nodes: scale through one, until the project's node has its first new VM, p99 (ms)"),
    "P2_nodes_1_rate": ("higher", None, "P2 with 1 node on PostgreSQL: 10 projects x 1,000 applied until running (instances/s)"),
    "P2_pg_over_sqlite": ("higher", 0.8, "P2 on one node: PostgreSQL store / SQLite store, the same work in the same run (x)"),
    "P2_nodes_3_ratio": ("higher", 1.5, "P2 with 3 nodes / with 1 node, same work, one PostgreSQL (x; PERFORMANCE.md: >= 1.5)"),
    "TAKEOVER_s": ("lower", 12.0, "two nodes: kill -9 of a project's node until another holds all its projects, lease TTL 10 s (s)"),
    "P5_ratio": ("higher", 0.7, "tcp checks: engine / raw loop, the lower of wall and per-CPU (x)"),
    "P6_ratio": ("higher", 0.7, "http checks: engine / raw loop, the lower of wall and per-CPU (x)"),
    "P7_cpu_cores": ("lower", 0.5, "health engine CPU at its load (cores)"),
    "P8_rise_pct": ("lower", 5.0, "no-op Apply p99 rise with health reported (%)"),
    "P9_rss_mib": ("lower", 300.0, "mariposad RSS with 100k instances (MiB)"),
    "P10_serving_s": ("lower", 3.0, "SIGKILL with 100k instances -> serving again (s)"),
    "P10_acting_s": ("lower", 3.0, "SIGKILL with 100k instances -> acting again (s)"),
    "AGENTS_ideal_over_elapsed": ("higher", 0.8, "agent rollout on the servers: ideal / elapsed"),
    "ZD_removal_failed_pct": ("lower", 0.0, "zero downtime: requests failed while Mariposa rolls 10, scales 10 -> 4 and is SIGKILLed mid-rollout, with its drain (%)"),
    "ZD_removal_failed_pct_nodrain": ("lower", None, "the same changes without the drain (--cns-ttl 0s), same run (%)"),
    "ZD_broken_failed_pct": ("lower", None, "zero downtime: requests failed while a broken instance (its own 503s) is found and replaced (%)"),
    "WATCH_kill_p99_ms": ("lower", 1000.0, "watching VMAPI's feed, 100k instances: destroyed VM until its replacement's CreateVm, p99 (ms)"),
    "POLL_kill_p99_ms": ("lower", None, "the same polling (--watch off, --resync 5s), same run (ms)"),
    "WATCH_apply_ms": ("lower", 100.0, "watching, 100k instances: apply of one service's count until the first CreateVm (ms)"),
    "POLL_apply_ms": ("lower", None, "the same polling, same run (ms)"),
    "WATCH_idle_cores": ("lower", 0.02, "watching, 100k instances, nothing changing: mariposad CPU (cores)"),
    "POLL_idle_cores": ("lower", None, "the same polling, same run (cores)"),
    "WATCH_idle_vmapi_per_min": ("lower", None, "watching, idle: requests tritonsim answered per minute"),
    "POLL_idle_vmapi_per_min": ("lower", None, "the same polling, same run"),
}


def num(s):
    return float(s.rstrip("x"))


def parse(text):
    """Figures found in a benchmark's output."""
    out = {}
    for line in text.splitlines():
        f = line.split()
        if not f:
            continue
        try:
            if f[0] == "P1_full_plan_100k_instances_1k_services":
                out["P1_plan_ratio"] = num(f[4])
            elif f[0] == "P1_replan_after_one_service_change":
                out["P1_replan_ms"] = num(f[1])
            elif re.match(r"P2_scale_0_to_\d+_end_to_end$", f[0]) and f[3] != "-":
                out["P2_rate"] = num(f[1])
                out["P2_ratio_1_client"] = num(f[4])
            elif f[0] == "P3_apply_1000_services":
                out["P3_ratio"] = num(f[4])
            elif f[0] == "P4_noop_apply_p50":
                out["P4_p50_ratio"] = num(f[4])
            elif f[0] == "P4_noop_apply_p99":
                out["P4_p99_ratio"] = num(f[4])
            elif f[0] == "WAKE_scale_to_first_create_p99":
                out["WAKE_p99_ms"] = num(f[1])
            elif f[0] == "P2_nodes_1_postgres":
                out["P2_nodes_1_rate"] = num(f[1])
            elif f[0] == "P2_nodes_3_postgres":
                out["P2_nodes_3_ratio"] = num(f[4])
            elif f[0] == "P2_postgres_over_sqlite":
                out["P2_pg_over_sqlite"] = num(f[1])
            elif f[0] == "TAKEOVER_after_kill9_s":
                out["TAKEOVER_s"] = num(f[1])
            elif f[0] == "P3pg_apply_1000_services":
                out["P3pg_ratio"] = num(f[4])
            elif f[0] == "P4pg_noop_apply_p50":
                out["P4pg_p50_ratio"] = num(f[4])
            elif f[0] == "P4pg_noop_apply_p99":
                out["P4pg_p99_ratio"] = num(f[4])
            elif f[0] == "P6" and ("a new connection each" in line or "fed from another thread" in line):
                pass  # shown for comparison only: P6 is the keep-alive row before them
            elif f[0] in ("P5", "P6"):
                m = re.search(r"ratio ([\d.]+) wall, ([\d.]+) per CPU", line)
                if m:
                    out[f[0] + "_ratio"] = min(float(m.group(1)), float(m.group(2)))
            elif f[0] == "P7":
                m = re.search(r"CPU ([\d.]+) cores", line)
                if m:
                    out["P7_cpu_cores"] = float(m.group(1))
            elif f[0] == "P8":
                m = re.search(r"\(([+-][\d.]+) % against unreported", line)
                if m:
                    out["P8_rise_pct"] = float(m.group(1))
            elif f[0] == "P9_mariposad_rss_100k_instances":
                out["P9_rss_mib"] = num(f[1])
            elif f[0] == "P10_restart_to_serving_100k_instances_50_tasks":
                out["P10_serving_s"] = num(f[1])
            elif f[0] == "P10_restart_to_first_action":
                out["P10_acting_s"] = num(f[1])
            elif f[0] in ("WATCH_kill_p99_ms", "WATCH_apply_ms", "WATCH_idle_cores", "WATCH_idle_vmapi_per_min"):
                out[f[0]] = num(f[1])
                out["POLL_" + f[0][len("WATCH_"):]] = num(f[3])
            elif f[0] == "AGENTS_ideal_over_elapsed" and f[1] != "FAILED:":
                out["AGENTS_ideal_over_elapsed"] = num(f[1])
        except (IndexError, ValueError):
            continue
    out.update(zero_downtime(text))
    return out


# The phases of zero_downtime_e2e_test where Mariposa removes instances
# itself (its drain's figure), and the one where an instance breaks.
ZD_REMOVALS = ("rollout-10", "scale-10-to-4", "rollout-killed")


def zero_downtime(text):
    """ZD_* from zero_downtime_e2e_test's lines: `ZERO_DOWNTIME[_NODRAIN]
    PHASE sent N failed M longest_gap_s S`, as the percentage failed."""
    sums = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) < 6 or f[0] not in ("ZERO_DOWNTIME", "ZERO_DOWNTIME_NODRAIN") or f[2] != "sent" or f[4] != "failed":
            continue
        suffix = "_nodrain" if f[0].endswith("NODRAIN") else ""
        name = ("ZD_removal_failed_pct" if f[1] in ZD_REMOVALS else
                "ZD_broken_failed_pct" if f[1] == "replace-broken" else None)
        if name is None or (suffix and name != "ZD_removal_failed_pct"):
            continue
        sent, failed = sums.get(name + suffix, (0, 0))
        sums[name + suffix] = (sent + int(f[3]), failed + int(f[5]))
    return {k: round(100.0 * failed / sent, 3) for k, (sent, failed) in sums.items() if sent > 0}


def run(binary, args, timeout, bin_dir=BIN, env=None):
    """One run of a benchmark from its runfiles folder (where it finds the
    binaries it starts); its output, or None when it failed. `bin_dir`: the
    build's bazel-bin/tests/bench (another tree's for --reference)."""
    runfiles = os.path.join(bin_dir, binary + ".runfiles", "mariposa")
    exe = os.path.abspath(os.path.join(bin_dir, binary))
    try:
        p = subprocess.run([exe] + args, cwd=runfiles, capture_output=True, text=True, timeout=timeout,
                           env=dict(os.environ, **(env or {})))
    except subprocess.TimeoutExpired:
        print(f"bench: {binary} {' '.join(args)} timed out after {timeout} s", file=sys.stderr)
        return None
    if p.returncode != 0:
        print(f"bench: {binary} {' '.join(args)} exited {p.returncode}:\n{p.stdout}{p.stderr}", file=sys.stderr)
        return None
    return p.stdout


def machine():
    load = os.getloadavg()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True).stdout.strip() != ""
    return {"cores": os.cpu_count(), "load_1m_at_start": round(load[0], 2), "commit": commit + ("+dirty" if dirty else ""),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}


def summarise(samples):
    out = {}
    for name, values in samples.items():
        out[name] = {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": len(values),
                     "values": values}
    return out


def verdict(name, median):
    better, target, _ = FIGURES[name]
    if target is None:
        return "-"
    met = median <= target if better == "lower" else median >= target
    return "met" if met else "NOT met"


def markdown(result):
    m = result["machine"]
    ref = result.get("reference")
    lines = [f"Commit {m['commit']}, {m['date']}, {m['cores']} cores, load {m['load_1m_at_start']} at start "
             f"({m.get('load_1m_at_end', '?')} at the end); `{result['command']}`."]
    if ref:
        lines.append(f"Reference {ref['commit']}, built beside it and run in turn with it, run for run.")
    lines += ["", "| figure | median | spread (min..max) | runs | target | |" + (" reference median (spread) | |" if ref else ""),
              "|---|---|---|---|---|---|" + ("---|---|" if ref else "")]
    worse = {w.split(":")[0] for w in compare(result, ref)} if ref else set()
    for name in FIGURES:
        if name not in result["figures"]:
            continue
        f = result["figures"][name]
        better, target, what = FIGURES[name]
        tgt = "-" if target is None else (f"<= {target:g}" if better == "lower" else f">= {target:g}")
        row = (f"| {name}: {what} | {f['median']:.2f} | {f['min']:.2f}..{f['max']:.2f} | {f['runs']} | {tgt} | "
               f"{verdict(name, f['median'])} |")
        if ref:
            r = ref["figures"].get(name)
            row += (f" {r['median']:.2f} ({r['min']:.2f}..{r['max']:.2f}) | {'WORSE than the reference' if name in worse else ''} |"
                    if r else " not measured | |")
        lines.append(row)
    for name in result.get("missing", []):
        lines.append(f"| {name}: {FIGURES[name][2]} | not measured (its benchmark failed: see the log) | | | | |")
    return "\n".join(lines) + "\n"


def compare(result, old):
    """Figures that got worse by more than their noise: the new median is
    past the old one by more than the larger of the two spreads."""
    worse = []
    for name, f in result["figures"].items():
        o = old.get("figures", {}).get(name)
        if o is None:
            continue
        noise = max(f["max"] - f["min"], o["max"] - o["min"])
        delta = f["median"] - o["median"]
        if FIGURES[name][0] == "higher":
            delta = -delta
        if delta > noise:
            worse.append(f"{name}: {o['median']:.2f} -> {f['median']:.2f} (noise {noise:.2f})")
    return worse


SAMPLE = """P1_full_plan_100k_instances_1k_services 201.50 ms 70.00 2.88x (target <= 3x; 1 actions; baseline 2)
P1_replan_after_one_service_change 0.412 ms - - (target <= 1 ms)
P2_scale_0_to_10000_end_to_end 1506 instances/s 2425 0.62x (vs 1-client baseline)
P2_baseline_8_clients 5000 vms/s - - (mariposad is 0.30x of it)
P3_apply_1000_services 5661 rows/s 55290 0.10
P4_noop_apply_p50 120.1 us 52.0 2.31
P4_noop_apply_p99 300.1 us 150.0 2.00
P5 tcp  baseline    50000/s (1-2)    20000 per CPU-s | engine    40000/s (1-2)    15000 per CPU-s | ratio 0.80 wall, 0.75 per CPU (target >= 0.7) MET
P6 http baseline   101567/s (1-2)   116083 per CPU-s | engine    72793/s (1-2)    59483 per CPU-s | ratio 0.72 wall, 0.51 per CPU (target >= 0.7) NOT MET
P6 http, fed from another thread baseline   211826/s (1-2)   212468 per CPU-s | engine   104052/s (1-2)   104292 per CPU-s | ratio 0.49 wall, 0.49 per CPU (for comparison, no target)
P6 http, a new connection each baseline    20106/s (1-2)    20850 per CPU-s | engine    20534/s (1-2)    18259 per CPU-s | ratio 1.02 wall, 0.88 per CPU (target >= 0.7) MET
P7 9 endpoints every 10s: expected 1/s, per-second counts 1-2 over 20s (worst 1.0%, target <= 10%), lateness p50 1.0 ms p99 2.0 ms (target < 100), CPU 0.64 cores (target <= 0.5), 0 failed: NOT MET
P8 9 endpoints/s, 1 % flapping: 9 checks/s, 1.0 state changes/s (0.02 %), 1.0 store transactions/s (0.02 % of checks/s, target <= 1 %); no-op Apply p99 1.00 ms idle, 1.1 ms with the checks running unreported, 1.2 ms with them reported to mariposad (+16.9 % against unreported, +20.0 % against idle; target <= +5 %): NOT MET
AGENTS_ideal_over_elapsed 0.78 (target >= 0.8)
P2_nodes_1_postgres 507 instances/s - - (10 projects x 1000; rounds: 507 293)
P2_nodes_3_postgres 480 instances/s 507 0.95x (vs 1 node; target >= 1.0x, not slower; rounds: 480 500)
P2_nodes_1_sqlite 743 instances/s - - (the same work on one node on SQLite; rounds: 743 664)
P2_postgres_over_sqlite 0.84 x 743 0.84 (1 node: PostgreSQL / SQLite, same run; target >= 0.8)
AGENTS_ideal_over_elapsed FAILED: the rollout did not finish
ZERO_DOWNTIME steady sent 1744 failed 0 longest_gap_s 0.00
ZERO_DOWNTIME rollout-10 sent 11114 failed 0 longest_gap_s 0.01
ZERO_DOWNTIME scale-10-to-4 sent 3681 failed 0 longest_gap_s 0.01
ZERO_DOWNTIME replace-broken sent 3558 failed 204 longest_gap_s 0.00 first_failures: 503
ZERO_DOWNTIME rollout-killed sent 7138 failed 0 longest_gap_s 0.01
ZERO_DOWNTIME_NODRAIN rollout-10 sent 2113 failed 476 longest_gap_s 0.30 first_failures: Connection
ZERO_DOWNTIME_NODRAIN scale-10-to-4 sent 154 failed 38 longest_gap_s 0.30
ZERO_DOWNTIME_NODRAIN rollout-killed sent 5406 failed 487 longest_gap_s 0.30
WATCH_kill_p99_ms 85 ms 5230 0.016x (p50 40 ms over 40; polling p50 2900 ms over 8; target <= 1000 ms)
WATCH_idle_cores 0.0110 cores 0.3600 0.031x (mariposad idle at 100000 instances; target <= 0.02)
"""

# --growth (issue 49, 4): each figure at three sizes, and its slope between
# them: d log(cost) / d log(size); 1 is linear, 0 constant. A slope above
# GROWTH_WORSE between any two sizes is named as worse than linear.
GROWTH_WORSE = 1.15
GROWTH = [
    # (row, binary, args per size, sizes, line prefix, what the cost is)
    # A manifest holds at most 1,000 services (docs/manifest.md, "Limits").
    ("P3 apply time / services", "projects_bench", lambda n: ["--only=P3", f"--services={n}"], [10, 100, 1000],
     "GROWTH_P3", "apply of N services (ms, median of 5)"),
    ("P4 no-op apply p50 / projects in the store", "projects_bench", lambda n: ["--only=P4", f"--projects={n}"],
     [10, 100, 1000], "GROWTH_P4", "no-op Apply p50 (us) with N projects stored"),
    ("TAKEOVER by projects on the two nodes", "nodes_bench", lambda n: [f"--takeover-projects={n}"],
     [10, 100, 1000], "GROWTH_TAKEOVER", "kill -9 of a node until the other holds all its projects (s)"),
    ("P2 scale time / instances", "convergence_bench", lambda n: [f"--growth={n}"], [1000, 10000, 100000],
     "GROWTH_p2", "scale 0 -> N end to end (s), every instance put back into CNS (s after the apply), "
     "mariposad RSS (MiB) and idle CPU (cores) after that"),
]


def parse_growth(prefix, text):
    """{cost: value} from a GROWTH_ line: the time (ms), and for P2 the RSS and
    idle CPU."""
    for line in (text or "").splitlines():
        f = line.split()
        if not f or f[0] != prefix:
            continue
        try:
            if prefix == "GROWTH_P3":  # GROWTH_P3 N services T ms raw R ms X
                return {"time_ms": float(f[3]), "raw_ms": float(f[6])}
            if prefix == "GROWTH_P4":  # GROWTH_P4 N projects p50 T us echo E us X
                return {"p50_us": float(f[4])}
            if prefix == "GROWTH_TAKEOVER":  # GROWTH_TAKEOVER N projects K taken all S s first F s
                return {"all_s": float(f[6])}
            if prefix == "GROWTH_p2":  # GROWTH_p2 N instances RATE instances/s Xx rss M MiB (...) idle C cores;
                # every instance put back into CNS P s after the apply (...)
                n, rate = float(f[1]), float(f[3])
                got = {"time_s": n / rate if rate > 0 else float("inf"), "rss_mib": float(f[7]),
                       "idle_cores": float(f[f.index("idle") + 1])}
                if "CNS" in f and f[f.index("CNS") + 1].replace(".", "", 1).isdigit():  # not "in time: ..."
                    got["put_back_s"] = float(f[f.index("CNS") + 1])
                return got
        except (IndexError, ValueError):
            return None
    return None


def slope(x1, y1, x2, y2):
    import math
    if y1 <= 0 or y2 <= 0:
        return None
    return math.log(y2 / y1) / math.log(x2 / x1)


def growth(out_stem, quick):
    rows = []
    for row, binary, args, sizes, prefix, what in GROWTH:
        if quick:
            sizes = sizes[:2]
        got = {}
        for n in sizes:
            print(f"bench: growth {binary} {' '.join(args(n))}", file=sys.stderr, flush=True)
            got[n] = parse_growth(prefix, run(binary, args(n), 3600))
        costs = sorted({k for v in got.values() if v for k in v if k != "raw_ms"})
        for cost in costs:
            values = [(n, (got[n] or {}).get(cost)) for n in sizes]
            slopes = [slope(a[0], a[1], b[0], b[1]) if a[1] is not None and b[1] is not None else None
                      for a, b in zip(values, values[1:])]
            known = [x for x in slopes if x is not None]
            verdict = ("not measured" if not known else
                       "worse than linear" if max(known) > GROWTH_WORSE else "linear or better")
            rows.append({"row": row, "cost": cost, "what": what, "values": values, "slopes": slopes,
                         "verdict": verdict})
    result = {"machine": machine(), "command": "bash scripts/bench.sh --growth" + (" --quick" if quick else ""),
              "rows": rows}
    lines = [f"# Growth ({result['machine']['commit']}, {result['machine']['date']}, "
             f"{result['machine']['cores']} cores)", "",
             f"Command: `{result['command']}`. Slope: d log(cost) / d log(size) between neighbouring sizes "
             f"(1 linear, 0 constant); above {GROWTH_WORSE} is named worse than linear.", "",
             "| row | cost | sizes: values | slopes | verdict |", "|---|---|---|---|---|"]
    for r in rows:
        vals = ", ".join(f"{n:,}: {'-' if v is None else f'{v:.3g}'}" for n, v in r["values"])
        sl = ", ".join("-" if x is None else f"{x:.2f}" for x in r["slopes"])
        lines.append(f"| {r['row']} | {r['cost']} | {vals} | {sl} | {r['verdict']} |")
    md = "\n".join(lines) + "\n"
    with open(out_stem + ".json", "w") as f:
        json.dump(result, f, indent=2)
    with open(out_stem + ".md", "w") as f:
        f.write(md)
    print(md)
    missing = [r for r in rows if r["verdict"] == "not measured"] or not rows
    return 1 if missing else 0


def self_test():
    """The parser against the benchmarks' line formats, and --compare."""
    want = {"P1_plan_ratio": 2.88, "P1_replan_ms": 0.412, "P2_rate": 1506.0, "P2_ratio_1_client": 0.62,
            "P3_ratio": 0.1, "P4_p50_ratio": 2.31, "P4_p99_ratio": 2.0, "P5_ratio": 0.75, "P6_ratio": 0.51,
            "P7_cpu_cores": 0.64,
            "P8_rise_pct": 16.9, "AGENTS_ideal_over_elapsed": 0.78, "P2_nodes_1_rate": 507.0,
            "P2_nodes_3_ratio": 0.95, "P2_pg_over_sqlite": 0.84, "WATCH_kill_p99_ms": 85.0, "POLL_kill_p99_ms": 5230.0,
            "WATCH_idle_cores": 0.011, "POLL_idle_cores": 0.36,
            "ZD_removal_failed_pct": 0.0, "ZD_broken_failed_pct": 5.734, "ZD_removal_failed_pct_nodrain": 13.046}
    got = parse(SAMPLE)
    assert got == want, f"parse: {got} != {want}"
    old = {"figures": summarise({"P3_ratio": [0.10, 0.11, 0.12], "P1_plan_ratio": [2.8, 2.9, 3.0]})}
    new = {"figures": summarise({"P3_ratio": [0.05, 0.06, 0.07], "P1_plan_ratio": [2.85, 2.9, 2.95]})}
    worse = compare(new, old)
    assert len(worse) == 1 and worse[0].startswith("P3_ratio: 0.11 -> 0.06"), worse
    with_ref = {"machine": {"commit": "new", "date": "-", "cores": 2, "load_1m_at_start": 0}, "command": "x",
                "figures": new["figures"], "reference": {"commit": "0f400ad", "figures": old["figures"]}}
    md = markdown(with_ref)
    assert "Reference 0f400ad" in md and "WORSE than the reference" in md.split("P3_ratio")[1].split("\n")[0], md
    assert "WORSE" not in md.split("P1_plan_ratio")[1].split("\n")[0], md
    assert parse_growth("GROWTH_P3", "GROWTH_P3 100 services 9.5 ms raw 1.2 ms 0.13x\n") == \
        {"time_ms": 9.5, "raw_ms": 1.2}
    assert parse_growth("GROWTH_P4", "GROWTH_P4 10 projects p50 120.0 us echo 60.0 us 2.00x") == {"p50_us": 120.0}
    g = parse_growth("GROWTH_p2", "GROWTH_p2 1000 instances 2000 instances/s 0.90x rss 80.0 MiB "
                                  "(81.92 KiB per instance) idle 0.010 cores")
    assert g == {"time_s": 0.5, "rss_mib": 80.0, "idle_cores": 0.01}, g
    g = parse_growth("GROWTH_p2", "GROWTH_p2 1000 instances 2000 instances/s 0.90x rss 80.0 MiB "
                                  "(81.92 KiB per instance) idle 0.010 cores; every instance put back into CNS 1.6 s "
                                  "after the apply (running after 0.5 s)")
    assert g == {"time_s": 0.5, "rss_mib": 80.0, "idle_cores": 0.01, "put_back_s": 1.6}, g
    g = parse_growth("GROWTH_p2", "GROWTH_p2 1000 instances 2000 instances/s 0.90x rss 80.0 MiB "
                                  "(81.92 KiB per instance) idle 0.010 cores; NOT every instance was put back into "
                                  "CNS in time: the idle figure includes that work")
    assert g == {"time_s": 0.5, "rss_mib": 80.0, "idle_cores": 0.01}, g
    assert parse_growth("GROWTH_TAKEOVER", "GROWTH_TAKEOVER 10 projects 5 taken all 11.20 s first 10.90 s") == \
        {"all_s": 11.2}
    assert abs(slope(100, 1.0, 1000, 10.0) - 1.0) < 1e-9 and abs(slope(10, 5.0, 100, 5.0)) < 1e-9
    print("bench.py: self-test passed")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="runs of each noisy benchmark (default 5)")
    ap.add_argument("--quick", action="store_true",
                    help="short runs: P1-P8 at their quick sizes, agents at 200 ms tasks, no P9/P10")
    ap.add_argument("--compare", metavar="OLD.json", help="name every figure worse than in OLD.json beyond its noise")
    ap.add_argument("--out", default="bench-results", help="file name stem for the .md and .json (default bench-results)")
    ap.add_argument("--reference-bin", metavar="DIR",
                    help="bazel-bin/tests/bench of another commit's build (bench.sh --reference COMMIT makes it): "
                         "each run of a benchmark is followed by a run of the reference's, and every figure worse "
                         "than the reference's beyond the noise is named (exit 1)")
    ap.add_argument("--reference-commit", default="", help=argparse.SUPPRESS)
    ap.add_argument("--command", default="bash scripts/bench.sh", help=argparse.SUPPRESS)
    ap.add_argument("--growth", action="store_true",
                    help="how cost grows with size instead of the table: P3 at 10/100/1,000 services, the no-op "
                         "apply with 10/100/1,000 projects, P2 with RSS and idle CPU at 1k/10k/100k instances "
                         "and takeover with 10/100/1,000 projects (--quick: the two smaller sizes); writes OUT-growth.md/.json")
    a = ap.parse_args()
    if a.growth:
        return growth(a.out + "-growth", a.quick)
    given = sys.argv[1:]
    if "--command" in given:  # how it was started, not the wrapper's own argument
        i = given.index("--command")
        given = given[:i] + given[i + 2:]
    result = {"machine": machine(), "command": " ".join([a.command] + given), "figures": {}}
    samples, ref_samples = {}, {}
    plan = [("projects_bench", [], 600), ("projects_bench", ["--postgres"], 600), ("nodes_bench", [], 900),
            ("convergence_bench", ["--quick"], 1800),
            ("health_bench", ["--quick"] if a.quick else [], 1800),
            ("agents_bench", ["200"] if a.quick else [], 1800)]
    for binary, args, timeout in plan:
        for r in range(a.runs):
            print(f"bench: {binary} {' '.join(args)} run {r + 1}/{a.runs}", file=sys.stderr, flush=True)
            out = run(binary, args, timeout)
            for name, value in parse(out or "").items():
                samples.setdefault(name, []).append(value)
            if a.reference_bin:  # the reference right after, so both meet the same machine
                print(f"bench: {binary} {' '.join(args)} run {r + 1}/{a.runs} (reference)", file=sys.stderr, flush=True)
                for name, value in parse(run(binary, args, timeout, a.reference_bin) or "").items():
                    ref_samples.setdefault(name, []).append(value)
    # Zero downtime (issue 51): the same changes with mariposad's drain and,
    # in turn, without it (--cns-ttl 0s): the baseline. About a minute each.
    for r in range(a.runs):
        for env in ({}, {"ZERO_DOWNTIME_BASELINE": "no-drain"}):
            print(f"bench: zero_downtime_e2e_test {' '.join(env.values())} run {r + 1}/{a.runs}", file=sys.stderr,
                  flush=True)
            for name, value in zero_downtime(run("zero_downtime_e2e_test", [], 900, TESTS_BIN, env) or "").items():
                samples.setdefault(name, []).append(value)
    if not a.quick:  # watching against polling at 100,000 instances, once (~15 min)
        print("bench: watch_bench", file=sys.stderr, flush=True)
        for name, value in parse(run("watch_bench", [], 3600) or "").items():
            samples.setdefault(name, []).append(value)
    if not a.quick:  # P9 and P10: 100,000 instances, once (not ratios; ~15 min)
        print("bench: convergence_bench --memory (P9, P10)", file=sys.stderr, flush=True)
        out = run("convergence_bench", ["--memory"], 3600)
        for name, value in parse(out or "").items():
            if name.startswith(("P9", "P10")):
                samples.setdefault(name, []).append(value)
    result["figures"] = summarise(samples)
    if a.reference_bin:
        result["reference"] = {"commit": a.reference_commit or a.reference_bin, "figures": summarise(ref_samples)}
    wanted = [n for n in FIGURES if not (a.quick and n.startswith(("P9", "P10", "WATCH", "POLL")))]
    result["missing"] = [n for n in wanted if n not in result["figures"]]
    result["machine"]["load_1m_at_end"] = round(os.getloadavg()[0], 2)
    with open(a.out + ".json", "w") as f:
        json.dump(result, f, indent=2)
    md = markdown(result)
    with open(a.out + ".md", "w") as f:
        f.write(md)
    print(md)
    rc = 1 if result["missing"] else 0
    if a.reference_bin:
        worse = compare(result, result["reference"])
        if worse:
            print(f"Worse than the reference {result['reference']['commit']} beyond the noise, same run:\n  " +
                  "\n  ".join(worse))
            rc = 1
        else:
            print(f"Nothing worse than the reference {result['reference']['commit']} beyond the noise.")
    if a.compare:
        with open(a.compare) as f:
            worse = compare(result, json.load(f))
        if worse:
            print("Worse than " + a.compare + " beyond the noise:\n  " + "\n  ".join(worse))
            rc = 1
        else:
            print("Nothing worse than " + a.compare + " beyond the noise.")
    return rc


if __name__ == "__main__":
    sys.exit(main())
