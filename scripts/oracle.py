#!/usr/bin/env python3
"""The truth oracle (issue 48): random histories on the real binaries, the
truth read from tritonsim only, invariants checked after every step.

    scripts/oracle.py --seed S [--minutes M | --steps N] [--bin DIR]
    scripts/oracle.py --seeds 1-20 --minutes 3        (several seeds, one after the other)
    scripts/oracle.py --seed S --replay N             (the first N steps of seed S, then stop)

A history is a sequence of steps drawn from the seed: operator actions
(apply of a random manifest within the language, scale, freeze/thaw,
rollback, meta set, reprovision with a canary, a run of an event service,
queue terminate, each that can wait sometimes with --wait) and faults
(kill-vm, destroy-vm, vm-health, a job failure rate, API latency, 503s,
change feed drops and skipped items, kill -9 of mariposad, hand edits of
instance metadata, tags and package, of a firewall rule and of a fabric
network's resolvers). The same seed gives the same history.

After each step the oracle reads the truth from tritonsim's APIs (VMAPI,
FWAPI, NAPI, VOLAPI) and from each checked instance's own port, never from
Mariposa, and checks:

  converged   `status` exit 0, the HTTP API's state (the console's data) and
              /metrics (every service's verdict) say "converged" only when
              tritonsim matches the goal: every service at its count, all
              running, every checked instance healthy, no VM of the project
              outside the goal, no alias active twice, the firewall rules,
              the fabric network and the volume as the manifest says. A
              claim is checked once nothing was done for longer than the
              bound Mariposa states (the observation age, plus the digest
              period for lost feed items, --audit), and only against a truth
              that stayed the same across the reading.
  wait        every --wait exit: 0 only with tritonsim at the goal of what it
              waited for; 1 only with a reason (its version replaced by one
              the store holds, the deadline, a service paused, failed or
              degraded — "older spec, no rollout" checked against the VMs'
              mariposa.version); `run --wait` against the exit statuses
              tritonsim recorded; any other exit code is a violation.
  aliases     no alias active twice, ever (checked after every step).
  durability  every acknowledged version and meta write is there after each
              step, kill -9 included.
  events      no instance event twice in a row within a second.

A violation prints the seed, the invariant, the history, then shrinks it
(ddmin, --shrink-minutes) and prints the `--plan` that replays the shortest
history found; the run exits 1. Exit 0: no violation. --self-test checks the
oracle itself.
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
             "--job-jitter", "0.5", "--listen-vms"],
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
             "--network", NETWORK, "--resync", "300ms", "--backoff-cap", "4s", "--audit", f"{AUDIT_S}s",
             "--embedded-health", "--health-loopback", "--metrics-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0"],
            stdout=open(os.path.join(self.work, "mariposad.log"), "a"), stderr=subprocess.STDOUT)
        self.addr = self._wait_file(af, self.daemon, "mariposad")
        # --addr-file: gRPC, then /metrics, then the HTTP API (the console's).
        for _ in range(100):
            lines = [x.strip() for x in open(af).read().split("\n") if x.strip()]
            if len(lines) >= 3:
                break
            time.sleep(0.05)
        self.metrics_url = "http://" + lines[1]
        self.http_url = lines[2] if lines[2].startswith("http") else "http://" + lines[2]

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


def first_error(err):
    """The first line of a command's error, for the history ("" if none)."""
    line = next((x for x in err.splitlines() if x.strip()), "")
    return f" ({line[:160]})" if line else ""


