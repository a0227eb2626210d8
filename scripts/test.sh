#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: installs what it needs (apt, npm), builds,
# and runs every test through ctest. Tests that need a tool (nvcc, clang-19, terraform,
# chromium) fail when it is missing; nothing is skipped silently. It builds in the same
# configuration as scripts/demo.sh (scripts/build.sh), so after the demo only the tests compile.
# The suite runs with a TMPDIR of its own, which must be empty when it ends: a test that leaves a
# file behind fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase's time as it ends, so CI's log shows where it went; ctest prints its own ("Total
# Test time"), and the TMPDIR check's line comes last.
phase() {
  local name=$1 t0
  shift
  t0=$(date +%s)
  "$@"
  echo "test.sh: phase $name: $(( $(date +%s) - t0 )) s"
}
phase install scripts/install-deps.sh
phase "configure + build" scripts/build.sh

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kfleet-ctest.XXXXXX")
t0=$(date +%s)
rc=0
# Each test has its own timeout in CMake (default 600 s). ctest runs one test more than there
# are cores: about a quarter of the suite's test time is waiting (for processes it started,
# agents' beats, the browser's demo), and a third test fills it. On this 2-core machine ctest -j3
# took 606 s against -j2's 694 s, every test passing in both (docs/building.md).
# KFLEET_CTEST_JOBS=N picks another; scripts/clean-clone-check.sh runs -j2 and -j4.
jobs=${KFLEET_CTEST_JOBS:-$(( $(nproc 2>/dev/null || echo 2) + 1 ))}
TMPDIR=$tmp ctest --test-dir build --output-on-failure -j"$jobs" --timeout 900 || rc=$?
echo "test.sh: phase ctest: $(( $(date +%s) - t0 )) s"
left=$(cd "$tmp" && find . -mindepth 1 -maxdepth 2 | sort | head -40)
if [ -n "$left" ]; then
  echo "test.sh: FAIL: the suite left these in its TMPDIR $tmp (a test removes what it makes):"
  printf '%s\n' "$left" | sed 's/^/  /'
  exit 1
fi
rmdir "$tmp"
echo "test.sh: the suite left nothing in its TMPDIR"
exit "$rc"
