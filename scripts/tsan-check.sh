#!/usr/bin/env bash
# ThreadSanitizer over kfleet's threaded code: builds the test binaries of the parts that run
# more than one thread (kfleetd's API with its read thread, the SQLite store's checkpoint
# thread, the control plane, the agent's heartbeat and event threads, its HTTP client, the GPU
# backends' stage threads, the CLI's MCP server) with KFLEET_SANITIZE=thread in a build folder
# of its own, runs each whole, and fails if any run fails or TSan reports anything. Not part of
# scripts/test.sh: the TSan build alone takes about ten minutes on 2 cores.
#   scripts/tsan-check.sh [--build DIR] [--only REGEX] [--log FILE]
#     --build DIR   the TSan build folder (default: $TMPDIR/kfleet-tsan; kept, so a second run
#                   compiles only what changed)
#     --only REGEX  the test binaries whose names match (default: all of them)
#     --log FILE    also write the whole log to FILE
# Each binary's output is in DIR/logs/NAME.log; a report's summary lines are printed.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${TMPDIR:-/tmp}/kfleet-tsan only=. log=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --log) log=$2; shift 2 ;;
    -h|--help) sed -n 2,13p "$0"; exit 0 ;;
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
t0=$(date +%s)
mkdir -p "$build"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKFLEET_SANITIZE=thread \
  >"$build/tsan-configure.log" 2>&1 || { tail -20 "$build/tsan-configure.log"; exit 1; }
# shellcheck disable=SC2046
cmake --build "$build" -j"$(nproc)" --target $(printf '%s\n' "$picked" | cut -d: -f1) \
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
  printf 'tsan-check: %-20s rc %-3s %s reports, %s tests passed, %s s\n' "$name" "$rc" "$reports" \
    "${tests:-0}" "$(( $(date +%s) - t1 ))"
  if [ "$rc" != 0 ] || [ "$reports" != 0 ]; then
    bad=1
    grep '^SUMMARY: ThreadSanitizer' "$build/logs/$name.log" | sort | uniq -c | sed 's/^/  /'
  fi
done <<<"$picked"
[ "$bad" = 0 ] && echo "tsan-check: OK, no reports" || echo "tsan-check: FAILED (logs in $build/logs)"
exit "$bad"
