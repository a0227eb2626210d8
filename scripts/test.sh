#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: installs what it needs (apt, npm), builds,
# and runs every test through ctest. Tests that need a tool (nvcc, clang-19, terraform,
# chromium) fail when it is missing; nothing is skipped silently.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase's time as it ends, so CI's log shows where it went; ctest prints its own ("Total
# Test time") and is the last thing printed, so its closing lines stay the log's last.
phase() {
  local name=$1 t0
  shift
  t0=$(date +%s)
  "$@"
  echo "test.sh: phase $name: $(( $(date +%s) - t0 )) s"
}
phase install scripts/install-deps.sh
# Line tables only (-g1): nobody attaches a debugger to CI's build, and full debug info is a
# quarter of its compile time.
export KFLEET_DEBUG_INFO=${KFLEET_DEBUG_INFO:-lines}
phase "configure + build" scripts/build.sh
# -j2: the suite is sized for 2 cores; each test has its own timeout in CMake (default 600 s).
exec ctest --test-dir build --output-on-failure -j2 --timeout 900
