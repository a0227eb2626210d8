#!/usr/bin/env bash
# The profile stage on a real NVIDIA GPU: builds as gpu-proof.sh does, starts kfleetd and one
# CUDA agent, submits jobs/gpu/profile.yaml (ncu, when: always; must pass) and
# jobs/gpu/profile-rejected.yaml (an off-by-one kernel, when: rejected; must be rejected) and
# prints each stored profile event's summary as a table (per kernel and metric: median, min,
# max, n, unit), its advice and note. Exit status: 0 when both verdicts are as expected and each
# data.summary holds a numeric gpu__time_duration.sum for the job's own kernel (one the ncu
# kernel filter names).
set -uo pipefail
cd "$(dirname "$0")/.."
run=${1:-$PWD/gpu-profile-run}
bin=$(scripts/gpu-proof.sh --build-only | sed -n 's/^gpu-proof: built in .* s: //p')
[ -x "$bin/kfleetd" ] || { echo "gpu-profile-check: build failed" >&2; exit 2; }
rm -rf "$run"; mkdir -p "$run"
export KFLEET_TOKEN=profile-user KFLEET_ENROL_TOKEN=profile-enrol KFLEET_HARNESS_DIR=$PWD/kernels/harness
# shellcheck source=lib/local-cluster.sh
source scripts/lib/local-cluster.sh
start_local_cluster "$bin" "$run" --backend cuda || { echo "gpu-profile-check: kfleetd and agent gpu0 did not come up" >&2; exit 2; }
check_profile() {  # job id: prints the profile table; fails without values for the job's kernel
curl -s "$KFLEET_SERVER/api/v1/jobs/$1/events?limit=1000" | python3 -c '
import json, sys
evs = [e for e in json.load(sys.stdin)["events"] if e["type"] == "profile"]
if not evs:
    print("no profile event stored"); sys.exit(1)
d = evs[-1]["data"]
print("tool:", d.get("tool"), "| asked:", d.get("metrics"), "| collected:", d.get("collected"))
print("kernel filter:", d.get("kernel_filter"), "| clock_control:", d.get("clock_control"),
      "| launches:", d.get("launches"), "| exit:", d.get("exit"))
print("%-28s %-60s %14s %14s %14s %3s %s" % ("kernel", "metric", "median", "min", "max", "n", "unit"))
ok = False
for k in d.get("summary", []):
    for m, s in sorted(k.get("metrics", {}).items()):
        print("%-28s %-60s %14.10g %14.10g %14.10g %3s %s" % (k.get("name", "?")[:28], m[:60], s["median"],
              s["min"], s["max"], s["n"], s["unit"]))
    t = k.get("metrics", {}).get("gpu__time_duration.sum", {}).get("median")
    # The job'"'"'s own kernel: the filter ncu ran with names it (mangled), a harness kernel would not be.
    mine = k.get("name", "") != "" and k.get("name", "") in (d.get("kernel_filter") or "")
    ok = ok or (isinstance(t, (int, float)) and t > 0 and mine)
for a in d.get("advice", []):
    print("advice %s (%s): %s" % (a.get("rule"), a.get("kernel"), a.get("description", "")[:300]))
for key in ("note", "clock_note", "stderr", "tool_output"):
    if d.get(key): print(key + ":", d[key])
print("profile metric values stored:", ok); sys.exit(0 if ok else 1)'
}
"$bin/kfleet" --no-color submit jobs/gpu/profile.yaml --follow; rc=$?
check_profile 1; prc=$?
echo "== the same for a rejected job (profile when: rejected)"
"$bin/kfleet" --no-color submit jobs/gpu/profile-rejected.yaml --follow; rrc=$?
check_profile 2; rprc=$?
echo "passing job: submit rc=$rc (want 0) profile rc=$prc | rejected job: submit rc=$rrc (want 1) profile rc=$rprc"
[ "$rc" = 0 ] && [ "$prc" = 0 ] && [ "$rrc" = 1 ] && [ "$rprc" = 0 ]
