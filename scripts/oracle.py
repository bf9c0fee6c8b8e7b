#!/usr/bin/env python3
"""The truth oracle (issue 48): random histories on the real binaries, the
truth read from tritonsim only, invariants checked after every step.

    scripts/oracle.py --seed S [--minutes M | --steps N] [--bin DIR]
    scripts/oracle.py --seeds 1-20 --minutes 3        (several seeds, one after the other)
    scripts/oracle.py --seed S --replay N             (the first N steps of seed S, then stop)

A history is a sequence of steps drawn from the seed: operator actions
(apply of a random manifest within the language, scale, freeze/thaw,
rollback, meta set, reprovision with a canary, each sometimes with --wait)
and faults (kill-vm, destroy-vm, a job failure rate, API latency, 503s,
change feed drops and skipped items, kill -9 of mariposad, hand edits of
instance metadata, tags and package, of a firewall rule and of a fabric
network's resolvers). The same seed gives the same history.

After each step the oracle reads the truth from tritonsim's APIs (VMAPI,
FWAPI, NAPI, VOLAPI), never from Mariposa, and checks:

  converged   `status` exit 0 ("converged") only when tritonsim matches the
              goal: every service at its count, all running, no VM of the
              project outside the goal, no alias active twice, the firewall
              rules, the fabric network and the volume as the manifest says.
              A claim is checked once nothing was done for longer than the
              bound Mariposa states (the observation age it prints, plus
              the digest period for lost feed items, --audit), and only
              against a truth that stayed the same across the status call.
  wait        an `apply/scale --wait` that exits 0 left tritonsim at its goal
              (same rule) and its version current; one that exits 1 saying
              its version was replaced names a newer version the store holds
              (other non-zero exits are not judged).
  aliases     no alias active twice, ever (checked after every step).
  durability  every acknowledged version and meta write is there after each
              step, kill -9 included.
  events      no event twice (same kind, subject and detail in the same
              second).

A violation prints the seed, the step and the history up to it (replay it
with --replay), and the run exits 1. Exit 0: no violation.
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
import time
import urllib.error
import urllib.request

OWNER = "930896af-bf8c-48d4-885c-6573a94b1853"
NETWORK = "aaaaaaaa-0000-4000-8000-000000000001"
AUDIT_S = 2  # mariposad --audit: the bound on a change the feed lost
PROJECT = "oracle"


def log(msg):
    print(time.strftime("%H:%M:%S"), msg, flush=True)


class Violation(Exception):
    pass


class Http:
    def __init__(self, base):
        self.base = base

    def call(self, method, path, body=None, timeout=10):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                text = r.read().decode()
                return r.status, (json.loads(text) if text.strip() else None)
        except urllib.error.HTTPError as e:
            text = e.read().decode()
            try:
                return e.code, json.loads(text)
            except ValueError:
                return e.code, text

    def get(self, path):
        # The oracle's own reads may meet a failure injected for Mariposa
        # (tritonsim counts them per op): read again.
        for _ in range(20):
            code, body = self.call("GET", path)
            if code == 200:
                return body
            if code not in (500, 503):
                break
        raise RuntimeError(f"GET {path}: {code} {body}")


class Cluster:
    """tritonsim and one mariposad (SQLite) on free loopback ports."""

    def __init__(self, bindir, work):
        self.bin = bindir
        self.work = work
        self.sim = self.daemon = None
        self.addr = None

    def _wait_file(self, path, proc, what):
        for _ in range(300):
            if os.path.exists(path) and open(path).read().strip():
                return open(path).read().split("\n")[0].strip()
            if proc.poll() is not None:
                raise RuntimeError(f"{what} exited: {proc.returncode}")
            time.sleep(0.05)
        raise RuntimeError(f"{what} did not start")

    def start_sim(self):
        af = os.path.join(self.work, "sim.addr")
        self.sim = subprocess.Popen(
            [os.path.join(self.bin, "deploy/tritonsim/tritonsim"), "--listen", "127.0.0.1:0", "--addr-file", af,
             "--servers", "4", "--seed", "deploy/examples/tritonsim-seed.json", "--job-latency", "20",
             "--job-jitter", "0.5"],
            stdout=open(os.path.join(self.work, "sim.log"), "a"), stderr=subprocess.STDOUT)
        self.sim_url = self._wait_file(af, self.sim, "tritonsim")
        self.http = Http(self.sim_url)

    def start_daemon(self):
        af = os.path.join(self.work, "d.addr")
        if os.path.exists(af):
            os.unlink(af)
        self.daemon = subprocess.Popen(
            [os.path.join(self.bin, "daemon/mariposad"), "--listen", "127.0.0.1:0", "--addr-file", af,
             "--data-dir", os.path.join(self.work, "data"), "--triton", self.sim_url, "--owner", OWNER,
             "--network", NETWORK, "--resync", "300ms", "--backoff-cap", "4s", "--audit", f"{AUDIT_S}s"],
            stdout=open(os.path.join(self.work, "mariposad.log"), "a"), stderr=subprocess.STDOUT)
        self.addr = self._wait_file(af, self.daemon, "mariposad")

    def kill9(self):
        self.daemon.send_signal(signal.SIGKILL)
        self.daemon.wait()

    def stop(self):
        for p in (self.daemon, self.sim):
            if p and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()

    def cli(self, *args, timeout=90):
        r = subprocess.run([os.path.join(self.bin, "cli/mariposa"), "--addr", self.addr, "-j", PROJECT, *args],
                           capture_output=True, text=True, timeout=timeout)
        return r.returncode, r.stdout, r.stderr


# ---------------------------------------------------------------- histories

SERVICES = {
    "web": "autopilotpattern/nginx@1.4.0",
    "api": "autopilotpattern/wordpress@1.2.0",
    "db": "percona@5.7.1",
}


def random_manifest(rng):
    """A manifest within the language: 1-3 services, sometimes a fabric with
    a volume, a firewall rule, CNS names, mdata and tags."""
    names = rng.sample(sorted(SERVICES), rng.randint(1, 3))
    fabric = rng.random() < 0.5
    lines = [f"project: {PROJECT}"]
    goal = {"services": {}, "fabric": None, "volume": False, "rules": 0}
    if rng.random() < 0.5:
        lines.append("cns: shop")
    if fabric:
        resolvers = rng.choice(["8.8.8.8", "9.9.9.9"])
        lines += ["fabric:", "  vlan: 70", "  networks:",
                  f"    private: {{subnet: 10.70.0.0/24, gateway: 10.70.0.1, resolvers: [{resolvers}]}}"]
        goal["fabric"] = resolvers
        if rng.random() < 0.6:
            lines += ["volumes:", "  data: {size: 10g, network: private}"]
            goal["volume"] = True
    if "web" in names and rng.random() < 0.6:
        port = rng.choice([80, 8080])
        lines += ["firewall:", f"  web-in: {{from: any, to: web, ports: [{port}]}}"]
        goal["rules"] = 1
    lines.append("services:")
    for n in sorted(names):
        count = rng.randint(0, 3)
        goal["services"][n] = count
        lines += [f"  {n}:", f"    image: {SERVICES[n]}", f"    count: {count}", "    start: {window: 1s}"]
        if n == "db":
            lines.append("    compute_type: lx")
        nets = ["external"] + (["private"] if fabric else [])
        lines.append(f"    networks: [{', '.join(nets)}]")
        if rng.random() < 0.5:
            lines.append(f"    mdata: {{greeting: \"{rng.choice(['hi', 'hello'])} {{{{ .meta.who }}}}\"}}")
        if rng.random() < 0.4:
            lines.append(f"    tags: {{role: {n}}}")
        if n == "db" and goal["volume"] and rng.random() < 0.7:
            lines.append("    volumes: [data:/var/lib/mysql]")
    text = "\n".join(lines) + "\n"
    if "{{ .meta.who }}" in text:  # its default; `meta set who` overrides it
        text = text.replace("services:\n", "meta:\n  who: world\nservices:\n", 1)
    return text, goal


ACTIONS = ["apply", "apply", "apply_wait", "scale", "scale_wait", "freeze_thaw", "rollback", "meta",
           "reprovision", "kill_vm", "destroy_vm", "job_failures", "latency", "fail503", "feed_drop",
           "feed_skip", "kill9", "edit_metadata", "edit_tags", "edit_package", "edit_rule", "edit_resolvers",
           "settle", "settle", "settle"]


class Oracle:
    def __init__(self, seed, bindir, work, steps, deadline, replay):
        self.seed = seed
        self.rng = random.Random(seed)
        self.c = Cluster(bindir, work)
        self.steps, self.deadline, self.replay = steps, deadline, replay
        self.history = []
        self.goal = None          # of the version in force, as the oracle applied it
        self.versions = []        # (number, goal) acknowledged
        self.meta = {}            # acknowledged meta writes
        self.last_action = time.time()
        self.frozen = False
        self.faults = 0
        self.violations = []
        self.claims_checked = 0

    # ---- truth, from tritonsim only

    def truth(self):
        h = self.c.http
        vms = h.get(f"/vms?owner_uuid={OWNER}&tag.mariposa.project=*&state=active")
        project_uuid = self.project_uuid()
        mine = [v for v in vms if v["tags"].get("mariposa.project") == project_uuid]
        t = {"services": {}, "states": {}, "aliases": [], "preserved": 0}
        for v in mine:
            if "mariposa.preserved" in v["tags"]:
                t["preserved"] += 1
                continue
            s = v["tags"].get("mariposa.service", "?")
            if v["tags"].get("mariposa.run"):
                continue
            t["services"][s] = t["services"].get(s, 0) + 1
            t["states"].setdefault(s, []).append(v["state"])
            t["aliases"].append(v["alias"])
        rules = h.get(f"/rules?owner_uuid={OWNER}")
        t["rules"] = sorted(r["rule"] for r in rules if project_uuid and project_uuid in (r.get("description") or ""))
        nets = h.get(f"/networks?fabric=true&provisionable_by={OWNER}")
        t["fabric"] = None
        for n in nets:
            if n.get("name") == f"{PROJECT}-private":
                t["fabric"] = ",".join(n.get("resolvers") or [])
        vols = h.get(f"/volumes?owner_uuid={OWNER}")
        t["volume"] = any(v["name"] == f"{PROJECT}.data" and v["state"] == "ready" for v in vols)
        return t

    def newest_version(self):
        code, out, err = self.c.cli("-o", "json", "versions")
        if code != 0:
            self.violation(f"`versions` failed after an acknowledged write: {err.strip()}")
        return max(int(v["number"]) for v in json.loads(out)["versions"])

    def project_uuid(self):
        if getattr(self, "_puuid", None):
            return self._puuid
        code, out, _ = self.c.cli("-o", "json", "project", "get", PROJECT)
        if code == 0:
            try:
                self._puuid = json.loads(out)["project"]["uuid"]
            except (ValueError, KeyError):
                self._puuid = None
        return getattr(self, "_puuid", None)

    def differs(self, t):
        """What differs between the truth and the goal ("" when nothing)."""
        g = self.goal
        if g is None:
            return ""
        out = []
        for s, n in g["services"].items():
            if t["services"].get(s, 0) != n:
                out.append(f"{s}: {t['services'].get(s, 0)} active, goal {n}")
            bad = [x for x in t["states"].get(s, []) if x != "running"]
            if bad:
                out.append(f"{s}: not running: {bad}")
        for s in t["services"]:
            if s not in g["services"]:
                out.append(f"{s}: {t['services'][s]} active outside the goal")
        if len(set(t["aliases"])) != len(t["aliases"]):
            out.append(f"an alias active twice: {sorted(t['aliases'])}")
        if len(t["rules"]) != g["rules"] or any("PORT 22" in r for r in t["rules"]):
            out.append(f"firewall rules {t['rules']}, goal {g['rules']}")
        if (g["fabric"] or None) != (t["fabric"] if g["fabric"] else None):
            out.append(f"fabric network resolvers {t['fabric']}, goal {g['fabric']}")
        if g["volume"] and not t["volume"]:
            out.append("volume data is not ready")
        return "; ".join(out)

    # ---- invariants

    def violation(self, what):
        msg = f"seed {self.seed}, step {len(self.history)} ({self.history[-1] if self.history else '-'}): {what}"
        log("VIOLATION " + msg)
        self.violations.append(msg)
        raise Violation(msg)

    def check(self, step):
        t0 = self.truth()
        if len(set(t0["aliases"])) != len(t0["aliases"]):
            self.violation(f"an alias active twice: {sorted(t0['aliases'])}")
        code, out, err = self.c.cli("status")
        t1 = self.truth()
        if code == 0:
            m = re.search(r"actual state as read (\S+) ago", out)
            age = parse_age(m.group(1)) if m else 0.0
            quiet = time.time() - self.last_action
            if quiet > age + AUDIT_S + 1.5 and t0 == t1:
                self.claims_checked += 1
                d = self.differs(t1)
                if d:
                    self.violation(f"`status` says converged (state as read {age}s ago, nothing done for "
                                   f"{quiet:.1f}s) while tritonsim differs: {d}\n{out}")
        elif code not in (3, 4):
            self.violation(f"`status` exit {code}: {err.strip()}")
        self.durability()
        self.events()

    def durability(self):
        code, out, err = self.c.cli("-o", "json", "versions")
        if code != 0:
            self.violation(f"`versions` failed: {err.strip()}")
        have = set()
        for v in json.loads(out).get("versions", []):
            have.add(int(v.get("number", 0)))
        for n, _ in self.versions:
            if n not in have:
                self.violation(f"acknowledged version {n} is gone (have {sorted(have)})")
        if self.meta:
            code, out, err = self.c.cli("-o", "json", "meta", "list")
            got = {}
            for e in json.loads(out).get("entries", []) if code == 0 else []:
                got[e.get("key")] = e.get("value")
            for k, v in self.meta.items():
                if got.get(k) != v:
                    self.violation(f"acknowledged meta {k}={v} reads {got.get(k)!r}")

    def events(self):
        code, out, _ = self.c.cli("-o", "json", "events", "-n", "300")
        if code != 0:
            return
        # The same event of an instance twice in a row within a second, with
        # nothing about it between (a second attempt after a failure has
        # the failure between).
        last = {}
        for e in json.loads(out).get("events", []):
            kind = e.get("kind", "")
            subject = e.get("subject")
            key = (kind, e.get("detail"), str(e.get("time", ""))[:19])
            if kind.startswith("instance.") and last.get(subject, (None,))[0] == key:
                self.violation(f"event twice: {kind} {subject} {key} (indexes {last[subject][1]} and "
                               f"{e.get('index')})")
            last[subject] = (key, e.get("index"))

    # ---- steps

    def act(self, kind):
        rng, c = self.rng, self.c
        h = c.http
        done = kind
        if kind in ("apply", "apply_wait"):
            text, goal = random_manifest(rng)
            path = os.path.join(c.work, "m.yaml")
            open(path, "w").write(text)
            args = ["apply", "-f", path, "--yes", "--thaw"]
            if kind == "apply_wait":
                args += ["--wait", "--timeout", "60s"]
            code, out, err = c.cli(*args)
            done = f"{kind} {goal}"
            if "nothing was changed" in err or (code != 0 and "applied version" not in out):
                if code == 0:
                    pass
                return done + f" -> refused/no-op (exit {code})"
            if "applied version" in out:
                self.versions.append((self.newest_version(), goal))
            self.goal = goal
            self.frozen = False
            if kind == "apply_wait" and code == 0 and "converged after" in out:
                self.after_wait(done, out)
            elif kind == "apply_wait" and code == 1:
                self.after_failed_wait(done, out, err)
            return done + f" -> exit {code}"
        if kind in ("scale", "scale_wait") and self.goal and self.goal["services"]:
            s = rng.choice(sorted(self.goal["services"]))
            n = rng.randint(0, 3)
            args = ["scale", f"{s}={n}", "--thaw"]
            if kind == "scale_wait":
                args += ["--wait", "--timeout", "60s"]
            code, out, err = c.cli(*args)
            if "applied version" in out:
                self.goal = dict(self.goal, services=dict(self.goal["services"], **{s: n}))
                self.versions.append((self.newest_version(), self.goal))
            if kind == "scale_wait" and code == 0 and "converged after" in out and s in out.split("converged after")[0]:
                # Only the scaled service was waited for: check it alone.
                t = self.truth()
                if t["services"].get(s, 0) != n or any(x != "running" for x in t["states"].get(s, [])):
                    self.violation(f"`scale {s}={n} --wait` exit 0 but tritonsim has {t['services'].get(s, 0)} "
                                   f"({t['states'].get(s)})")
            elif kind == "scale_wait" and code == 0 and "converged after" in out:
                self.after_wait(f"scale {s}={n}", out)
            elif kind == "scale_wait" and code == 1:
                self.after_failed_wait(f"scale {s}={n}", out, err)
            return f"{kind} {s}={n} -> exit {code}"
        if kind == "freeze_thaw":
            if self.frozen:
                code, _, _ = c.cli("thaw")
                self.frozen = False
                return f"thaw -> exit {code}"
            code, _, _ = c.cli("freeze", "--reason", "oracle")
            self.frozen = code == 0
            return f"freeze -> exit {code}"
        if kind == "rollback" and len(self.versions) >= 2:
            n, goal = rng.choice(self.versions[:-1])
            code, out, err = c.cli("rollback", str(n), "--yes", "--thaw")
            if code == 0:
                self.goal = goal
                self.versions.append((self.newest_version(), goal))
            return f"rollback {n} -> exit {code}"
        if kind == "meta":
            v = rng.choice(["world", "moon", "mars"])
            code, _, _ = c.cli("meta", "set", "who", v)
            if code == 0:
                self.meta["who"] = v
            return f"meta set who={v} -> exit {code}"
        if kind == "reprovision" and self.goal and self.goal["services"]:
            code, _, _ = c.cli("reprovision", "--canary", str(rng.randint(0, 2)), "--thaw")
            return f"reprovision -> exit {code}"
        if kind in ("kill_vm", "destroy_vm", "edit_metadata", "edit_tags", "edit_package"):
            t = h.get(f"/vms?owner_uuid={OWNER}&tag.mariposa.project=*&state=running")
            if not t:
                return kind + " (no VM)"
            vm = rng.choice(sorted(t, key=lambda v: v["uuid"]))
            u = vm["uuid"]
            self.faults += 1
            if kind == "kill_vm":
                h.call("POST", f"/_sim/vms/{u}/kill")
            elif kind == "destroy_vm":
                h.call("POST", f"/_sim/vms/{u}/destroy")
            elif kind == "edit_metadata":
                h.call("POST", f"/vms/{u}?action=update", {"customer_metadata": {"greeting": "by hand"}})
            elif kind == "edit_tags":
                h.call("POST", f"/vms/{u}/tags", {"role": "by-hand"})
            else:
                h.call("POST", f"/vms/{u}?action=update", {"ram": 3072})
            return f"{kind} {vm['alias']}"
        if kind == "job_failures":
            rate = rng.choice([0, 0, 0.2])
            h.call("POST", "/_sim/knobs", {"job_failure_rate": rate})
            self.faults += rate > 0
            return f"job failure rate {rate}"
        if kind == "latency":
            ms = rng.choice([0, 0, 100])
            h.call("POST", "/_sim/knobs", {"api_latency_ms": ms})
            return f"api latency {ms}ms"
        if kind == "fail503":
            op = rng.choice(["ListVms", "CreateVm", "VmAction", "GetJob", "UpdateRule", "ListVolumes"])
            n = rng.randint(1, 5)
            h.call("POST", "/_sim/fail", {"op": op, "count": n, "status": 503})
            self.faults += 1
            return f"fail {op} x{n} 503"
        if kind == "feed_drop":
            h.call("POST", "/_sim/changefeed/drop")
            self.faults += 1
            return "changefeed drop"
        if kind == "feed_skip":
            n = rng.randint(1, 3)
            h.call("POST", f"/_sim/changefeed/skip?n={n}")
            self.faults += 1
            return f"changefeed skip {n}"
        if kind == "kill9":
            c.kill9()
            c.start_daemon()
            self.faults += 1
            return "kill -9 mariposad, restarted"
        if kind == "edit_rule":
            for r in h.get(f"/rules?owner_uuid={OWNER}"):
                if self.project_uuid() and self.project_uuid() in (r.get("description") or ""):
                    r2 = dict(r, rule="FROM any TO all vms ALLOW tcp PORT 22")
                    h.call("PUT", f"/rules/{r['uuid']}", r2)
                    self.faults += 1
                    return "edit a firewall rule (PORT 22 to all vms)"
            return "edit_rule (none)"
        if kind == "edit_resolvers":
            for n in h.get(f"/networks?fabric=true&provisionable_by={OWNER}"):
                if n.get("name") == f"{PROJECT}-private":
                    h.call("PUT", f"/networks/{n['uuid']}", {"resolvers": ["1.1.1.1"]})
                    self.faults += 1
                    return "edit the fabric network's resolvers"
            return "edit_resolvers (none)"
        if kind == "settle":
            # Faults off; wait for the project to converge (or time out): a
            # converged claim is then checked against a quiet truth.
            h.call("POST", "/_sim/knobs", {"job_failure_rate": 0, "api_latency_ms": 0})
            if self.frozen:
                c.cli("thaw")
                self.frozen = False
            end = time.time() + 40
            while time.time() < end:
                code, _, _ = c.cli("status")
                if code == 0:
                    break
                time.sleep(0.5)
            time.sleep(AUDIT_S + 2)
            return f"settle (status exit {code})"
        return kind + " (skipped)"

    def after_failed_wait(self, what, out, err):
        """A --wait that exited 1 saying its version was replaced: the
        store must hold a newer version (never a replacement made up)."""
        m = re.search(r"version (\d+) did not converge: version (\d+) replaced it", err)
        if not m:
            return
        mine, newer = int(m.group(1)), int(m.group(2))
        if newer <= mine or self.newest_version() < newer:
            self.violation(f"`{what} --wait` exit 1 says version {newer} replaced version {mine}, but the newest "
                           f"version is {self.newest_version()}\n{out}{err}")

    def after_wait(self, what, out=""):
        """A --wait that said converged: tritonsim must be at the goal."""
        t = self.truth()
        d = self.differs(t)
        if d:
            time.sleep(0.3)
            t2 = self.truth()
            if t2 == t:
                self.violation(f"`{what} --wait` exit 0 (converged) while tritonsim differs: {d}\n{out}\n"
                               f"{self.c.cli('status')[1]}")

    def run(self):
        os.makedirs(self.c.work, exist_ok=True)
        self.c.start_sim()
        self.c.start_daemon()
        try:
            n = 0
            while True:
                if self.replay is not None and n >= self.replay:
                    break
                if self.replay is None and (n >= self.steps or time.time() >= self.deadline):
                    break
                kind = self.rng.choice(ACTIONS) if n > 0 else "apply_wait"
                what = self.act(kind)
                self.history.append(what)
                if not kind.startswith(("kill_vm", "destroy", "edit", "fail", "feed", "job", "latency", "settle")):
                    pass
                self.last_action = time.time() if kind != "settle" else self.last_action
                log(f"[{self.seed}:{n}] {what}")
                time.sleep(self.rng.uniform(0.1, 1.0))
                self.check(kind)
                n += 1
        except Violation:
            pass
        finally:
            self.c.stop()
        return n


def parse_age(s):
    m = re.match(r"([\d.]+)(ms|s|m)", s)
    if not m:
        return 0.0
    v = float(m.group(1))
    return v / 1000 if m.group(2) == "ms" else v * 60 if m.group(2) == "m" else v


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--seeds", help="a range A-B: each seed in turn, the time split between them")
    ap.add_argument("--minutes", type=float, default=1.0)
    ap.add_argument("--steps", type=int, default=10**9)
    ap.add_argument("--replay", type=int, help="run only the first N steps of --seed")
    ap.add_argument("--bin", default="bazel-bin")
    ap.add_argument("--keep", action="store_true", help="keep each run's directory (logs, store)")
    args = ap.parse_args()
    if args.seeds:
        a, b = (int(x) for x in args.seeds.split("-"))
        seeds = list(range(a, b + 1))
    else:
        seeds = [args.seed if args.seed is not None else 1]
    per_seed = args.minutes * 60 / len(seeds)
    failed = []
    totals = {"steps": 0, "faults": 0, "claims": 0}
    for s in seeds:
        work = tempfile.mkdtemp(prefix=f"oracle-{s}-")
        o = Oracle(s, args.bin, work, args.steps, time.time() + per_seed, args.replay)
        n = o.run()
        totals["steps"] += n
        totals["faults"] += o.faults
        totals["claims"] += o.claims_checked
        if o.violations:
            failed.append(s)
            print(f"\nseed {s}: violation at step {len(o.history)}; history (replay: scripts/oracle.py --seed {s} "
                  f"--replay {len(o.history)}):")
            for i, h in enumerate(o.history):
                print(f"  {i}: {h}")
            print(f"  logs: {work}")
        else:
            log(f"seed {s}: {n} steps, {o.faults} faults, {o.claims_checked} converged claims checked, no violation")
            if not args.keep:
                shutil.rmtree(work, ignore_errors=True)
    log(f"oracle: {len(seeds)} seeds, {totals['steps']} steps, {totals['faults']} faults, "
        f"{totals['claims']} converged claims checked; violations in seeds {failed or 'none'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
