#!/usr/bin/env bash
# The benchmark's exclusivity rule on a real NVIDIA GPU. Builds as gpu-proof.sh does, starts
# kfleetd and one CUDA agent with --gpu-busy-wait 8, and submits jobs/gpu/01-correct.yaml while
# bench/gpu/busy_gpu (another process with a CUDA context and a kernel in flight) computes:
#   1. busy the whole time      -> the job ends in error: "GPU 0 is busy: ... refusing ..."
#   2. busy for the first ~5 s  -> the agent waits ("is busy with ... waiting"), then passes
#   3. busy from the moment the benchmark stage starts -> error: "... during the benchmark"
#      (best effort: the busy process must come up while the benchmark still runs)
# Prints a table; exit 0 when 1 and 2 behave, and 3 either behaves or is reported as missed.
#   scripts/gpu-exclusive-check.sh [--bin DIR] [--run-dir DIR]
# GPU only: it needs nvcc and a CUDA GPU (the busy process is a real CUDA context), so unlike the
# other gpu-*.sh scripts it has no simulated mode.
# shellcheck source=lib/usage.sh
source "$(dirname "$0")/lib/usage.sh"
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD bin="" run=$PWD/gpu-exclusive-run
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --run-dir) run=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "gpu-exclusive-check: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done
die() { echo "gpu-exclusive-check: $*" >&2; exit 2; }
if [ -z "$bin" ]; then
  bin=$(scripts/gpu-proof.sh --build-only | sed -n 's/^gpu-proof: built in .* s: //p')
fi
[ -x "$bin/kfleetd" ] || die "no kfleetd in '$bin' (build failed?)"
rm -rf "$run"; mkdir -p "$run"
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$nvcc" -O2 -o "$run/busy_gpu" bench/gpu/busy_gpu.cu || die "cannot build bench/gpu/busy_gpu.cu"

export KFLEET_TOKEN=excl-user KFLEET_ENROL_TOKEN=excl-enrol KFLEET_HARNESS_DIR=$root/kernels/harness
# shellcheck source=lib/local-cluster.sh
source scripts/lib/local-cluster.sh
start_local_cluster "$bin" "$run" --backend cuda --gpu-busy-wait 8 || die "kfleetd and agent gpu0 did not come up"
trap 'stop_local_cluster; pkill -f "$run/busy_gpu" 2>/dev/null' EXIT INT TERM
kf() { "$bin/kfleet" --no-color "$@"; }
# state TAB reason of job $1
outcome() {
  local s; s=$(kf --json status "$1" 2>/dev/null)
  local r; r=$(printf '%s' "$s" | json_field job.verdict.reason)
  [ -n "$r" ] || r=$(printf '%s' "$s" | json_field job.state_reason)
  printf '%s\t%s' "$(printf '%s' "$s" | json_field job.state)" "$r"
}
# the job's log lines from the benchmark stage (the token goes to curl on stdin, never its argv)
bench_logs() {
  printf 'Authorization: Bearer %s\n' "$KFLEET_TOKEN" | curl -s -H @- "$KFLEET_SERVER/api/v1/jobs/$1/events?limit=1000" |
    python3 -c 'import json,sys
for e in json.load(sys.stdin)["events"]:
    d = e.get("data", {})
    if e["type"] == "log" and d.get("stage") == "benchmark": print("   ", d.get("text", ""))'
}
busy() { "$run/busy_gpu" "$1" >>"$run/busy.log" 2>&1 & echo $!; }
wait_seen() {  # until NVML (nvidia-smi) lists pid $1 as a compute process
  for _ in $(seq 100); do nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -qw "$1" && return 0; sleep 0.1; done
  return 1
}
submit() { kf --json submit jobs/gpu/01-correct.yaml --force "$@" 2>>"$run/submit.err" | json_field job.id; }

nvidia-smi -L
echo "== warm-up: the job alone (builds the kernel into the cache)"
id=$(submit --wait); IFS=$'\t' read -r st why <<<"$(outcome "$id")"; echo "job $id: $st: $why"
[ "$st" = passed ] || die "the job does not pass on an idle GPU; see $run"

rows=() bad=0
echo "== 1. another process computes the whole time"
b=$(busy 60); wait_seen "$b" || echo "(busy_gpu pid $b not seen by nvidia-smi)"
id=$(submit --wait); IFS=$'\t' read -r st why <<<"$(outcome "$id")"
kill "$b" 2>/dev/null; wait "$b" 2>/dev/null
bench_logs "$id"
ok=OK; [ "$st" = error ] && [[ "$why" =~ "is busy: 1 other compute process(es) (pid $b (busy_gpu)) still there after" ]] || { ok=MISMATCH; bad=$((bad+1)); }
rows+=("1 busy throughout|error, refused after 8 s|$st|$ok|$why")

echo "== 2. another process computes for the first ~5 s"
b=$(busy 5); wait_seen "$b" || true
id=$(submit --wait); IFS=$'\t' read -r st why <<<"$(outcome "$id")"; wait "$b" 2>/dev/null
logs=$(bench_logs "$id"); echo "$logs"
ok=OK; [ "$st" = passed ] && [[ "$logs" == *"is busy with pid $b"* ]] && [[ "$logs" == *"is free after"* ]] || { ok=MISMATCH; bad=$((bad+1)); }
rows+=("2 busy for ~5 s|waits, then passed|$st|$ok|$why")

echo "== 3. another process starts while the benchmark runs"
id=$(submit)
for _ in $(seq 600); do
  printf 'Authorization: Bearer %s\n' "$KFLEET_TOKEN" | curl -s -H @- "$KFLEET_SERVER/api/v1/jobs/$id/events?limit=1000" |
    grep -q '"stage":"benchmark"' && break
  sleep 0.05
done
b=$(busy 20)
for _ in $(seq 600); do st=$(outcome "$id" | cut -f1); case "$st" in passed|rejected|error|cancelled) break ;; esac; sleep 0.1; done
IFS=$'\t' read -r st why <<<"$(outcome "$id")"; kill "$b" 2>/dev/null; wait "$b" 2>/dev/null
ok=OK
if [ "$st" = error ] && [[ "$why" == *"during the benchmark"* ]]; then :;
elif [ "$st" = passed ]; then ok="missed (busy_gpu came up after the last sample)";
else ok=MISMATCH; bad=$((bad+1)); fi
rows+=("3 busy from mid-benchmark|error, samples discarded|$st|$ok|$why")

echo; echo "== gpu-exclusive-check results (agent gpu0, --gpu-busy-wait 8)"
printf '%-26s %-28s %-8s %-10s %s\n' CASE EXPECTED ACTUAL CHECK REASON
for r in "${rows[@]}"; do IFS='|' read -r c e a o w <<<"$r"; printf '%-26s %-28s %-8s %-10s %s\n' "$c" "$e" "$a" "$o" "${w:0:170}"; done
kill -0 "${pids[1]}" 2>/dev/null && echo "agent gpu0 still running" || { echo "agent gpu0 DIED"; bad=$((bad+1)); }
echo "gpu-exclusive-check: $bad mismatch(es); logs in $run"
[ "$bad" = 0 ]
