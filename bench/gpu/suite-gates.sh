#!/usr/bin/env bash
# Every kernels/suite CUDA kernel through the harness directly (no kfleetd): builds the harness
# once, links each kernel variant against it with `-Xptxas -v` (the resources the gate reads),
# runs the correctness stage at the seeds' cases and seeds (plus causal and bias/bf16 variants)
# and the benchmark stage at each mission case. Prints one summary line per step; exits 1 if any
# correctness or benchmark stage failed, 2 on a build failure.
#   bench/gpu/suite-gates.sh [--arch sm_90a] [--out DIR] [--throttle-pct X] [--max-time-s X]
#                            [--only REGEX] [--step-timeout-s S] [--variant "NAME SOURCE DEF=V..."]
# --throttle-pct 0 keeps every sample (shared or clock-locked cloud GPUs report clocks that
# the default 2 % filter would reject wholesale). --only builds and runs only the variants whose
# name matches REGEX (e.g. '^scaled_mm$'). Each harness run is killed after --step-timeout-s
# (default 300) and counted as a failure, and that binary's later steps are skipped, so a
# hanging kernel cannot stall the whole run. --variant (repeatable) adds a build of one
# kernels/suite SOURCE with the given defines, gated like that source's own variants: a define
# can be tried without editing this script.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
arch="" out=$root/suite-gates throttle=0 max_time=5 only="" step_timeout=300 extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) arch=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --throttle-pct) throttle=$2; shift 2 ;;
    --max-time-s) max_time=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --step-timeout-s) step_timeout=$2; shift 2 ;;
    --variant) extra+=("$2"); shift 2 ;;
    -h|--help) sed -n 2,15p "$0"; exit 0 ;;
    *) echo "suite-gates: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done
nvcc=${NVCC:-nvcc}
command -v "$nvcc" >/dev/null || nvcc=/usr/local/cuda/bin/nvcc
if [ -z "$arch" ]; then
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
  arch=sm_$cc; [ "$cc" = 90 ] && arch=sm_90a
