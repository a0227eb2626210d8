#!/usr/bin/env bash
# Proves Python kernels (issue #51; kernels/harness/PYTHON.md) on an NVIDIA GPU, in
# two parts:
#  direct  builds kfleet-measure (the harness alone, nvcc) and, without kfleetd, runs each Python
#          kernel as the agent will: kfleet_record.py (which asks kfleet-measure --plan, maps the
#          buffers, records under capture, writes the launch list and the device code), then
#          kfleet-measure --replay on those files, correctness then benchmark; and each row of
#          jobs/exploits/python/expected.tsv through the recorder, checking its refusal or, for
#          the tricks that must pass, that the replayed median is the honest control's.
#  fleet   (once the agent runs Python kernels) starts kfleetd + agent gpu0 with KFLEET_PYTHON,
#          submits the Python exploit corpus, the Triton steps of fa-s512-v3 after their CUDA
#          baseline (retargeted to this GPU) and scaled-mm-torch, and prints expected vs got.
#   scripts/gpu-python-proof.sh [--python PY] [--arch sm_90a] [--run-dir DIR] [--bin DIR]
#                               [--only REGEX] [--direct-only]
#     --python PY   the interpreter with torch (CUDA) and triton (default: python3)
#     --arch A      nvcc arch for kfleet-measure (default: from nvidia-smi, sm_90a on H100/H200)
#     --bin DIR     kfleetd/kfleet-agent/kfleet already built (fleet part; else gpu-proof.sh builds)
# Exits 1 on any mismatch, 2 on a setup failure (no GPU, no torch/triton, a build that fails).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
root=$PWD py=python3 arch="" run="$root/python-proof-run" bin="" only=. direct_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --python) py=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --run-dir) run=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --direct-only) direct_only=1; shift ;;
    -h|--help) sed -n 2,19p "$0"; exit 0 ;;
    *) echo "gpu-python-proof: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done
die() { echo "gpu-python-proof: $*" >&2; exit 2; }
command -v nvidia-smi >/dev/null || die "no nvidia-smi: this needs an NVIDIA GPU"
nvidia-smi -L
"$py" -c 'import torch, triton; assert torch.cuda.is_available(); print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__)' ||
  die "$py cannot import torch with a GPU and triton"
if [ -z "$arch" ]; then
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
  arch=sm_$cc; [ "$cc" = 90 ] && arch=sm_90a
