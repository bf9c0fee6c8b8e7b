#!/usr/bin/env python3
"""Chaos run (issue 33): several mariposad nodes on one PostgreSQL pair, each
in a network namespace of its own, against tritonsim, while they are killed,
paused, cut off from the database, and the database fails over.

Every node has two links: one to the database's bridge, one to Triton's. A
partition takes a node's database link down and leaves Triton reachable, the
dangerous case: the node must stop acting on its own, before its leases can
expire, while the others take its projects over.

At the end it checks what an operator would: no instance created twice, no
orphan, every acknowledged version and meta write present, every project
converged at its goal count; and it reports the takeover time of each
event. Run by scripts/chaos.sh (root: namespaces, veth, PostgreSQL as the
`postgres` user). Exit 0 only when every check passed.
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

OWNER = "930896af-bf8c-48d4-885c-6573a94b1853"
NETWORK = "aaaaaaaa-0000-4000-8000-000000000001"
PGBIN = None
BIN = "bazel-bin"
# Link-local addresses only: the bridges live in namespaces this script makes.
DB_NET, TR_NET = "169.254.201", "169.254.202"


def sh(*argv, check=True, **kw):
    return subprocess.run(list(argv), check=check, capture_output=True, text=True, **kw)


def as_pg(*argv, check=True):
    return sh("/usr/sbin/runuser", "-u", "postgres", "--", *argv, check=check)


def log(msg):
    print(time.strftime("%H:%M:%S"), msg, flush=True)


class Net:
    """Bridges for the database and for Triton; a namespace per node."""

    def __init__(self, n):
        self.n = n
        self.names = [f"mpchaos{i}" for i in range(1, n + 1)]

    def up(self):
        self.down()
        for br, net in (("mpcdb", DB_NET), ("mpctr", TR_NET)):
            sh("ip", "link", "add", br, "type", "bridge")
            sh("ip", "addr", "add", f"{net}.1/24", "dev", br)
            sh("ip", "link", "set", br, "up")
        for i, ns in enumerate(self.names, start=1):
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            for kind, br, net in (("d", "mpcdb", DB_NET), ("t", "mpctr", TR_NET)):
                host, inner = f"mpc{kind}h{i}", f"mpc{kind}{i}"
                sh("ip", "link", "add", host, "type", "veth", "peer", "name", inner)
                sh("ip", "link", "set", inner, "netns", ns)
                sh("ip", "link", "set", host, "master", br)
                sh("ip", "link", "set", host, "up")
                sh("ip", "-n", ns, "addr", "add", f"{net}.{10 + i}/24", "dev", inner)
                sh("ip", "-n", ns, "link", "set", inner, "up")

    def partition(self, i, cut):
        sh("ip", "-n", self.names[i - 1], "link", "set", f"mpcd{i}", "down" if cut else "up")

    def down(self):
        for ns in self.names:
            sh("ip", "netns", "del", ns, check=False)
        for br in ("mpcdb", "mpctr"):
            sh("ip", "link", "del", br, check=False)


class Postgres:
    def __init__(self, root, name, port):
        self.dir = os.path.join(root, name)
        self.port = port

    def initdb(self):
        os.makedirs(self.dir)
        shutil.chown(self.dir, "postgres", "postgres")
        as_pg(f"{PGBIN}/initdb", "-D", self.dir + "/data", "-U", "postgres", "-A", "trust", "-E", "UTF8",
              "--locale", "C")
        with open(self.dir + "/data/pg_hba.conf", "a") as f:
            f.write(f"host all all {DB_NET}.0/24 trust\nhost replication all 127.0.0.1/32 trust\n")

    def basebackup(self, primary):
        os.makedirs(self.dir)
        shutil.chown(self.dir, "postgres", "postgres")
        as_pg(f"{PGBIN}/pg_basebackup", "-d",
              f"host=127.0.0.1 port={primary.port} user=postgres application_name=replica",
              "-D", self.dir + "/data", "-R", "-X", "stream")

    def ctl(self, action, *extra):
        argv = [f"{PGBIN}/pg_ctl", "-D", self.dir + "/data", "-l", self.dir + "/log", "-w", "-t", "60"]
        if action == "start":
            argv += ["-o", f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1,{DB_NET}.1"]
        return as_pg(*argv, *extra, action, check=False)

    def psql(self, sql):
        return as_pg(f"{PGBIN}/psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-At", "-c", sql)


class Node:
    def __init__(self, root, i, net, uri, triton, lease_ttl):
        self.i, self.net, self.uri, self.triton, self.ttl = i, net, uri, triton, lease_ttl
        self.dir = os.path.join(root, f"node{i}")
        self.secrets = os.path.join(root, "secrets.key")
        self.proc = None
        os.makedirs(self.dir, exist_ok=True)

    @property
    def sock(self):
        return "unix:" + os.path.join(self.dir, "mariposad.sock")

    def start(self):
        addr_file = os.path.join(self.dir, "addr")
        if os.path.exists(addr_file):
            os.unlink(addr_file)
        argv = ["ip", "netns", "exec", self.net.names[self.i - 1], os.path.abspath(f"{BIN}/daemon/mariposad"),
                "--listen", f"{TR_NET}.{10 + self.i}:7740", "--insecure-listen", "--data-dir", self.dir,
                "--addr-file", addr_file, "--store", self.uri, "--node", f"node{self.i}", "--lease-ttl",
                f"{self.ttl}s", "--secrets-key", self.secrets, "--triton", self.triton, "--owner", OWNER,
                "--network", NETWORK, "--resync", "5s"]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(self.dir, "log"), "a"))
        for _ in range(300):
            if os.path.exists(addr_file) and open(addr_file).read().endswith("\n"):
                return True
            time.sleep(0.05)
        return False

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self, sig=signal.SIGKILL):
        if self.alive():
            self.proc.send_signal(sig)
            if sig in (signal.SIGKILL, signal.SIGTERM):
                self.proc.wait()


def cli(node, *args, timeout=30):
    try:
        r = subprocess.run([f"{BIN}/cli/mariposa", "--addr", node.sock, *args], capture_output=True, text=True,
                           timeout=timeout)
        return r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired:
        return 124, "", "timed out"


def leases(node):
    """project -> holder ('' when none) as `mariposa nodes` says on `node`."""
    code, out, _ = cli(node, "-o", "json", "nodes", timeout=10)
    if code != 0:
        return None
    j = json.loads(out)
    return {p["project"]: (p.get("holder", "") if p.get("state") == "held" else "") for p in j.get("projects", [])}


def vms(triton):
    """Every VM of a Mariposa service that is not destroyed or failed (VMAPI pages by 1,000)."""
    import urllib.request
    out, offset = [], 0
    while True:
        url = f"{triton}/vms?tag.mariposa.service=*&state=active&limit=1000&offset={offset}"
        with urllib.request.urlopen(url, timeout=30) as r:
            page = json.load(r)
        out += [v for v in page if v["state"] not in ("destroyed", "failed")]
        if len(page) < 1000:
            return out
        offset += len(page)


def main():
    global PGBIN, BIN
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=5)
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--projects", type=int, default=5)
    ap.add_argument("--instances", type=int, default=200)
    ap.add_argument("--lease-ttl", type=int, default=10)
    ap.add_argument("--kill-every", type=float, default=20)
    ap.add_argument("--out", default="chaos-results.json")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("chaos: run as root (network namespaces, PostgreSQL as the postgres user)")
    PGBIN = sorted(d for d in (f"/usr/lib/postgresql/{v}/bin" for v in os.listdir("/usr/lib/postgresql"))
                   if os.path.exists(d + "/pg_ctl"))[-1]
    root = tempfile.mkdtemp(prefix="mariposa-chaos-")
    os.chmod(root, 0o755)
    net = Net(a.nodes)
    report = {"events": [], "checks": {}}
    primary, replica = Postgres(root, "pg1", 55441), Postgres(root, "pg2", 55442)
    sim = None
    nodes = []
    try:
        net.up()
        primary.initdb()
        primary.ctl("start")
        replica.basebackup(primary)
        replica.ctl("start")
        primary.psql("ALTER SYSTEM SET synchronous_standby_names = '*'")
        primary.psql("SELECT pg_reload_conf()")
        uri = (f"postgresql://postgres@{DB_NET}.1:{primary.port},{DB_NET}.1:{replica.port}/postgres"
               "?target_session_attrs=read-write&connect_timeout=2")
        sim_addr = os.path.join(root, "sim.addr")
        sim = subprocess.Popen([f"{BIN}/deploy/tritonsim/tritonsim", "--listen", f"{TR_NET}.1:0", "--addr-file",
                                sim_addr, "--servers", "60", "--job-latency", "200", "--job-jitter", "0.5",
                                "--seed", "deploy/examples/tritonsim-seed.json"],
                               stdout=subprocess.DEVNULL, stderr=open(os.path.join(root, "sim.log"), "w"))
        for _ in range(200):
            if os.path.exists(sim_addr) and open(sim_addr).read().strip():
                break
            time.sleep(0.05)
        triton = open(sim_addr).read().strip()
        nodes = [Node(root, i, net, uri, triton, a.lease_ttl) for i in range(1, a.nodes + 1)]
        for n in nodes:
            if not n.start():
                sys.exit(f"chaos: node {n.i} did not start: {open(os.path.join(n.dir, 'log')).read()[-2000:]}")
        log(f"{a.nodes} nodes, PostgreSQL {primary.port} (primary) + {replica.port} (sync standby), {triton}")

        versions = {}  # project -> set of acknowledged version numbers
        acked_meta = []
        lock = threading.Lock()
        stop = threading.Event()

        def live():
            return [n for n in nodes if n.alive()]

        def apply(p, count):
            path = os.path.join(root, f"{p}.yaml")
            with open(path, "w") as f:
                f.write(f"project: {p}\nservices:\n  web:\n    image: autopilotpattern/nginx@1.4.0\n"
                        f"    package: g4-highcpu-512M\n    count: {count}\n"
                        f"    update: {{rolling: 10}}\n")
            for _ in range(20):
                n = random.choice(live())
                code, out, err = cli(n, "apply", "--yes", "-f", path)
                if code == 0:
                    m = re.search(r"applied version (\d+)", out)
                    if m:
                        with lock:
                            versions.setdefault(p, set()).add(int(m.group(1)))
                    return True
                time.sleep(1)
            return False

        projects = [f"chaos{i}" for i in range(a.projects)]
        for p in projects:
            if not apply(p, a.instances):
                sys.exit(f"chaos: cannot apply {p}")

        def writer():
            k = 0
            while not stop.is_set():
                n = random.choice(live() or nodes)
                key = f"w{k}"
                code, _, _ = cli(n, "-j", projects[k % len(projects)], "meta", "set", key, "v", timeout=15)
                if code == 0:
                    with lock:
                        acked_meta.append((projects[k % len(projects)], key))
                k += 1
                time.sleep(0.2)

        wt = threading.Thread(target=writer, daemon=True)
        wt.start()

        impaired = set()  # nodes stopped or cut off right now

        def takeover(victim, what, since, limit):
            """Seconds until every project the victim held is held by another node, as a witness reads it."""
            mine = None
            for _ in range(int(limit / 0.25)):
                witnesses = [n for n in live() if n is not victim and n.i not in impaired]
                l = leases(witnesses[0]) if witnesses else None
                if l is not None:
                    if mine is None:
                        mine = {p for p, h in l.items() if h == f"node{victim.i}"} or set(l)
                    if all(l.get(p) and l.get(p) != f"node{victim.i}" for p in mine):
                        t = time.time() - since
                        report["events"].append({"event": what, "node": victim.i, "projects": len(mine),
                                                 "takeover_s": round(t, 2)})
                        log(f"{what} node{victim.i}: its {len(mine)} projects taken over in {t:.1f} s")
                        return t
                time.sleep(0.25)
            report["events"].append({"event": what, "node": victim.i, "takeover_s": None})
            log(f"{what} node{victim.i}: NOT taken over within {limit} s")
            return None

        def busiest():
            """A healthy node holding at least one project (the one holding most)."""
            for n in live():
                if n.i in impaired:
                    continue
                l = leases(n)
                if l:
                    held = {}
                    for h in l.values():
                        held[h] = held.get(h, 0) + 1
                    for m in sorted(nodes, key=lambda m: -held.get(f"node{m.i}", 0)):
                        if m.alive() and m.i not in impaired and held.get(f"node{m.i}", 0) > 0:
                            return m
            return None

        def later(seconds, fn):
            threading.Timer(seconds, fn).start()

        start = time.time()
        end = start + a.minutes * 60
        plan = [("rescale", 1 / 6), ("stop", 1 / 3), ("partition", 1 / 2), ("failover", 2 / 3)]
        measures = []
        next_kill = start + a.kill_every
        while time.time() < end or plan:
            now = time.time()
            if plan and now >= start + plan[0][1] * a.minutes * 60:
                what = plan.pop(0)[0]
                if what == "rescale":
                    for p in projects[:2]:
                        apply(p, a.instances - 50)
                    log("rollouts: two projects scaled down by 50")
                elif what in ("stop", "partition"):
                    v = busiest()
                    if v is None:
                        log(f"{what}: no node holds a project")
                        continue
                    impaired.add(v.i)
                    if what == "stop":
                        v.kill(signal.SIGSTOP)
                        log(f"SIGSTOP node{v.i} for 30 s")

                        def resume(v=v):
                            v.kill(signal.SIGCONT)
                            impaired.discard(v.i)
                            log(f"SIGCONT node{v.i}")
                        later(30, resume)
                    else:
                        net.partition(v.i, True)
                        log(f"node{v.i}: database link down for 30 s (Triton still reachable)")

                        def heal(v=v):
                            net.partition(v.i, False)
                            impaired.discard(v.i)
                            log(f"node{v.i}: database link up")
                        later(30, heal)
                    t = threading.Thread(target=takeover, args=(v, "sigstop" if what == "stop" else "partition",
                                                                now, 3 * a.lease_ttl))
                    t.start()
                    measures.append(t)
                elif what == "failover":
                    t0 = time.time()
                    primary.ctl("stop", "-m", "immediate")
                    replica.ctl("promote")
                    log("database failover: primary crashed, standby promoted")
                    ok = False
                    for _ in range(240):
                        if any(cli(n, "project", "list", timeout=10)[0] == 0 for n in live()):
                            ok = True
                            break
                        time.sleep(0.25)
                    t = time.time() - t0
                    report["events"].append({"event": "db-failover", "writes_back_s": round(t, 2) if ok else None})
                    log(f"database failover: requests answered again after {t:.1f} s")
            elif now >= next_kill and now < end:
                next_kill = now + a.kill_every
                v = busiest()
                if v is not None:
                    v.kill()
                    log(f"kill -9 node{v.i}")
                    takeover(v, "kill-9", now, 3 * a.lease_ttl)
                    if not v.start():
                        log(f"node{v.i} did not start again")
            time.sleep(0.5)
        for t in measures:
            t.join()
        time.sleep(31)  # the last stop or partition ends
        stop.set()
        wt.join(timeout=30)
        for p in projects[:2]:
            apply(p, a.instances)

        # Settle: every project at its count, converged.
        log("settling: waiting for every project to converge")
        goal = {p: a.instances for p in projects}
        settled = False
        for _ in range(600):
            try:
                vs = vms(triton)
            except Exception:
                time.sleep(1)
                continue
            by = {}
            for v in vs:
                by.setdefault(v["tags"].get("mariposa.project"), []).append(v)
            counts = {}
            n = live()[0]
            code, out, _ = cli(n, "-o", "json", "project", "list")
            uuid = {p["name"]: p["uuid"] for p in (json.loads(out).get("projects", []) if code == 0 else [])}
            counts = {p: len(by.get(uuid.get(p), [])) for p in projects}
            def converged(p):
                first = (cli(n, "-j", p, "status")[1].splitlines() or [""])[0]
                return first.startswith(f"project {p} at version") and first.endswith(": converged")
            if counts == goal and all(converged(p) for p in projects):
                settled = True
                break
            time.sleep(1)
        report["checks"]["converged"] = settled
        vs = vms(triton)
        aliases = [v["alias"] for v in vs]
        dup = len(aliases) - len(set(aliases))
        report["checks"]["duplicate_creates"] = dup
        known = set(uuid.values())
        report["checks"]["orphans"] = sum(1 for v in vs if v["tags"].get("mariposa.project") not in known)
        n = live()[0]
        missing_meta = []
        for p, key in acked_meta:
            if cli(n, "-j", p, "meta", "get", key)[0] != 0:
                missing_meta.append(f"{p}/{key}")
        report["checks"]["acknowledged_meta_writes"] = len(acked_meta)
        report["checks"]["missing_meta_writes"] = missing_meta
        missing_versions = []
        for p, nums in versions.items():
            code, out, _ = cli(n, "-o", "json", "-j", p, "versions")
            have = {int(v.get("number", 0)) for v in (json.loads(out).get("versions", []) if code == 0 else [])}
            missing_versions += [f"{p} v{x}" for x in nums if x not in have]
        report["checks"]["missing_versions"] = missing_versions
        ok = (settled and dup == 0 and report["checks"]["orphans"] == 0 and not missing_meta
              and not missing_versions and all(e.get("takeover_s", 0) is not None and e.get("writes_back_s", 0)
                                                 is not None for e in report["events"]))
        report["ok"] = ok
        with open(a.out, "w") as f:
            json.dump(report, f, indent=2)
        log(json.dumps(report["checks"]))
        for e in report["events"]:
            log(f"  {e}")
        log("chaos: PASSED" if ok else "chaos: FAILED")
        return 0 if ok else 1
    finally:
        for n in nodes:
            if n.proc is not None:
                n.kill(signal.SIGCONT)
                n.kill(signal.SIGKILL)
        if sim is not None:
            sim.kill()
            sim.wait()
        for pg in (primary, replica):
            if os.path.exists(pg.dir + "/data"):
                pg.ctl("stop", "-m", "immediate")
        net.down()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
