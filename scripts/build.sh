#!/usr/bin/env bash
# Configures and builds kfleet into ./build (Release with debug info). Idempotent.
#   scripts/build.sh                 everything, tests included
#   scripts/build.sh kfleetd kfleet  only these targets
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
if [ $# -gt 0 ]; then
  cmake --build build -j"$jobs" --target "$@"
else
  cmake --build build -j"$jobs"
fi
