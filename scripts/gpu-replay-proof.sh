#!/usr/bin/env bash
# The evidence for replay mode (kernels/harness/ABI.md, "Recorded replay") on one NVIDIA GPU, in
# the order the record asks for: the suite replayed against in-process (scripts/gpu-replay-check.sh),
# the gate proof (scripts/gpu-proof.sh), then twice: the exploit corpus (scripts/gpu-exploits.sh)
# and right after it measure-quality (a), (b), (c) on a fresh kfleetd + agent.
#   scripts/gpu-replay-proof.sh [--out DIR] [--steps suite,proof,round1,round2] [--tries N]
# Each step's log goes to DIR (default ./replay-proof) and one line per step to DIR/summary.log.
# A full run takes about 25 minutes; --steps splits it across device calls (the build is reused
# when build-gpu/bin exists). Exits 1 when any step fails.
# shellcheck source=lib/usage.sh
source "$(dirname "$0")/lib/usage.sh"
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD out=$root/replay-proof steps=suite,proof,round1,round2 tries=10
# shellcheck source=lib/options.sh
source "$root/scripts/lib/options.sh"
parse_options --out=out --steps=steps --tries=tries -- "$@"
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
bin=$root/build-gpu/bin
if [ ! -x "$bin/kfleet-agent" ]; then
  scripts/gpu-proof.sh --build-only >"$out/build.log" 2>&1 || { tail -20 "$out/build.log"; exit 2; }
fi
fail=0
step() {  # step NAME LOG COMMAND...: runs it, keeps its log, notes the outcome
  local name=$1 log=$2; shift 2
  local t0; t0=$(date +%s)
  "$@" >"$out/$log" 2>&1; local rc=$?
  echo "$(date -u +%FT%TZ) $name rc=$rc $(( $(date +%s) - t0 ))s log=$log: $(grep -E 'mismatch|accepted|^\(a\)|^\(b\)|^\(c\)|replay vs in-proc' "$out/$log" | tr '\n' ';' | cut -c1-600)" | tee -a "$out/summary.log"
  [ $rc = 0 ] || fail=1
}
nvidia-smi -L | tee -a "$out/summary.log"
case ",$steps," in *,suite,*) step suite replay-check.log scripts/gpu-replay-check.sh --out /tmp/replay-check ;; esac
case ",$steps," in *,proof,*) step proof proof.log scripts/gpu-proof.sh --bin "$bin" --run-dir /tmp/replay-proof-run ;; esac
for r in 1 2; do
  case ",$steps," in *,round$r,*)
    step "exploits-$r" "exploits-$r.log" scripts/gpu-exploits.sh --bin "$bin" --run-dir "/tmp/replay-exploits-$r"
    step "quality-$r" "quality-$r.log" scripts/measure-quality.sh --bin "$bin" --run-dir "/tmp/replay-quality-$r" --tries "$tries" --parts abc
  ;; esac
done
exit $fail
