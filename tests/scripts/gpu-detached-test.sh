#!/usr/bin/env bash
# scripts/gpu-detached.sh, which runs long GPU proofs detached on a lent machine, tried here with
# steps that need no GPU: the steps run in order in a copy of the tree, into one log with each
# one's output and exit status; a step is cut at its limit and at the budget; poll waits, copies
# the log and says whether the run has ended; stop ends a run and its children; bad steps and
# flags are refused before anything starts.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
S=$root/scripts/gpu-detached.sh
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kfleet-gpu-detached-XXXXXX")
trap 'for st in st st2 st3; do bash "$S" stop --state "$tmp/$st" >/dev/null 2>&1; done
      if [ "$fail" = 0 ]; then rm -rf "$tmp"; else echo "kept $tmp" >&2; fi' EXIT
has() { grep -qE -- "$2" "$1" || bad "$1: no line matching '$2'"; }
mkdir -p "$tmp/tree/build" "$tmp/out"
echo "the tree's file" >"$tmp/tree/file.txt"
echo "a build output" >"$tmp/tree/build/big.o"

# Refusals: no step, a malformed step, an unknown flag, a poll of nothing.
bash "$S" start --state "$tmp/st" >/dev/null 2>&1; [ $? = 2 ] || bad "start without steps: not exit 2"
bash "$S" start --state "$tmp/st" 'no-seconds:echo hi' >/dev/null 2>&1; [ $? = 2 ] || bad "a step without SECONDS accepted"
bash "$S" start --bogus >/dev/null 2>&1; [ $? = 2 ] || bad "an unknown flag accepted"
bash "$S" poll --state "$tmp/none" >/dev/null 2>&1; [ $? = 2 ] || bad "poll of nothing: not exit 2"
bash "$S" --help | grep -q "NAME:SECONDS:COMMAND" || bad "--help does not describe a step"

# Three steps: one reads the copy and writes into the state folder, one overruns its 31 s limit
# and is cut (the budget of 55 s then leaves the third under 30 s, so it is skipped).
bash "$S" start --state "$tmp/st" --tree "$tmp/tree" --budget 55 \
  'first:60:cat file.txt; ls build 2>&1; echo "state $KFLEET_DETACHED" >"$KFLEET_DETACHED/mark"' \
  'slow:31:echo slow begins; sleep 300' 'third:60:echo never' >"$tmp/start.out" || bad "start failed: $(cat "$tmp/start.out")"
# The runner starts detached: on a loaded machine the first step may not have begun at once.
for _ in $(seq 20); do
  bash "$S" poll --state "$tmp/st" --out "$tmp/out" >"$tmp/poll1.out"; rc=$?
  [ $rc = 3 ] || { bad "poll while running: exit $rc, want 3"; break; }
  grep -q "running (no step begun yet)" "$tmp/poll1.out" || break
  sleep 0.5
done
has "$tmp/poll1.out" "running (first|slow) at"
bash "$S" poll --state "$tmp/st" --wait 90 --out "$tmp/out" >"$tmp/poll2.out"; rc=$?
[ $rc = 0 ] || bad "poll after the end: exit $rc, want 0"
L=$tmp/out/run.log
has "$L" "^# gpu-detached: .*budget 55 s, 3 step"
has "$L" "^the tree's file$"
has "$L" "No such file"                    # the build folder stayed out of the copy
has "$L" "^==== first: exit 0"
has "$L" "^slow begins$"
has "$L" "^==== slow: exit 124 \(its limit\)"
has "$L" "^==== third: skipped"
grep -q "^never$" "$L" && bad "the skipped step ran"
grep -q "state $tmp/st" "$tmp/st/mark" 2>/dev/null || bad "KFLEET_DETACHED was not the state folder"
[ -f "$tmp/tree/mark" ] && bad "a step wrote into the tree it was copied from"
has "$tmp/poll2.out" "every step ended"
# The log's code line is code-hash's of the tree, the build folder left out.
has "$L" "^# code [0-9a-f]{16} \(1 files\) "
grep -qF "# code $(bash "$S" code-hash --tree "$tmp/tree") " "$L" || bad "the log's code line is not code-hash's"

