#!/usr/bin/env bash
# Run-to-run repeatability of the harness alone (no kfleetd/agent): builds the harness with the
# measure-quality kernel, runs `benchmark` as N separate processes and prints, per process, the
# median, noise, warm-up, and the SM clock seen per sample, then the spread of the medians.
# Finds whether job-to-job drift comes from the measurement (clock, warm-up, sample count) or
# from the processes themselves.
#   bench/gpu/repeatability.sh OUT_DIR N [extra benchmark flags...]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$1 n=$2; shift 2
mkdir -p "$out"
nvcc=${KFLEET_NVCC:-/usr/local/cuda/bin/nvcc}
bin=$out/harness
if [ ! -x "$bin" ]; then
  "$nvcc" -std=c++17 -O3 -lineinfo -gencode=arch=compute_90a,code=sm_90a -Ikernels/harness/include \
    -DKFLEET_FAULT=6 -DKFLEET_SLOW_PCT=0 kernels/harness/src/*.cu kernels/harness/cpu/*.cpp \
    kernels/tests/gpu/attention_faults.cu -o "$bin"
fi
for i in $(seq "$n"); do
  "$bin" benchmark --case mission --shape B=4,H=16,S=500,D=64 --dtype fp16 --atol 1e-3 --rtol 1e-3 \
    --seed 0 "$@" >"$out/run$i.jsonl"
  python3 - "$out/run$i.jsonl" "$i" <<'PY'
import json, statistics as st, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
w = next((l for l in lines if l["type"] == "warmup"), {})
b = next(l for l in lines if l["type"] == "bench")
s, c = b["samples_us"], [x for x in b["sm_clock_mhz"] if x is not None]
h = len(s) // 2
print(f"run {sys.argv[2]}: median {b['median_us']:.1f} n {b['n']} rel_stdev {b['rel_stdev_pct']:.2f}% "
      f"min {b['min_us']:.1f} p10 {b['p10_us']:.1f} p90 {b['p90_us']:.1f} "
      f"1st-half {st.median(s[:h]):.1f} 2nd-half {st.median(s[h:]):.1f} "
      f"clock {min(c):.0f}/{st.median(c):.0f}/{max(c):.0f} MHz "
      f"warmup {w.get('launches')} in {w.get('seconds', 0):.2f}s stable {w.get('stable')} "
      f"discarded {b.get('throttled_discarded', '-')} stop {b['stop_reason']}")
PY
done
python3 - "$out" "$n" <<'PY'
import json, sys
m = []
for i in range(1, int(sys.argv[2]) + 1):
    for l in open(f"{sys.argv[1]}/run{i}.jsonl"):
        if l.startswith("{") and json.loads(l)["type"] == "bench": m.append(json.loads(l)["median_us"])
print(f"medians {[round(x, 1) for x in m]} spread {(max(m) - min(m)) / min(m) * 100:.3f}%")
PY
