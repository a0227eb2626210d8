#!/usr/bin/env bash
# Runs a proof longer than one command of a lent GPU machine allows (10 minutes a call there, 30
# held): `start` copies the checkout aside and runs the steps in the background, detached from
# the call (setsid), into one log; each later call, made before the machine goes back, `poll`s:
# waits up to --wait seconds, copies the log to --out and prints where the run is. The steps run
# one after another on a GPU (a GPU timed by two at once times neither), each under its own limit
# and all within --budget, so that the run ends, logged, before the machine is given back.
#   scripts/gpu-detached.sh start [--state DIR] [--budget S] [--tree DIR] STEP...
#       STEP is NAME:SECONDS:COMMAND, COMMAND a bash command line run in the copy, e.g.
#       'refs:900:scripts/gpu-torch-proof.sh --out "$KFLEET_DETACHED/refs" --only refs'
#       ($KFLEET_DETACHED is the state folder, which holds the copy, the logs and the steps' files)
#       or NAME@G:SECONDS:COMMAND, a step of lane G, the machine's GPU G: on a host of several
#       GPUs, one proof per GPU at once, so that proofs longer than one lease fit one lease and
#       one log. Consecutive lane steps run as a group, each lane's in order, the lanes side by
#       side; a step without a lane waits for every step before it and runs alone (deps, the
#       build). A lane's commands see KFLEET_GPU=G, which the local fleet's agent takes as --gpu G
#       (scripts/lib/local-cluster.sh), and CUDA_VISIBLE_DEVICES=<GPU G's UUID>, which pins the
#       direct runs (the recorder, kfleet-measure --device 0). Each step's output goes to
#       STATE/steps/NAME.log and, whole, into the log when the step ends.
#   scripts/gpu-detached.sh poll [--state DIR] [--wait S] [--out DIR]
#       exit 0 once every step has ended, 3 while one still runs, 2 when nothing was started
#   scripts/gpu-detached.sh stop [--state DIR]     ends the run (its log says so)
#   scripts/gpu-detached.sh code-hash [--tree DIR] [--commit C]
#       the measured code's hash (the log's "# code" line): each file of the tree (git's tracked and
#       untracked-not-ignored files, or every file where DIR is no checkout; --commit: commit C's
#       files) but docs/, Markdown and the CPU tests (tests/ folders, bar the problems' own, and
#       test_*.py), hashed by path and content. Two runs whose lines match ran the same code,
#       whatever commit a lent machine's stale .git names; compare with --commit for a past run.
#     --state DIR  where the run lives (default /tmp/kfleet-detached); start empties it first
#     --budget S   seconds for all the steps together (default 1500): a step is cut at what is
#                  left, and one with under 30 s left is skipped, saying so
#     --tree DIR   the checkout to copy (default this script's); build folders and .git stay out
#     --wait S     how long poll waits for the run to end (default 0: it only reads)
#     --out DIR    where poll copies the log and the steps' (default $OUT, where the lent machine's
#                  files come back)
# The log (STATE/run.log) holds the GPU's name, the commit, the code's hash (code-hash), then each
# step's command, its whole output and its exit status and time: the one log a docs/evidence/ file
# is made from.
# shellcheck source=lib/usage.sh
source "$(dirname "$0")/lib/usage.sh"
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "gpu-detached: $*" >&2; exit 2; }
[ $# -gt 0 ] || die "say start, poll or stop (try --help)"
verb=$1; shift
state=/tmp/kfleet-detached budget=1500 tree=$here wait=0 out=${OUT:-} commit=
steps=()
while [ $# -gt 0 ]; do
  case "$1" in
    --state) state=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --tree) tree=$2; shift 2 ;;
    --wait) wait=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --commit) commit=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    -*) die "unknown option '$1' (try --help)" ;;
    *) steps+=("$1"); shift ;;
  esac
done
case "$verb" in -h|--help) usage; exit 0 ;; esac
log=$state/run.log
now() { date +%s; }
# code_hash DIR: "<16 hex digits> (<N> files)" of the measured code in DIR (code-hash above).
code_hash() {
  local t=$1
  (
    cd "$t" || exit 2
    local list
    list=$(if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ]; then
             git -c core.quotePath=false ls-files -co --exclude-standard
           else
             find . -type f -not -path './.git/*' -not -path './build/*' -not -path './build-*' \
               -not -path '*/node_modules/*' -not -path './.device/*' -not -path '*/__pycache__/*' | sed 's|^\./||'
           fi | awk '!/^docs\// && !/\.md$/ && !/(^|\/)test_[^\/]*\.py$/ && !(/(^|\/)tests\// && !/^kernels\/problems\//)' |
             LC_ALL=C sort -u | while IFS= read -r f; do [ -f "$f" ] && printf '%s\n' "$f"; done)
    echo "$(xargs -d '\n' -r sha256sum -- <<<"$list" | sha256sum | cut -c1-16) ($(grep -c . <<<"$list") files)"
  )
}

