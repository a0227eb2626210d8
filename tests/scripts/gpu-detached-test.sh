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
trap 'bash "$S" stop --state "$tmp/st" >/dev/null 2>&1; bash "$S" stop --state "$tmp/st2" >/dev/null 2>&1
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
