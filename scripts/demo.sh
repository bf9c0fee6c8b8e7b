#!/usr/bin/env bash
# One command: install dependencies, build, start tritonsim (a simulated Triton
# data center) and a local mariposad on SQLite against it, apply the example
# project, and show it converging, scaling, a killed instance being replaced,
# a diff, a rollout on apply, the versions, a rollback that rolls back, a
# stateful service updated in place (reprovision with a delegate dataset), a freeze,
# and the HTTP/JSON API and web console (its address and a login token are printed;
# `bash scripts/demo.sh --keep` keeps everything serving until Ctrl-C).
set -euo pipefail
KEEP=0
[ "${1:-}" = "--keep" ] && KEEP=1
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bazel build -c opt //daemon:mariposad //cli:mariposa //deploy/tritonsim
BIN=bazel-bin
WORK=$(mktemp -d /tmp/mariposa-demo.XXXXXX)
"$BIN/deploy/tritonsim/tritonsim" --listen 127.0.0.1:0 --addr-file "$WORK/tritonsim.addr" --servers 8 \
  --seed deploy/examples/tritonsim-seed.json --job-latency 200 --job-jitter 0.5 2>"$WORK/tritonsim.log" &
SPID=$!
for _ in $(seq 100); do [ -s "$WORK/tritonsim.addr" ] && break; sleep 0.1; done
TRITON=$(cat "$WORK/tritonsim.addr")
"$BIN/daemon/mariposad" --listen 127.0.0.1:0 --data-dir "$WORK/data" --addr-file "$WORK/addr" --triton "$TRITON" \
  --owner 930896af-bf8c-48d4-885c-6573a94b1853 --network aaaaaaaa-0000-4000-8000-000000000001 --resync 1s --image-source "$TRITON/updates" --admin-owner a5a0b0c3-1d2e-4f60-8a7b-9c0d1e2f3a4b \
  --metrics-listen 127.0.0.1:0 --http-listen 127.0.0.1:0 2>"$WORK/mariposad.log" &
DPID=$!
trap 'kill "$DPID" "$SPID" 2>/dev/null; wait "$DPID" "$SPID" 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$WORK/addr" ] && break; sleep 0.1; done
export MARIPOSA_ADDR=$(head -1 "$WORK/addr")
METRICS=$(sed -n 2p "$WORK/addr")
HTTP=$(grep '^http' "$WORK/addr")
# The console logs in with a token (a browser is never taken for the local user).
"$BIN/cli/mariposa" admin token create --name demo-console --role admin --all-projects --expires 1d 2>/dev/null |
  head -1 > "$WORK/console.token"
console_line() { echo "Web console: $HTTP/console/  (log in with the token in $WORK/console.token: $(cat "$WORK/console.token"))"; }
m() { echo; echo "\$ mariposa $*"; "$BIN/cli/mariposa" "$@"; }
# status answers in its exit code: 0 converged, 3 not converged, 4 unknown.
mstatus() { m "$@" || { rc=$?; [ $rc -eq 3 ] || [ $rc -eq 4 ] || return $rc; echo "(exit $rc: not converged yet)"; }; }
vms() {
  echo; echo "# VMs in the data center (VMAPI):"
  curl -s "$TRITON/images" > "$WORK/images.json"
  curl -s "$TRITON/vms?state=running&tag.mariposa.service=*&sort=alias.ASC&fields=alias,state,server_uuid,image_uuid" |
    python3 -c 'import json,sys
im = {i["uuid"]: i["name"] + "@" + i["version"] for i in json.load(open(sys.argv[1]))}
[print("  %-24s %-8s on %s  %s" % (v["alias"], v["state"], v["server_uuid"][:8], im.get(v["image_uuid"], v["image_uuid"]))) for v in json.load(sys.stdin)]' "$WORK/images.json"
}
converge() {  # waits until VMAPI runs the expected number of instances
  for _ in $(seq 60); do
    n=$(curl -s "$TRITON/vms?state=running&tag.mariposa.service=*" -o /dev/null -D - | tr -d '\r' | awk -F': ' 'tolower($1)=="x-joyent-resource-count"{print $2}')
    [ "$n" = "$1" ] && return 0
    sleep 0.5
  done
  echo "did not converge to $1 instances" >&2; return 1
}
echo "tritonsim on $TRITON (8 servers), mariposad pid $DPID on $MARIPOSA_ADDR, data in $WORK"
console_line
sed -e 's/g4-highcpu-1G/g4-highcpu-1g/' deploy/examples/jupiter.yaml > "$WORK/jupiter-typo.yaml"
echo "# a package PAPI does not have is refused, naming the close matches; nothing is stored"
m apply -f "$WORK/jupiter-typo.yaml" --yes || true
m apply -f deploy/examples/jupiter.yaml --yes --wait
vms
echo; echo "# what the packages gave them (PAPI's values, billing_id = the package's uuid):"
curl -s "$TRITON/vms?state=running&tag.mariposa.service=*&sort=alias.ASC" |
  python3 -c 'import json,sys