case "$verb" in
start)
  [ ${#steps[@]} -gt 0 ] || die "start needs at least one NAME:SECONDS:COMMAND step"
  for s in "${steps[@]}"; do
    [[ "$s" =~ ^[A-Za-z0-9_.-]+(@[0-9]+)?:[0-9]+:.+ ]] || die "step '$s' is not NAME[@GPU]:SECONDS:COMMAND"
  done
  dup=$(printf '%s\n' "${steps[@]}" | sed 's/[@:].*//' | sort | uniq -d | head -1)
  [ -z "$dup" ] || die "two steps are named '$dup' (each step's log is STATE/steps/NAME.log)"
  if command -v nvidia-smi >/dev/null; then  # a lane of a GPU this machine lacks: said now
    ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
    for s in "${steps[@]}"; do
      [[ "$s" =~ ^[^:@]*@([0-9]+): ]] && [ "${BASH_REMATCH[1]}" -ge "$ngpu" ] &&
        die "step '${s%%:*}' wants GPU ${BASH_REMATCH[1]}; this machine has $ngpu"
    done
  fi

  [[ "$budget" =~ ^[0-9]+$ ]] || die "--budget wants seconds, got '$budget'"
  if [ -f "$state/pid" ] && kill -0 "$(cat "$state/pid")" 2>/dev/null; then
    die "a run is still going in $state (stop it first)"
  fi
  rm -rf "$state"; mkdir -p "$state/tree" || die "cannot make $state"
  (cd "$tree" && tar --exclude=./build --exclude='./build-*' --exclude=./.git --exclude='*/node_modules' -cf - .) |
    (cd "$state/tree" && tar xf -) || die "cannot copy $tree to $state/tree"
  printf '%s\n' "${steps[@]}" >"$state/steps.list"
  {
    echo "# gpu-detached: $(date -u '+%F %T') UTC, budget ${budget} s, ${#steps[@]} step(s)"
    command -v nvidia-smi >/dev/null && nvidia-smi -L
    echo "# commit $(git -C "$tree" log --oneline -1 2>/dev/null || echo unknown)$(git -C "$tree" status --porcelain 2>/dev/null | grep -q . && echo ' (with uncommitted changes)')"
    echo "# code $(code_hash "$tree") (scripts/gpu-detached.sh code-hash: the same line, the same code)"
  } >"$log"
  echo "$(now) $budget" >"$state/started"
  KFLEET_DETACHED=$state setsid bash "$0" run-steps --state "$state" </dev/null >"$state/runner.err" 2>&1 &
  echo $! >"$state/pid"
  echo "gpu-detached: started ${#steps[@]} step(s) in $state (pid $(cat "$state/pid")); poll with: $0 poll --state $state --wait S"
  ;;
run-steps)
  read -r t0 budget <"$state/started"
  cd "$state/tree" || exit 2
  export KFLEET_DETACHED=$state
  mkdir -p "$state/steps"
  # GPU G's UUID, for a lane's CUDA_VISIBLE_DEVICES (the index where nvidia-smi cannot say)
  uuid_of() { local u; u=$(nvidia-smi --query-gpu=uuid --format=csv,noheader -i "$1" 2>/dev/null | head -1); echo "${u:-$1}"; }
  # one STEP, its output into steps/NAME.log, then its whole block into the log (under a lock:
  # two lanes end steps at once)
  run_step() {
    local s=$1 name rest secs cmd lane='' left rc s0 at
    name=${s%%:*} rest=${s#*:}; secs=${rest%%:*} cmd=${rest#*:}
    [[ "$name" == *@* ]] && lane=${name#*@} name=${name%@*}
    left=$(( budget - ($(now) - t0) ))
    local why="${left} s of the budget left"
    [ "$secs" -lt 30 ] && why="its limit, $secs s, is under 30 s"
    [ "$secs" -gt "$left" ] && secs=$left
    if [ "$secs" -lt 30 ]; then
      (flock 9; echo "==== $name: skipped, $why" >>"$log") 9>"$state/log.lock"; return
    fi
    at=$(( $(now) - t0 ))
    echo "$name${lane:+ (GPU $lane)}" >"$state/current-${lane:-all}"
    s0=$(now)
    if [ -n "$lane" ]; then
      KFLEET_GPU=$lane CUDA_VISIBLE_DEVICES=$(uuid_of "$lane") timeout -k 10 "$secs" bash -c "$cmd" >"$state/steps/$name.log" 2>&1 </dev/null
    else
      timeout -k 10 "$secs" bash -c "$cmd" >"$state/steps/$name.log" 2>&1 </dev/null
    fi
    rc=$?
    rm -f "$state/current-${lane:-all}"
    (
      flock 9
      { echo; echo "==== $name${lane:+ on GPU $lane} (at $at s, at most $secs s): $cmd"; cat "$state/steps/$name.log"
        echo "==== $name: exit $rc$([ $rc = 124 ] && echo ' (its limit)') in $(( $(now) - s0 )) s"; } >>"$log"
    ) 9>"$state/log.lock"
  }
  # a group of lane steps: each lane's in order, the lanes side by side
  run_group() {
    local lanes l s
    lanes=$(printf '%s\n' "$@" | sed -E 's/^[^@:]*@([0-9]+):.*/\1/' | sort -un)
    for l in $lanes; do
      ( for s in "$@"; do [[ "$s" =~ ^[^:@]*@$l: ]] && run_step "$s"; done ) &
    done
    wait
  }
  group=()
  while IFS= read -r s; do
    if [[ "$s" =~ ^[^:@]*@[0-9]+: ]]; then group+=("$s"); continue; fi
    [ ${#group[@]} -gt 0 ] && { run_group "${group[@]}"; group=(); }
    run_step "$s"
  done <"$state/steps.list"
  [ ${#group[@]} -gt 0 ] && run_group "${group[@]}"
  echo "# gpu-detached: done at $(( $(now) - t0 )) s" >>"$log"
  touch "$state/done"
  ;;
poll)
  [ -f "$state/started" ] || { echo "gpu-detached: nothing was started in $state"; exit 2; }
  end=$(( $(now) + wait ))
  while [ ! -f "$state/done" ] && [ "$(now)" -lt "$end" ]; do sleep 2; done
  if [ ! -f "$state/done" ] && ! kill -0 "$(cat "$state/pid" 2>/dev/null)" 2>/dev/null; then
    echo "# gpu-detached: the runner is gone before the end (killed?)" >>"$log"; touch "$state/done"
  fi
  # the log, and each step's own (a step still running is in the log only once it ends: should
  # the machine go back first, what it had written comes back all the same)
  [ -n "$out" ] && { mkdir -p "$out/steps" && cp "$log" "$out/run.log" && cp "$state"/steps/*.log "$out/steps/" 2>/dev/null; }
  read -r t0 _ <"$state/started"
  grep -E '^(# |==== )' "$log"
  if [ -f "$state/done" ]; then echo "gpu-detached: every step ended ($(( $(now) - t0 )) s)"; exit 0; fi
  running=$(cat "$state"/current-* 2>/dev/null | paste -sd, - | sed 's/,/, /g')
  echo "gpu-detached: running ${running:-(no step begun yet)} at $(( $(now) - t0 )) s; the last lines:"
  for f in "$state"/current-*; do
    [ -f "$f" ] || continue
    n=$(sed 's/ (GPU.*//' "$f"); echo "-- $n"; tail -5 "$state/steps/$n.log" 2>/dev/null | cut -c1-300
  done
  exit 3
  ;;
stop)
  [ -f "$state/pid" ] || { echo "gpu-detached: nothing was started in $state"; exit 2; }
  pid=$(cat "$state/pid")
  if kill -0 "$pid" 2>/dev/null; then
    # The whole session the runner leads: `timeout` puts each step in a process group of its own.
    pkill -TERM -s "$pid" 2>/dev/null || kill -TERM "$pid"
    echo "# gpu-detached: stopped by request" >>"$log"; touch "$state/done"
    echo "gpu-detached: stopped the run in $state"
  else
    echo "gpu-detached: the run in $state had already ended"
  fi
  ;;
code-hash)
  if [ -n "$commit" ]; then
    d=$(mktemp -d "${TMPDIR:-/tmp}/kfleet-code-XXXXXX") || die "no temporary folder"
    git -C "$tree" archive "$commit" | tar -x -C "$d" || { rm -rf "$d"; die "cannot read commit '$commit' in $tree"; }
    code_hash "$d"; rc=$?
    rm -rf "$d"; exit $rc
  fi
  code_hash "$tree"
  ;;
*) die "unknown verb '$verb': start, poll, stop or code-hash (try --help)" ;;
esac
