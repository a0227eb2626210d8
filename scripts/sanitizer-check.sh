#!/usr/bin/env bash
# The sanitizers over kfleet's host code: builds the test binaries of the parts that run more
# than one thread or parse what others send (kfleetd's API with its read thread, the SQLite
# store's checkpoint thread, the control plane, the scheduler, the agent's heartbeat and event
# threads, its HTTP client, the GPU backends' stage threads, the CLI's MCP server, the common
# parsers) with KFLEET_SANITIZE in a build folder of its own, runs each whole, and fails if any
# run fails or a sanitizer reports anything. Not part of scripts/test.sh: a sanitized build
# takes about ten minutes on 2 cores.
#   scripts/sanitizer-check.sh [--sanitizer thread|address,undefined] [--build DIR]
#                              [--only REGEX] [--soak S] [--log FILE]
#     --sanitizer S  KFLEET_SANITIZE's value (default thread: ThreadSanitizer; address,undefined:
#                    ASan with its leak check, and UBSan)
#     --build DIR    the build folder (default: $TMPDIR/kfleet-<sanitizer>; kept, so a second
#                    run compiles only what changed)
#     --only REGEX   the test binaries whose names match (default: all of them)
#     --soak S       also kfleetd itself built so, under kfleet_bench's soak for S seconds (500
#                    live agents, the users' pages on the read thread): once on SQLite, once on
#                    PostgreSQL with two standbys and the leader killed after it. Needs
#                    scripts/build.sh's build/bench/kfleet_bench.
#     --log FILE     also write the whole log to FILE
# Each binary's output is in DIR/logs/NAME.log; a report's summary lines are printed.
# shellcheck source=lib/usage.sh
source "$(dirname "$0")/lib/usage.sh"
set -uo pipefail
cd "$(dirname "$0")/.."
san=thread build="" only=. log="" soak=0
while [ $# -gt 0 ]; do
  case "$1" in
    --sanitizer) san=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --soak) soak=$2; shift 2 ;;
    --log) log=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "sanitizer-check: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done
if [ -n "$log" ]; then
  mkdir -p "$(dirname "$log")"
  exec > >(tee "$log") 2>&1
fi
# target  path of its binary under the build folder
case "$san" in
  thread) ;;
  address,undefined|address|undefined) ;;
  *) echo "sanitizer-check: --sanitizer $san: thread, address,undefined, address or undefined" >&2; exit 2 ;;
esac
[ -n "$build" ] || build=${TMPDIR:-/tmp}/kfleet-${san//,/-}
# What each sanitizer's runtime is told, and the first line of each of its reports. ASan stops
# a process at its first error (exit 1); TSan and UBSan report and go on (TSan exits 66).
SAN_ENV=(TSAN_OPTIONS="halt_on_error=0 exitcode=66 second_deadlock_stack=1"
         ASAN_OPTIONS="detect_leaks=1" UBSAN_OPTIONS="print_stacktrace=1")
REPORT='^WARNING: ThreadSanitizer|^==[0-9]+==ERROR: (Address|Leak)Sanitizer|runtime error: '
TARGETS="common_gtest:common/common_gtest
scheduler_gtest:orchestrator/scheduler/scheduler_gtest
api_gtest:orchestrator/api/api_gtest
store_sqlite_gtest:orchestrator/store/store_sqlite_gtest
core_gtest:orchestrator/core/core_gtest
agent_gtest:agent/agent_gtest
http_client_gtest:agent/http_client_gtest
gpu_backends_gtest:agent/backends/gpu_backends_gtest
cli_gtest:cli/cli_gtest
cli_server_gtest:cli/cli_server_gtest"
picked=$(printf '%s\n' "$TARGETS" | awk -F: -v re="$only" '$1 ~ re')
[ -n "$picked" ] || { echo "sanitizer-check: no test binary matches '$only'" >&2; exit 2; }
case "$soak" in ''|*[!0-9]*) echo "sanitizer-check: --soak takes seconds, not '$soak'" >&2; exit 2 ;; esac
bench=$PWD/build/bench/kfleet_bench
if [ "$soak" -gt 0 ] && [ ! -x "$bench" ]; then
  echo "sanitizer-check: --soak needs $bench (run scripts/build.sh first)" >&2
  exit 2
