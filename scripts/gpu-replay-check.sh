#!/usr/bin/env bash
# Replay mode against in-process timing on one NVIDIA GPU, without kfleetd: builds the harness
# objects once, and for each kernel (the reference kernels and kernels/suite) the recorder
# (harness + the job's objects) and the measuring process (harness alone, which loads the job's
# device code from the same objects). Runs correctness in both modes, then benchmarks
# in-process, replayed, in-process, replayed (ABAB, same process order every kernel) and prints
# each median (GPU activity spans, CUPTI) and the replay/in-process ratio.
#   scripts/gpu-replay-check.sh [--out DIR] [--arch sm_90a] [--only NAME]
# Exits 1 when a correctness run fails or a replayed median is more than 1 % from in-process.
# shellcheck source=lib/usage.sh
source "$(dirname "$0")/lib/usage.sh"
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD out=$root/replay-check arch=sm_90a only=""
# shellcheck source=lib/options.sh
source "$root/scripts/lib/options.sh"
parse_options --out=out --arch=arch --only=only -- "$@"
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -x "$nvcc" ] || { echo "gpu-replay-check: no nvcc" >&2; exit 2; }
mkdir -p "$out/obj"
gen=(-gencode=arch=compute_${arch#sm_},code=$arch)
inc=(-I"$root/kernels/harness/include")
cc() { "$nvcc" -std=c++17 -O3 -lineinfo "${gen[@]}" "${inc[@]}" "$@"; }

# name | source | defines | case args | correctness tolerance
kernels=(
  "ref_attention|kernels/reference/attention_ref.cu||--shape B=2,H=8,S=512,D=64|"
  "ref_scaled_mm|kernels/reference/scaled_mm_ref.cu||--shape M=1024,N=1024,K=1024|--rel-l2 0.01"
  "fa_s512|kernels/suite/fa_s512.cu|-DO_ACCUM_HALF=0|--shape B=2,H=8,S=512,D=64|--atol 1e-3 --rtol 1e-3 --rel-l2 0.01"
  "fp8_sdpa|kernels/suite/fp8_sdpa.cu||--shape B=4,H=16,S=2048,D=64 --dtype q=fp16,kv=fp8_e4m3,out=fp16|--max-abs 0.06 --rel-l2 0.01"
  "scaled_mm|kernels/suite/scaled_mm.cu||--shape M=4096,N=4096,K=4096|--rel-l2 0.01"
)

t0=$(date +%s)
pids=()
for src in kernels/harness/src/*.cu kernels/harness/cpu/*.cpp; do
  b=$(basename "$src"); cc -c "$src" -o "$out/obj/h_${b%.*}.o" & pids+=($!)
done
for k in "${kernels[@]}"; do
  IFS='|' read -r name src defs _ _ <<<"$k"
  [ -n "$only" ] && [ "$only" != "$name" ] && continue
  # shellcheck disable=SC2086
  cc $defs -c "$src" -o "$out/obj/job_$name.o" & pids+=($!)
done
fail=0
for p in "${pids[@]}"; do wait "$p" || fail=1; done
[ $fail = 0 ] || { echo "gpu-replay-check: compile failed" >&2; exit 2; }
cc "$out"/obj/h_*.o -o "$out/kfleet-measure" || exit 2
echo "built harness and jobs in $(( $(date +%s) - t0 )) s"

median() { grep -o '"median_us":[0-9.e+-]*' "$1" | head -1 | cut -d: -f2; }
bench_common=(--min-samples 20 --max-time-s 4 --warmup-max-s 1 --throttle-pct 0)
rows=() bad=0
for k in "${kernels[@]}"; do
  IFS='|' read -r name src defs cargs tol <<<"$k"
  [ -n "$only" ] && [ "$only" != "$name" ] && continue
  rec=$out/kfleet-harness-$name
  cc "$out"/obj/h_*.o "$out/obj/job_$name.o" -o "$rec" || { bad=1; continue; }
  d=$out/$name; mkdir -p "$d"
  # shellcheck disable=SC2086
  {
    echo "== $name: correctness in-process"
    "$rec" correctness $cargs $tol --seeds 0,1 >"$d/corr-inproc.jsonl"; c1=$?
    echo "== $name: record correctness + replay"
    "$rec" correctness $cargs $tol --seeds 0,1 --record "$d/corr.launches" >"$d/corr-record.jsonl"; r1=$?
    "$out/kfleet-measure" correctness $cargs $tol --seeds 0,1 --replay "$d/corr.launches" \
      --device-code "$out/obj/job_$name.o" --result-fd 3 3>"$d/corr-replay.jsonl" >"$d/corr-replay.stdout"; c2=$?
    "$rec" benchmark $cargs --record "$d/bench.launches" >"$d/bench-record.jsonl"; r2=$?
    for i in 1 2; do
      "$rec" benchmark $cargs "${bench_common[@]}" >"$d/bench-inproc-$i.jsonl"
      "$out/kfleet-measure" benchmark $cargs "${bench_common[@]}" --replay "$d/bench.launches" \
        --device-code "$out/obj/job_$name.o" --result-fd 3 3>"$d/bench-replay-$i.jsonl" >"$d/bench-replay-$i.stdout"
    done
  } 2>&1
  cat "$d"/corr-record.jsonl "$d"/bench-record.jsonl "$d"/corr-replay.jsonl | grep -v '"type":"device"' | cut -c1-400
  head -c 1500 "$d/bench.launches"; echo
  a1=$(median "$d/bench-inproc-1.jsonl") a2=$(median "$d/bench-inproc-2.jsonl")
  b1=$(median "$d/bench-replay-1.jsonl") b2=$(median "$d/bench-replay-2.jsonl")
  ratio=$(awk -v a1="$a1" -v a2="$a2" -v b1="$b1" -v b2="$b2" 'BEGIN{ if (a1==""||b1=="") {print "n/a"; exit} a=(a1+a2)/2; b=(b1+b2)/2; printf "%+.2f", 100*(b-a)/a }')
  pass_c1=$(grep -c '"pass":true' "$d/corr-inproc.jsonl") pass_c2=$(grep -c '"pass":true' "$d/corr-replay.jsonl")
  rows+=("$(printf '%-14s corr in-proc %s/2 (rc %s), replay %s/2 (rc %s, record rc %s/%s) | median in-proc %s %s us, replay %s %s us | replay vs in-proc %s %%' \
    "$name" "$pass_c1" "$c1" "$pass_c2" "$c2" "$r1" "$r2" "$a1" "$a2" "$b1" "$b2" "$ratio")")
  [ "$c2" = 0 ] && [ "$pass_c2" = 2 ] || bad=1
  case "$ratio" in n/a) bad=1 ;; *) awk -v r="$ratio" 'BEGIN{exit !(r > 1 || r < -1)}' && bad=1 ;; esac
done
echo
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
for r in "${rows[@]}"; do echo "$r"; done
exit $bad
