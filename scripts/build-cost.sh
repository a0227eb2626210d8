#!/usr/bin/env bash
# Where the build's time goes, in CPU seconds (user + sys), which stay comparable on a machine
# whose cores other work shares (wall-clock times there are not). Configures a fresh build
# folder with ccache off, builds the demo's targets and then everything else as the README's two
# commands do, and times every compile and link through a launcher. Writes, in OUT:
#   objects.tsv   one line per compile or link: user s, sys s, wall s, kind, output
#   summary.txt   CPU per phase (configure, demo targets, the rest), per kind (compile, pch,
#                 link, other: fuzz targets, dashboards, custom commands), the costliest outputs
#   .ninja_log    ninja's own log of the build (wall times per edge)
#   scripts/build-cost.sh [--src DIR] [--out DIR] [--keep] [-- CMAKE_ARGS...]
#     --src DIR   the tree to build (default: this one; another checkout measures a "before")
#     --out DIR   where the results go (default: a new folder under $TMPDIR, printed)
#     --keep      keep the build folder (default: removed; it holds a few GiB)
#     --then ARG  reconfigure with this cmake argument between the demo's targets and the rest
#                 (repeatable), as a second command with other settings would
#     --targets "T..."  build only these targets, in one phase (to compare settings on a part)
#   scripts/build-cost.sh --launch LOG COMMAND...   (the launcher itself; internal)
# shellcheck source=lib/usage.sh
source "$(dirname "$0")/lib/usage.sh"
set -uo pipefail
if [ "${1:-}" = --launch ]; then
  log=$2; shift 2
  out="?" kind=compile prev=""
  for a in "$@"; do
    [ "$prev" = -o ] && out=$a
    case "$a" in -c) ;; *.gch|*.pch) kind=pch ;; esac
    prev=$a
  done
  case " $* " in *" -c "*) ;; *) kind=link ;; esac
  [ "$kind" = compile ] && case "$out" in *cmake_pch*) kind=pch ;; esac
  TIMEFORMAT="%3U	%3S	%3R	$kind	$out"
  { time "$@" 2>&4 4>&-; } 4>&2 2>>"$log"
  exit
fi

self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
src=$(cd "$(dirname "$0")/.." && pwd) out="" keep=0 then=() targets=""
while [ $# -gt 0 ]; do
  case "$1" in
    --src) src=$(cd "$2" && pwd); shift 2 ;;
    --out) out=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --then) then+=("$2"); shift 2 ;;
    --targets) targets=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) usage; exit 0 ;;
    *) echo "build-cost: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/kfleet-build-cost.XXXXXX")
mkdir -p "$out"
out=$(cd "$out" && pwd)
bdir=$(mktemp -d "${TMPDIR:-/tmp}/kfleet-build-cost-build.XXXXXX")
[ "$keep" = 1 ] || trap 'rm -rf "$bdir"' EXIT
log=$out/objects.tsv
: >"$log"
export CCACHE_DISABLE=1
unset CMAKE_CXX_COMPILER_LAUNCHER KFLEET_DEBUG_INFO

# CPU of one phase (user + sys of the command and all it waited for) into phases.tsv.
phase() {
  local name=$1; shift
  TIMEFORMAT="%3U	%3S	%3R	$name"
  { time "$@" >>"$out/build.log" 2>&1 4>&-; } 4>&2 2>>"$out/phases.tsv"
  local rc=$?
  [ $rc = 0 ] || { tail -30 "$out/build.log"; echo "build-cost: $name failed (log: $out/build.log)" >&2; exit 1; }
}
: >"$out/phases.tsv"
echo "build-cost: building $src in $bdir (ccache off); results in $out"
# What the README's first command builds, then the rest, as scripts/demo.sh and test.sh do.
demo_targets=$(sed -n 's/^ *scripts\/build.sh \([a-z -]*\).*/\1/p' "$src/scripts/demo.sh" | head -1)
# The launcher as one path (the fuzz build, tests/fuzz, takes the launcher as one word).
launch=$out/launch
printf '#!/bin/sh\nexec %q --launch %q "$@"\n' "$self" "$log" >"$launch"
chmod +x "$launch"
phase configure cmake -S "$src" -B "$bdir" -G Ninja "-DCMAKE_CXX_COMPILER_LAUNCHER=$launch" \
  "-DCMAKE_CXX_LINKER_LAUNCHER=$launch" "$@"
if [ -n "$targets" ]; then
  # shellcheck disable=SC2086  # the targets are words
  phase "targets $targets" cmake --build "$bdir" -j"$(nproc)" --target $targets
else
  phase "demo targets ($demo_targets)" cmake --build "$bdir" -j"$(nproc)" --target $demo_targets
  [ ${#then[@]} = 0 ] || phase "reconfigure (${then[*]})" cmake -S "$src" -B "$bdir" "${then[@]}"
  phase "the rest (tests, tools, fuzz targets)" cmake --build "$bdir" -j"$(nproc)"
fi
cp "$bdir/.ninja_log" "$out/.ninja_log"

python3 - "$out" "$src" <<'PY' | tee "$out/summary.txt"
import collections, os, sys
out, src = sys.argv[1], sys.argv[2]
phases = [l.rstrip("\n").split("\t") for l in open(os.path.join(out, "phases.tsv")) if l.strip()]
rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(out, "objects.tsv")) if l.count("\t") >= 4]
total = sum(float(u) + float(s) for u, s, *_ in phases)
print(f"build-cost: {src}")
print(f"{'phase':48} {'CPU s':>8} {'wall s':>8}")
for u, s, r, name in phases:
    print(f"{name:48} {float(u) + float(s):8.1f} {float(r):8.1f}")
print(f"{'total':48} {total:8.1f}")
by_kind = collections.Counter()
n_kind = collections.Counter()
for u, s, r, kind, o in rows:
    by_kind[kind] += float(u) + float(s)
    n_kind[kind] += 1
launched = sum(by_kind.values())
print()
print(f"{'kind':48} {'CPU s':>8} {'count':>8}")
for k in ("compile", "pch", "link"):
    print(f"{k:48} {by_kind[k]:8.1f} {n_kind[k]:8d}")
print(f"{'other (fuzz targets, dashboards, cmake, ninja)':48} {total - launched:8.1f}")
# By folder of the source tree (the object's path below the build folder).
def target(o):
    m = [p for p in o.split("/") if p.endswith(".dir")]
    return m[-1][:-4] if m else os.path.basename(o)
by_area = collections.Counter()
for u, s, r, kind, o in rows:
    by_area[f"{target(o)} ({kind})"] += float(u) + float(s)
print()
print(f"{'target (kind)':48} {'CPU s':>8}")
for k, v in by_area.most_common(25):
    print(f"{k:48} {v:8.1f}")
print()
print(f"{'costliest outputs':60} {'CPU s':>8}")
for u, s, r, kind, o in sorted(rows, key=lambda x: -(float(x[0]) + float(x[1])))[:25]:
    print(f"{kind + ' ' + o:60.60} {float(u) + float(s):8.1f}")
PY
