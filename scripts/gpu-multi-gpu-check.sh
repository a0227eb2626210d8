#!/usr/bin/env bash
# GPU slots on a real multi-GPU host. Builds as gpu-proof.sh does, starts kfleetd and one
# kfleet-agent per GPU (--gpu N --host-id H), then with one job (default jobs/gpu/01-correct.yaml):
#   1. two jobs at once, one per GPU: their runs overlap in time, each names its own GPU (UUID,
#      PCI bus id) on every stage, and nvidia-smi sees each harness process on that GPU only,
#      with CUDA_VISIBLE_DEVICES=<that GPU's UUID> in its environment
#   2. a host-exclusive job submitted while both GPUs are busy: it waits for the host
#      (waits_for: host) and runs with the other GPU idle
#   3. measurement quality: the kernel run alone (the other GPU idle) and on both GPUs at once,
#      each ROUNDS times: medians, within-run CV and the run-to-run spread of the medians
# Prints the tables; exit 0 when 1 and 2 hold (3 is reported, not judged).
#   scripts/gpu-multi-gpu-check.sh [--bin DIR] [--run-dir DIR] [--gpus N] [--rounds N]
#                                  [--backend cuda|simulated] [--job FILE]
#     --gpus N              GPUs to use (default: all nvidia-smi lists; 1 shows pinning only)
#     --backend simulated   tests this script without GPUs: a simulated N-GPU host (--sim-gpus)
#     --job FILE            the job to run (its `benchmark:` a one-line {...} map); e.g.
#                           jobs/gpu/multi-gpu-fa-s512.yaml, a 7 µs kernel, where sharing a host
#                           would show sooner than in the 9.6 ms reference kernel
# shellcheck source=lib/usage.sh
source "$(dirname "$0")/lib/usage.sh"
set -uo pipefail
start=$PWD
cd "$(dirname "$0")/.." || exit 2
root=$PWD bin="" run=$PWD/gpu-multi-run backend=cuda gpus="" rounds=3 job=jobs/gpu/01-correct.yaml
# shellcheck source=lib/options.sh
source "$root/scripts/lib/options.sh"
parse_options --bin=bin --run-dir=run --gpus=gpus --rounds=rounds --backend=backend --job=job -- "$@"
case $backend in cuda|simulated) ;; *) die "--backend must be cuda or simulated" ;; esac
case $job in /*) ;; *) [ -f "$start/$job" ] && job=$start/$job ;; esac  # else from the clone
[ -f "$job" ] || die "no job file '$job'"
grep -q '^benchmark: {' "$job" || die "$job: its benchmark: must be a one-line {...} map (host_exclusive is added there)"
job=$(cd "$(dirname "$job")" && pwd)/$(basename "$job")
if [ -z "$gpus" ]; then
  if [ "$backend" = cuda ]; then gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU'); else gpus=2; fi
fi
[ "${gpus:-0}" -ge 1 ] || die "no GPU found (nvidia-smi -L lists none); --backend simulated tests this script without one"
[ "$gpus" -ge 2 ] || echo "gpu-multi-gpu-check: WARNING: 1 GPU only: this shows the pinning and the host-exclusive wait, not jobs on several GPUs at once"
if [ -z "$bin" ]; then
  bin=$(scripts/gpu-proof.sh --build-only | sed -n 's/^gpu-proof: built in .* s: //p')
fi
for x in kfleetd kfleet-agent kfleet; do [ -x "$bin/$x" ] || die "no $x in '$bin' (build failed?)"; done
rm -rf "$run"; mkdir -p "$run/jobs"
export KFLEET_HARNESS_DIR=$root/kernels/harness
# The jobs are copied out of the clone, so `lib:` sources need the library named.
export KFLEET_KERNEL_LIB=${KFLEET_KERNEL_LIB:-$root/kernels}
host=$(hostname)
# shellcheck source=lib/local-cluster.sh
source scripts/lib/local-cluster.sh  # json_field, random_token
# Fresh random tokens, handed to each process through its environment, never its argv.
export KFLEET_TOKEN KFLEET_ENROL_TOKEN
KFLEET_TOKEN=$(random_token kft_)
KFLEET_ENROL_TOKEN=$(random_token kfe_)
kf() { "$bin/kfleet" --no-color "$@"; }
report() { python3 scripts/lib/multi_gpu_report.py "$@"; }

pids=()
stop_all() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap stop_all EXIT INT TERM
KFLEET_ADMIN_TOKEN="$KFLEET_TOKEN" "$bin/kfleetd" --listen 127.0.0.1:0 --port-file "$run/port" \
  --db "$run/kfleet.db" >"$run/kfleetd.log" 2>&1 &
pids+=($!)
for _ in $(seq 200); do [ -s "$run/port" ] && break; sleep 0.1; done
[ -s "$run/port" ] || die "kfleetd did not start (log: $run/kfleetd.log)"
export KFLEET_SERVER="http://127.0.0.1:$(cat "$run/port")"
agent_flags=(--backend "$backend")
[ "$backend" = simulated ] && agent_flags+=(--sim-gpus "$gpus" --arch sm_90a --gpu-class H200)
for ((g = 0; g < gpus; g++)); do
  "$bin/kfleet-agent" --server "$KFLEET_SERVER" --name "gpu$g" --gpu "$g" --host-id "$host" \
    --work-dir "$run/agent$g" "${agent_flags[@]}" >"$run/agent$g.log" 2>&1 &
  pids+=($!)
done
for _ in $(seq 300); do
  [ "$(kf --json agents 2>/dev/null | grep -o '"gpu[0-9]*"' | sort -u | wc -l)" -ge "$gpus" ] && break
  sleep 0.1
done
kf agents
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,uuid,pci.bus_id,name --format=csv

# The job as given, and the same job marked host-exclusive.
cp "$job" "$run/jobs/job.yaml"
# Section 2's jobs keep every GPU busy until the host-exclusive one is sent (the same job).
cp "$job" "$run/jobs/busy.yaml"
sed 's/^\(name: .*\)/\1-exclusive/; s/^benchmark: {/benchmark: {host_exclusive: true, /' "$job" >"$run/jobs/exclusive.yaml"
grep -q 'host_exclusive: true' "$run/jobs/exclusive.yaml" || die "could not write the host-exclusive job"
if [ "$backend" = simulated ]; then
  for f in "$run"/jobs/*.yaml; do
    grep -q '^simulate:' "$f" || printf 'simulate: {time_us: 50, stage_ms: 800}\n' >>"$f"
  done
  # Simulated stages take what the job says: the busy ones long enough that the exclusive job
  # is sent while they still run, however slowly the submits go on a loaded machine.
  sed -i 's/^simulate: {time_us: 50, stage_ms: 800}$/simulate: {time_us: 50, stage_ms: 4000}/' "$run/jobs/busy.yaml"
fi
submit() { kf --json submit "$1" --force 2>>"$run/submit.err" | python3 -c '
import json, sys
t = sys.stdin.read(); i = t.find("{")
print(json.JSONDecoder().raw_decode(t[i:])[0]["job"]["id"] if i >= 0 else "")'; }
# Every id must be a number: a refused submit stops the check here rather than waiting on "".
need_ids() {
  local id
  for id in "$@"; do
    [[ $id =~ ^[0-9]+$ ]] || { tail -5 "$run/submit.err" >&2; die "a submit failed (above; all: $run/submit.err)"; }
  done
}
state_of() { kf --json status "$1" 2>/dev/null | json_field job.state; }
wait_done() {  # until every job id given is terminal
  for id in "$@"; do
    for _ in $(seq 1800); do
      case $(state_of "$id") in passed|rejected|error|cancelled) break ;; esac
      sleep 0.1
    done
  done
}
wait_running() {  # until every job id given holds a lease
  for id in "$@"; do
    for _ in $(seq 600); do
      case $(state_of "$id") in leased|building|gating|benchmarking) break ;; passed|rejected|error|cancelled) return 1 ;; esac
      sleep 0.1
    done
  done
}
# Samples which GPU each compute process is on, and the GPU its environment pins it to.
sample_apps() {
  command -v nvidia-smi >/dev/null || return 0
  while :; do
    nvidia-smi --query-compute-apps=pid,gpu_uuid,process_name --format=csv,noheader 2>/dev/null |
      while IFS=', ' read -r pid uuid name; do
        pin=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep '^CUDA_VISIBLE_DEVICES=' | cut -d= -f2)
        echo "$pid $uuid ${name##*/} pinned=${pin:-none}"
      done
    sleep 0.2
  done >>"$run/apps.log" 2>/dev/null
}

