#!/usr/bin/env bash
# Replays the seeds' campaigns on a real NVIDIA GPU with the kernel suite: seed 001 (fa-s512-v3:
# baseline, then iteration 1 O_ACCUM_HALF) and seed 000 (fp8-sdpa-stage3: stage 2, then stage 3
# step 2, the XOR swizzle). Builds kfleetd/kfleet-agent/kfleet (as gpu-proof.sh does), starts
# them on a fresh SQLite file with one `--backend cuda` agent, submits the example jobs from
# jobs/fa-s512 and jobs/fp8-sdpa retargeted to this GPU (`target.gpu` set to the agent's class,
# `regions` dropped; nothing else changes), waits for each verdict, and prints
# `kfleet campaign show` for both campaigns. The verdicts are whatever the GPU says.
#   scripts/gpu-suite-campaigns.sh [--bin DIR] [--run-dir DIR] [--gpu sm_90] [--throttle-pct 0]
#                                  [--backend cuda|simulated]   (simulated: tests the script; a ctest does)
# Exits 0 when every parent passed and every child got a verdict (kept or rejected), else 1;
# 2 on a setup failure.
# shellcheck source=lib/usage.sh
source "$(dirname "$0")/lib/usage.sh"
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
bin="" run="$root/gpu-suite-run" gpu=sm_90 throttle=0 backend=cuda
# shellcheck source=lib/options.sh
source "$root/scripts/lib/options.sh"
parse_options --bin=bin --run-dir=run --gpu=gpu --throttle-pct=throttle --backend=backend -- "$@"
need_bins
rm -rf "$run"; mkdir -p "$run/jobs"
export KFLEET_TOKEN=suite-user KFLEET_ENROL_TOKEN=suite-enrol
export KFLEET_HARNESS_DIR=$root/kernels/harness
# shellcheck source=lib/local-cluster.sh
source "$root/scripts/lib/local-cluster.sh"
# --throttle-pct 0: the fp8 mission runs 350 µs kernels for 15 s and the H100's SM clock sags
# more than 2 % under that; against the best clock seen, the filter's old reference, every
# sample was dropped. The reference is now the clock the warm-up settled at (PROTOCOL.md), which
# kept scaled_mm's; this default stays until a suite run shows the filter on.
agent_flags=(--backend cuda --throttle-pct "$throttle")
[ "$backend" = simulated ] && agent_flags=(--backend simulated --arch "${gpu}a" --gpu-class "$gpu")
start_local_cluster "$bin" "$run" "${agent_flags[@]}" ||
  die "kfleetd and agent gpu0 did not come up"
kf() { "$bin/kfleet" --no-color "$@"; }
command -v nvidia-smi >/dev/null && nvidia-smi -L
kf agents

fails=0
for f in fa-s512/baseline fa-s512/iter1 fp8-sdpa/stage2 fp8-sdpa/stage3-step2-xor; do
  mkdir -p "$run/jobs/$(dirname $f)"
  sed -e "s/^\(  *gpu:\) L4$/\1 $gpu/" -e "s/^target: {gpu: L4}$/target: {gpu: $gpu}/" \
      -e '/^  regions:/d' "jobs/$f.yaml" >"$run/jobs/$f.yaml"
  echo; echo "== kfleet submit jobs/$f.yaml (target.gpu: $gpu) --wait --force"
  diff "jobs/$f.yaml" "$run/jobs/$f.yaml" | sed 's/^/   /'
  t0=$(date +%s)
  out=$(kf --json submit "$run/jobs/$f.yaml" --kernel-lib "$root/kernels" --force --wait 2>"$run/submit.err"); rc=$?
  id=$(printf '%s' "$out" | json_field job.id)
  [ -n "$id" ] || { cat "$run/submit.err"; fails=$((fails + 1)); continue; }
  state=$(kf --json status "$id" | json_field job.state)
  echo "job $id: exit $rc after $(( $(date +%s) - t0 ))s: $state"
  kf status "$id" 2>&1 | sed 's/^/  /'
  case "$f:$state" in
    */baseline:passed|*/stage2:passed|*/iter1:passed|*/iter1:rejected|*/stage3-step2-xor:passed|*/stage3-step2-xor:rejected) ;;
    *) fails=$((fails + 1)) ;;
  esac
done
for c in fa-s512-v3 fp8-sdpa-stage3; do
  echo; echo "== kfleet campaign show $c"
  kf campaign show "$c"
done
echo; echo "gpu-suite-campaigns: $fails unexpected outcome(s); logs in $run"
[ "$fails" = 0 ]
