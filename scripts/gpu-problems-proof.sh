#!/usr/bin/env bash
# Proves on an NVIDIA GPU, through kfleetd and one sandboxed `kfleet-agent --backend cuda`, in one
# log, that the problem library is right on real data and that the exploit corpus is refused:
#   - every job of jobs/problems meant to pass (each problem's naive CUDA kernel, the Triton and
#     torch jobs) passes every case of its job, the required `stress` included (the case's time
#     is in the table: what a required case costs);
#   - every shortcut, wrong and do-nothing kernel of jobs/problems is rejected by the
#     correctness gate, its reason naming the case, the output and the check;
#   - every verdict of a problem's job carries the measuring process's check of kfleet's GPU
#     reference against its fp64 CPU reference, passed, and the cases it ran;
#   - the whole exploit corpus, C++ (jobs/exploits/expected.tsv) and Python
#     (jobs/exploits/python/expected.tsv), ends as its expected.tsv says (24 targets gfx1151 and
#     needs a compile agent with clang-19: CI proves it, tests/e2e/compile_handoff_gtest.cpp).
# Each job goes through `kfleet submit --wait --force`; the table (one row per job) and a summary
# come last. Exits 1 on any row not as expected, 2 on a setup failure.
#   scripts/gpu-problems-proof.sh [--bin DIR] [--out DIR] [--only REGEX] [--python PY]
#                                 [--no-python-corpus] [--backend cuda|simulated] [--arch A]
#                                 [--reference-timeout S]
#     --bin DIR            kfleetd/kfleet-agent/kfleet already built in DIR (skips the build)
#     --out DIR            the database, the agent's work dir, the logs, each job's `kfleet status`
#                          and `kfleet logs` (default ./problems-run); --run-dir too
#     --only REGEX         only the jobs whose file matches (e.g. 'problems/', 'exploits/2[4-7]')
#     --python PY          the interpreter with torch (CUDA) and triton for the Python corpus
#                          (default python3)
#     --no-python-corpus   leave the Python corpus out (its rows are then not proven here)
#     --backend B          cuda; `simulated --arch sm_90a` only tests this script (nothing runs
#                          there, so every wrong kernel "passes" and is reported ACCEPTED)
#     --reference-timeout S  the agent's bound on recording one of kfleet's PyTorch references
#                          (default 300: the comparisons are not what this run proves, and one
#                          torch.compile reference autotuned for over 7 minutes on an H200;
#                          scripts/gpu-versus-pytorch.sh keeps the agent's 1800)
# shellcheck source=lib/usage.sh
source "$(dirname "$0")/lib/usage.sh"
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD bin="" out="$root/problems-run" only=. backend=cuda arch="" py=python3 python_corpus=1
reference_timeout=300
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --out|--run-dir) out=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --python) py=$2; shift 2 ;;
    --no-python-corpus) python_corpus=0; shift ;;
    --backend) backend=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --reference-timeout) reference_timeout=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "gpu-problems-proof: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done
die() { echo "gpu-problems-proof: $*" >&2; exit 2; }
t_start=$(date +%s)
if [ -z "$bin" ]; then scripts/gpu-proof.sh --build-only || die "build failed"; bin=$root/build-gpu/bin; fi
for x in kfleetd kfleet-agent kfleet; do [ -x "$bin/$x" ] || die "$bin/$x is missing"; done

rm -rf "$out"; mkdir -p "$out/jobs"
# kfleetd and the agent resolve problems in the same library: this checkout's. The agent runs
# Python kernels with KFLEET_PYTHON (torch and triton).
export KFLEET_HARNESS_DIR=$root/kernels/harness KFLEET_PROBLEMS_DIR=$root/kernels/problems
KFLEET_PYTHON=$(command -v "$py" || echo "$py"); export KFLEET_PYTHON
# shellcheck source=lib/local-cluster.sh
source "$root/scripts/lib/local-cluster.sh"
agent_flags=(--backend "$backend" --problems-dir "$KFLEET_PROBLEMS_DIR" --reference-timeout "$reference_timeout")
[ -n "$arch" ] && agent_flags+=(--arch "$arch" --gpu-class "$arch")
start_local_cluster "$bin" "$out" "${agent_flags[@]}" || die "kfleetd and agent gpu0 did not come up"
kf() { "$bin/kfleet" --no-color "$@"; }
# the agent's GPU (KFLEET_GPU: a gpu-detached lane's)
gpu=$(nvidia-smi -L 2>/dev/null | sed -n "$(( ${KFLEET_GPU:-0} + 1 ))p"); [ -n "$gpu" ] || gpu="no nvidia-smi: backend $backend"
echo "gpu-problems-proof: $gpu; kfleetd $KFLEET_SERVER, agent gpu0 (--backend $backend), problems $KFLEET_PROBLEMS_DIR"
kf problems | sed 's/^/  /'
python_ok=0
if [ "$python_corpus" = 1 ]; then
  if [ "$backend" = simulated ] || "$py" -c 'import torch, triton' 2>/dev/null; then python_ok=1; fi
