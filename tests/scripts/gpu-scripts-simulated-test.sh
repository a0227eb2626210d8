#!/usr/bin/env bash
# The GPU scripts run for real only on lent GPU machines; this runs each one that can against
# the simulated backend, so a missing token, a renamed flag or a changed answer shows up in CI.
# What a simulated run can check is the script's own plumbing (it builds nothing, times
# nothing): each must reach its table, read every job back through the API, and judge it.
#   gpu-proof.sh           8 jobs, a table row each; the two correct kernels OK; the agent alive
#   gpu-profile-check.sh   both jobs' profile events read back (with the token) and checked;
#                          under KFLEET_GPU=1 (a gpu-detached.sh lane) its agent is given --gpu 1
#   gpu-exploits.sh        the control OK, each exploit reported ACCEPTED (nothing runs, so all
#                          "pass"): the script must say so and fail; and the jobs with shell in
#                          a define, a flag or an entry refused at submit, as expected
#   gpu-problems-proof.sh  two problems' jobs (naive, wrong, do-nothing, shortcuts) and corpus
#                          entries of each kind (C++, a problem's, HIP, Python): a table row
#                          each; the naive kernels OK with every case and the (simulated)
#                          reference check in their verdicts, the HIP entry not run here and
#                          saying why, the rest ACCEPTED
#   gpu-suite-campaigns.sh both campaigns to their verdicts
#   gpu-versus-pytorch.sh  8 jobs twice, each verdict with its (simulated) comparisons with
#                          PyTorch: timed on the first run, from the agent's cache on the second;
#                          the campaign's fast_p; under a TERM to its group it stops, says so
#                          and leaves no kfleetd
#   gpu-python-proof.sh    the Triton campaign through kfleet submit and through kfleet mcp
#                          (JSON-RPC over stdio): each step's verdict, bn16 rejected, both
#                          campaigns' current best, kept wins and rejections printed; run from a
#                          copy of the checkout whose files are removed mid-run
# gpu-multi-gpu-check.sh has its own test; gpu-exclusive-check.sh needs a real CUDA context.
# Usage: gpu-scripts-simulated-test.sh KFLEETD KFLEET_AGENT KFLEET
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
script_test_setup gpu-scripts "$@"

# run NAME WANT_RC SCRIPT ARGS...: runs it with a 240 s limit, keeps its output in $tmp/NAME.log
run() {
  local name=$1 want=$2; shift 2
  timeout 240 "$@" --bin "$tmp/bin" --run-dir "$tmp/$name" >"$tmp/$name.log" 2>&1
  local rc=$?
  echo "== $name: exit $rc"; tail -15 "$tmp/$name.log"
  [ "$rc" = "$want" ] || bad "$name exited $rc, want $want (124: it hung)"
}
has() { grep -qE -- "$2" "$tmp/$1.log" || bad "$1: no line matching '$2'"; }

# Every row of jobs/gpu/expected.tsv runs; faults the simulated agent cannot make are mismatches.
run proof 1 "$root/scripts/gpu-proof.sh" --backend simulated --arch sm_90a
has proof '^01-correct\.yaml +passed/- +passed/- .* OK '
has proof '^08-correct-after-faults\.yaml +passed/- +passed/- .* OK '
[ "$(grep -cE '^0[1-8]-[a-z-]+\.yaml ' "$tmp/proof.log")" = 8 ] || bad "proof: not 8 table rows"
has proof 'agent gpu0 still running after every job'

run profile 0 "$root/scripts/gpu-profile-check.sh" --backend simulated
has profile 'passing job: submit rc=0 \(want 0\) profile rc=0 \| rejected job: submit rc=1 \(want 1\) profile rc=0'
[ "$(grep -c 'profile metric values stored: True' "$tmp/profile.log")" = 2 ] || bad "profile: not both jobs' values"
# A lane of gpu-detached.sh (KFLEET_GPU=G) starts the local fleet's agent on GPU G: the simulated
# host has one GPU, so G=1 is refused by the agent, naming the flag it was given.
KFLEET_GPU=1 run lane 2 "$root/scripts/gpu-profile-check.sh" --backend simulated
grep -q -- '--gpu 1: backend simulated found 1 GPU' "$tmp/lane/agent.log" || bad "KFLEET_GPU=1 did not reach the agent as --gpu 1"

# The honest control and three exploits are enough to exercise the script's reads and table.
run exploits 1 "$root/scripts/gpu-exploits.sh" --backend simulated --only '^0[0-3]-'
has exploits '^00-honest-control +passed/- +passed/- .* OK '
has exploits '^gpu-exploits: 3 exploit\(s\) accepted, 3 job\(s\) not as expected'

# Shell in a define, a flag or an entry: refused by the CLI before a job exists, and the
# script reports each as refused at submit, as expected: nothing accepted, every row as expected.
run refused 0 "$root/scripts/gpu-exploits.sh" --backend simulated --only '^2[0-2]-'
has refused '^20-define-shell-substitution +refused/submit +refused/submit .* OK +.*kernel\.defines\.TILE'
has refused '^21-flag-shell-substitution +refused/submit +refused/submit .* OK '
has refused '^22-entry-shell-substitution +refused/submit +refused/submit .* OK '
has refused '^gpu-exploits: 0 exploit\(s\) accepted, 0 job\(s\) not as expected'

