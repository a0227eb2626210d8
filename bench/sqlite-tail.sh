#!/usr/bin/env bash
# What SQLite's submit-to-lease tail is made of, sample by sample: runs kfleet_bench on SQLite
# under a whole-machine scheduler trace (perf, CLOCK_MONOTONIC) and lays each slow sample's
# window over it (bench/tail_attribution.py): how long kfleetd's API thread ran, how long it
# waited runnable for a CPU, and what held the CPUs meanwhile.
#   bench/sqlite-tail.sh BUILD_DIR OUT_DIR [kfleet_bench arguments...]
# Default bench arguments: --db sqlite --agents 20 --jobs 10000 --depths 10000 --events 2000;
# any kfleet_bench arguments work (--db postgres too: the API thread waits on its server then).
# Needs perf (Debian: linux-perf) and root or kernel.perf_event_paranoid <= 0.
set -euo pipefail
usage() { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; }
if [[ ${1:-} == --help || ${1:-} == -h ]]; then usage; exit 0; fi
if [[ $# -lt 2 ]]; then usage >&2; exit 2; fi
build=$1 out=$2
shift 2
bench=$build/bench/kfleet_bench
[[ -x $bench ]] || { echo "sqlite-tail: no $bench; build the kfleet_bench target first" >&2; exit 2; }
command -v perf >/dev/null || { echo "sqlite-tail: perf is missing (apt-get install linux-perf)" >&2; exit 2; }
args=("$@")
[[ ${#args[@]} -gt 0 ]] || args=(--db sqlite --agents 20 --jobs 10000 --depths 10000 --events 2000)
mkdir -p "$out"
rm -f "$out/samples.tsv"
here=$(cd "$(dirname "$0")" && pwd)
{
  echo "# bench/sqlite-tail.sh at $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)," \
       "$(date -u '+%F %T') UTC, load $(cat /proc/loadavg), $(nproc) CPUs"
  echo "# kfleet_bench ${args[*]} --samples-out samples.tsv, under perf record -a (sched_switch, sched_wakeup), CLOCK_MONOTONIC"
} > "$out/report.md"
perf record -q -e sched:sched_switch -e sched:sched_wakeup -e sched:sched_wakeup_new -a \
  -k CLOCK_MONOTONIC -o "$out/sched.data" -- \
  "$bench" "${args[@]}" --samples-out "$out/samples.tsv" > "$out/bench.txt" 2>&1
perf sched timehist -i "$out/sched.data" > "$out/timehist.txt" 2>/dev/null
{
  echo
  echo '## the bench'
  cat "$out/bench.txt"
  echo "load after: $(cat /proc/loadavg)"
  echo
  echo '## each slow sample, and the median ones, against the scheduler trace'
  python3 "$here/tail_attribution.py" "$out/samples.tsv" "$out/timehist.txt"
} >> "$out/report.md"
cat "$out/report.md"