bad=0
echo; echo "== warm-up: one job per GPU (each agent builds the kernel into its cache)"
warm=(); for ((g = 0; g < gpus; g++)); do warm+=("$(submit "$run/jobs/job.yaml")"); done
need_ids "${warm[@]}"; wait_done "${warm[@]}"; report rows "${warm[@]}"

echo; echo "== 1. $gpus jobs at once, one per GPU"
sample_apps & sampler=$!
both=(); for ((g = 0; g < gpus; g++)); do both+=("$(submit "$run/jobs/job.yaml")"); done
need_ids "${both[@]}"
wait_done "${both[@]}"
kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
report rows "${both[@]}" | tee "$run/both.txt"
python3 - "$run/both.txt" "$gpus" <<'EOF' || bad=$((bad + 1))
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
n = int(sys.argv[2])
ok = len(rows) == n and all(r[1] == "passed" for r in rows)
slots, uuids = {r[2] for r in rows}, {r[3] for r in rows}
start, end = max(int(r[5]) for r in rows), min(int(r[6]) for r in rows)
print(f"  passed: {ok}; slots {sorted(slots)}; distinct GPU UUIDs {len(uuids)}; "
      f"every stage named one GPU: {all(r[13] == '1' for r in rows)}; "
      f"all {n} runs overlapped for {max(0, end - start)} ms")
