#!/usr/bin/env bash
# Measures how trustworthy kfleet's GPU timings and verdicts are, on a real CUDA agent:
#   (a) the same kernel as 5 separate jobs: medians within 0.5 % of each other
#   (b) the agent's median within 2 % of an independent timing (triton do_bench via ctypes,
#       bench/gpu/do_bench_attention.py) of the same kernel on the same GPU
#   (c) 10 tries each: a copy 2 % slower is `regressed`, an identical copy `same`, each verdict
#       within 30 s of submitting (which bounds the time from benchmarking to verdict)
#   (i) the same two copies judged interleaved (benchmark.interleave: A B A B rounds against
#       quality/base's own build on this agent), --itries tries each; not one of the criteria
# Prints a table; exits 1 if a criterion fails. The criteria are fixed: report, never loosen.
#   scripts/measure-quality.sh [--bin DIR] [--run-dir DIR] [--tries N] [--itries N] [--parts abci]
# Without --bin it builds first (scripts/gpu-proof.sh --build-only). --parts picks criteria, so a
# run can be split across calls (c alone first submits one quality/base as its baseline).
# Every job's timeline (submit -> lease -> each stage -> verdict seen) goes to RUN/timeline.txt.
# shellcheck source=lib/usage.sh
source "$(dirname "$0")/lib/usage.sh"
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD bin="" run="$root/quality-run" tries=10 itries=3 parts=abc
# shellcheck source=lib/options.sh
source "$root/scripts/lib/options.sh"
parse_options --bin=bin --run-dir=run --tries=tries --itries=itries --parts=parts -- "$@"
need_bins

rm -rf "$run"; mkdir -p "$run"
export KFLEET_TOKEN=quality-user KFLEET_ENROL_TOKEN=quality-enrol KFLEET_HARNESS_DIR=$root/kernels/harness
# shellcheck source=lib/local-cluster.sh
source "$root/scripts/lib/local-cluster.sh"
# shellcheck disable=SC2086  # the flags are words
start_local_cluster "$bin" "$run" ${KFLEET_QUALITY_AGENT_FLAGS:---backend cuda} || die "kfleetd and agent gpu0 did not come up"
kf() { "$bin/kfleet" --no-color "$@"; }

