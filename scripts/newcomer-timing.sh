#!/usr/bin/env bash
# A newcomer's first half hour, timed: clones this repository afresh into a temporary folder and
# runs the README's two commands there, one after the other, as a new user would
# (scripts/demo.sh --exit, then scripts/test.sh), with ccache off. Writes a log of each phase's
# time (install, configure + build, the demo; install, configure + build, ctest, the TMPDIR
# check), each command's wall-clock and CPU time, the total, and ctest's result; prints a short
# table last. Run it on a fresh Debian 12 machine with 2 cores (as root or with sudo) for the
# README's figure: on a machine where the packages are installed, the install phases are short,
# and the log says which it was.
#   scripts/newcomer-timing.sh [--log FILE] [--ref REF] [--keep]
#     --log FILE   where the log goes (default: newcomer-timing-<date>.log in the current folder)
#     --ref REF    the commit to clone (default HEAD; uncommitted changes are NOT included)
#     --keep       keep the clone (default: removed at the end)
# shellcheck source=lib/usage.sh
source "$(dirname "$0")/lib/usage.sh"
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
log="$PWD/newcomer-timing-$(date -u +%Y-%m-%d).log" ref=HEAD keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --log) log=$2; shift 2 ;;
    --ref) ref=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "newcomer-timing: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$(dirname "$log")"
log=$(cd "$(dirname "$log")" && pwd)/$(basename "$log")
exec > >(tee "$log") 2>&1

work=$(mktemp -d "${TMPDIR:-/tmp}/kfleet-newcomer.XXXXXX")
[ "$keep" = 1 ] || trap 'rm -rf "$work"' EXIT
commit=$(git -C "$src" rev-parse "$ref") || exit 2
say() { echo "newcomer-timing: $*"; }
say "$(date -u +%FT%TZ) commit $commit ($(git -C "$src" log -1 --format=%s "$commit"))"
say "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r)"
say "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg) (a quiet machine reads near 0)"
missing=$(cd "$src" && bash -c 'source <(sed -n "/^pkgs=(/,/^)/p" scripts/install-deps.sh); for p in "${pkgs[@]}"; do dpkg-query -W -f="\${Status}" "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"; done' | wc -l)
say "apt packages of scripts/install-deps.sh missing at the start: $missing (0: not a fresh machine)"
git clone -q --no-local "$src" "$work/kfleet" && git -C "$work/kfleet" checkout -q "$commit" || exit 2
cd "$work/kfleet"
# A newcomer has no compiler cache: every object is compiled.
export CCACHE_DISABLE=1
unset CMAKE_CXX_COMPILER_LAUNCHER KFLEET_DEBUG_INFO KFLEET_UNITY_BUILD KFLEET_SANITIZE

# Runs one README command, its output into the log with a prefix; its wall-clock and CPU
# (user + sys of it and everything it waited for) into $work/<name>.time.
run() {
  local name=$1; shift
  say "== $*"
  TIMEFORMAT="%R %U %S"
  { time "$@" 2>&1 | sed -u "s/^/  | /"; } 2>"$work/$name.time"
  local rc=$?  # the command's (pipefail)
  read -r wall user sys <"$work/$name.time"
  printf '%s\n' "$rc ${wall%.*} $(awk -v u="$user" -v s="$sys" 'BEGIN{printf "%d", u+s}')" >"$work/$name.time"
  say "== exit $rc after ${wall%.*} s (CPU $(cut -d' ' -f3 <"$work/$name.time") s)"
}
run demo scripts/demo.sh --exit
run test scripts/test.sh

# The table: each phase as the two commands printed it, then the totals.
phases() { sed -n "s/^  | $1: phase \(.*\): \([0-9]*\) s$/\1|\2/p" "$log"; }
demo_run=$(sed -n 's/^  | demo: done in \([0-9]*\) s$/\1/p' "$log" | tail -1)
read -r demo_rc demo_wall demo_cpu <"$work/demo.time"
read -r test_rc test_wall test_cpu <"$work/test.time"
summary=$(grep -E '^  \| [0-9]+% tests passed' "$log" | tail -1 | sed 's/^  | //')
tmpdir_line=$(grep -E '^  \| test.sh: (the suite left nothing|FAIL: the suite left)' "$log" | tail -1 | sed 's/^  | //')
echo
say "where the time went (wall-clock seconds; CPU = user + sys of the whole command)"
printf '%-44s %8s\n' "phase" "seconds"
while IFS='|' read -r p s; do printf '%-44s %8s\n' "scripts/demo.sh: $p" "$s"; done < <(phases demo)
printf '%-44s %8s\n' "scripts/demo.sh: the demo itself" "${demo_run:-?}"
printf '%-44s %8s %s\n' "scripts/demo.sh --exit, in all" "$demo_wall" "(CPU $demo_cpu s, exit $demo_rc)"
while IFS='|' read -r p s; do printf '%-44s %8s\n' "scripts/test.sh: $p" "$s"; done < <(phases test.sh)
printf '%-44s %8s %s\n' "scripts/test.sh, in all" "$test_wall" "(CPU $test_cpu s, exit $test_rc)"
total=$((demo_wall + test_wall))
printf '%-44s %8s %s\n' "the two commands" "$total" "($((total / 60)) min $((total % 60)) s; the target is 25 min)"
say "ctest: ${summary:-no summary line (see above)}"
say "${tmpdir_line:-no TMPDIR check line (see above)}"
[ "$demo_rc" = 0 ] && [ "$test_rc" = 0 ] && [ "$total" -le 1500 ]
