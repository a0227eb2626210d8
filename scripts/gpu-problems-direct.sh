#!/usr/bin/env bash
# The problem library's harness runtime on one NVIDIA GPU, without kfleetd or the agent
# (kernels/harness/PROBLEM-ABI.md "The problem spec", "Problems of the library" there),
# the way the agent runs a job: a recorder (the harness + the job's kernel) records, and the
# measuring process (the harness alone, the job's device code loaded from its object) replays.
#   scripts/gpu-problems-direct.sh --out DIR [--arch sm_90a] [--only rmsnorm,topk] [--spec-tool BIN]
# For each problem: kfleet's GPU reference against its fp64 CPU reference (--reference-check);
# the naive kernel's correctness on every case (seeds 0,1), the required `stress` included, and
# its benchmark on the largest case; a wrong kernel (tests/wrong.cu) and a do-nothing one
# (tests/nothing.cu) that must be rejected naming an output's check; each shortcut
# (tests/*.cu besides those) passing the first case and rejected on `stress` naming an output;
# a recording replayed for another case, which must be refused. One PASS/FAIL line per item (DIR/summary.log); logs in DIR. Exits 1 on any
# FAIL, 2 when the build fails. Needs the CUDA toolkit (nvcc on PATH or /usr/local/cuda), CMake,
# a C++ compiler and the repository; no network. The problems' specs are written by
# kfleet-problem-spec (kfleet's host code, built here with CMake, the orchestrator off), or by
# the one --spec-tool names.
# shellcheck source=lib/usage.sh
source "$(dirname "$0")/lib/usage.sh"
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD out=$root/problems-direct arch=sm_90a only="" spec_tool=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --spec-tool) spec_tool=$(realpath "$2"); shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "gpu-problems-direct: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done
export PATH=$PATH:/usr/local/cuda/bin
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -x "$nvcc" ] || { echo "gpu-problems-direct: no nvcc" >&2; exit 2; }
problems=(rmsnorm softmax rope grouped_gemm topk fp8_block_gemm)
[ -n "$only" ] && IFS=, read -r -a problems <<<"$only"
mkdir -p "$out/obj" "$out/bin" "$out/spec" "$out/logs"
summary=$out/summary.log
: >"$summary"
jobs=$(nproc 2>/dev/null || echo 16)
t_start=$(date +%s)
if [ "${arch%a}" != "$arch" ]; then gen="-gencode=arch=compute_${arch#sm_},code=$arch"; else gen="-arch=$arch"; fi
# -Werror off: this machine's host compiler is not CI's; its warnings are counted instead.
cc() { "$nvcc" -std=c++17 -O3 -lineinfo $gen -Xcompiler=-Wall,-Wextra -I"$root/kernels/harness/include" "$@"; }
compile_one() {  # SRC|OBJ
  local src=${1%%|*} obj=${1##*|}
  cc -c "$src" -o "$obj" >"$obj.log" 2>&1 || { echo "compile failed: $src"; cat "$obj.log"; return 255; }
}
export -f cc compile_one
export nvcc gen root

# ---- Build: the spec writer (kfleet's host code), the harness objects, each kernel ----
b=$out/cmake-build
if [ -z "$spec_tool" ]; then
  spec_tool=$b/kernels/kfleet-problem-spec
  (
    cmake -S "$root" -B "$b" -DCMAKE_BUILD_TYPE=Release -DKFLEET_BUILD_ORCHESTRATOR=OFF \
      -DKFLEET_BUILD_TESTS=OFF -DKFLEET_BUILD_BENCH=OFF -DKFLEET_BUILD_DASHBOARDS=OFF \
      -DKFLEET_WITH_POSTGRESQL=OFF -DKFLEET_WERROR=OFF >"$out/logs/spec-configure.log" 2>&1 &&
      cmake --build "$b" -j"$jobs" --target kfleet-problem-spec >"$out/logs/spec-build.log" 2>&1
  ) &
else
  true &
fi
spec_pid=$!
compile_list=()
for src in kernels/harness/src/*.cu kernels/harness/cpu/*.cpp; do
  compile_list+=("$src|$out/obj/h_$(basename "${src%.*}").o")
done
test_kernels() { for f in "kernels/problems/$1"/tests/*.cu; do basename "$f" .cu; done; }
shortcuts() { test_kernels "$1" | grep -vx 'wrong\|nothing'; }
for p in "${problems[@]}"; do
  compile_list+=("kernels/problems/$p/naive.cu|$out/obj/${p}_naive.o")
  for k in $(test_kernels "$p"); do compile_list+=("kernels/problems/$p/tests/$k.cu|$out/obj/${p}_$k.o"); done
done
printf '%s\n' "${compile_list[@]}" | xargs -P "$jobs" -I{} bash -c 'compile_one "$1"' _ {}
build_rc=$?
wait "$spec_pid"; spec_rc=$?
[ $build_rc = 0 ] || { echo "gpu-problems-direct: the harness or a kernel did not compile" >&2; exit 2; }
[ $spec_rc = 0 ] && [ -x "$spec_tool" ] || { tail -30 "$out"/logs/spec-*.log; echo "gpu-problems-direct: kfleet-problem-spec did not build" >&2; exit 2; }
warnings=$(cat "$out"/obj/*.log | grep -c 'warning' || true)
cc "$out"/obj/h_*.o -o "$out/bin/kfleet-measure" >"$out/logs/link-measure.log" 2>&1 ||
  { cat "$out/logs/link-measure.log"; exit 2; }
for p in "${problems[@]}"; do
  for k in naive $(test_kernels "$p"); do
    cc "$out"/obj/h_*.o "$out/obj/${p}_$k.o" -o "$out/bin/rec-${p}-$k" >"$out/logs/link-$p-$k.log" 2>&1 ||
      { cat "$out/logs/link-$p-$k.log"; exit 2; }
  done
  "$spec_tool" "$root/kernels/problems" "$p" >"$out/spec/$p.spec" ||
    { echo "gpu-problems-direct: no spec for $p" >&2; exit 2; }
done
echo "built in $(( $(date +%s) - t_start )) s ($warnings compiler warnings; logs $out/obj/*.log)" | tee -a "$summary"

# ---- Running ----
measure=$out/bin/kfleet-measure
fail=0
note() { echo "$*" | tee -a "$summary"; }
# The distinct reasons of a log's lines; for a recorder that failed (exit >= 100), its own lines.
reasons() {
  local log=$1 rc=${2:-0}
  if [ "$rc" -ge 100 ]; then log=${log%.jsonl}.record.jsonl; fi
  grep -o '"reason":"[^"]*"\|"message":"[^"]*"' "$log" 2>/dev/null | grep -v '"reason":""' | sort -u | head -3 | tr '\n' ' '
}

# record_replay P KERNEL STAGE CASE TAG [options...]: record with the kernel's recorder, replay
# with kfleet-measure; DIR/logs/P/TAG.{record,replay}.jsonl; returns the measuring process's
# exit status (the recorder's when it failed, plus 100).
record_replay() {
  local p=$1 k=$2 stage=$3 c=$4 tag=$5; shift 5
  local d=$out/logs/$p; mkdir -p "$d"
  local spec=$out/spec/$p.spec list=$d/$tag.launches
  "$out/bin/rec-$p-$k" "$stage" --problem-spec "$spec" --case "$c" --record "$list" "$@" \
    >"$d/$tag.record.jsonl" 2>&1 || return $(( 100 + $? ))
  "$measure" "$stage" --problem-spec "$spec" --case "$c" --replay "$list" \
    --device-code "$out/obj/${p}_$k.o" "$@" --result-fd 3 3>"$d/$tag.jsonl" >"$d/$tag.stdout" 2>&1
}

# The items of one problem but its benchmark (these may run beside other problems' items).
correctness_items() {
  local p=$1 spec=$out/spec/$1.spec
  local cases; cases=$(awk '$1 == "case" { print $2 }' "$spec")
  local first; first=$(echo "$cases" | head -1)
  for c in $cases; do
    record_replay "$p" naive correctness "$c" "naive-$c" --seeds 0,1; local rc=$?
    local lines; lines=$(grep -c '"type":"correctness".*"pass":true' "$out/logs/$p/naive-$c.jsonl" 2>/dev/null)
    if [ $rc = 0 ] && [ "$lines" = 2 ]; then note "PASS $p naive correctness $c (seeds 0,1)"
    else note "FAIL $p naive correctness $c: exit $rc, ${lines:-0} of 2 seeds pass; $(reasons "$out/logs/$p/naive-$c.jsonl" $rc)"; echo 1 >"$out/logs/$p.fail"; fi
  done
  # kfleet's GPU reference against the fp64 CPU reference, on the spec's smallest case.
  mkdir -p "$out/logs/$p"
  local small; small=$(awk '$1 == "case_cost" { if (best == "" || $4 + 0 < best) { best = $4 + 0; name = $2 } } END { print name }' "$spec")
  "$measure" correctness --problem-spec "$spec" --case "$small" --seeds 0 --reference-check --result-fd 3 \
    3>"$out/logs/$p/reference.jsonl" >"$out/logs/$p/reference.stdout" 2>&1; local rc=$?
  if [ $rc = 0 ] && grep -q '"type":"reference_check".*"pass":true' "$out/logs/$p/reference.jsonl"; then
    note "PASS $p GPU reference = fp64 CPU reference on $small: $(grep -o '"outputs":{.*}' "$out/logs/$p/reference.jsonl" | head -c 200)"
  else note "FAIL $p GPU reference vs fp64 CPU reference on $small: exit $rc; $(reasons "$out/logs/$p/reference.jsonl")"; echo 1 >"$out/logs/$p.fail"; fi
  # Each shortcut: right on the first (benign) case, rejected on the required one naming an output.
  for k in $(shortcuts "$p"); do
    record_replay "$p" "$k" correctness "$first" "$k-$first" --seeds 0; local ok_rc=$?
    record_replay "$p" "$k" correctness stress "$k-stress" --seeds 0,1; local bad_rc=$?
    local named; named=$(grep '"type":"correctness"' "$out/logs/$p/$k-stress.jsonl" 2>/dev/null | grep '"pass":false' | grep -c '"reason":"output ')
    if [ $ok_rc = 0 ] && [ $bad_rc = 1 ] && [ "$named" -ge 1 ]; then
      note "PASS $p shortcut $k passes $first, rejected on stress: $(reasons "$out/logs/$p/$k-stress.jsonl")"
    else note "FAIL $p shortcut $k: exit $ok_rc on $first (want 0), $bad_rc on stress (want 1, $named seed(s) naming an output); $(reasons "$out/logs/$p/$k-stress.jsonl" $bad_rc)"; echo 1 >"$out/logs/$p.fail"; fi
  done
  for k in wrong nothing; do
    record_replay "$p" "$k" correctness "$first" "$k-$first" --seeds 0,1; local rc=$?
    local log=$out/logs/$p/$k-$first.jsonl
    local named; named=$(grep '"type":"correctness"' "$log" 2>/dev/null | grep '"pass":false' | grep -c '"reason":"output ')
    if [ $rc = 1 ] && [ "$named" = 2 ]; then note "PASS $p $k kernel rejected on $first: $(reasons "$log")"
    else note "FAIL $p $k kernel on $first: exit $rc, $named of 2 seeds rejected naming an output; $(reasons "$log" $rc)"; echo 1 >"$out/logs/$p.fail"; fi
  done
  # A recording made for one case, replayed for another: refused (exit 4), never run.
  local second; second=$(echo "$cases" | sed -n 2p)
  if [ -n "$second" ]; then
    local d=$out/logs/$p
    "$measure" correctness --problem-spec "$spec" --case "$second" --seeds 0 --replay "$d/naive-$first.launches" \
      --device-code "$out/obj/${p}_naive.o" --result-fd 3 3>"$d/refused.jsonl" >"$d/refused.stdout" 2>&1; local rc=$?
    if [ $rc = 4 ] && grep -q 'made for other args' "$d/refused.jsonl" "$d/refused.stdout"; then
      note "PASS $p recording of $first replayed as $second refused (exit 4)"
    else note "FAIL $p recording of $first replayed as $second: exit $rc; $(reasons "$d/refused.jsonl")"; echo 1 >"$out/logs/$p.fail"; fi
  fi
}

bench_item() {
  local p=$1 spec=$out/spec/$1.spec
  # The largest case: the most bytes (case_cost CASE FLOPS BYTES WORKSPACE).
  local c; c=$(awk '$1 == "case_cost" { if ($4 + 0 > best) { best = $4 + 0; name = $2 } } END { print name }' "$spec")
  record_replay "$p" naive benchmark "$c" "bench-$c" --min-samples 10 --max-time-s 3 --warmup-max-s 0.5 \
    --warmup-min-s 0.1 --throttle-pct 0; local rc=$?
  local log=$out/logs/$p/bench-$c.jsonl
  local line; line=$(grep '"type":"bench"' "$log" 2>/dev/null | tail -1)
  local median; median=$(echo "$line" | grep -o '"median_us":[0-9.e+-]*' | cut -d: -f2)
  if [ $rc = 0 ] && [ -n "$median" ] && echo "$line" | grep -q '"recheck":{[^}]*"pass":true'; then
    note "PASS $p naive benchmark $c: median $median us, $(echo "$line" | grep -o '"gbs_frac":[0-9.e+-]*\|"tflops_frac":[0-9.e+-]*\|"n":[0-9]*' | tr '\n' ' ')"
  else note "FAIL $p naive benchmark $c: exit $rc; $(echo "$line" | grep -o '"suspect_reason":"[^"]*"\|"reason":"[^"]*"' | head -3 | tr '\n' ' ')$(reasons "$log" $rc)"; fail=1; fi
}

nvidia-smi -L 2>/dev/null | tee -a "$summary"
pids=()
for p in "${problems[@]}"; do rm -f "$out/logs/$p.fail"; correctness_items "$p" & pids+=($!); done
for pid in "${pids[@]}"; do wait "$pid"; done
for p in "${problems[@]}"; do [ -f "$out/logs/$p.fail" ] && fail=1; done
for p in "${problems[@]}"; do bench_item "$p"; done   # one at a time: timing wants the GPU alone
note "$( [ $fail = 0 ] && echo PASS || echo FAIL ) gpu-problems-direct: $(grep -c '^PASS' "$summary") passed, $(grep -c '^FAIL' "$summary") failed, $(( $(date +%s) - t_start )) s"
exit $fail