# The problem library's jobs and the corpus: kfleetd and the CLI take every one (each naming
# the required case); nothing runs here, so the naive kernels pass with every case and a
# simulated reference check in their verdicts, and each wrong, do-nothing, shortcut and exploit
# job "passes" too: the script must say ACCEPTED for each and fail. The HIP entry (24) needs a
# compile agent and is listed as not run, saying why.
run problems 1 "$root/scripts/gpu-problems-proof.sh" --backend simulated --arch sm_90a \
  --only 'problems/(rmsnorm|topk)|exploits/(00-|2[3-7]-)|python/p1[56]-'
has problems '^problems/rmsnorm +passed/- +passed/- +small:ok:.* +sim small .* OK '
has problems '^problems/topk +passed/- +passed/- .* OK '
has problems '^problems/topk-nothing +rejected/correctness +passed/- .* ACCEPTED '
grep -qE '^problems/softmax' "$tmp/problems.log" && bad "problems: --only let softmax through"
has problems '^problems/rmsnorm-fp16_sum +rejected/correctness +passed/- .* ACCEPTED '
has problems '^exploits/23-rmsnorm-side-stream +rejected/correctness +passed/- .* ACCEPTED '
has problems '^exploits/24-hip-lds-over-limit +rejected/resources +- .* SKIP +targets an AMD GPU'
has problems '^exploits/python/p16-lazy-output +rejected/correctness +passed/- .* ACCEPTED '
# A torch job on a problem (rmsnorm as torch ops) must name its kernels' origins, which only a
# real recording has: here the simulated agent's report (marked so) is a mismatch.
has problems '^problems/rmsnorm-torch +passed/- +passed/- .* MISMATCH +the verdict.s kernels are not the recorder.s report'
has problems 'kernels of problems/rmsnorm-torch: NOT RECORDED \(simulated\)'
has problems '^problems/topk-torch +passed/- +passed/- .* MISMATCH +the verdict.s kernels are not the recorder.s report'
has problems '^gpu-problems-proof: problems. jobs meant to pass \(naive CUDA, Triton, torch\) passing every case with the required one: 5 of 5'
has problems '^gpu-problems-proof: verdicts of problems.* reference check: 17 of 17'
has problems '^gpu-problems-proof: torch programs passing with their kernels. origins in the verdict: 0 of 2'
has problems '^gpu-problems-proof: 21 job\(s\), 16 mismatch\(es\)'

run versus 0 "$root/scripts/gpu-versus-pytorch.sh" --backend simulated --arch sm_90a
has versus '^problems-rmsnorm +1 +llama3_8b .*x \[.*timed.*x \[.*timed .* OK$'
has versus '^problems-rmsnorm +2 +llama3_8b .*cached.*cached .* OK$'
has versus '^gpu-01-correct +2 +mission .* OK$'
has versus '^scaled-mm-cuda-suite +2 +n4096 .* OK$'
[ "$(grep -cE ' OK$' "$tmp/versus.log")" = 16 ] || bad "versus: not 16 OK rows"
has versus '^fast_1 +eager [0-9]+/16 '
has versus '^gpu-versus-pytorch: 16 run\(s\), 0 failure\(s\)'
# --keep-cache: the agent's build cache (its timed references) outlives the run, so a run split
# by --only over several calls of a GPU machine ends reading every reference; without it, gone.
mkdir -p "$tmp/versus/agent/build-cache" && echo kept >"$tmp/versus/agent/build-cache/marker"
timeout 240 "$root/scripts/gpu-versus-pytorch.sh" --backend simulated --arch sm_90a --only rmsnorm \
  --keep-cache --bin "$tmp/bin" --run-dir "$tmp/versus" >"$tmp/versus-keep.log" 2>&1 || bad "versus --keep-cache: exit $?"
[ "$(cat "$tmp/versus/agent/build-cache/marker" 2>/dev/null)" = kept ] || bad "versus --keep-cache lost the cache"
has versus-keep "build cache of the last run kept"
has versus-keep '^gpu-versus-pytorch: 2 run\(s\), 0 failure\(s\)'
ls "$tmp"/versus.cache.* >/dev/null 2>&1 && bad "versus --keep-cache left its holding folder"
timeout 240 "$root/scripts/gpu-versus-pytorch.sh" --backend simulated --arch sm_90a --only rmsnorm \
  --reference-timeout 120 --bin "$tmp/bin" --run-dir "$tmp/versus" >"$tmp/versus-fresh.log" 2>&1 ||
  bad "versus again (--reference-timeout 120): exit $?"
has versus-fresh '^gpu-versus-pytorch: 2 run\(s\), 0 failure\(s\)'  # the agent took the flag
[ -e "$tmp/versus/agent/build-cache/marker" ] && bad "versus without --keep-cache kept the cache"