fi
kfleetd_target=""
[ "$soak" -gt 0 ] && kfleetd_target=kfleetd
t0=$(date +%s)
mkdir -p "$build"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKFLEET_SANITIZE="$san" \
  >"$build/sanitizer-configure.log" 2>&1 || { tail -20 "$build/sanitizer-configure.log"; exit 1; }
# shellcheck disable=SC2046
cmake --build "$build" -j"$(nproc)" --target $(printf '%s\n' "$picked" | cut -d: -f1) $kfleetd_target \
  >"$build/sanitizer-build.log" 2>&1 || { grep -m20 -B2 -A8 'error' "$build/sanitizer-build.log"; exit 1; }
echo "sanitizer-check: built in $(( $(date +%s) - t0 )) s ($build)"
mkdir -p "$build/logs"
bad=0
while IFS=: read -r name bin; do
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/kfleet-sanitizer-run.XXXXXX")
  t1=$(date +%s)
  TMPDIR=$scratch env "${SAN_ENV[@]}" timeout 1800 "$build/$bin" >"$build/logs/$name.log" 2>&1
  rc=$?
  rm -rf "$scratch"
  reports=$(grep -Ec "$REPORT" "$build/logs/$name.log")
  tests=$(grep -o '^\[  PASSED  \] [0-9]* tests' "$build/logs/$name.log" | grep -o '[0-9]*')
  printf 'sanitizer-check: %-24s rc %-3s %s reports, %s tests passed, %s s\n' "$name" "$rc" "$reports" \
    "${tests:-0}" "$(( $(date +%s) - t1 ))"
  if [ "$rc" != 0 ] || [ "$reports" != 0 ]; then
    bad=1
    grep -E '^SUMMARY: |runtime error: ' "$build/logs/$name.log" | sort | uniq -c | sed 's/^/  /'
  fi
done <<<"$picked"
# kfleetd itself: each report of a process goes to log_path.PID (none: no file).
for db in $([ "$soak" -gt 0 ] && echo sqlite postgres); do
  reports_dir="$build/logs/kfleetd-$db"
  rm -rf "$reports_dir" && mkdir -p "$reports_dir"
  extra=()
  [ "$db" = postgres ] && extra=(--takeover)
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/kfleet-sanitizer-run.XXXXXX")
  lp="log_path=$reports_dir/kfleetd"
  TMPDIR=$scratch TSAN_OPTIONS="halt_on_error=0 $lp" ASAN_OPTIONS="detect_leaks=1:$lp" \
    UBSAN_OPTIONS="print_stacktrace=1:$lp" timeout $((soak + 300)) \
    "$bench" --soak --soak-s "$soak" --live 500 --retired 1000 --db "$db" "${extra[@]}" \
    --kfleetd "$build/orchestrator/api/kfleetd" >"$build/logs/soak-$db.log" 2>&1
  rc=$?
  rm -rf "$scratch"
  reports=$(cat "$reports_dir"/kfleetd.* 2>/dev/null | grep -Ec "$REPORT")
  printf 'sanitizer-check: %-24s rc %-3s %s reports, %s\n' "kfleetd soak ($db)" "$rc" "$reports" \
    "$(grep -m1 '^| user all' "$build/logs/soak-$db.log" | awk -F'|' '{print $3+0 " user reads, " $4+0 " errors"}')"
  if [ "$rc" != 0 ] || [ "$reports" != 0 ]; then
    bad=1
    cat "$reports_dir"/kfleetd.* 2>/dev/null | grep -E '^SUMMARY: |runtime error: ' | sort | uniq -c | sed 's/^/  /'
  fi
done
[ "$bad" = 0 ] && echo "sanitizer-check: OK, no reports" || echo "sanitizer-check: FAILED (logs in $build/logs)"
exit "$bad"
