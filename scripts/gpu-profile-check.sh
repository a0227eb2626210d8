#!/usr/bin/env bash
# The profile stage on a real NVIDIA GPU: builds as gpu-proof.sh does, starts kfleetd and one
# CUDA agent, submits jobs/gpu/profile.yaml (ncu, when: always; must pass) and
# jobs/gpu/profile-rejected.yaml (an off-by-one kernel, when: rejected; must be rejected) and
# prints each stored profile event's summary as a table (per kernel and metric: median, min,
# max, n, unit), its advice and note. Exit status: 0 when both verdicts are as expected and each
# data.summary holds a numeric gpu__time_duration.sum for the job's own kernel (one the ncu
# kernel filter names); 1 otherwise; 2 on a setup failure.
#   scripts/gpu-profile-check.sh [--bin DIR] [--run-dir DIR] [--backend cuda|simulated]
#     --bin DIR      use kfleetd/kfleet-agent/kfleet already in DIR (skips the build)
#     --run-dir DIR  where the database, agent work dir and logs go (default ./gpu-profile-run)
#     --backend simulated   tests this script without a GPU (a ctest does): the rejected job is
#                    told to fail correctness (simulate:), and the stored values, not ncu's,
#                    are only checked to be there
# On a GPU machine, from the repository root: scripts/gpu-profile-check.sh
# shellcheck source=lib/usage.sh
source "$(dirname "$0")/lib/usage.sh"
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD bin="" run=$PWD/gpu-profile-run backend=cuda
# shellcheck source=lib/options.sh
source "$root/scripts/lib/options.sh"
parse_options --bin=bin --run-dir=run --backend=backend -- "$@"
case "$backend" in cuda|simulated) ;; *) die "--backend is cuda or simulated, not '$backend'" ;; esac
need_bins
rm -rf "$run"; mkdir -p "$run/jobs"
export KFLEET_HARNESS_DIR=$root/kernels/harness
# shellcheck source=lib/local-cluster.sh
source scripts/lib/local-cluster.sh
agent_flags=(--backend cuda)
[ "$backend" = simulated ] && agent_flags=(--backend simulated --arch sm_90a --gpu-class sm_90a)
start_local_cluster "$bin" "$run" "${agent_flags[@]}" || die "kfleetd and agent gpu0 did not come up"
# The jobs as they are; on the simulated backend the rejected one is told to fail correctness.
cp jobs/gpu/profile.yaml jobs/gpu/profile-rejected.yaml "$run/jobs/"
[ "$backend" = simulated ] && echo "simulate: {fail_stage: correctness}" >>"$run/jobs/profile-rejected.yaml"
export KFLEET_KERNEL_LIB=$root/kernels
check_profile() {  # job id: prints the profile table; fails without values for the job's kernel
# Every read needs a token; it goes to curl on stdin, never on its command line.
printf 'Authorization: Bearer %s\n' "$KFLEET_TOKEN" |
  curl -sS -H @- "$KFLEET_SERVER/api/v1/jobs/$1/events?limit=1000" | python3 -c '
import json, sys
body = json.load(sys.stdin)
if "events" not in body:
    print("no events in the answer:", json.dumps(body)[:300]); sys.exit(1)
evs = [e for e in body["events"] if e["type"] == "profile"]
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
if sys.argv[1] == "simulated" and not d.get("summary"):
    # No ncu here: the simulated backend stores one value per asked metric, marked simulated.
    asked = d.get("metrics") or {}
    ok = d.get("tool") == "ncu" and "gpu__time_duration.sum" in asked and all(
        isinstance(v, (int, float)) for v in asked.values())
    print("simulated: the values are not from ncu; stored for", sorted(asked))
print("profile metric values stored:", ok); sys.exit(0 if ok else 1)' "$backend"
}
"$bin/kfleet" --no-color submit "$run/jobs/profile.yaml" --follow; rc=$?
check_profile 1; prc=$?
echo "== the same for a rejected job (profile when: rejected)"
"$bin/kfleet" --no-color submit "$run/jobs/profile-rejected.yaml" --follow; rrc=$?
check_profile 2; rprc=$?
echo "passing job: submit rc=$rc (want 0) profile rc=$prc | rejected job: submit rc=$rrc (want 1) profile rc=$rprc"
[ "$rc" = 0 ] && [ "$prc" = 0 ] && [ "$rrc" = 1 ] && [ "$rprc" = 0 ]
