#!/usr/bin/env bash
# Configures and builds kfleet into ./build (RelWithDebInfo: -O2, line tables, unity batches).
# Idempotent. The README's two commands share this one configuration: scripts/demo.sh builds what
# the demo runs, and scripts/test.sh then compiles only what is left (the tests).
#   scripts/build.sh                 everything, tests included
#   scripts/build.sh kfleetd kfleet  only these targets
# Choices, from the environment; each is kept in build/ until it is given again with another
# value, which compiles everything again (this script says so):
#   KFLEET_DEBUG_INFO=full                  -g instead of -g1, for a debugger
#   KFLEET_UNITY_BUILD=OFF                  every source file compiled on its own
#   KFLEET_SANITIZE=address,undefined       sanitizers in kfleet's code and tests
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
args=()
for v in KFLEET_DEBUG_INFO KFLEET_UNITY_BUILD KFLEET_SANITIZE; do
  [ -n "${!v+set}" ] || continue
  if [ -f build/CMakeCache.txt ]; then
    had=$(sed -n "s/^$v:[A-Z]*=//p" build/CMakeCache.txt)
    [ "$had" = "${!v}" ] ||
      echo "build.sh: $v was '$had' in build/, now '${!v}': everything compiles again" >&2
  fi
  args+=("-D$v=${!v}")
done
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${args[@]}" >/dev/null
if [ $# -gt 0 ]; then
  cmake --build build -j"$jobs" --target "$@"
else
  cmake --build build -j"$jobs"
fi