field() { json_field "$1" --table; }
# timeline T0 ID: one line of where a job's time went, from its run's events (agent clock, same host)
timeline() {
  local runid
  runid=$(kf --json status "$2" 2>/dev/null | python3 -c '
import json, sys
t = sys.stdin.read(); i = t.find("{"); o = json.JSONDecoder().raw_decode(t[i:])[0] if i >= 0 else {}
r = o.get("runs") or [{}]
print(r[-1].get("id", r[-1].get("run_id", 0)))' 2>/dev/null)
  kf --json logs "${runid:-0}" 2>/dev/null | python3 -c '
import json, sys
t0, job, now = float(sys.argv[1]), sys.argv[2], float(sys.argv[3])
ev = [json.loads(l) for l in sys.stdin if l.startswith("{")]
ev = [e for e in ev if "ts_ms" in e]
if not ev: print(f"job {job}: no events"); sys.exit()
first = min(e["ts_ms"] for e in ev) / 1000
st = lambda e: "%s %.2f" % (e["data"].get("stage", "?"), e["data"].get("seconds", 0))
stages = " ".join(st(e) for e in ev if e["type"] == "stage.finished")
verdict = max((e["ts_ms"] for e in ev if e["type"] == "verdict"), default=0) / 1000
print(f"job {job}: submit->first event {first - t0:.2f}s | {stages} | verdict at {verdict - t0:.2f}s, "
      f"seen by --wait at {now - t0:.2f}s")' "$1" "$2" "$3" >>"$run/timeline.txt" 2>&1
}
# submit FILE: prints "id state perf median_us delta_pct ci_low ci_high seconds"
submit() {
  local t0 t1 out id st
  t0=$(date +%s.%N)
  out=$(kf --json submit "$1" --force --wait 2>>"$run/submit.err")
  t1=$(date +%s.%N)
  local secs; secs=$(python3 -c "print(f'{$t1 - $t0:.1f}')")
  id=$(printf '%s' "$out" | field job.id)
  st=$(kf --json status "${id:-0}" 2>/dev/null)
  echo "${id:-?} $(printf '%s' "$st" | field job.state) $(printf '%s' "$st" | field job.verdict.perf)" \
       "$(printf '%s' "$st" | field job.verdict.median_us) $(printf '%s' "$st" | field job.verdict.delta_pct)" \
       "$(printf '%s' "$st" | field job.verdict.ci_low_pct) $(printf '%s' "$st" | field job.verdict.ci_high_pct) $secs"
  timeline "$t0" "${id:-0}" "$t1"
}
# costs ID: the integrity costs of a job's benchmark (from its bench.result event) to RUN/costs.txt:
# activity median, event-only median, their difference, and the refresh / re-check / replay time
costs() {
  local runid
  runid=$(kf --json status "$1" 2>/dev/null | python3 -c '
import json, sys
t = sys.stdin.read(); i = t.find("{"); o = json.JSONDecoder().raw_decode(t[i:])[0] if i >= 0 else {}
r = o.get("runs") or [{}]
print(r[-1].get("id", r[-1].get("run_id", 0)))' 2>/dev/null)
  # Without a bench.result the job's own reason says why (a benchmark that failed, a throttled
  # GPU, a busy one), so a missing median names its cause in the table.
  local why
  why=$(kf --json status "$1" 2>/dev/null | field job.verdict.reason)
  [ -n "$why" ] || why=$(kf --json status "$1" 2>/dev/null | field job.state_reason)
  kf --json logs "${runid:-0}" 2>/dev/null | python3 -c '
import json, sys
job = sys.argv[1]
ev = [json.loads(l) for l in sys.stdin if l.startswith("{")]
b = [e["data"] for e in ev if e.get("type") == "bench.result"]
if not b: print(f"{job:>4} no bench.result: {sys.argv[2]}"); sys.exit()
d = b[-1]
g = lambda k: d.get(k) if isinstance(d.get(k), (int, float)) else float("nan")
m, e = g("median_us"), g("event_median_us")
pct = 100 * (m / e - 1) if e == e and e > 0 else float("nan")
print("%4s %11s %12.2f %12.2f %+8.3f%% %9.3f %9.3f %9.3f %9.3f %8.1f %5s %s" % (
    job, d.get("timing", "-"), m, e, pct, g("overhead_s"), g("refresh_s"), g("recheck_s"),
    g("sampling_s"), g("launch_overhead_us"), d.get("inputs_read_only", "-"), d.get("n", "-")))' "$1" "$why" >>"$run/costs.txt" 2>&1
}
# fields LINE: the 8 fields of a submit line into f1..f8, "-" for any missing (a killed submit)
fields() { local a=($1); for k in 0 1 2 3 4 5 6 7; do printf -v "f$((k + 1))" '%s' "${a[$k]:--}"; done; }

fail=0 a_ok=SKIPPED b_ok=SKIPPED c_ok=SKIPPED spread=- agent_median=0 medians=() indep=0 b_diff=-
case $parts in *a*|*b*)
echo "== (a) quality/base as 5 separate jobs"
for i in 1 2 3 4 5; do
  r=$(submit jobs/gpu/quality/base.yaml); echo "  try $i: $r"; fields "$r"; medians+=("$f4"); costs "$f1"
done
spread=$(python3 -c "import sys; m=[float(x) for x in sys.argv[1:]]; print(f'{(max(m)-min(m))/min(m)*100:.3f}')" "${medians[@]}" 2>/dev/null || echo 999)
agent_median=$(python3 -c "import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))" "${medians[@]}" 2>/dev/null || echo 0)
a_ok=$(python3 -c "print('PASS' if $spread <= 0.5 else 'FAIL')")
;; esac

case $parts in *b*)
echo "== (b) independent timing: triton do_bench on the same source (KFLEET_FAULT=6, SLOW_PCT=0)"
nvcc=${KFLEET_NVCC:-/usr/local/cuda/bin/nvcc}
"$nvcc" -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode=arch=compute_90a,code=sm_90a \
  -I"$root/kernels/harness/include" -DKFLEET_FAULT=6 -DKFLEET_SLOW_PCT=0 \
  kernels/tests/gpu/attention_faults.cu -o "$run/attention.so" || die "nvcc failed for the do_bench library"
