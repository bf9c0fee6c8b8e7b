#!/usr/bin/env python3
"""Two data centers cut apart during a rollout (issue 52, point 4).

Each data center is a network namespace of its own, with its own tritonsim
(on the namespace's loopback: its Triton is private to it) and its own
mariposad, listening on a link-local address of a bridge both namespaces
reach through a veth pair. The two mariposads are each other's --peers.

A version goes east first, then west. Right after it starts, west's link
is cut: east converges, the rollout cannot reach west and waits, showing
it unknown; west, alone, keeps running the version it holds, converged.
When the link is back, west is sent the version and the rollout completes,
east's part not sent again. Then a version is sent to west and the link is
cut while west converges it: west finishes alone; the rollout completes
once it answers again.

Run as root (namespaces, veth): scripts/dc_partition.sh. Exit 0 only when
every check passed; each check is printed.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

OWNER = "930896af-bf8c-48d4-885c-6573a94b1853"
NETWORK = "aaaaaaaa-0000-4000-8000-000000000001"
BIN = "bazel-bin"
NET = "169.254.203"  # link-local only: the bridge lives in this run's namespaces
DCS = {"east": 11, "west": 12}
BRIDGE = "mpdcbr"

failures = []


def sh(*argv, check=True, **kw):
    return subprocess.run(list(argv), check=check, capture_output=True, text=True, **kw)


def log(msg):
    print(time.strftime("%H:%M:%S"), msg, flush=True)


def check(what, ok, detail=""):
    log(("ok   " if ok else "FAIL ") + what + ("" if ok else f": {detail}"))
    if not ok:
        failures.append(what)


def ns(dc):
    return f"mpdc-{dc}"


def addr(dc):
    return f"{NET}.{DCS[dc]}:7740"


def net_up():
    net_down()
    sh("ip", "link", "add", BRIDGE, "type", "bridge")
    sh("ip", "addr", "add", f"{NET}.1/24", "dev", BRIDGE)
    sh("ip", "link", "set", BRIDGE, "up")
    for dc, i in DCS.items():
        sh("ip", "link", "del", f"mpdch{i}", check=False)  # a run stopped half-way
        sh("ip", "netns", "add", ns(dc))
        sh("ip", "-n", ns(dc), "link", "set", "lo", "up")
        host, inner = f"mpdch{i}", f"mpdc{i}"
        sh("ip", "link", "add", host, "type", "veth", "peer", "name", inner)
        sh("ip", "link", "set", inner, "netns", ns(dc))
        sh("ip", "link", "set", host, "master", BRIDGE)
        sh("ip", "link", "set", host, "up")
        sh("ip", "-n", ns(dc), "addr", "add", f"{NET}.{i}/24", "dev", inner)
        sh("ip", "-n", ns(dc), "link", "set", inner, "up")


def cut(dc, down):
    sh("ip", "-n", ns(dc), "link", "set", f"mpdc{DCS[dc]}", "down" if down else "up")


def net_down():
    for dc in DCS:
        sh("ip", "netns", "del", ns(dc), check=False)
    sh("ip", "link", "del", BRIDGE, check=False)


def wait_file(path, seconds=10):
    for _ in range(int(seconds * 20)):
        if os.path.exists(path) and open(path).read().endswith("\n"):
            return open(path).read().split("\n")[0]
        time.sleep(0.05)
    return None


ROOT = ""


def cli(dc, *args, timeout=60):
    """The CLI on DC's mariposad's Unix socket, as an operator in that data
    center (root: its admin); a cut link between the data centers does not
    cut it."""
    argv = [os.path.abspath(f"{BIN}/cli/mariposa"), "--addr", "unix:" + os.path.join(ROOT, dc, "mariposad.sock"),
            *args]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        return r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired:
        return 124, "", "timed out"


def rollout(dc, project):
    code, out, _ = cli(dc, "-j", project, "-o", "json", "rollouts", "--all")
    if code != 0 or not out.strip():
        return {}
    r = json.loads(out).get("rollouts", [])
    return r[-1] if r else {}


def step(r, dc):
    for s in r.get("steps", []):
        if s.get("datacenter") == dc:
            return s
    return {}


def eventually(f, seconds):
    end = time.time() + seconds
    while time.time() < end:
        if f():
            return True
        time.sleep(0.3)
    return False


def running(sim_url_file, dc):
    """Instances of service web running in DC's tritonsim, read inside its namespace."""
    url = open(sim_url_file).read().split("\n")[0]
    r = sh("ip", "netns", "exec", ns(dc), "curl", "-s", f"{url}/vms?state=running&tag.mariposa.service=web",
           check=False)
    try:
        return len(json.loads(r.stdout))
    except ValueError:
        return -1