ok = ok and len(slots) == n and len(uuids) == n and start < end and all(r[13] == "1" for r in rows)
print("  CHECK 1:", "OK" if ok else "MISMATCH")
sys.exit(0 if ok else 1)
EOF
if [ -s "$run/apps.log" ]; then
  echo "  compute processes seen by nvidia-smi (pid, GPU UUID, name, CUDA_VISIBLE_DEVICES):"
  grep -v '^$' "$run/apps.log" | sort -u | sed 's/^/    /'
  # Every pinned process ran on exactly the GPU it was pinned to. The pin is the last field: a
  # name can hold spaces ("[No data]" once a process has exited, when its environ is gone too).
  awk '$NF != "pinned=none" { split($NF, p, "="); if (p[2] != $2) bad++ } END { exit bad > 0 }' "$run/apps.log" ||
    { echo "  a harness ran on a GPU other than its pinned one: MISMATCH"; bad=$((bad + 1)); }
  # And each GPU of check 1 was seen running a harness pinned to it.
  for u in $(awk '{ print $4 }' "$run/both.txt"); do
    grep -q " $u .* pinned=$u\$" "$run/apps.log" ||
      { echo "  no harness pinned to $u was seen on it: MISMATCH"; bad=$((bad + 1)); }
  done
fi

echo; echo "== 2. a host-exclusive job while every GPU is busy"
busy=(); for ((g = 0; g < gpus; g++)); do busy+=("$(submit "$run/jobs/busy.yaml")"); done
need_ids "${busy[@]}"
busy_first=1
wait_running "${busy[@]}" || { busy_first=0; echo "  (the busy jobs finished before the exclusive one was sent)"; }
excl=$(submit "$run/jobs/exclusive.yaml"); need_ids "$excl"
wait_done "${busy[@]}" "$excl"
report rows "${busy[@]}" "$excl" | tee "$run/excl.txt"
report waits "$excl" | tee "$run/excl-waits.txt"
python3 - "$run/excl.txt" "$busy_first" "$(grep -c 'waits_for=host' "$run/excl-waits.txt")" <<'EOF' || bad=$((bad + 1))
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
x, others = rows[-1], rows[:-1]
alone = all(int(o[6]) < int(x[5]) or int(x[6]) < int(o[5]) for o in others)
waited = int(sys.argv[3]) > 0
# Sent while the host was busy, it must have said it waits for the host.
ok = x[1] == "passed" and x[12] == "True" and alone and (waited or sys.argv[2] == "0")
print(f"  exclusive job {x[0]}: {x[1]}, host_exclusive={x[12]}, ran alone: {alone}, "
      f"waited for the host: {waited}")
print("  CHECK 2:", "OK" if ok else "MISMATCH")
sys.exit(0 if ok else 1)
EOF

echo; echo "== 3. measurement quality: alone vs on all $gpus GPUs at once ($rounds rounds each)"
: >"$run/alone.txt"; : >"$run/together.txt"
for ((r = 1; r <= rounds; r++)); do
  id=$(submit "$run/jobs/job.yaml"); need_ids "$id"; wait_done "$id"; report rows "$id" >>"$run/alone.txt"
  ids=(); for ((g = 0; g < gpus; g++)); do ids+=("$(submit "$run/jobs/job.yaml")"); done
  need_ids "${ids[@]}"; wait_done "${ids[@]}"; report rows "${ids[@]}" >>"$run/together.txt"
done
python3 - "$run/alone.txt" "$run/together.txt" <<'EOF'
import statistics, sys
def load(p): return [l.split() for l in open(p) if l.strip()]
def summary(name, rows):
    med = [float(r[7]) for r in rows if r[1] == "passed" and float(r[7]) > 0]
    cv = [float(r[11]) for r in rows if r[1] == "passed" and float(r[7]) > 0]
    iqr = [(float(r[10]) - float(r[9])) / float(r[7]) * 100 for r in rows if r[1] == "passed" and float(r[7]) > 0]
    if not med:
        print(f"  {name:<22} no passed runs"); return
    spread = (max(med) - min(med)) / min(med) * 100
    print(f"  {name:<22} {len(med):>4} {statistics.median(med):>12.3f} {spread:>14.3f} "
          f"{statistics.median(cv):>14.3f} {statistics.median(iqr):>16.3f}")
alone, together = load(sys.argv[1]), load(sys.argv[2])
print(f"  {'':<22} {'runs':>4} {'median_us':>12} {'median spread%':>14} {'within-run CV%':>14} {'(p90-p10)/median%':>16}")
summary("alone (other GPUs idle)", alone)
summary("all GPUs at once", together)
for slot in sorted({r[2] for r in together}):
    summary(f"  at once, GPU {slot}", [r for r in together if r[2] == slot])
print("  per run: id state slot uuid pci start_ms end_ms median_us stdev_us p10_us p90_us cv_pct exclusive gpus_named")
for tag, rows in (("alone", alone), ("together", together)):
    for r in rows: print(f"    {tag:<8} " + " ".join(r))
EOF

for ((g = 1; g <= gpus; g++)); do
  kill -0 "${pids[$g]}" 2>/dev/null || { echo "agent gpu$((g - 1)) DIED"; bad=$((bad + 1)); }
done
echo "gpu-multi-gpu-check: $bad mismatch(es) (backend $backend, $gpus GPUs); logs in $run"
[ "$bad" = 0 ]
