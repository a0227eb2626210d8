#!/usr/bin/env bash
# ThreadSanitizer over kfleet's threaded code: builds the test binaries of the parts that run
# more than one thread (kfleetd's API with its read thread, the SQLite store's checkpoint
# thread, the control plane, the agent's heartbeat and event threads, its HTTP client, the GPU
# backends' stage threads, the CLI's MCP server) with KFLEET_SANITIZE=thread in a build folder
# of its own, runs each whole, and fails if any run fails or TSan reports anything. Not part of
# scripts/test.sh: the TSan build alone takes about ten minutes on 2 cores.
#   scripts/tsan-check.sh [--build DIR] [--only REGEX] [--soak S] [--log FILE]
#     --build DIR   the TSan build folder (default: $TMPDIR/kfleet-tsan; kept, so a second run
#                   compiles only what changed)
#     --only REGEX  the test binaries whose names match (default: all of them)
#     --soak S      also kfleetd itself built with TSan, under kfleet_bench's soak for S seconds
#                   (500 live agents, the users' pages on the read thread): once on SQLite, once
#                   on PostgreSQL with two standbys and the leader killed after it. Needs
#                   scripts/build.sh's build/bench/kfleet_bench.
#     --log FILE    also write the whole log to FILE
# Each binary's output is in DIR/logs/NAME.log; a report's summary lines are printed.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${TMPDIR:-/tmp}/kfleet-tsan only=. log="" soak=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --soak) soak=$2; shift 2 ;;
    --log) log=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/{/^#/p}' "$0"; exit 0 ;;
    *) echo "tsan-check: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done
if [ -n "$log" ]; then
  mkdir -p "$(dirname "$log")"
  exec > >(tee "$log") 2>&1
fi
# target  path of its binary under the build folder
TARGETS="api_gtest:orchestrator/api/api_gtest
store_sqlite_gtest:orchestrator/store/store_sqlite_gtest
core_gtest:orchestrator/core/core_gtest
agent_gtest:agent/agent_gtest
http_client_gtest:agent/http_client_gtest
gpu_backends_gtest:agent/backends/gpu_backends_gtest
cli_gtest:cli/cli_gtest
cli_server_gtest:cli/cli_server_gtest"
picked=$(printf '%s\n' "$TARGETS" | awk -F: -v re="$only" '$1 ~ re')
[ -n "$picked" ] || { echo "tsan-check: no test binary matches '$only'" >&2; exit 2; }
case "$soak" in ''|*[!0-9]*) echo "tsan-check: --soak takes seconds, not '$soak'" >&2; exit 2 ;; esac
bench=$PWD/build/bench/kfleet_bench
if [ "$soak" -gt 0 ] && [ ! -x "$bench" ]; then
  echo "tsan-check: --soak needs $bench (run scripts/build.sh first)" >&2
  exit 2
fi
kfleetd_target=""
[ "$soak" -gt 0 ] && kfleetd_target=kfleetd
t0=$(date +%s)
mkdir -p "$build"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKFLEET_SANITIZE=thread \
  >"$build/tsan-configure.log" 2>&1 || { tail -20 "$build/tsan-configure.log"; exit 1; }
# shellcheck disable=SC2046
cmake --build "$build" -j"$(nproc)" --target $(printf '%s\n' "$picked" | cut -d: -f1) $kfleetd_target \
  >"$build/tsan-build.log" 2>&1 || { grep -m20 -B2 -A8 'error' "$build/tsan-build.log"; exit 1; }
echo "tsan-check: built in $(( $(date +%s) - t0 )) s ($build)"
mkdir -p "$build/logs"
bad=0
while IFS=: read -r name bin; do
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/kfleet-tsan-run.XXXXXX")
  t1=$(date +%s)
  # halt_on_error=0: every report of the run, not the first; exitcode 66 marks a reported run.
  TMPDIR=$scratch TSAN_OPTIONS="halt_on_error=0 exitcode=66 second_deadlock_stack=1" \
    timeout 1800 "$build/$bin" >"$build/logs/$name.log" 2>&1
  rc=$?
  rm -rf "$scratch"
  reports=$(grep -c '^WARNING: ThreadSanitizer' "$build/logs/$name.log")
  tests=$(grep -o '^\[  PASSED  \] [0-9]* tests' "$build/logs/$name.log" | grep -o '[0-9]*')
  printf 'tsan-check: %-24s rc %-3s %s reports, %s tests passed, %s s\n' "$name" "$rc" "$reports" \
    "${tests:-0}" "$(( $(date +%s) - t1 ))"
  if [ "$rc" != 0 ] || [ "$reports" != 0 ]; then
    bad=1
    grep '^SUMMARY: ThreadSanitizer' "$build/logs/$name.log" | sort | uniq -c | sed 's/^/  /'
  fi
done <<<"$picked"
# kfleetd itself: TSan writes each report of a process to log_path.PID (none: no file).
for db in $([ "$soak" -gt 0 ] && echo sqlite postgres); do
  reports_dir="$build/logs/kfleetd-$db"
  rm -rf "$reports_dir" && mkdir -p "$reports_dir"
  extra=()
  [ "$db" = postgres ] && extra=(--takeover)
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/kfleet-tsan-run.XXXXXX")
  TMPDIR=$scratch TSAN_OPTIONS="halt_on_error=0 log_path=$reports_dir/kfleetd" timeout $((soak + 300)) \
    "$bench" --soak --soak-s "$soak" --live 500 --retired 1000 --db "$db" "${extra[@]}" \
    --kfleetd "$build/orchestrator/api/kfleetd" >"$build/logs/soak-$db.log" 2>&1
  rc=$?
  rm -rf "$scratch"
  reports=$(cat "$reports_dir"/kfleetd.* 2>/dev/null | grep -c '^WARNING: ThreadSanitizer')
  printf 'tsan-check: %-24s rc %-3s %s reports, %s\n' "kfleetd soak ($db)" "$rc" "$reports" \
    "$(grep -m1 '^| user all' "$build/logs/soak-$db.log" | awk -F'|' '{print $3+0 " user reads, " $4+0 " errors"}')"
  if [ "$rc" != 0 ] || [ "$reports" != 0 ]; then
    bad=1
    cat "$reports_dir"/kfleetd.* 2>/dev/null | grep '^SUMMARY: ThreadSanitizer' | sort | uniq -c | sed 's/^/  /'
  fi
done
[ "$bad" = 0 ] && echo "tsan-check: OK, no reports" || echo "tsan-check: FAILED (logs in $build/logs)"
exit "$bad"