def probe_health(vm):
    """What the instance's check would see, asked of the instance itself
    (tritonsim --listen-vms: its primary nic a.b.c.d answers on 127.b.c.d):
    "healthy" (200), "answers N", "refused" or "no answer"."""
    ip = next((n.get("ip") for n in vm.get("nics", []) if n.get("primary")), None)
    if not ip:
        return "no primary nic"
    url = "http://127." + ".".join(ip.split(".")[1:]) + ":8080/healthz"
    try:
        with urllib.request.urlopen(url, timeout=0.5) as r:
            return "healthy" if r.status == 200 else f"answers {r.status}"
    except urllib.error.HTTPError as e:
        return f"answers {e.code}"
    except (urllib.error.URLError, OSError) as e:
        return "no answer" if "timed out" in str(e) else "refused"


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
    goal = {"services": {}, "fabric": None, "volume": False, "rules": 0, "checks": [], "job": None}
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
        if n != "db" and rng.random() < 0.5:
            # tritonsim --listen-vms: the instance answers on 8080 as its
            # health is set (`vm-health`); the embedded agent checks it.
            lines += ["    ports: [8080]", "    healthchecks:",
                      "      http: {type: http, port: 8080, path: /healthz, interval: 200ms, timeout: 150ms, retries: 2}"]
            goal["checks"].append(n)
    if rng.random() < 0.4:
        # An event service: `mariposa run job` makes its instances, which
        # exit (tritonsim:run-for) with the status the manifest gives them.
        count, status = rng.randint(1, 2), rng.choice(["0", "0", "3"])
        lines += ["  job:", "    service_type: event", "    image: autopilotpattern/wordpress@1.2.0",
                  f"    count: {count}", "    networks: [external]",
                  f"    mdata: {{\"tritonsim:run-for\": 500ms, \"tritonsim:exit-status\": \"{status}\"}}",
                  "    run: {history: {succeeded: 1, failed: 1}}"]
        goal["job"] = count
    text = "\n".join(lines) + "\n"
    if "{{ .meta.who }}" in text:  # its default; `meta set who` overrides it
        text = text.replace("services:\n", "meta:\n  who: world\nservices:\n", 1)
    return text, goal


ACTIONS = ["apply", "apply", "apply_wait", "scale", "scale_wait", "freeze_thaw", "rollback", "meta",
           "reprovision", "run", "cancel", "kill_vm", "destroy_vm", "vm_unhealthy", "job_failures", "latency",
           "fail503", "feed_drop", "feed_skip", "kill9", "edit_metadata", "edit_tags", "edit_package", "edit_rule",
           "edit_resolvers", "settle", "settle", "settle"]


def plan_of(seed, n):
    """The first n steps of a seed's history: (index, kind). Step i's own
    choices (a manifest, a VM, a count) come from Random((seed, i)), so a
    step means the same in any sub-history (shrinking keeps indexes)."""
    rng = random.Random(seed)
    return [(i, "apply_wait" if i == 0 else rng.choice(ACTIONS)) for i in range(n)]