fi
rm -rf "$run"; mkdir -p "$run"
H=$root/kernels/harness
REC=$H/python/kfleet_record.py
M=$run/kfleet-measure
echo "== building kfleet-measure for $arch"
/usr/local/cuda/bin/nvcc -std=c++17 -O3 -lineinfo -arch="$arch" -I"$H/include" "$H"/src/*.cu "$H"/cpu/*.cpp \
  -o "$M" >"$run/nvcc.log" 2>&1 || { tail -20 "$run/nvcc.log"; die "kfleet-measure did not build"; }

rows=() bad=0
note() { rows+=("$(printf '%s\t%s\t%s\t%s' "$1" "$2" "$3" "$4")"); [ "$3" = OK ] || bad=$((bad + 1)); }
last_json() { grep '^{' "$1" | tail -1; }
field() { python3 -c 'import json,sys; d=json.loads(sys.stdin.read() or "{}"); print(d.get(sys.argv[1], ""))' "$1"; }
codes() { ls "$1"/*.cubin "$1"/*.fatbin 2>/dev/null | paste -sd, -; }

# record NAME SOURCE LANGUAGE ENTRY STAGE ARGS...: the recorder in $run/NAME; its exit status.
record() {
  local name=$1 src=$2 lang=$3 entry=$4; shift 4
  local d=$run/$name; mkdir -p "$d"
  local e=(); [ -n "$entry" ] && e=(--entry "$entry")
  "$py" -B "$REC" --measure "$M" --source "$src" --language "$lang" "${e[@]}" \
    --device-code-dir "$d/device-code" --cache-dir "$d/py-cache" "$@" --record "$d/launches.txt" \
    --device 0 >"$d/record.out" 2>"$d/record.err"
}
# measure NAME STAGE ARGS...: kfleet-measure on the recording; its exit status.
measure() {
  local name=$1; shift
  local d=$run/$name
  "$M" "$@" --replay "$d/launches.txt" --device-code "$(codes "$d/device-code")" --device 0 \
    >"$d/measure-$1.out" 2>"$d/measure-$1.err"
}

# shellcheck disable=SC2054  # commas inside the shape, not between elements
ATT_SMALL=(--case small --shape B=1,H=2,S=128,D=64 --seeds 0,1 --atol 1e-3 --rtol 1e-3)
# shellcheck disable=SC2054
ATT_MISSION=(--case mission --shape B=1,H=4,S=256,D=64 --seed 0 --max-time-s 2)
# proof NAME SOURCE LANGUAGE ENTRY "CORRECTNESS ARGS" "BENCHMARK ARGS": both stages, recorded and replayed.
proof() {
  local name=$1 src=$2 lang=$3 entry=$4 cargs=$5 bargs=$6
  # shellcheck disable=SC2086
  if ! record "$name" "$src" "$lang" "$entry" correctness $cargs; then
    note "$name" "recorded" "MISMATCH" "record: $(last_json "$run/$name/record.out")"; return
  fi
  # shellcheck disable=SC2086
  measure "$name" correctness $cargs
  local rc=$? pass
  pass=$(grep -c '"type":"correctness".*"pass":true' "$run/$name/measure-correctness.out")
  if [ $rc != 0 ]; then note "$name" "correct" MISMATCH "measure exit $rc: $(last_json "$run/$name/measure-correctness.out")"; return; fi
  mv "$run/$name/launches.txt" "$run/$name/launches-correctness.txt"
  # shellcheck disable=SC2086
  record "$name" "$src" "$lang" "$entry" benchmark $bargs || {
    note "$name" "benchmark recorded" MISMATCH "$(last_json "$run/$name/record.out")"; return; }
  # shellcheck disable=SC2086
  measure "$name" benchmark $bargs
  rc=$?
  local median; median=$(grep '"type":"bench"' "$run/$name/measure-benchmark.out" | tail -1 | field median_us)
  [ $rc = 0 ] && [ -n "$median" ] && note "$name" "$pass cases passed" OK "median $median us" ||
    note "$name" "benchmark" MISMATCH "exit $rc: $(last_json "$run/$name/measure-benchmark.out")"
  echo "$median" >"$run/$name/median"
}

echo "== direct: Python kernels recorded and replayed"
[[ triton-attention =~ $only ]] && proof triton-attention "$root/kernels/triton/attention.py" triton "" \
  "${ATT_SMALL[*]}" "${ATT_MISSION[*]}"
[[ triton-attention-fp8 =~ $only ]] && proof triton-attention-fp8 "$root/kernels/triton/attention.py" triton "" \
  "--case small --shape B=1,H=2,S=128,D=64 --dtype q=fp16,kv=fp8_e4m3,out=fp16 --seeds 0,1 --max-abs 0.05 --rel-l2 0.02 --causal" \
  "--case mission --shape B=1,H=4,S=256,D=64 --dtype q=fp16,kv=fp8_e4m3,out=fp16 --causal --seed 0 --max-time-s 2"
[[ torch-scaled-mm =~ $only ]] && proof torch-scaled-mm "$root/kernels/torch/scaled_mm_ext.py" torch "" \
  "--case small --shape M=128,N=128,K=64 --dtype a=fp8_e4m3,b=fp8_e4m3,out=bf16 --seeds 0,1 --atol 1e-2 --rtol 1e-2" \
  "--case mission --shape M=1024,N=1024,K=512 --dtype a=fp8_e4m3,b=fp8_e4m3,out=bf16 --seed 0 --max-time-s 2"

echo "== direct: the Python exploit corpus"
X=$root/jobs/exploits/python
control=""
while IFS=$'\t' read -r file want_state _want_gate want_reason; do
  case "$file" in ''|'#'*) continue ;; esac
  [[ "$file" =~ $only ]] || continue
  name=${file%.yaml}
  entry=$(sed -n 's/^  entry: //p' "$X/$file")
  if [ "$want_state" = passed ]; then
    proof "$name" "$X/exploits.py" triton "$entry" "${ATT_SMALL[*]}" "${ATT_MISSION[*]}"
    m=$(cat "$run/$name/median" 2>/dev/null)
    [ "$name" = p00-honest-control ] && control=$m
    # A timer trick passes only at its honest median: not under two thirds of the control's.
    if [ -n "$control" ] && [ -n "$m" ] && [ "$name" != p00-honest-control ] &&
       python3 -c "import sys; sys.exit(0 if float('$m') < float('$control') * 2 / 3 else 1)"; then
      note "$name" "honest median" MISMATCH "median $m us against the control's $control us: forged?"
    fi
  else
    record "$name" "$X/exploits.py" triton "$entry" correctness "${ATT_SMALL[@]}"
    rc=$?
    msg=$(last_json "$run/$name/record.out" | field message)
    if [ $rc = 4 ] && [[ "$msg" =~ $want_reason ]]; then note "$name" "refused" OK "$msg"
    else note "$name" "refused: $want_reason" MISMATCH "exit $rc: ${msg:-$(tail -1 "$run/$name/record.err")}"; fi
  fi
done <"$X/expected.tsv"

if [ "$direct_only" = 0 ]; then
  echo "== fleet: through kfleetd and an agent (KFLEET_PYTHON=$py)"
  if [ -z "$bin" ]; then scripts/gpu-proof.sh --build-only >"$run/build.log" 2>&1 || die "build failed ($run/build.log)"; bin=$root/build-gpu/bin; fi
  for x in kfleetd kfleet-agent kfleet; do [ -x "$bin/$x" ] || die "$bin/$x is missing"; done
  KFLEET_PYTHON=$(command -v "$py")
  export KFLEET_HARNESS_DIR=$H KFLEET_PYTHON
  # shellcheck source=lib/local-cluster.sh
  source "$root/scripts/lib/local-cluster.sh"
  mkdir -p "$run/fleet"
  start_local_cluster "$bin" "$run/fleet" --backend cuda || die "kfleetd and agent gpu0 did not come up"
  kf() { "$bin/kfleet" --no-color "$@"; }
  kf agents
  # The campaign's steps, retargeted to this GPU (lib: sources resolve from this clone).
  mkdir -p "$run/jobs"
  for f in jobs/fa-s512/baseline.yaml jobs/fa-s512-triton/step1-triton-seed.yaml jobs/fa-s512-triton/step2-triton-bn64.yaml; do
    sed -e "s/^  gpu: L4/  gpu: $arch/" -e '/^  regions:/d' "$f" >"$run/jobs/$(basename "$f")"
  done
  submit() {  # FILE WANT_STATE REASON_REGEX
    local out id status state gate reason ok=OK
    out=$(kf --json submit "$1" --force --wait --kernel-lib "$root/kernels" 2>"$run/submit.err")
    id=$(printf '%s' "$out" | json_field job.id)
    status=$(kf --json status "${id:-0}" 2>/dev/null)
    state=$(printf '%s' "$status" | json_field job.state)
    gate=$(printf '%s' "$status" | json_field job.verdict.gate)
    reason=$(printf '%s' "$status" | json_field job.verdict.reason)
    [ -n "$reason" ] || reason=$(printf '%s' "$status" | json_field job.state_reason)
    [[ "$state" =~ ^($2)$ ]] && [[ "$reason" =~ $3 ]] || ok=MISMATCH
    note "fleet:$(basename "$1" .yaml)" "$2" "$ok" "$state/${gate:--}: $reason"
  }
  while IFS=$'\t' read -r file want_state _g want_reason; do
    case "$file" in ''|'#'*) continue ;; esac
    [[ "$file" =~ $only ]] && submit "$X/$file" "$want_state" "$want_reason"
  done <"$X/expected.tsv"
  for f in baseline step1-triton-seed step2-triton-bn64; do
    [[ "$f" =~ $only ]] && submit "$run/jobs/$f.yaml" 'passed|regressed|improved|neutral|rejected' 'median|parent'
  done
  [[ scaled-mm-torch =~ $only ]] && submit jobs/scaled-mm-torch/ext.yaml passed median
fi

echo
echo "== gpu-python-proof results ($(nvidia-smi -L | head -1); $("$py" -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'))"
printf '%-34s %-30s %-9s %s\n' WHAT EXPECTED CHECK GOT
for r in "${rows[@]}"; do
  IFS=$'\t' read -r w e ok got <<<"$r"
  printf '%-34s %-30s %-9s %s\n' "$w" "${e:0:30}" "$ok" "${got:0:200}"
done
echo "gpu-python-proof: $bad check(s) not as expected; files in $run"
[ "$bad" = 0 ]
