#!/usr/bin/env bash
# The profile stage on a real NVIDIA GPU: builds as gpu-proof.sh does, starts kfleetd and one
# CUDA agent, submits jobs/gpu/profile.yaml (ncu, when: always) and prints the stored profile
# events. Exit status: 0 when the job passed and a profile with ncu metric values was stored.
set -uo pipefail
cd "$(dirname "$0")/.."
run=${1:-$PWD/gpu-profile-run}
bin=$(scripts/gpu-proof.sh --build-only | sed -n 's/^gpu-proof: built in .* s: //p')
[ -x "$bin/kfleetd" ] || { echo "gpu-profile-check: build failed" >&2; exit 2; }
rm -rf "$run"; mkdir -p "$run"
export KFLEET_TOKEN=profile-user KFLEET_ENROL_TOKEN=profile-enrol KFLEET_HARNESS_DIR=$PWD/kernels/harness
"$bin/kfleetd" --listen 127.0.0.1:0 --port-file "$run/port" --db "$run/k.db" --user-token "$KFLEET_TOKEN" \
  --enrol-token "$KFLEET_ENROL_TOKEN" >"$run/kfleetd.log" 2>&1 & kd=$!
for _ in $(seq 200); do [ -s "$run/port" ] && break; sleep 0.1; done
export KFLEET_SERVER="http://127.0.0.1:$(cat "$run/port")"
"$bin/kfleet-agent" --server "$KFLEET_SERVER" --name gpu0 --backend cuda --work-dir "$run/agent" \
  >"$run/agent.log" 2>&1 & ag=$!
trap 'kill $kd $ag 2>/dev/null; wait 2>/dev/null' EXIT
"$bin/kfleet" --no-color submit jobs/gpu/profile.yaml --follow; rc=$?
curl -s "$KFLEET_SERVER/api/v1/jobs/1/events?limit=1000" | python3 -c '
import json, sys
import re
evs = [e for e in json.load(sys.stdin)["events"] if e["type"] == "profile"]
# A metric counts only with a value: ncu prints "<name>  <unit>  <number>" (or name,unit,value).
lines = [l for e in evs for l in json.dumps(e["data"]).replace("\\n", "\n").split("\n")
         if re.search(r"gpu__time_duration\.sum\W+\w*\W+[0-9][0-9,.]*", l)]
for l in lines: print("ncu:", l.strip()[:200])
print("profile metric values stored:", bool(lines)); sys.exit(0 if lines else 1)'
prc=$?
echo "submit rc=$rc profile rc=$prc"
[ "$rc" = 0 ] && [ "$prc" = 0 ]