[print("  %-24s billing_id %s  ram %5d MiB  quota %3d GiB  cpu_cap %3d  %s" % (v["alias"], v["billing_id"][-4:], v["ram"], v["quota"], v["cpu_cap"], v["nics"][0]["ip"])) for v in json.load(sys.stdin)]'

mstatus -j jupiter status
m -j jupiter scale wordpress=+2 --wait
sed -e 's/count: 3/count: 5/' -e 's/window: 60s/window: 2s/' deploy/examples/jupiter.yaml > "$WORK/jupiter-fast.yaml"
echo "# a 2s start window (not part of the instance: nothing to roll out)"
m apply -f "$WORK/jupiter-fast.yaml" --yes
sed -e 's/wordpress@1.2.0/wordpress@1.3.0/' "$WORK/jupiter-fast.yaml" > "$WORK/jupiter-v2.yaml"
m diff -f "$WORK/jupiter-v2.yaml" || test $? -eq 1  # 1: there are changes
echo "# the new image rolls out on apply (update.on_change: rollout): 2 at a time, at most 1 above count,"
echo "# each new instance given its 2s start window; --wait follows it to the end"
m apply -f "$WORK/jupiter-v2.yaml" --yes --wait
converge 8 && vms
m -j jupiter queue list
echo; echo "# killing jupiter-mysql-1 behind Mariposa's back:"
victim=$(curl -s "$TRITON/vms?state=running&alias=jupiter-mysql" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["uuid"])')
"$BIN/deploy/tritonsim/tritonsim" ctl --addr "$TRITON" kill-vm "$victim" >/dev/null
sleep 2; converge 8 && vms
m -j jupiter stop --service nginx
sleep 3; mstatus -j jupiter status
m -j jupiter start --service nginx
converge 8 && vms
echo "# a secret comes from stdin or a prompt, never argv; mariposad seals it (AES-256-GCM) before storing it"
printf 'correct horse' | m -j jupiter meta set mysql.password - --secret
m -j jupiter meta list
echo "# wordpress's instances still hold the old password: status names them (SPEC \"stale meta\")"
sleep 2; mstatus -j jupiter status -v
m -j jupiter versions
echo; echo "# who am I? root on loopback is admin with no set-up; a CI token is a deployer of jupiter only"
m auth whoami
echo; echo "\$ mariposa -j jupiter admin token create --name demo-ci --role deployer --expires 1d > ci.token"
"$BIN/cli/mariposa" -j jupiter admin token create --name demo-ci --role deployer --expires 1d > "$WORK/ci.token"
m --token-file "$WORK/ci.token" -j jupiter auth can-i apply
m --token-file "$WORK/ci.token" -j jupiter auth can-i freeze || true
m --token-file "$WORK/ci.token" -j jupiter meta set demo.note "set by CI"
m -j jupiter events --limit 1000 | grep -E "token:demo-ci|auth\." | tail -3
echo "# rolling back to version 3 rolls wordpress back onto 1.2.0"
m -j jupiter rollback 3 --yes --wait
converge 8 && vms
echo; echo "# a stateful service updated in place (update.strategy: reprovision): VMAPI reprovisions each"
echo "# instance onto the new image one at a time; uuid, IP and the delegate dataset stay, the root is rewritten"
cat > "$WORK/vault.yaml" <<'YAML'
project: vault
services:
  db:
    image: percona@5.7.1
    compute_type: infrastructure
    count: 2
    start: {window: 2s}
    delegate_dataset: true
    update: {strategy: reprovision, rolling: 1}