# code-hash: content and paths count, docs, Markdown and CPU tests do not, the problems' own
# tests/ do; --commit hashes a commit's files as its clean checkout does.
ch() { bash "$S" code-hash --tree "$tmp/tree"; }
h0=$(ch)
mkdir -p "$tmp/tree/docs" "$tmp/tree/tests" "$tmp/tree/agent/tests" "$tmp/tree/kernels/problems/p/tests" "$tmp/tree/bench"
echo x >"$tmp/tree/docs/page.txt"; echo x >"$tmp/tree/NOTES.md"; echo x >"$tmp/tree/tests/t.sh"
echo x >"$tmp/tree/agent/tests/a_gtest.cpp"; echo x >"$tmp/tree/bench/test_b.py"
[ "$(ch)" = "$h0" ] || bad "docs, Markdown or a CPU test changed the code hash"
echo x >"$tmp/tree/kernels/problems/p/tests/shortcut.cu"
h1=$(ch); [ "$h1" != "$h0" ] || bad "a problem's shortcut kernel did not change the code hash"
echo "the tree's file, edited" >"$tmp/tree/file.txt"
[ "$(ch)" != "$h1" ] || bad "an edited file did not change the code hash"
g=$tmp/git; mkdir -p "$g/src" "$g/build"; echo k >"$g/src/k.cu"; echo d >"$g/README.md"; echo o >"$g/build/o"
echo /build/ >"$g/.gitignore"
git -C "$g" init -q && git -C "$g" add -A && git -C "$g" -c user.name=t -c user.email=t@t commit -qm one
hc=$(bash "$S" code-hash --tree "$g" --commit HEAD); hw=$(bash "$S" code-hash --tree "$g")
[ -n "$hc" ] && [ "$hc" = "$hw" ] || bad "--commit HEAD ($hc) is not the clean checkout's ($hw)"
grep -q "(2 files)" <<<"$hw" || bad "the checkout's hash did not count .gitignore and src/k.cu alone: $hw"
bash "$S" code-hash --tree "$g" --commit no-such-commit >/dev/null 2>&1 && bad "code-hash of no commit succeeded"

# Lanes: a@0 and b@1 run side by side (each waits for the other's mark), each with its GPU in
# KFLEET_GPU and CUDA_VISIBLE_DEVICES (the index: no nvidia-smi here); c@0 follows a in lane 0;
# the laneless step after them waits for all three; each step's block is whole in the log.
bash "$S" start --state "$tmp/st3" --tree "$tmp/tree" --budget 120 \
  'a@0:40:echo "a gpu=$KFLEET_GPU cvd=$CUDA_VISIBLE_DEVICES"; touch "$KFLEET_DETACHED/a"; for i in $(seq 100); do [ -f "$KFLEET_DETACHED/b" ] && break; sleep 0.1; done; [ -f "$KFLEET_DETACHED/b" ] && echo a saw b' \
  'b@1:40:echo "b gpu=$KFLEET_GPU cvd=$CUDA_VISIBLE_DEVICES"; touch "$KFLEET_DETACHED/b"; for i in $(seq 100); do [ -f "$KFLEET_DETACHED/a" ] && break; sleep 0.1; done; [ -f "$KFLEET_DETACHED/a" ] && echo b saw a; sleep 2' \
  'c@0:40:[ -f "$KFLEET_DETACHED/b" ] && echo "c after a gpu=$KFLEET_GPU"' 'tiny@1:20:echo tiny ran' \
  'after:40:ls "$KFLEET_DETACHED/steps"; echo "after gpu=${KFLEET_GPU:-none}"' >/dev/null || bad "the lanes' start failed"
bash "$S" poll --state "$tmp/st3" --wait 60 --out "$tmp/out3" >/dev/null; rc=$?
[ $rc = 0 ] || bad "poll of the lanes: exit $rc, want 0"
L3=$tmp/out3/run.log
has "$L3" "^a gpu=0 cvd=0$"; has "$L3" "^b gpu=1 cvd=1$"
has "$L3" "^a saw b$"; has "$L3" "^b saw a$"       # side by side, not one after the other
has "$L3" "^c after a gpu=0$"; has "$L3" "^after gpu=none$"
grep -q "^b saw a$" "$tmp/out3/steps/b.log" 2>/dev/null || bad "poll did not copy b's own log"
has "$L3" "^==== tiny: skipped, its limit, 20 s, is under 30 s$"; grep -q "^tiny ran" "$L3" && bad "a step under 30 s ran"
has "$L3" "^==== a on GPU 0 \(at [0-9]+ s"; has "$L3" "^==== b: exit 0"
# the laneless step began after b, the slowest lane, had ended
[ "$(grep -n '^==== after ' "$L3" | cut -d: -f1)" -gt "$(grep -n '^==== b: exit' "$L3" | cut -d: -f1)" ] ||
  bad "the step after the lanes did not wait for them"
# each block whole: between b's header and its exit line only b's lines
awk '/^==== b on GPU 1/{f=1; next} /^==== b: exit/{f=0} f && /^(a |c )/' "$L3" | grep -q . && bad "a's or c's lines inside b's block"
bash "$S" start --state "$tmp/st4" 'x@0:10:true' 'x@1:10:true' >/dev/null 2>&1 && bad "two steps of one name accepted"

# stop: a running step and its children end, and the log says so.
bash "$S" start --state "$tmp/st2" --tree "$tmp/tree" "long:300:sleep 3000.$$ & wait" >/dev/null || bad "second start failed"
sleep 2
bash "$S" start --state "$tmp/st2" --tree "$tmp/tree" 'x:60:true' >/dev/null 2>&1 && bad "a second start over a running one was accepted"
bash "$S" stop --state "$tmp/st2" | grep -q stopped || bad "stop did not say it stopped"
sleep 1
pgrep -f "sleep 3000.$$" >/dev/null && bad "the stopped step's child still runs"
has "$tmp/st2/run.log" "stopped by request"
bash "$S" poll --state "$tmp/st2" >/dev/null; [ $? = 0 ] || bad "poll after stop: not ended"
[ "$fail" = 0 ] && echo "gpu-detached-test: OK"
exit "$fail"
