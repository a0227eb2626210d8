#!/usr/bin/env bash
# One device call of the measurement-quality work: build kfleet, the harness-alone repeatability
# runs (bench/gpu/repeatability.sh) for each setting named, then scripts/measure-quality.sh.
# Logs go to OUT (default $OUT) with the command at the top of each.
#   bench/gpu/quality-session.sh [--parts abci] [--tries N] [--itries N] [--repeat "NAME:FLAGS" ...]
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/quality-out} parts=abc tries=10 itries=3 repeats=()
while [ $# -gt 0 ]; do
  case "$1" in
    --parts) parts=$2; shift 2 ;;
    --tries) tries=$2; shift 2 ;;
    --itries) itries=$2; shift 2 ;;
    --repeat) repeats+=("$2"); shift 2 ;;
    *) echo "quality-session: unknown option '$1'" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
stamp() { echo "# command: $*   ($(date -u +%FT%TZ), $(nvidia-smi -L | head -1))"; }
gpu_state() {
  nvidia-smi --query-gpu=name,clocks.current.sm,clocks.max.sm,clocks.current.memory,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
}
{
  stamp "$0 $*"
  gpu_state
  t0=$(date +%s)
  # gpu-proof.sh's build, plus options for parts this work does not need (the dashboards want node)
  b=build-gpu lib=/usr/lib/x86_64-linux-gnu/libsqlite3.so.0 cm=()
  [ -e /usr/include/sqlite3.h ] || cm=(-DSQLite3_INCLUDE_DIR="$PWD/.device/sqlite" -DSQLite3_LIBRARY="$lib")
  gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S . -B $b "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DKFLEET_BUILD_TESTS=OFF -DKFLEET_BUILD_BENCH=OFF \
    -DKFLEET_BUILD_DASHBOARDS=OFF "${cm[@]}" >$b.configure.log 2>&1 || tail -30 $b.configure.log
  cmake --build $b -j"$(nproc)" --target kfleetd kfleet-agent kfleet 2>&1 | tail -20
  mkdir -p $b/bin && cp $b/orchestrator/api/kfleetd $b/agent/kfleet-agent $b/cli/kfleet $b/bin/
  echo "build: $(( $(date +%s) - t0 )) s"
} >"$out/session.log" 2>&1
cat "$out/session.log"
if [ ${#repeats[@]} -gt 0 ]; then
  {
    stamp "bench/gpu/repeatability.sh DIR 5 FLAGS, for each of: ${repeats[*]}"
    for r in "${repeats[@]}"; do
      name=${r%%:*} flags=${r#*:}
      echo "== $name: $flags"
      # shellcheck disable=SC2086
      bench/gpu/repeatability.sh /tmp/repeat 5 $flags
      gpu_state | tail -1
    done
  } >"$out/repeatability.log" 2>&1
  cat "$out/repeatability.log"
fi
{
  stamp "scripts/measure-quality.sh --bin build-gpu/bin --parts $parts --tries $tries --itries $itries"
  gpu_state
  left=$(( 575 - SECONDS )); echo "time left for measure-quality: $left s"
  timeout "$left" scripts/measure-quality.sh --bin build-gpu/bin --run-dir /tmp/quality-run --parts "$parts" --tries "$tries" --itries "$itries"
  echo "quality rc=$?"
  gpu_state | tail -1
} >"$out/quality.log" 2>&1
cat "$out/quality.log"
cp /tmp/quality-run/agent.log "$out/agent.log" 2>/dev/null
exit 0