YAML
m apply -f "$WORK/vault.yaml" --yes --wait
dbs() {
  curl -s "$TRITON/vms?state=active&tag.mariposa.service=db&sort=alias.ASC" | python3 -c 'import json,sys
[print(v["uuid"], v["alias"], v["nics"][0]["ip"], v["image_uuid"][-4:], ",".join(v["datasets"])) for v in json.load(sys.stdin)]'
}
dbs | while read -r uuid alias ip image ds; do
  "$BIN/deploy/tritonsim/tritonsim" ctl --addr "$TRITON" write-file "$uuid" "/zones/$uuid/data/mysql/ibdata1" "rows of $alias" >/dev/null
  "$BIN/deploy/tritonsim/tritonsim" ctl --addr "$TRITON" write-file "$uuid" /var/tmp/scratch "scratch of $alias" >/dev/null
  echo "  $alias  uuid $uuid  ip $ip  image …$image  dataset $ds  (wrote mysql/ibdata1 on the dataset, /var/tmp/scratch on the root)"
done
sed -e 's/percona@5.7.1/percona@5.7.2/' "$WORK/vault.yaml" > "$WORK/vault-v2.yaml"
m diff -f "$WORK/vault-v2.yaml" || test $? -eq 1
m apply -f "$WORK/vault-v2.yaml" --yes --wait
echo; echo "# after the update: the same VMs on the new image; the dataset's file is there, the root's is gone"
dbs | while read -r uuid alias ip image ds; do
  echo "  $alias  uuid $uuid  ip $ip  image …$image  files: $("$BIN/deploy/tritonsim/tritonsim" ctl --addr "$TRITON" files "$uuid" |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(sorted(d["files"]), "reprovisioned", d["reprovisions"], "time")')"
done
m -j vault events --limit 12
m -j jupiter freeze --group frontend --reason "demo: incident drill"
m -j jupiter queue list
m -j jupiter thaw --group frontend
m events --all --limit 1000
echo; echo "# Prometheus metrics (http://$METRICS/metrics), the controller's families:"
curl -s "http://$METRICS/metrics" > "$WORK/metrics.txt"
grep -E '^mariposa_(service_desired|service_ready|service_instances\{.*state="running"|tasks|frozen|workqueue|replacements|build_info)' \
  "$WORK/metrics.txt" | sed -n '1,30p'
echo; echo "# the same state over HTTP/JSON (docs/http-api.md; the OpenAPI document is $HTTP/v1/openapi.json):"
echo "\$ curl -H 'Authorization: Bearer …' $HTTP/v1/projects/jupiter/state?omit_instances=true"
curl -s -H "Authorization: Bearer $(cat "$WORK/console.token")" "$HTTP/v1/projects/jupiter/state?omit_instances=true" |
  python3 -c 'import json,sys
st = json.load(sys.stdin)
print("  converged:", st["converged"], " version:", st["version"])
[print("  %-10s %-12s %s/%s ready" % (s["name"], s["verdict"], s["ready"], s["desired"])) for s in st["services"]]'
echo
echo "Demo done. Health checks run with mariposad --embedded-health or mariposa-health agents (docs/health.md); what is not built yet: docs/status.md."
if [ "$KEEP" = 1 ]; then
  console_line
  echo "Serving until Ctrl-C (--keep)."
  wait "$DPID"
else
  echo "Web console: mariposad and tritonsim stop as this script ends, so its address would be a dead link; run \`bash scripts/demo.sh --keep\` to keep them serving and open the console (the address and its token are printed then)."
fi