def manifest(count_east, count_west):
    return (f"project: shop\nservices:\n  web: {{image: autopilotpattern/nginx@1.4.0, package: g4-highcpu-512M, "
            f"count: {count_east}, start: {{window: 1s}}}}\n"
            f"datacenters:\n  - {{name: east, canary: true}}\n"
            f"  - name: west\n    services: {{web: {{count: {count_west}}}}}\n")


def main():
    global BIN, ROOT
    if os.geteuid() != 0:
        sys.exit("dc_partition: run as root (network namespaces)")
    BIN = os.path.abspath(BIN)
    root = tempfile.mkdtemp(prefix="mariposa-dc-partition-")
    ROOT = root
    procs = []
    try:
        net_up()
        sims = {}
        for dc in DCS:
            f = os.path.join(root, f"sim-{dc}.addr")
            procs.append(subprocess.Popen(
                ["ip", "netns", "exec", ns(dc), f"{BIN}/deploy/tritonsim/tritonsim", "--listen", "127.0.0.1:0",
                 "--addr-file", f, "--servers", "2", "--seed", "deploy/examples/tritonsim-seed.json",
                 "--job-latency", "20"], stdout=subprocess.DEVNULL, stderr=open(os.path.join(root, f"sim-{dc}.log"), "w")))
            sims[dc] = f
            if wait_file(f) is None:
                sys.exit(f"dc_partition: tritonsim in {dc} did not start")

        def daemon(dc, extra):
            d = os.path.join(root, dc)
            os.makedirs(d, exist_ok=True)
            a = os.path.join(d, "addr")
            if os.path.exists(a):
                os.unlink(a)
            p = subprocess.Popen(["ip", "netns", "exec", ns(dc), f"{BIN}/daemon/mariposad", "--listen", addr(dc),
                                  "--insecure-listen", "--data-dir", d, "--addr-file", a, *extra],
                                 stdout=subprocess.DEVNULL, stderr=open(os.path.join(d, "log"), "a"))
            procs.append(p)  # stopped at the end whatever happens
            if wait_file(a) is None:
                sys.exit(f"dc_partition: mariposad in {dc} did not start: {open(os.path.join(d, 'log')).read()[-2000:]}")
            return p

        # Each issues the other a deployer token.
        tokens = {}
        for dc in DCS:
            p = daemon(dc, [])
            for other in DCS:
                if other == dc:
                    continue
                code, out, err = cli(dc, "admin", "token", "create", "--name", f"peer-{other}", "--role", "deployer",
                                     "--all-projects")
                tok = [w for w in out.split() if w.startswith("mpt_")]
                if code != 0 or not tok:
                    sys.exit(f"dc_partition: no token from {dc}: {err}")
                tokens[(dc, other)] = os.path.join(root, f"{dc}-for-{other}.token")
                open(tokens[(dc, other)], "w").write(tok[0] + "\n")
            p.terminate()
            p.wait()
        running_daemons = {}
        for dc in DCS:
            other = [o for o in DCS if o != dc][0]
            sim = open(sims[dc]).read().split("\n")[0]
            running_daemons[dc] = daemon(dc, ["--triton", sim, "--owner", OWNER, "--network", NETWORK, "--resync",
                                              "300ms", "--datacenter", dc, "--peers", f"{other}={addr(other)}",
                                              "--peer-tokens", f"{other}={tokens[(other, dc)]}", "--peer-interval",
                                              "1s"])

        def peers_reachable(dc):
            code, out, _ = cli(dc, "-o", "json", "datacenters")
            return code == 0 and all(p.get("reachable") for p in json.loads(out).get("peers", []))
        check("each data center sees the other",
              eventually(lambda: all(peers_reachable(dc) for dc in DCS), 20), "")

        m1 = os.path.join(root, "shop-1.yaml")
        open(m1, "w").write(manifest(2, 1))
        code, out, err = cli("east", "apply", "--yes", "-f", m1, "--wait", "--timeout", "90s", timeout=120)
        check("version 1 goes to both data centers", code == 0 and "rollout completed" in out, out + err)
        check("east runs 2, west 1", running(sims["east"], "east") == 2 and running(sims["west"], "west") == 1,
              f"east {running(sims['east'], 'east')}, west {running(sims['west'], 'west')}")

        # 1. Cut before west's turn.
        m2 = os.path.join(root, "shop-2.yaml")
        open(m2, "w").write(manifest(3, 2))
        code, out, err = cli("east", "apply", "--yes", "-f", m2)
        check("version 2 starts through east", code == 0 and "started rollout" in out, out + err)
        cut("west", True)
        log("west's link is cut")
        ok = eventually(lambda: step(rollout("east", "shop"), "east").get("state") == "converged"
                        and "not reached" in step(rollout("east", "shop"), "west").get("detail", ""), 60)
        r = rollout("east", "shop")
        check("east converges; the rollout cannot reach west and waits", ok and r.get("state") == "active",
              json.dumps(r))
        code, out, _ = cli("west", "-j", "shop", "status")
        check("west, alone, keeps its version 1, converged", code == 0 and "at version 1: converged" in out, out)
        code, out, _ = cli("east", "-j", "shop", "status", "--datacenters")
        check("status --datacenters shows west unknown (exit 4)", code == 4 and "unknown: west" in out, out)
        time.sleep(3)
        check("east's part is not sent again while waiting",
              step(rollout("east", "shop"), "east").get("number") in (2, "2"), json.dumps(rollout("east", "shop")))
        cut("west", False)
        log("west's link is back")
        ok = eventually(lambda: rollout("east", "shop").get("state") == "completed", 60)
        check("west catches up: the rollout completes", ok, json.dumps(rollout("east", "shop")))
        check("west runs 2 now", eventually(lambda: running(sims["west"], "west") == 2, 30),
              str(running(sims["west"], "west")))
        code, out, _ = cli("east", "-j", "shop", "-o", "json", "versions")
        n = len(json.loads(out).get("versions", [])) if code == 0 else -1
        check("east stored version 2 once (2 versions)", n == 2, out)

        # 2. Cut while west converges what it was sent.
        m3 = os.path.join(root, "shop-3.yaml")
        open(m3, "w").write(manifest(3, 4))
        code, out, err = cli("east", "apply", "--yes", "-f", m3)
        check("version 3 starts through east", code == 0, out + err)
        ok = eventually(lambda: step(rollout("east", "shop"), "west").get("state") == "sent", 60)
        check("west is sent version 3", ok, json.dumps(rollout("east", "shop")))
        cut("west", True)
        log("west's link is cut")
        check("west converges version 3 alone", eventually(lambda: running(sims["west"], "west") == 4, 60),
              str(running(sims["west"], "west")))
        ok = eventually(lambda: step(rollout("east", "shop"), "west").get("detail", "").startswith("no answer"), 20)
        check("the rollout shows west silent", ok and rollout("east", "shop").get("state") == "active",
              json.dumps(rollout("east", "shop")))
        cut("west", False)
        log("west's link is back")
        check("the rollout completes once west answers",
              eventually(lambda: rollout("east", "shop").get("state") == "completed", 60),
              json.dumps(rollout("east", "shop")))
        ids = set()
        for dc in DCS:
            code, out, _ = cli(dc, "-j", "shop", "-o", "json", "versions")
            v = json.loads(out).get("versions", []) if code == 0 else []
            ids.add(v[-1]["uuid"] if v else "")
        check("one version id in both data centers", len(ids) == 1 and "" not in ids, str(ids))
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        net_down()
        shutil.rmtree(root, ignore_errors=True)
    print(f"dc_partition: {len(failures)} failed" + (": " + "; ".join(failures) if failures else ", every check passed"))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