fi
case "$arch" in *a) gen="-gencode=arch=compute_${arch:3:2}a,code=$arch" ;; *) gen="-arch=$arch" ;; esac
H=$root/kernels/harness
mkdir -p "$out/obj"
t0=$(date +%s)
objs=()
for f in "$H"/src/*.cu "$H"/cpu/*.cpp; do
  o=$out/obj/$(basename "$f").o; objs+=("$o")
  "$nvcc" -std=c++17 -O3 -lineinfo $gen -I"$H/include" -c "$f" -o "$o" &
done
wait
for o in "${objs[@]}"; do [ -s "$o" ] || { echo "suite-gates: harness build failed ($o)"; exit 2; }; done
# name source defines...
variants=("fa_s512 fa_s512 O_ACCUM_HALF=0" "fa_s512_half fa_s512 O_ACCUM_HALF=1"
          "fa_s512_mma_sync_half fa_s512 FA_WGMMA=0 O_ACCUM_HALF=1"
          "fp8_sdpa fp8_sdpa USE_SMEM_SWIZZLE_XOR=0" "fp8_sdpa_xor fp8_sdpa USE_SMEM_SWIZZLE_XOR=1"
          "fp8_sdpa_mma_sync fp8_sdpa FP8_WGMMA=0 USE_SMEM_SWIZZLE_XOR=0"
          "fp8_sdpa_mma_sync_xor fp8_sdpa FP8_WGMMA=0 USE_SMEM_SWIZZLE_XOR=1"
          "fp8_sdpa_rescale_every_tile fp8_sdpa FP8_RESCALE_TEST=1"
          "fp8_sdpa_recompute_every_tile fp8_sdpa FP8_RESCALE_TEST=2"
          "scaled_mm scaled_mm")
for v in ${extra[@]+"${extra[@]}"}; do
  set -- $v
  [ $# -ge 2 ] && [ -f "$root/kernels/suite/$2.cu" ] ||
    { echo "suite-gates: --variant '$v': want 'NAME SOURCE [DEF=V...]' with kernels/suite/SOURCE.cu"; exit 2; }
  variants+=("$v")
done
if [ -n "$only" ]; then
  kept=(); for v in "${variants[@]}"; do [[ ${v%% *} =~ $only ]] && kept+=("$v"); done
  [ ${#kept[@]} -gt 0 ] || { echo "suite-gates: --only '$only' matches no variant"; exit 2; }
  variants=("${kept[@]}")
fi
built() { local v; for v in "${variants[@]}"; do [ "${v%% *}" = "$1" ] && return 0; done; return 1; }
# The variant names built from one source, in order.
of_source() { local v; for v in "${variants[@]}"; do set -- $v; [ "$2" = "$src" ] && echo "$1"; done; }
for v in "${variants[@]}"; do
  set -- $v; name=$1 src=$2; shift 2; defs=(); for d in "$@"; do defs+=("-D$d"); done
  ( "$nvcc" -std=c++17 -O3 -lineinfo $gen -Xptxas -v -I"$H/include" "${defs[@]}" \
      -c "$root/kernels/suite/$src.cu" -o "$out/obj/$name.o" >"$out/$name.ptxas.log" 2>&1 &&
    "$nvcc" $gen "${objs[@]}" "$out/obj/$name.o" -o "$out/$name" >>"$out/$name.ptxas.log" 2>&1 ) &
done
wait
for v in "${variants[@]}"; do
  set -- $v
  [ -x "$out/$1" ] || { cat "$out/$1.ptxas.log"; echo "suite-gates: $1 failed to build"; exit 2; }
  echo "== $1 resources ($arch):"
  grep -E "registers|spill" "$out/$1.ptxas.log" | sed 's/^/   /'
done
echo "suite-gates: built in $(( $(date +%s) - t0 )) s"

fails=0 hung=""
step() {  # label binary args...
  local label=$1 bin=$2; shift 2
  built "$bin" || return 0
  if [[ " $hung " == *" $bin "* ]]; then
    echo "$label: skipped ($bin hung in an earlier step)"; fails=$((fails + 1)); return 0
  fi
  timeout -k 10 "$step_timeout" "$out/$bin" "$@" >"$out/$label.jsonl" 2>"$out/$label.err"; local rc=$?
  [ "$rc" = 124 ] && { echo "$label: killed after $step_timeout s (a hang?)"; hung="$hung $bin"; }
  python3 - "$label" "$rc" "$out/$label.jsonl" <<'EOF'
import json, sys
label, rc, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
parts = []
for line in open(path):
    try: j = json.loads(line)
    except ValueError: continue
    t = j.get("type")
    if t == "correctness":
        parts.append(f"{j['case']}/s{j['seed']}:{'ok' if j['pass'] else 'FAIL'} rel_l2={j['rel_l2']:.2e} max_abs={j['max_abs']:.2e}" + ("" if j['pass'] else f" ({j['reason']})"))
    elif t == "bench":
        parts.append(f"median {j['median_us']:.2f} us ({j['tflops']:.1f} TFLOP/s, n={j['n']}, noise {j['rel_stdev_pct']:.2f}%, {j['stop_reason']}, recheck {'ok' if j['recheck']['pass'] else 'FAIL'})")
    elif t in ("error", "unsupported"):
        parts.append(f"{t}: {j}")
print(f"{label}: rc={rc} " + "; ".join(parts), flush=True)
EOF
  [ "$rc" = 0 ] || fails=$((fails + 1))
}
fa_tol=(--rel-l2 0.01 --atol 1e-3 --rtol 1e-3)
fp8=(--dtype q=fp16,kv=fp8_e4m3,out=fp16)
fp8_tol=(--rel-l2 0.01)
mm_tol=(--rel-l2 0.01 --max-abs 1.0)
bench=(benchmark --seed 0 --throttle-pct "$throttle" --max-time-s "$max_time")
for b in $(src=fa_s512 of_source); do
  step "$b-small" $b correctness --case small --shape B=1,H=2,S=128,D=64 --seeds 0,1,2 "${fa_tol[@]}"
  step "$b-mission" $b correctness --case mission --shape B=2,H=8,S=512,D=64 --seeds 0,1,2 "${fa_tol[@]}"
  step "$b-mission-causal" $b correctness --case mission-causal --shape B=2,H=8,S=512,D=64 --causal --seeds 0 "${fa_tol[@]}"
  step "$b-odd-causal" $b correctness --case odd --shape B=1,H=3,S=300,D=64 --causal --seeds 0 "${fa_tol[@]}"
  step "$b-wide" $b correctness --case wide --shape B=4,H=16,S=512,D=64 --seeds 0 "${fa_tol[@]}"
  step "$b-wide-causal" $b correctness --case wide-causal --shape B=4,H=16,S=384,D=64 --causal --seeds 0 "${fa_tol[@]}"
  step "$b-bench" $b "${bench[@]}" --case mission --shape B=2,H=8,S=512,D=64 "${fa_tol[@]}"
done
for b in $(src=fp8_sdpa of_source); do
  step "$b-small" $b correctness --case small --shape B=1,H=4,S=256,D=64 --seeds 0,1,2 "${fp8[@]}" "${fp8_tol[@]}"
  step "$b-mission" $b correctness --case mission --shape B=4,H=16,S=2048,D=64 --seeds 0,1,2 "${fp8[@]}" "${fp8_tol[@]}"
  step "$b-s4096-causal" $b correctness --case s4096 --shape B=1,H=8,S=4096,D=64 --causal --seeds 0 "${fp8[@]}" "${fp8_tol[@]}"
  step "$b-odd" $b correctness --case odd --shape B=1,H=2,S=1000,D=64 --seeds 0 "${fp8[@]}" "${fp8_tol[@]}"
  step "$b-odd-causal" $b correctness --case odd-causal --shape B=1,H=2,S=1000,D=64 --causal --seeds 0 "${fp8[@]}" "${fp8_tol[@]}"
  step "$b-tiny" $b correctness --case tiny --shape B=2,H=2,S=100,D=64 --seeds 0 "${fp8[@]}" "${fp8_tol[@]}"
  step "$b-bench" $b "${bench[@]}" --case mission --shape B=4,H=16,S=2048,D=64 "${fp8[@]}" "${fp8_tol[@]}"
done
for b in $(src=scaled_mm of_source); do
  step "$b-n1024" $b correctness --case n1024 --shape M=1024,N=1024,K=1024 --seeds 0,1 "${mm_tol[@]}"
  step "$b-n8192" $b correctness --case n8192 --shape M=8192,N=8192,K=8192 --seeds 0 "${mm_tol[@]}"
  step "$b-bias-bf16" $b correctness --case odd --shape M=1000,N=1000,K=528 --seeds 0 --bias --dtype a=fp8_e4m3,b=fp8_e4m3,out=bf16 "${mm_tol[@]}"
  step "$b-bench" $b "${bench[@]}" --case n8192 --shape M=8192,N=8192,K=8192 "${mm_tol[@]}"
done
echo "suite-gates: $fails step(s) failed"
[ "$fails" = 0 ]