class Oracle:
    def __init__(self, seed, bindir, work, steps, deadline):
        self.seed = seed
        self.rng = random.Random(seed)  # draws each step's kind only
        self.srng = random.Random(seed)  # the current step's own choices
        self.c = Cluster(bindir, work)
        self.steps, self.deadline = steps, deadline
        self.history = []
        self.goal = None          # of the version in force, as the oracle applied it
        self.versions = []        # (number, goal) acknowledged
        self.meta = {}            # acknowledged meta writes
        self.last_action = time.time()
        self.frozen = False
        self.faults = 0
        self.violations = []
        self.claims_checked = 0
        self.claims_by = {}  # surface -> converged claims checked

    # ---- truth, from tritonsim only

    def truth(self):
        h = self.c.http
        vms = h.get(f"/vms?owner_uuid={OWNER}&tag.mariposa.project=*&state=active")
        project_uuid = self.project_uuid()
        mine = [v for v in vms if v["tags"].get("mariposa.project") == project_uuid]
        t = {"services": {}, "states": {}, "aliases": [], "preserved": 0, "unhealthy": {}}
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
            if self.goal and s in self.goal.get("checks", []) and v["state"] == "running":
                health = probe_health(v)
                if health != "healthy":
                    t["unhealthy"].setdefault(s, []).append(f"{v['alias']} ({health})")
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
            self.violation(f"`versions` failed after an acknowledged write: {err.strip()}", "durability")
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
        for s in g["services"]:
            out += self.service_differs(t, s)
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

    def service_differs(self, t, s):
        """What differs for goal service `s`: its count, instances not
        running, checked instances not healthy."""
        n = self.goal["services"][s]
        out = []
        if t["services"].get(s, 0) != n:
            out.append(f"{s}: {t['services'].get(s, 0)} active, goal {n}")
        bad = [x for x in t["states"].get(s, []) if x != "running"]
        if bad:
            out.append(f"{s}: not running: {bad}")
        if t["unhealthy"].get(s):
            out.append(f"{s}: instances whose health check fails: {sorted(t['unhealthy'][s])}")
        return out

    def service_vms(self, state, svc=None):
        """The project's instances of its services (not runs' nor preserved
        ones) in `state`, as tritonsim lists them."""
        tag = f"tag.mariposa.service={svc}" if svc else "tag.mariposa.project=*"
        return [v for v in self.c.http.get(f"/vms?owner_uuid={OWNER}&{tag}&state={state}")
                if v["tags"].get("mariposa.project") == self.project_uuid() and not v["tags"].get("mariposa.run")
                and "mariposa.preserved" not in v["tags"]]

    # ---- invariants

    def violation(self, what, kind):
        """Stop the history: `kind` names the invariant broken (a shrunk
        history must break the same one)."""
        last = self.history[-1][2] if self.history else "-"
        msg = f"seed {self.seed}, step {len(self.history)} ({last}): {what}"
        log("VIOLATION " + msg)
        self.violations.append(msg)
        self.violation_kind = kind
        raise Violation(msg)

    def check(self, step):
        t0 = self.truth()
        if len(set(t0["aliases"])) != len(t0["aliases"]):
            self.violation(f"an alias active twice: {sorted(t0['aliases'])}", "alias")
        # What each surface says, read between two readings of the truth:
        # `status` (the CLI), the HTTP API's state (the console's data) and
        # the /metrics verdicts (dashboards and alerts).
        code, out, err = self.c.cli("status")
        state = self.http_state()
        verdicts = self.metric_verdicts()
        t1 = self.truth()
        if code == 1 and not self.versions and "no project" in err:
            return  # nothing applied yet (a shrunk history may start without an apply)
        if code not in (0, 3, 4):
            self.violation(f"`status` exit {code}: {err.strip()}", "status-exit")
        m = re.search(r"actual state as read (\S+) ago", out)
        age = parse_age(m.group(1)) if m else 0.0
        self.claim("`status` says converged", code == 0, age, t0, t1, out)
        if state is not None:
            s_age = time.time() - parse_stamp(state.get("observedAt") or state.get("observed_at") or "")
            self.claim("the HTTP API's state (the console's data) says converged", bool(state.get("converged")),
                       s_age, t0, t1, json.dumps(state)[:2000])
        if verdicts:
            # Every service's verdict is converged in /metrics: the same
            # promise, made by the sync whose observation `status` dates.
            ok = all(v == "converged" for v in verdicts.values())
            self.claim("/metrics says every service converged", ok, age, t0, t1, str(verdicts))
        self.durability()
        self.events()

    def claim(self, who, converged, age, t0, t1, shown):
        """A surface said converged: tritonsim must be at the goal, once
        nothing was done for longer than the age it states plus the digest
        period, and the truth stayed the same across the reading."""
        if not converged:
            return
        quiet = time.time() - self.last_action
        if quiet > age + AUDIT_S + 1.5 and t0 == t1:
            self.claims_checked += 1
            self.claims_by[who.split(" says")[0]] = self.claims_by.get(who.split(" says")[0], 0) + 1
            d = self.differs(t1)
            if d:
                self.violation(f"{who} (state as read {age:.1f}s ago, nothing done for {quiet:.1f}s) while "
                               f"tritonsim differs: {d}\n{shown}", "converged")

    def http_state(self):
        try:
            with urllib.request.urlopen(f"{self.c.http_url}/v1/projects/{PROJECT}/state?omit_instances=true",
                                        timeout=10) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None  # no project yet
            self.violation(f"the HTTP API's state answered {e.code}: {e.read()[:300]!r}", "http-state")
        except (urllib.error.URLError, OSError, ValueError) as e:
            self.violation(f"the HTTP API's state could not be read: {e}", "http-state")

    def metric_verdicts(self):
        """service -> verdict, from mariposa_service_verdict{project=oracle}."""
        try:
            with urllib.request.urlopen(f"{self.c.metrics_url}/metrics", timeout=10) as r:
                text = r.read().decode()
        except (urllib.error.URLError, OSError) as e:
            self.violation(f"/metrics could not be read: {e}", "metrics")
        out = {}
        for m in re.finditer(r'^mariposa_service_verdict\{([^}]*)\} (\S+)$', text, re.M):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
            if labels.get("project") == PROJECT and float(m.group(2)) == 1:
                out[labels.get("service")] = labels.get("verdict")
        return out

    def durability(self):
        if not self.versions and not self.meta:
            return
        code, out, err = self.c.cli("-o", "json", "versions")
        if code != 0:
            self.violation(f"`versions` failed: {err.strip()}", "durability")
        have = set()
        for v in json.loads(out).get("versions", []):
            have.add(int(v.get("number", 0)))
        for n, _ in self.versions:
            if n not in have:
                self.violation(f"acknowledged version {n} is gone (have {sorted(have)})", "durability")
        if self.meta:
            code, out, err = self.c.cli("-o", "json", "meta", "list")
            got = {}
            for e in json.loads(out).get("entries", []) if code == 0 else []:
                got[e.get("key")] = e.get("value")
            for k, v in self.meta.items():
                if got.get(k) != v:
                    self.violation(f"acknowledged meta {k}={v} reads {got.get(k)!r}", "durability")

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
                               f"{e.get('index')})", "event-twice")
            last[subject] = (key, e.get("index"))

    # ---- steps

    def act(self, kind):
        rng, c = self.srng, self.c
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
            if kind == "apply_wait":
                self.judge_wait(done, code, out, err)
            return done + f" -> exit {code}" + first_error(err)
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
            if kind == "scale_wait" and ("applied version" in out or code == 0):
                self.judge_wait(f"scale {s}={n}", code, out, err)
            return f"{kind} {s}={n} -> exit {code}" + first_error(err)
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
            wait = rng.random() < 0.5
            code, out, err = c.cli("rollback", str(n), "--yes", "--thaw",
                                   *(["--wait", "--timeout", "60s"] if wait else []))
            # Stored when the store holds a newer version (a --wait may still
            # exit 1 after storing it).
            newest = self.newest_version()
            if newest > self.versions[-1][0]:
                self.goal = goal
                self.versions.append((newest, goal))
                if wait:
                    self.judge_wait(f"rollback {n}", code, out, err)
            return f"rollback {n}{' --wait' if wait else ''} -> exit {code}" + first_error(err)
        if kind == "meta":
            v = rng.choice(["world", "moon", "mars"])
            code, _, _ = c.cli("meta", "set", "who", v)
            if code == 0:
                self.meta["who"] = v
            return f"meta set who={v} -> exit {code}"
        if kind == "reprovision" and self.goal and self.goal["services"]:
            wait = rng.random() < 0.5
            code, out, err = c.cli("reprovision", "--canary", str(rng.randint(0, 2)), "--thaw",
                                   *(["--wait", "--timeout", "60s"] if wait else []))
            if wait and "task" in out:
                self.judge_wait("reprovision", code, out, err)
            return f"reprovision{' --wait' if wait else ''} -> exit {code}" + first_error(err)
        if kind == "run" and self.goal and self.goal.get("job"):
            code, out, err = c.cli("run", "job", "--wait", "--timeout", "60s", "--thaw")
            self.judge_run(code, out, err)
            return f"run job --wait -> exit {code}" + first_error(err)
        if kind == "cancel":
            code, out, _ = c.cli("-o", "json", "queue", "list")
            tasks = [t for t in (json.loads(out).get("tasks", []) if code == 0 else [])
                     if t.get("state") in ("queued", "active")]
            if not tasks:
                return "cancel (no task)"
            t = rng.choice(sorted(tasks, key=lambda x: x["uuid"]))
            code, _, err = c.cli("queue", "terminate", t["uuid"], "--reason", "oracle")
            # A terminate freezes the task's scope (RFD 36) until a thaw.
            self.frozen = self.frozen or code == 0
            return f"cancel {t.get('kind')} task -> exit {code}"
        if kind == "vm_unhealthy" and self.goal and self.goal.get("checks"):
            vms = [v for v in self.service_vms("running") if v["tags"].get("mariposa.service") in self.goal["checks"]]
            if not vms:
                return kind + " (no checked VM)"
            vm = rng.choice(sorted(vms, key=lambda v: v["uuid"]))
            how = rng.choice(["unhealthy", "unhealthy", "refuse"])
            h.call("POST", f"/_sim/vms/{vm['uuid']}/health/{how}")
            self.faults += 1
            return f"vm-health {vm['alias']} {how}"
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
        if kind == "plant":
            # --self-test only: the oracle's own goal is made wrong (one more
            # instance than applied), so a true `converged` must be flagged.
            if self.goal and self.goal["services"]:
                svc = sorted(self.goal["services"])[0]
                self.goal = dict(self.goal, services=dict(self.goal["services"], **{svc: self.goal["services"][svc] + 1}))
                return f"plant: the oracle expects one more {svc} than applied"
            return "plant (no goal)"
        if kind == "settle":
            # Faults off; wait for the project to converge (or time out): a
            # converged claim is then checked against a quiet truth.
            h.call("POST", "/_sim/knobs", {"job_failure_rate": 0, "api_latency_ms": 0})
            if self.frozen:
                c.cli("thaw")
                self.frozen = False
            end = time.time() + (40 if self.versions else 0)  # nothing applied: nothing to wait for
            code = None
            while time.time() < end:
                code, _, _ = c.cli("status")
                if code == 0:
                    break
                time.sleep(0.5)
            time.sleep(AUDIT_S + 2)
            return f"settle (status exit {code})"
        return kind + " (skipped)"

    def judge_wait(self, what, code, out, err):
        """Every --wait exit code must match what happened (docs/cli.md):
        0 only at the goal; 1 with a reason that holds; nothing else."""
        if code == 0:
            if "converged after" not in out:
                if "no changes" in out or "nothing was changed" in out + err:
                    return
                self.violation(f"`{what} --wait` exit 0 without saying converged\n{out}{err}", "wait-exit")
            head = out.split("converged after")[0].split("\n")[-1].strip()
            if head:
                # "web, db converged after Ns (the rest … is not)": only the
                # services the command changed were waited for.
                self.after_scoped_wait(what, [x.strip() for x in head.split(",")], out)
                return
            self.after_wait(what, out)
            return
        if code != 1:
            self.violation(f"`{what} --wait` exit {code} (only 0 and 1 are its answers)\n{out}{err}", "wait-exit")
        m = re.search(r"version (\d+) did not converge: version (\d+) replaced it", err)
        if m:
            mine, newer = int(m.group(1)), int(m.group(2))
            if newer <= mine or self.newest_version() < newer:
                self.violation(f"`{what} --wait` exit 1 says version {newer} replaced version {mine}, but the newest "
                               f"version is {self.newest_version()}\n{out}{err}", "wait-replaced")
            return
        if "not converged after" in err or "did not answer" in err:
            return  # the deadline passed: a true answer whatever the state
        stuck = re.findall(r"^mariposa: (\S+) is (\w+): (.*)$", err, re.M)
        if not stuck:
            self.violation(f"`{what} --wait` exit 1 without a reason\n{out}{err}", "wait-exit")
        for svc, verdict, why in stuck:
            if verdict not in ("paused", "failed", "degraded", "progressing"):
                self.violation(f"`{what} --wait` exit 1: {svc} is {verdict}?\n{err}", "wait-exit")
            if not why.strip():
                self.violation(f"`{what} --wait` exit 1: {svc} is {verdict} with no reason given\n{err}", "wait-exit")
            if "run an older spec; no rollout is running" in why and "manual" not in why:
                self.recheck_no_rollout(what, svc, err)

    def recheck_no_rollout(self, what, svc, err):
        """A --wait that gave up saying instances of `svc` run an older spec
        and no rollout is running: an instance the version in force created
        runs that version's spec, so when tritonsim shows every active
        instance of `svc` created by it (its `mariposa.version` tag), the
        claim was false (a view older than the rollout's end)."""
        code, out, _ = self.c.cli("-o", "json", "versions")
        if code != 0:
            return
        versions = json.loads(out).get("versions", [])
        if not versions:
            return
        current = max(versions, key=lambda v: int(v.get("number", 0)))
        vms = self.service_vms("active", svc)
        if vms and all(v["tags"].get("mariposa.version") == current.get("uuid") for v in vms):
            self.violation(f"`{what} --wait` exit 1 saying {svc} has instances on an older spec and no rollout is "
                           f"running, while tritonsim shows all {len(vms)} of its instances created by version "
                           f"{current.get('number')}, the one in force\n{err}", "wait-false-failure")

    def judge_run(self, code, out, err):
        """`run job --wait`: 0 only when the run completed (every instance
        exited 0, as tritonsim recorded), 1 when it did not."""
        m = re.search(r"run task ([0-9a-f-]{36})", out) or re.search(r"task:\s+([0-9a-f-]{36})", out)
        if code not in (0, 1):
            self.violation(f"`run job --wait` exit {code}\n{out}{err}", "run-exit")
        if not m:
            if code == 0:
                self.violation(f"`run job --wait` exit 0 naming no task\n{out}{err}", "run-exit")
            return
        vms = self.c.http.get(f"/vms?owner_uuid={OWNER}&tag.mariposa.run={m.group(1)}")
        exited = [v.get("exit_status") for v in vms if v.get("exit_status") is not None]
        ok = len(exited) >= (self.goal or {}).get("job", 1) and all(x == 0 for x in exited)
        if code == 0 and not ok:
            self.violation(f"`run job --wait` exit 0 (completed) but tritonsim has its instances exiting {exited} "
                           f"({len(vms)} made)\n{out}", "run-exit")
        if code == 1 and ok and len(exited) == len(vms) and "terminated" not in out + err:
            self.violation(f"`run job --wait` exit 1 but each of its {len(vms)} instances exited 0\n{out}{err}",
                           "run-exit")

    def after_scoped_wait(self, what, services, out):
        """A --wait that said the services it waited for converged: each at
        its count in tritonsim, all running, every checked one healthy."""
        t = self.truth()
        for svc in services:
            if not self.goal or svc not in self.goal["services"]:
                continue
            d = self.service_differs(t, svc)
            if d:
                self.violation(f"`{what} --wait` exit 0 saying {svc} converged while tritonsim differs: "
                               f"{'; '.join(d)}\n{out}", "wait-converged")

    def after_wait(self, what, out=""):
        """A --wait that said converged: tritonsim must be at the goal."""
        t = self.truth()
        d = self.differs(t)
        if d:
            time.sleep(0.3)
            t2 = self.truth()
            if t2 == t:
                self.violation(f"`{what} --wait` exit 0 (converged) while tritonsim differs: {d}\n{out}\n"
                               f"{self.c.cli('status')[1]}", "wait-converged")

    def run(self, plan=None):
        """Runs the seed's history until --steps or the deadline, or exactly
        `plan` (a list of (index, kind)) when given. history: (index, kind,
        what was done)."""
        os.makedirs(self.c.work, exist_ok=True)
        self.c.start_sim()
        self.c.start_daemon()
        try:
            n = 0
            while True:
                if plan is not None:
                    if n >= len(plan):
                        break
                    idx, kind = plan[n]
                else:
                    if n >= self.steps or time.time() >= self.deadline:
                        break
                    idx, kind = n, ("apply_wait" if n == 0 else self.rng.choice(ACTIONS))
                self.srng = random.Random(f"{self.seed}:{idx}")
                what = self.act(kind)
                self.history.append((idx, kind, what))
                if kind != "settle":
                    self.last_action = time.time()
                log(f"[{self.seed}:{idx}] {what}")
                time.sleep(self.srng.uniform(0.1, 1.0))
                self.check(kind)
                n += 1
        except Violation:
            pass
        finally:
            self.c.stop()
        return n


