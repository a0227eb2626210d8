#!/usr/bin/env bash
# Proves jobs on problems of the library (kernel.problem: NAME@VERSION; docs/problems.md) on an
# NVIDIA GPU: builds kfleetd, kfleet-agent and kfleet (scripts/gpu-proof.sh --build-only), starts
# kfleetd on a fresh SQLite file and one sandboxed `kfleet-agent --backend cuda`, submits every
# job of jobs/problems/expected.tsv (each problem's naive kernel must pass; a subtly wrong and a
# do-nothing kernel of each must be rejected by the correctness gate, whose reason names the
# failing output or check) and the problem exploit of jobs/exploits (23-rmsnorm-side-stream, must
# be rejected), each with `kfleet submit --wait --force`, and prints one line per job: expected
# vs got. Exits 1 on any mismatch, 2 on a setup failure.
#   scripts/gpu-problems-proof.sh [--bin DIR] [--out DIR] [--only REGEX] [--backend cuda] [--arch A]
#     --bin DIR      kfleetd/kfleet-agent/kfleet already built in DIR (skips the build)
#     --out DIR      the database, the agent's work dir, kfleetd's and the agent's logs, and each
#                    job's `kfleet status` and `kfleet logs` (default ./problems-run); --run-dir too
#     --only REGEX   only the jobs whose file matches
#     --backend B    cuda; `simulated --arch sm_90a` only tests this script (nothing runs there,
#                    so every wrong kernel "passes" and is reported as a mismatch)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD bin="" out="$root/problems-run" only=. backend=cuda arch=""
# shellcheck source=lib/options.sh
source "$root/scripts/lib/options.sh"
parse_options 2,17 --bin=bin "--out|--run-dir=out" --only=only --backend=backend --arch=arch -- "$@"
need_bins

rm -rf "$out"; mkdir -p "$out/jobs"
# kfleetd and the agent resolve problems in the same library: this checkout's.
export KFLEET_HARNESS_DIR=$root/kernels/harness KFLEET_PROBLEMS_DIR=$root/kernels/problems
# shellcheck source=lib/local-cluster.sh
source "$root/scripts/lib/local-cluster.sh"
agent_flags=(--backend "$backend" --problems-dir "$KFLEET_PROBLEMS_DIR")
[ -n "$arch" ] && agent_flags+=(--arch "$arch" --gpu-class "$arch")
start_local_cluster "$bin" "$out" "${agent_flags[@]}" || die "kfleetd and agent gpu0 did not come up"
kf() { "$bin/kfleet" --no-color "$@"; }
command -v nvidia-smi >/dev/null && nvidia-smi -L
echo "gpu-problems-proof: kfleetd $KFLEET_SERVER, agent gpu0 (--backend $backend), problems $KFLEET_PROBLEMS_DIR"
kf problems | sed 's/^/  /'

# The jobs: jobs/problems/expected.tsv, then the exploit's row of jobs/exploits/expected.tsv.
list=$out/expected.tsv
{ awk '/^[^#]/ {print "jobs/problems/" $0}' jobs/problems/expected.tsv
  awk '/^23-/ {print "jobs/exploits/" $0}' jobs/exploits/expected.tsv; } >"$list"

rows=() mismatches=0
while IFS=$'\t' read -r file want_state want_gate want_reason; do
  case "$file" in ''|'#'*) continue ;; esac
  [[ "$file" =~ $only ]] || continue
  name=$(echo "$file" | sed 's|^jobs/||; s|/job\.yaml$||; s|\.yaml$||; s|/|-|g')
  submit_expecting "$file" "$out/jobs/$name.submit.err" "$want_state" "$want_gate" "$want_reason" \
    "${file#jobs/}"
  if [ "$id" != 0 ]; then
    kf status "$id" >"$out/jobs/$name.status" 2>&1
    kf logs "$id" >"$out/jobs/$name.log" 2>&1
  fi
  [ "$ok" = OK ] || mismatches=$((mismatches + 1))
  echo "== $file: job $id, submit exit $rc after ${secs}s: $state / $gate / $reason"
done <"$list"

echo
echo "== gpu-problems-proof results ($(nvidia-smi -L 2>/dev/null | head -1), backend $backend)"
print_rows JOB 44 24 200
kill -0 "${pids[1]}" 2>/dev/null && echo "gpu-problems-proof: agent gpu0 still running after every job" ||
  { echo "gpu-problems-proof: agent gpu0 DIED"; mismatches=$((mismatches + 1)); }
echo "gpu-problems-proof: ${#rows[@]} job(s), $mismatches mismatch(es); logs in $out"
[ "${#rows[@]}" -gt 0 ] && [ "$mismatches" = 0 ]