fi

# The jobs: jobs/problems, the C++ corpus, the Python corpus, then torch programs (jobs/torch).
list=$out/expected.tsv
{ awk -F'\t' '/^[^#]/ {print "jobs/problems/" $0}' jobs/problems/expected.tsv
  awk -F'\t' '/^[^#]/ {print "jobs/exploits/" $0}' jobs/exploits/expected.tsv
  awk -F'\t' '/^[^#]/ {print "jobs/exploits/python/" $0}' jobs/exploits/python/expected.tsv
  awk -F'\t' '/^[^#]/ {print "jobs/torch/" $0}' jobs/torch/expected.tsv; } >"$list"

torch_jobs=0 torch_ok=0
rows=() mismatches=0 skipped=0 naive=0 naive_ok=0 rejected_ok=0 rejected=0 refs=0 ref_ok=0 corpus=0 corpus_ok=0
while IFS=$'\t' read -r file want_state want_gate want_reason; do
  case "$file" in ''|'#'*) continue ;; esac
  [[ "$file" =~ $only ]] || continue
  short=${file#jobs/}; short=${short%/job.yaml}; short=${short%.yaml}
  name=$(echo "$short" | tr '/' '-')
  is_corpus=0; [[ "$file" == jobs/exploits/* ]] && is_corpus=1
  is_problem=0; grep -Eq '^  problem: (rmsnorm|softmax|rope|topk|grouped_gemm|fp8_block_gemm)@' "$file" && is_problem=1
  # Rows this machine cannot run are listed, not judged.
  why_skip=""
  grep -Eq '^target: \{gpu: gfx|^  gpu: gfx' "$file" &&
    why_skip="targets an AMD GPU and needs a compile agent with clang-19: proven in CI (tests/e2e/compile_handoff_gtest.cpp)"
  [[ "$file" == jobs/exploits/python/* ]] && [ "$python_ok" = 0 ] &&
    why_skip="the Python corpus was not run here ($py has no torch and triton, or --no-python-corpus)"
  if [ -n "$why_skip" ]; then
    skipped=$((skipped + 1))
    [ "$is_corpus" = 1 ] && corpus=$((corpus + 1))
    echo "== $file: not run: $why_skip"
    rows+=("$(printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s' "$short" "$want_state/$want_gate" "-" "-" "-" "-" "SKIP" "$why_skip")")
    continue
  fi
  t0=$(date +%s)
  res=$(kf --json submit "$file" --force --wait --kernel-lib "$root/kernels" 2>"$out/jobs/$name.submit.err"); rc=$?
  secs=$(( $(date +%s) - t0 ))
  id=$(printf '%s' "$res" | json_field job.id)
  cases="-" ref="-" kernels="-"
  if [ -n "$id" ]; then
    status=$(kf --json status "$id" 2>/dev/null)
    printf '%s\n' "$status" >"$out/jobs/$name.status.json"
    # One reading of the status: state, gate, reason, the cases the verdict lists
    # (name:ok|FAIL:seconds) and its reference check.
    IFS=$'\t' read -r state gate reason cases ref kernels < <(printf '%s' "$status" | python3 -c '
import json, sys
t = sys.stdin.read(); i = t.find("{")
job = (json.JSONDecoder().raw_decode(t[i:])[0] if i >= 0 else {}).get("job", {})
v = job.get("verdict") or {}
m = v.get("metrics") or {}
cases = " ".join("%s:%s:%ss" % (c.get("name"), "ok" if c.get("pass") else "FAIL", c.get("seconds", "?"))
                 for c in m.get("cases") or []) or "-"
r = m.get("reference_check") or {}
ref = "-" if not r else "%s %s" % ("sim" if r.get("simulated") else "ok" if r.get("pass") else "FAILED", r.get("case", "?"))
reason = (v.get("reason") or job.get("state_reason") or "").replace("\t", " ").replace("\n", " ")
ks = (m.get("kernels") or {}).get("kernels") or []
kernels = "; ".join("%s: %s%s" % (k.get("function", "?")[:48], k.get("origin", "?"),
                                  " " + " ".join(x for x in (k.get("file"), k.get("package"), k.get("how")) if x)
                                  if k.get("origin") == "library" or k.get("how") else "") for k in ks) or "-"
if ks and (m.get("kernels") or {}).get("reported_by") != "recorder":
    kernels = "NOT RECORDED (%s) %s" % ((m.get("kernels") or {}).get("reported_by", "?"), kernels)
print("\t".join([job.get("state") or "?", v.get("gate") or "-", reason or "-", cases, ref, kernels.replace("\t", " ")]))')
    kf status "$id" >"$out/jobs/$name.status" 2>&1
    kf logs "$id" >"$out/jobs/$name.log" 2>&1
  else
    # Refused before a job existed: the CLI's (or kfleetd's) error is the verdict.
    id=0 state=refused gate=submit
    reason=$(grep -v '^\s*$' "$out/jobs/$name.submit.err" | head -3 | tr '\n' ' ')
  fi
  ok=OK
  [[ "$state" =~ ^($want_state)$ ]] || ok=MISMATCH
  [[ "$gate" =~ ^($want_gate)$ ]] || ok=MISMATCH
  [[ "$reason" =~ $want_reason ]] || ok=MISMATCH
  if [ "$is_problem" = 1 ] && { [ "$state" = passed ] || [ "$gate" = correctness ]; }; then
    # A problem's job that reached its correctness stage: the reference check is in the verdict.
    refs=$((refs + 1))
    case "$ref" in ok\ *|sim\ *) ref_ok=$((ref_ok + 1)) ;; *) ok=MISMATCH; reason="no passed reference check in the verdict ($ref); $reason" ;; esac
    if [ "$want_state" = passed ]; then
      # The naive kernel passed every case, the required one included.
      naive=$((naive + 1))
      if [[ " $cases " == *" stress:ok:"* ]] && [[ "$cases" != *":FAIL:"* ]]; then naive_ok=$((naive_ok + 1))
      else ok=MISMATCH; reason="the cases it ran are not all passed with stress among them ($cases); $reason"; fi
    fi
  fi
  if { [[ "$file" == jobs/torch/* ]] || grep -q '^  language: torch' "$file"; } && [ "$want_state" = passed ]; then
    # A torch program's verdict names each kernel's origin (the recorder's report).
    torch_jobs=$((torch_jobs + 1))
    echo "   kernels of $short: $kernels"
    if [ "${kernels:--}" = - ]; then ok=MISMATCH; reason="the verdict names no kernels (metrics.kernels); $reason"
    elif [[ "$kernels" == "NOT RECORDED"* ]]; then
      ok=MISMATCH; reason="the verdict's kernels are not the recorder's report (a simulated agent's); $reason"
    elif [ "$ok" = OK ]; then torch_ok=$((torch_ok + 1)); fi
  fi
  if [ "$is_corpus" = 0 ] && [ "$want_state" = rejected ]; then
    rejected=$((rejected + 1)); [ "$ok" = OK ] && rejected_ok=$((rejected_ok + 1))
  fi
  if [ "$is_corpus" = 1 ]; then corpus=$((corpus + 1)); [ "$ok" = OK ] && corpus_ok=$((corpus_ok + 1)); fi
  if [ "$want_state" != passed ] && [ "$state" = passed ]; then ok=ACCEPTED; fi
  [ "$ok" = OK ] || mismatches=$((mismatches + 1))
  echo "== $file: job $id, submit exit $rc after ${secs}s: $state / $gate / cases $cases / reference $ref / $reason"
  rows+=("$(printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s' "$short" "$want_state/$want_gate" "$state/$gate" "$cases" "$ref" "${secs}s" "$ok" "$reason")")
done <"$list"

echo
echo "== gpu-problems-proof results ($gpu, backend $backend)"
printf '%-42s %-22s %-22s %-44s %-14s %-5s %-9s %s\n' JOB EXPECTED GOT "CASES RUN (name:result:seconds)" "REF CHECK" TIME CHECK REASON
for r in "${rows[@]}"; do
  IFS=$'\t' read -r f e a c rf s ok why <<<"$r"
  printf '%-42s %-22s %-22s %-44s %-14s %-5s %-9s %s\n' "$f" "$e" "$a" "${c:0:44}" "$rf" "$s" "$ok" "${why:0:160}"
done
kill -0 "${pids[1]}" 2>/dev/null && echo "gpu-problems-proof: agent gpu0 still running after every job" ||
  { echo "gpu-problems-proof: agent gpu0 DIED"; mismatches=$((mismatches + 1)); }
echo "gpu-problems-proof: problems' jobs meant to pass (naive CUDA, Triton, torch) passing every case with the required one: $naive_ok of $naive"
echo "gpu-problems-proof: shortcut, wrong and do-nothing kernels rejected naming case, output and check: $rejected_ok of $rejected"
echo "gpu-problems-proof: verdicts of problems' jobs with a passed GPU-vs-CPU reference check: $ref_ok of $refs"
echo "gpu-problems-proof: torch programs passing with their kernels' origins in the verdict: $torch_ok of $torch_jobs"
echo "gpu-problems-proof: exploit corpus as expected: $corpus_ok of $corpus ($skipped row(s) not run here, each saying why)"
echo "gpu-problems-proof: ${#rows[@]} job(s), $mismatches mismatch(es), $(( $(date +%s) - t_start )) s; logs in $out"
[ "${#rows[@]}" -gt 0 ] && [ "$mismatches" = 0 ]
