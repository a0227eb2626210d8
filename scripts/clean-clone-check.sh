#!/usr/bin/env bash
# Clones this repository afresh into a temporary directory and runs the whole suite there the way
# CI does: scripts/install-deps.sh and scripts/build.sh once, then ctest three times with -j2 and
# once with -j4. After every ctest run it checks that the clone's working tree holds nothing that
# git does not already ignore as a build output (no test may write into the source tree), and
# prints one summary line per run and the time of each phase (install, configure + build, each
# ctest run). Each ctest run has a TMPDIR of its own, which must be empty afterwards. Exits
# non-zero if any run failed, dirtied the tree or left files in its TMPDIR.
#   scripts/clean-clone-check.sh [--log FILE] [--keep] [--runs "2 2 2 4"] [--ref REF]
#     --log FILE   also write the whole log to FILE (default: only stdout)
#     --keep       keep the clone (default: removed at the end)
#     --runs LIST  the -j value of each ctest run, in order (default "2 2 2 4")
#     --ref REF    the commit to clone (default HEAD; uncommitted changes are NOT included)
# shellcheck source=lib/usage.sh
source "$(dirname "$0")/lib/usage.sh"
set -uo pipefail
cd "$(dirname "$0")/.."
src=$PWD log="" keep=0 runs="2 2 2 4" ref=HEAD
while [ $# -gt 0 ]; do
  case "$1" in
    --log) log=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --runs) runs=$2; shift 2 ;;
    --ref) ref=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "clean-clone-check: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done
if [ -n "$log" ]; then
  mkdir -p "$(dirname "$log")"
  exec > >(tee "$log") 2>&1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/kfleet-clean-clone.XXXXXX")
[ "$keep" = 1 ] || trap 'rm -rf "$work"' EXIT
clone=$work/kfleet
commit=$(git rev-parse "$ref") || exit 2
echo "clean-clone-check: $(date -u +%FT%TZ) commit $commit ($(git log -1 --format=%s "$commit"))"
echo "clean-clone-check: machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB"
git clone -q --no-local "$src" "$clone" && git -C "$clone" checkout -q "$commit" || exit 2
# shared/ sits beside the checkout in CI; nothing in the suite may need it, so it is not copied.

# Each phase's time on its own line (install, configure + build, each ctest run), and all of
# them again at the end, so that where CI's time goes stays visible.
phases=""
t0=$(date +%s)
(cd "$clone" && scripts/install-deps.sh) >"$work/install.log" 2>&1 ||
  { tail -50 "$work/install.log"; echo "clean-clone-check: FAIL: install failed"; exit 1; }
secs=$(( $(date +%s) - t0 ))
echo "clean-clone-check: phase install: ${secs} s"
phases="install ${secs} s"
t0=$(date +%s)
# As scripts/test.sh (CI) builds: the one configuration, unless the caller's environment says
# otherwise (scripts/build.sh).
(cd "$clone" && scripts/build.sh) >"$work/build.log" 2>&1 ||
  { tail -50 "$work/build.log"; echo "clean-clone-check: FAIL: build failed"; exit 1; }
secs=$(( $(date +%s) - t0 ))
echo "clean-clone-check: phase configure + build: ${secs} s"
phases="$phases, configure + build ${secs} s"

# Everything a build or test may leave is an ignored build output; anything else is a defect.
dirty() {
  git -C "$clone" status --porcelain --ignored --untracked-files=all |
    grep -v -E '^!! (build/|dashboards/node_modules/|tests/mcp/node_modules/)' || true
}
before=$(dirty)
[ -z "$before" ] || { echo "clean-clone-check: FAIL: the build left files in the tree:"; echo "$before"; exit 1; }

status=0 i=0
for j in $runs; do
  i=$((i + 1))
  t0=$(date +%s)
  out=$work/ctest-$i.log
  # As scripts/test.sh runs it: a TMPDIR of its own, to be found empty afterwards.
  tmp=$work/tmp-$i
  mkdir -p "$tmp"
  TMPDIR=$tmp ctest --test-dir "$clone/build" --output-on-failure -j"$j" --timeout 900 >"$out" 2>&1
  rc=$?
  left_tmp=$(cd "$tmp" && find . -mindepth 1 -maxdepth 2 | sort | head -40)
  secs=$(( $(date +%s) - t0 ))
  summary=$(grep -E 'tests passed|tests failed' "$out" | tail -1)
  left=$(dirty)
  echo "clean-clone-check: run $i (ctest -j$j): exit $rc in ${secs} s: $summary"
  echo "clean-clone-check: phase ctest (run $i, -j$j): ${secs} s"
  phases="$phases, ctest run $i (-j$j) ${secs} s"
  if [ "$rc" != 0 ]; then
    status=1
    sed -n '/The following tests FAILED/,$p' "$out"
    grep -B2 -A40 -E '\*\*\*Failed|\*\*\*Timeout|Exception' "$out" | head -200
  fi
  if [ -n "$left" ]; then
    status=1
    echo "clean-clone-check: FAIL: run $i left files in the source tree:"
    echo "$left"
  fi
  if [ -n "$left_tmp" ]; then
    status=1
    echo "clean-clone-check: FAIL: run $i left files in its TMPDIR:"
    printf '%s\n' "$left_tmp" | sed 's/^/  /'
  fi
  # The slowest tests of the run, so the suite's length stays visible.
  grep -E '^ *[0-9]+/[0-9]+ Test +#' "$out" | sed -E 's/.*Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec$/\2 \1/' |
    sort -rn | head -5 | awk '{printf "    %7.1f s  %s\n", $1, $2}'
done
echo "clean-clone-check: phases: $phases"
[ "$status" = 0 ] && echo "clean-clone-check: all runs green, source tree untouched, TMPDIR left empty" ||
  echo "clean-clone-check: FAILED"
exit $status