def plan_text(plan):
    return ",".join(f"{i}:{k}" for i, k in plan)


def parse_plan(text):
    out = []
    for part in text.split(","):
        i, k = part.split(":")
        if k not in ACTIONS and k != "plant":
            raise SystemExit(f"oracle: --plan: {k!r} is not a step kind ({', '.join(sorted(set(ACTIONS)))})")
        out.append((int(i), k))
    return out


def shrink(seed, bindir, plan, kind, minutes):
    """The shortest sub-history found within `minutes` that breaks the same
    invariant (ddmin over the steps; each candidate replayed on fresh
    binaries once, so a violation that needs luck may not shrink far)."""
    end = time.time() + minutes * 60
    tries = 0
    n = 2
    while len(plan) > 1 and time.time() < end:
        chunk = -(-len(plan) // n)
        smaller = None
        for start in range(0, len(plan), chunk):
            cand = plan[:start] + plan[start + chunk:]
            if not cand or time.time() >= end:
                continue
            tries += 1
            work = tempfile.mkdtemp(prefix=f"oracle-shrink-{seed}-")
            o = Oracle(seed, bindir, work, 10**9, float("inf"))
            o.run(cand)
            log(f"shrink: {len(cand)} steps -> {getattr(o, 'violation_kind', 'no violation')}")
            shutil.rmtree(work, ignore_errors=True)
            if getattr(o, "violation_kind", None) == kind:
                # The replay may have stopped earlier than its end.
                smaller = cand[:len(o.history)]
                break
        if smaller is not None:
            plan, n = smaller, max(n - 1, 2)
        elif n >= len(plan):
            break
        else:
            n = min(len(plan), n * 2)
    log(f"shrink: {tries} replays, {len(plan)} steps left")
    return plan


def parse_stamp(s):
    """An RFC 3339 time (the HTTP API's timestamps) as epoch seconds; 0 when
    absent (an age that large is never a quiet claim)."""
    if not s:
        return 0.0
    import datetime
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z", s)
    if not m:
        return 0.0
    base = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    return base.timestamp() + float(m.group(2) or 0)


def parse_age(s):
    m = re.match(r"([\d.]+)(ms|s|m)", s)
    if not m:
        return 0.0
    v = float(m.group(1))
    return v / 1000 if m.group(2) == "ms" else v * 60 if m.group(2) == "m" else v


def self_test(bindir):
    """A history with a planted error in the oracle's goal: the violation
    must be found, named `converged`, and shrunk to apply, plant, settle."""
    plan = [(0, "apply_wait"), (1, "latency"), (2, "plant"), (3, "feed_skip"), (4, "settle"), (5, "edit_tags")]
    work = tempfile.mkdtemp(prefix="oracle-self-test-")
    o = Oracle(1, bindir, work, 10**9, float("inf"))
    o.run(plan)
    shutil.rmtree(work, ignore_errors=True)
    kind = getattr(o, "violation_kind", None)
    if kind != "converged":
        print(f"oracle self-test FAILED: the planted goal was not found (violation: {kind})")
        return 1
    short = shrink(1, bindir, [(i, k) for i, k, _ in o.history], kind, 5)
    kinds = [k for _, k in short]
    log(f"self-test: found at step {len(o.history)}, shrunk to {plan_text(short)}")
    if kinds != ["apply_wait", "plant", "settle"]:
        print(f"oracle self-test FAILED: shrunk to {plan_text(short)}, not apply_wait, plant, settle")
        return 1
    print("oracle self-test passed: the planted violation was found and shrunk to 3 steps")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--seeds", help="a range A-B: each seed in turn, the time split between them")
    ap.add_argument("--minutes", type=float, default=1.0)
    ap.add_argument("--steps", type=int, default=10**9)
    ap.add_argument("--replay", type=int, help="run only the first N steps of --seed")
    ap.add_argument("--plan", help="run exactly these steps of --seed (INDEX:KIND,…, as a violation prints)")
    ap.add_argument("--shrink-minutes", type=float, default=10.0,
                    help="after a violation, look this long for a shorter history breaking the same invariant "
                         "(0: print the history as it ran)")
    ap.add_argument("--bin", default="bazel-bin")
    ap.add_argument("--keep", action="store_true", help="keep each run's directory (logs, store)")
    ap.add_argument("--self-test", action="store_true",
                    help="check the oracle itself: a planted wrong goal must be found and shrunk to the steps "
                         "that show it (exit 0 when it is)")
    args = ap.parse_args()
    if args.self_test:
        sys.exit(self_test(args.bin))
    if args.seeds:
        a, b = (int(x) for x in args.seeds.split("-"))
        seeds = list(range(a, b + 1))
    else:
        seeds = [args.seed if args.seed is not None else 1]
    plan = None
    if args.plan:
        plan = parse_plan(args.plan)
    elif args.replay is not None:
        plan = plan_of(seeds[0], args.replay)
    per_seed = args.minutes * 60 / len(seeds)
    failed = []
    totals = {"steps": 0, "faults": 0, "claims": 0}
    for s in seeds:
        work = tempfile.mkdtemp(prefix=f"oracle-{s}-")
        o = Oracle(s, args.bin, work, args.steps, time.time() + per_seed)
        n = o.run(plan)
        totals["steps"] += n
        totals["faults"] += o.faults
        totals["claims"] += o.claims_checked
        if o.violations:
            failed.append(s)
            print(f"\nseed {s}: violation at step {len(o.history)} ({o.violation_kind}): {o.violations[0]}")
            print(f"history ({len(o.history)} steps):")
            for i, k, what in o.history:
                print(f"  {i}: {what}")
            print(f"  logs: {work}")
            steps = [(i, k) for i, k, _ in o.history]
            if args.shrink_minutes > 0 and len(steps) > 1:
                short = shrink(s, args.bin, steps, o.violation_kind, args.shrink_minutes)
                print(f"shortest history found breaking `{o.violation_kind}` ({len(short)} of {len(steps)} steps):")
                for i, k in short:
                    print(f"  {i}: {k}")
                steps = short
            print(f"replay: scripts/oracle.py --seed {s} --plan {plan_text(steps)}")
        else:
            log(f"seed {s}: {n} steps, {o.faults} faults, {o.claims_checked} converged claims checked "
                f"({', '.join(f'{k} {v}' for k, v in sorted(o.claims_by.items())) or 'none'}), no violation")
            if not args.keep:
                shutil.rmtree(work, ignore_errors=True)
    log(f"oracle: {len(seeds)} seeds, {totals['steps']} steps, {totals['faults']} faults, "
        f"{totals['claims']} converged claims checked; violations in seeds {failed or 'none'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