python3 bench/gpu/do_bench_attention.py "$run/attention.so" 4 16 500 64 3 | tee "$run/do_bench.txt"
indep=$(python3 -c '
import json, statistics, sys
v = [json.loads(l)["value"] for l in open(sys.argv[1]) if l.startswith("{")]
print(statistics.median(v) if v else 0)' "$run/do_bench.txt")
b_diff=$(python3 -c "print(f'{($agent_median/$indep-1)*100:+.3f}' if $indep > 0 else 'nan')")
b_ok=$(python3 -c "print('PASS' if $indep > 0 and abs($agent_median/$indep-1)*100 <= 2 else 'FAIL')")
;; esac

same_ok=0 reg_ok=0 slowest=0 rows=()
case $parts in *c*)
if [ ${#medians[@]} = 0 ]; then
  echo "== (c) baseline: one quality/base job"
  r=$(submit jobs/gpu/quality/base.yaml); echo "  base: $r"
fi
echo "== (c) $tries tries: identical copy (expect same) and +2 % copy (expect regressed) vs quality/base"
for i in $(seq "$tries"); do
  for kind in same slow2; do
    r=$(submit "jobs/gpu/quality/$kind.yaml"); fields "$r"
    want=$([ "$kind" = same ] && echo same || echo regressed)
    ok=$([ "$f3" = "$want" ] && echo OK || echo WRONG)
    # A verdict must come within 30 s of submitting (build cache hit, correctness, benchmark).
    late=$(python3 -c "print(1 if float('${f8/-/999}') > 30 else 0)")
    [ "$late" = 1 ] && ok="$ok-LATE"
    [ "$ok" = OK ] && { [ "$kind" = same ] && same_ok=$((same_ok + 1)) || reg_ok=$((reg_ok + 1)); }
    slowest=$(python3 -c "print(max($slowest, float('${f8/-/999}')))")
    rows+=("$(printf '%-4s %-6s %-10s %-10s %10s %8s %18s %7ss %s' "$i" "$kind" "$want" "$f3" "$f4" "$f5" "[$f6, $f7]" "$f8" "$ok")")
    echo "  ${rows[-1]}"
  done
done
c_ok=$([ "$same_ok" = "$tries" ] && [ "$reg_ok" = "$tries" ] && echo PASS || echo FAIL)
;; esac

i_same=0 i_reg=0 irows=()
case $parts in *i*)
if [ ${#medians[@]} = 0 ] && [ -z "$(printf '%s' "$parts" | tr -cd c)" ]; then
  echo "== (i) baseline: one quality/base job"
  r=$(submit jobs/gpu/quality/base.yaml); echo "  base: $r"
fi
echo "== (i) $itries tries, interleaved: identical copy (expect same) and +2 % copy (expect regressed)"
for i in $(seq "$itries"); do
  for kind in same slow2; do
    r=$(submit "jobs/gpu/quality/$kind-interleaved.yaml"); fields "$r"
    want=$([ "$kind" = same ] && echo same || echo regressed)
    rounds=$(kf --json status "${f1:-0}" 2>/dev/null | field job.verdict.metrics.rounds)
    ok=$([ "$f3" = "$want" ] && echo OK || echo WRONG)
    [ "$ok" = OK ] && { [ "$kind" = same ] && i_same=$((i_same + 1)) || i_reg=$((i_reg + 1)); }
    irows+=("$(printf '%-4s %-6s %-10s %-10s %10s %8s %18s %7ss %6s %s' "$i" "$kind" "$want" "$f3" "$f4" "$f5" "[$f6, $f7]" "$f8" "$rounds" "$ok")")
    echo "  ${irows[-1]}"
  done
done
;; esac

echo
echo "== measure-quality results ($(nvidia-smi -L 2>/dev/null | head -1))"
echo "(a) 5 jobs of quality/base: medians ${medians[*]} us; spread ${spread}% (limit 0.5%): $a_ok"
echo "(b) agent median ${agent_median} us vs do_bench ${indep} us: ${b_diff}% (limit 2%): $b_ok"
echo "(c) same: $same_ok/$tries, regressed: $reg_ok/$tries, slowest verdict ${slowest}s (limit 30 s): $c_ok"
echo "    try kind   expected   verdict    median_us  delta%       CI of delta%    time  check"
for r in "${rows[@]}"; do echo "    $r"; done
if [ ${#irows[@]} -gt 0 ]; then
  echo "(i) interleaved: same: $i_same/$itries, regressed: $i_reg/$itries"
  echo "    try kind   expected   verdict    median_us  delta%       CI of delta%    time rounds check"
  for r in "${irows[@]}"; do echo "    $r"; done
fi
if [ -s "$run/costs.txt" ]; then
  echo "== integrity costs per job (last process of each pooled benchmark; seconds)"
  echo " job      timing  median_us  event_med_us  act/event  overhead_s refresh_s recheck_s sampling_s launch_ovh_us ro  n"
  cat "$run/costs.txt"
fi
echo "== where each job's time went ($run/timeline.txt)"
cat "$run/timeline.txt" 2>/dev/null
for x in $a_ok $b_ok $c_ok; do [ "$x" = FAIL ] && fail=1; done
exit $fail