# A time limit's TERM to the whole group (as `timeout` sends it) while a job is in flight: the
# script stops there, says so, exits 143 and leaves no kfleetd; it does not go on to fail every
# later job against the kfleetd the signal ended (an H200 run printed "not submitted" and
# "agent gpu0 DIED" for a reference that was only slow).
setsid "$root/scripts/gpu-versus-pytorch.sh" --backend simulated --arch sm_90a --only rmsnorm \
  --bin "$tmp/bin" --run-dir "$tmp/versus-sig" >"$tmp/versus-sig.log" 2>&1 &
sig_pid=$!
for _ in $(seq 600); do grep -q '^  1 GPU(s)' "$tmp/versus-sig.log" 2>/dev/null && break; sleep 0.1; done
kill -TERM -- "-$sig_pid"
wait "$sig_pid"; rc=$?
echo "== versus-sig: exit $rc"; tail -5 "$tmp/versus-sig.log"
[ "$rc" = 143 ] || bad "versus under TERM exited $rc, want 143"
has versus-sig '^gpu-versus-pytorch.sh: stopped by SIGTERM after [0-9]+ s; kfleetd and the agent stopped'
grep -q 'cannot reach kfleetd\|not submitted\|DIED' "$tmp/versus-sig.log" && bad "versus went on after TERM"
pgrep -f "$tmp/versus-sig/kfleet.db" >/dev/null && bad "versus left its kfleetd running after TERM"

# gpu-torch-proof.sh has no simulated backend: its dry run checks its inputs, and without --out
# it writes nothing into the checkout (it once left ./torch-proof there).
had=$(ls -d "$root/torch-proof" 2>/dev/null)
(cd "$root" && scripts/gpu-torch-proof.sh --dry-run >"$tmp/torch-dry.log" 2>&1) || bad "gpu-torch-proof --dry-run failed"
has torch-dry 'gpu-torch-proof: dry run OK'
[ -z "$had" ] && [ -e "$root/torch-proof" ] && bad "gpu-torch-proof --dry-run wrote $root/torch-proof"
# --only is matched from the start of a check's name: 'triton' is the triton part, not the
# launches part's zero-then-triton; a regex that selects nothing stops before any work.
(cd "$root" && scripts/gpu-torch-proof.sh --dry-run --only triton,refs:topk >"$tmp/torch-only.log" 2>&1) ||
  bad "gpu-torch-proof --dry-run --only failed"
has torch-only '^selected by --only: triton:softmax triton:rmsnorm refs:topk:eager refs:topk:compile$'
(cd "$root" && scripts/gpu-torch-proof.sh --only softmax --out "$tmp/torch-none" >"$tmp/torch-none.log" 2>&1); rc=$?
[ "$rc" = 2 ] || bad "gpu-torch-proof --only softmax exited $rc, want 2"
has torch-none "--only 'softmax' selects no check"
[ -e "$tmp/torch-none" ] && bad "gpu-torch-proof --only softmax made its --out folder before refusing"

run campaigns 0 "$root/scripts/gpu-suite-campaigns.sh" --backend simulated
has campaigns 'gpu-suite-campaigns: 0 unexpected outcome'
has campaigns '== kfleet campaign show fp8-sdpa-stage3'

# From a copy of the checkout whose jobs/, kernels/ and binaries are removed once kfleetd is up,
# as a device call re-syncing the checkout did on the H200 (2026-11-28): the run works on its own
# copy under --out and must not notice.
mkdir -p "$tmp/repo" "$tmp/pybin"
cp -a "$root/scripts" "$root/kernels" "$root/jobs" "$root/bench" "$tmp/repo/"
cp -P "$tmp/bin/"* "$tmp/pybin/"
( for _ in $(seq 600); do [ -s "$tmp/python/fleet/port" ] && break; sleep 0.1; done
  rm -rf "$tmp/repo/jobs" "$tmp/repo/kernels" "$tmp/repo/bench" "$tmp/pybin" ) &
yank=$!
timeout 240 "$tmp/repo/scripts/gpu-python-proof.sh" --backend simulated --bin "$tmp/pybin" \
  --run-dir "$tmp/python" --only campaign:cli,campaign:mcp >"$tmp/python.log" 2>&1
rc=$?
wait "$yank"
echo "== python: exit $rc"; tail -15 "$tmp/python.log"
[ "$rc" = 0 ] || bad "python exited $rc, want 0 (124: it hung)"
[ -e "$tmp/repo/jobs" ] && bad "python: the checkout's jobs/ was not removed during the run"
for via in cli mcp; do
  has python "^campaign:$via:baseline +passed +OK "
  has python "^campaign:$via:step2-triton-bn64 +judged on performance +OK +passed improved"
  has python "^campaign:$via:step3-triton-bn16 +rejected \\(performance\\) +OK "
done
has python 'campaign fa-s512-v3-mcp \(kfleet_get_campaign over MCP'
has python 'rejected: +fa-s512-v3-mcp/triton-bn16'
has python '^gpu-python-proof: 0 check\(s\) not as expected'
has python '^gpu-python-proof: took [0-9]+ s in all'
has python '^== campaign: kfleet mcp \([0-9]+ s so far\)'

[ "$fail" = 0 ] && echo "gpu-scripts-simulated-test: ok"
exit "$fail"
