#!/usr/bin/env bash
# Configures and builds kfleet into ./build (Release with debug info). Idempotent.
#   scripts/build.sh                 everything, tests included
#   scripts/build.sh kfleetd kfleet  only these targets
#   KFLEET_DEBUG_INFO=lines scripts/build.sh   -g1 instead of -g (what CI builds)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
# KFLEET_DEBUG_INFO=lines (scripts/test.sh sets it): line tables only, a quarter less compile.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  ${KFLEET_DEBUG_INFO:+-DKFLEET_DEBUG_INFO=$KFLEET_DEBUG_INFO} >/dev/null
if [ $# -gt 0 ]; then
  cmake --build build -j"$jobs" --target "$@"
else
  cmake --build build -j"$jobs"
fi
