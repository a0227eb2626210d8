#!/usr/bin/env bash
# The fuzz targets' long run: every target for M CPU-minutes, all cores shared between them.
#
#   scripts/fuzz-long-run.sh --minutes-per-target M --out DIR [options]
#   scripts/fuzz-long-run.sh --make-kit DIR
#
# Each target runs as one libFuzzer fork-mode parent (-fork=W) on its seed corpus; the cores are
# split evenly (W = ceil(cores / targets), so every target gets cores/targets of the machine) and
# the run lasts M * targets / cores minutes of wall time. Crashes, timeouts and out-of-memory
# inputs do not stop it: they are kept and listed. New corpus units go to an output corpus apart
# from the seeds, so a later call can go on from them (--resume).
#
# Options:
#   --minutes-per-target M  CPU-minutes each target gets in this call (fractions allowed)
#   --out DIR               where the results go (created): summary.md (the table), summary.tsv
#                           (totals, summed over resumed calls), logs.tar.gz (one libFuzzer log
#                           per target), corpus.tar.gz (the new units; what --resume reads) and
#                           crashes.tar.gz (crash-*, timeout-*, oom-* inputs, per target)
#   --resume DIR            go on from a previous call's --out DIR: its new units seed this run,
#                           and its figures are added to this call's in the summary
#   --cores N               cores to use (default: all, from nproc)
#   --targets a,b,...       only these targets (names without fuzz_; default: every fuzz_* binary)
#   --max-wall-seconds S    never fuzz longer than S seconds of wall time (default 510, so that a
#                           call fits a 10-minute slot with the packing); a run capped by it gets
#                           fewer CPU-minutes than asked, and the summary says so
#   --timeout S             per-input timeout (default 10)
#   --work DIR              scratch folder (default: a fresh one under $TMPDIR or /tmp, removed
#                           at the end)
#   --bin PATH              the fuzz_* binaries: a folder or a .tar.gz of them
#   --corpus DIR / --dict DIR  seed corpora (DIR/<target>/) and dictionaries (DIR/<target>.dict)
#   --make-kit DIR          instead of fuzzing: write a self-contained kit to DIR (this script,
#                           the built fuzzers with their debug info stripped, packed, any shared
#                           library they need beyond libc/libstdc++, the corpora and
#                           dictionaries, and MANIFEST.txt), for a machine without clang
#   -h, --help              this text
#
# Defaults: run from a kit (a bin.tar.gz or bin/ beside this script), the kit's own files; run
# from the repo, build/fuzz/ (the fuzz_build test's output) and tests/fuzz/{corpus,dict}/. A lib/
# beside the binaries or the script is put on LD_LIBRARY_PATH.
# Exit status: 0 when the run completed (crashes found are in the summary, not the status),
# 2 on a usage or setup error.
# shellcheck source=lib/usage.sh
source "$(dirname "$0")/lib/usage.sh"
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
me="$here/$(basename "$0")"
die() { echo "fuzz-long-run: $*" >&2; exit 2; }

minutes="" out="" resume="" cores="" targets="" max_wall=510 timeout_s=10 work="" make_kit=""
bin="" corpus="" dict=""
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes-per-target) minutes=${2-}; shift 2 ;;
    --out) out=${2-}; shift 2 ;;
    --resume) resume=${2-}; shift 2 ;;
    --cores) cores=${2-}; shift 2 ;;
    --targets) targets=${2-}; shift 2 ;;
    --max-wall-seconds) max_wall=${2-}; shift 2 ;;
    --timeout) timeout_s=${2-}; shift 2 ;;
    --work) work=${2-}; shift 2 ;;
    --bin) bin=${2-}; shift 2 ;;
    --corpus) corpus=${2-}; shift 2 ;;
    --dict) dict=${2-}; shift 2 ;;
    --make-kit) make_kit=${2-}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (try --help)" ;;
  esac
done

# Defaults: the kit's files beside this script, or the repo's build and sources.
if [ -e "$here/bin.tar.gz" ] || [ -d "$here/bin" ]; then
  kit=1
  [ -n "$bin" ] || { [ -d "$here/bin" ] && bin="$here/bin" || bin="$here/bin.tar.gz"; }
  [ -n "$corpus" ] || corpus="$here/corpus"
  [ -n "$dict" ] || dict="$here/dict"
else
  kit=0
  root=$(cd "$here/.." && pwd)
  [ -n "$bin" ] || bin="$root/build/fuzz"
  [ -n "$corpus" ] || corpus="$root/tests/fuzz/corpus"
  [ -n "$dict" ] || dict="$root/tests/fuzz/dict"
fi

# --- the kit -----------------------------------------------------------------------------------
if [ -n "$make_kit" ]; then
  [ "$kit" = 0 ] || die "--make-kit runs from the repo (scripts/), not from a kit"
  [ -d "$bin" ] || die "$bin is not a folder of built fuzzers (build them: ctest -R fuzz_build)"
  ls "$bin"/fuzz_* >/dev/null 2>&1 || die "no fuzz_* binaries in $bin (ctest -R fuzz_build builds them)"
  command -v strip >/dev/null || die "strip (binutils) is needed to make the kit"
  rm -rf "$make_kit"; mkdir -p "$make_kit/lib" "$make_kit/corpus" || die "cannot create $make_kit"
  stage=$(mktemp -d) || die "mktemp failed"
  mkdir "$stage/bin"
  {
    echo "kfleet fuzz kit"
    echo "made: $(date -u +%Y-%m-%dT%H:%M:%SZ) from $(git -C "$root" rev-parse HEAD 2>/dev/null || echo '?')$(git -C "$root" diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
    echo "compiler: $(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$bin/CMakeCache.txt" 2>/dev/null) $("$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$bin/CMakeCache.txt" 2>/dev/null)" --version 2>/dev/null | head -1)"
    echo "binaries (debug info stripped; the unstripped ones, same build id, symbolize reports):"
  } >"$make_kit/MANIFEST.txt"
  # Libraries every Linux with glibc and GCC's runtime has (Ubuntu 24.04's are newer than these,
  # and backward compatible): everything else a binary needs is copied into lib/.
  base='^(linux-vdso|ld-linux|libc|libm|libstdc\+\+|libgcc_s|libresolv|libpthread|libdl|librt)\.so'
  for f in "$bin"/fuzz_*; do
    [ -x "$f" ] || continue
    name=$(basename "$f")
    strip --strip-debug -o "$stage/bin/$name" "$f" || die "strip $f failed"
    while read -r lib _ path _; do
      [[ "$lib" =~ $base ]] && continue
      [ -f "$path" ] || die "$name needs $lib, which is not found here"
      cp -nL "$path" "$make_kit/lib/"
    done < <(ldd "$f" | awk '/=>/ {print $1, $2, $3, $4}')
    echo "  $name $(sha256sum "$stage/bin/$name" | cut -c1-16) build-id $(readelf -n "$f" 2>/dev/null | awk '/Build ID/ {print $3}')" >>"$make_kit/MANIFEST.txt"
  done
  tar -C "$stage" -czf "$make_kit/bin.tar.gz" bin || die "packing the binaries failed"
  rm -rf "$stage"
  cp -r "$corpus"/. "$make_kit/corpus/"
  cp -r "$dict" "$make_kit/dict"
  cp "$me" "$make_kit/fuzz-long-run.sh"; chmod +x "$make_kit/fuzz-long-run.sh"
  echo "shared libraries beyond libc, libm, libstdc++, libgcc_s, libresolv: $(ls "$make_kit/lib" | tr '\n' ' ')" >>"$make_kit/MANIFEST.txt"
  echo "fuzz-long-run: kit in $make_kit ($(du -sh "$make_kit" | cut -f1)); run it with" \
       "cd $make_kit && ./fuzz-long-run.sh --minutes-per-target M --out DIR"
  exit 0
fi

# --- checks ------------------------------------------------------------------------------------
[ -n "$minutes" ] || die "--minutes-per-target M is required (try --help)"
[ -n "$out" ] || die "--out DIR is required (try --help)"
[[ "$minutes" =~ ^[0-9]+([.][0-9]+)?$ ]] && awk "BEGIN{exit !($minutes > 0)}" \
  || die "--minutes-per-target must be a positive number, not '$minutes'"
[[ "$max_wall" =~ ^[0-9]+$ ]] && [ "$max_wall" -gt 0 ] || die "--max-wall-seconds must be a positive integer"
[[ "$timeout_s" =~ ^[0-9]+$ ]] && [ "$timeout_s" -gt 0 ] || die "--timeout must be a positive integer"
[ -n "$cores" ] || cores=$(nproc)
[[ "$cores" =~ ^[0-9]+$ ]] && [ "$cores" -gt 0 ] || die "--cores must be a positive integer"
[ -d "$corpus" ] || die "no seed corpus folder $corpus"
if [ -n "$resume" ]; then
  [ -f "$resume/corpus.tar.gz" ] || die "--resume $resume: no corpus.tar.gz there (give a previous call's --out folder)"
fi
for tool in tar gzip awk timeout; do command -v $tool >/dev/null || die "$tool is needed"; done

own_work=0
if [ -z "$work" ]; then work=$(mktemp -d "${TMPDIR:-/tmp}/kfleet-fuzz.XXXXXX") || die "mktemp failed"; own_work=1; fi
mkdir -p "$work" "$out" || die "cannot create $work or $out"
work=$(cd "$work" && pwd); out=$(cd "$out" && pwd)

# The binaries: unpacked into the scratch folder when they come packed.
if [ -f "$bin" ]; then
  tar -C "$work" -xzf "$bin" || die "cannot unpack $bin"
  bindir="$work/bin"
else
  bindir=$bin
fi
[ -d "$bindir" ] || die "no fuzzers at $bin (build them: ctest -R fuzz_build, or give --bin)"
for l in "$here/lib" "$bindir/lib"; do
  [ -d "$l" ] && export LD_LIBRARY_PATH="$l${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done

names=()
if [ -n "$targets" ]; then
  IFS=, read -r -a names <<<"$targets"
else
  for f in "$bindir"/fuzz_*; do [ -x "$f" ] && names+=("$(basename "$f" | sed 's/^fuzz_//')"); done
fi
[ "${#names[@]}" -gt 0 ] || die "no fuzz_* binaries in $bindir"
wrap=()  # `setarch -R` where ASan's shadow memory needs address randomization off
for t in "${names[@]}"; do
  f="$bindir/fuzz_$t"
  [ -x "$f" ] || die "no fuzzer fuzz_$t in $bindir"
  [ -d "$corpus/$t" ] || die "no seed corpus $corpus/$t for fuzz_$t"
  # A binary that cannot load (a missing shared library, a libc too old) fails here, not later.
  # Some kernels randomize mmap so widely that an ASan binary cannot place its shadow memory;
  # such a binary starts with randomization off for it and its workers.
  if ! "${wrap[@]}" "$f" -help=1 >/dev/null 2>"$work/load-$t.err"; then
    if [ ${#wrap[@]} = 0 ] && command -v setarch >/dev/null &&
       setarch "$(uname -m)" -R "$f" -help=1 >/dev/null 2>&1; then
      wrap=(setarch "$(uname -m)" -R)
      echo "fuzz-long-run: the fuzzers start only with address randomization off here;" \
           "running them under setarch -R"
      continue
    fi
    cat "$work/load-$t.err" >&2; ldd "$f" >&2
    die "fuzz_$t does not start on this machine (see above)"
  fi
done

# --- the plan ----------------------------------------------------------------------------------
n=${#names[@]}
workers=$(( (cores + n - 1) / n ))
wall=$(awk "BEGIN{printf \"%d\", $minutes * 60 * $n / $cores + 0.5}")
capped=0
if [ "$wall" -gt "$max_wall" ]; then wall=$max_wall; capped=1; fi
[ "$wall" -ge 5 ] || wall=5
share=$(awk "BEGIN{printf \"%.3f\", $cores / $n}")   # cores each target gets
echo "fuzz-long-run: $n targets on $cores cores: each gets $share cores (-fork=$workers) for ${wall}s" \
     "of wall time = $(awk "BEGIN{printf \"%.1f\", $wall * $cores / $n / 60}") CPU-minutes" \
     "$([ $capped = 1 ] && echo "(capped by --max-wall-seconds $max_wall; $minutes asked)")"
echo "fuzz-long-run: binaries $bin, seeds $corpus, work $work, results $out"

mkdir -p "$work/corpus" "$work/crashes" "$work/logs" "$work/tmp"
if [ -n "$resume" ]; then
  tar -C "$work" -xzf "$resume/corpus.tar.gz" || die "cannot unpack $resume/corpus.tar.gz"
fi
export TMPDIR="$work/tmp"
# Leaks are not findings here (fuzz_http_request keeps one server for the whole process), and
# a report is symbolized only where llvm-symbolizer exists; elsewhere it names module+offset,
# which the unstripped binary resolves.
export ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}" UBSAN_OPTIONS="print_stacktrace=1:${UBSAN_OPTIONS:-}"

pids=()
for t in "${names[@]}"; do
  mkdir -p "$work/corpus/$t" "$work/crashes/$t"
  d=(); [ -f "$dict/$t.dict" ] && d=("-dict=$dict/$t.dict")
  # The subshell's `times` gives the CPU seconds of the target and every worker it reaped.
  # `timeout` is a backstop only: libFuzzer stops its workers itself at -max_total_time.
  (
    timeout -s INT -k 20 $((wall + 45)) "${wrap[@]}" "$bindir/fuzz_$t" "${d[@]}" -fork="$workers" \
      -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -max_total_time="$wall" \
      -timeout="$timeout_s" -rss_limit_mb=2048 -max_len=65536 -print_funcs=0 \
      -artifact_prefix="$work/crashes/$t/" -print_final_stats=1 \
      "$work/corpus/$t" "$corpus/$t" >"$work/logs/$t.log" 2>&1
    echo "exit $?"
    times
  ) >"$work/logs/$t.cpu" 2>&1 &
  pids+=($!)
done

# On INT or TERM: the targets are asked to stop (SIGINT to each `timeout`, which passes it on to
# its target and the target's workers), and the summary is written from what they left.
stop_all() {
  echo "fuzz-long-run: interrupted; stopping the targets and writing what there is" >&2
  local p s
  for s in /proc/[0-9]*/stat; do
    read -r p _ _ pp _ <"$s" 2>/dev/null || continue
    for q in "${pids[@]}"; do [ "$pp" = "$q" ] && kill -INT "$p" 2>/dev/null; done
  done
}
trap stop_all INT TERM

# One progress line a minute: the executions each target has made so far.
start=$(date +%s)
next=$((start + 60))
while :; do
  alive=0
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
  [ $alive = 1 ] || break
  sleep 2
  now=$(date +%s)
  if [ "$now" -ge "$next" ]; then
    next=$((next + 60))
    line="fuzz-long-run: $((now - start))s:"
    for t in "${names[@]}"; do
      line+=" $t $(grep -aoE '^#[0-9]+' "$work/logs/$t.log" 2>/dev/null | tail -1)"
    done
    echo "$line"
  fi
done
for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
trap - INT TERM

# --- the summary -------------------------------------------------------------------------------
# "XmY.ZZZs" -> seconds
secs() { awk -v s="$1" 'BEGIN{split(s, a, "m"); sub("s", "", a[2]); printf "%.1f", a[1] * 60 + a[2]}'; }
declare -A prev prevline
if [ -n "$resume" ] && [ -f "$resume/summary.tsv" ]; then
  while IFS=$'\t' read -r t calls w cm cpu ex c f corp nu cr to oo arts; do
    [ "$t" = target ] && continue
    prev[$t]="$calls $w $cm $cpu $ex $cr $to $oo $arts"
    prevline[$t]=$(printf '%s\t' "$t" "$calls" "$w" "$cm" "$cpu" "$ex" "$c" "$f" "$corp" "$nu" "$cr" "$to" "$oo" "$arts")
  done <"$resume/summary.tsv"
fi
tsv="$out/summary.tsv"
printf 'target\tcalls\twall_s\tcore_min\tcpu_s\texecs\tcov\tft\tcorpus\tnew_units\tcrashes\ttimeouts\tooms\tinputs_kept\n' >"$tsv"
for t in "${names[@]}"; do
  log="$work/logs/$t.log"
  last=$(grep -aE '^#[0-9]+: cov:' "$log" | tail -1)
  first=$(grep -aE '^#[0-9]+: cov:' "$log" | head -1)
  field() { awk -v k="$1" '{for (i = 1; i < NF; i++) if ($i == k) {print $(i + 1); exit}}' <<<"$2"; }
  execs=$(sed -E 's/^#([0-9]+):.*/\1/' <<<"$last"); execs=${execs:-0}
  cov=$(field cov: "$last"); ft=$(field ft: "$last"); corp=$(field corp: "$last")
  oct=$(field oom/timeout/crash: "$last"); oct=${oct:-0/0/0}
  IFS=/ read -r ooms tos crs <<<"$oct"
  cpu=0
  tl=$(sed -n '/^exit/{n;n;p}' "$work/logs/$t.cpu")   # second line of `times`: the children
  [ -n "$tl" ] && cpu=$(awk -v u="$(secs "${tl%% *}")" -v s="$(secs "${tl##* }")" 'BEGIN{printf "%.1f", u + s}')
  core_min=$(awk "BEGIN{printf \"%.2f\", $wall * $cores / $n / 60}")
  nu=$(find "$work/corpus/$t" -type f | wc -l)
  kept=$(find "$work/crashes/$t" -type f | wc -l)
  calls=1 w=$wall
  if [ -n "${prev[$t]:-}" ]; then
    read -r pc pw pcm pcpu pex pcr pto poo parts <<<"${prev[$t]}"
    calls=$((pc + 1)); w=$((pw + wall))
    core_min=$(awk "BEGIN{printf \"%.2f\", $pcm + $core_min}")
    cpu=$(awk "BEGIN{printf \"%.1f\", $pcpu + $cpu}")
    execs=$((pex + execs)); crs=$((pcr + crs)); tos=$((pto + tos)); ooms=$((poo + ooms))
    kept=$((parts + kept))
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$calls" "$w" "$core_min" \
    "$cpu" "$execs" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$nu" "$crs" "$tos" "$ooms" "$kept" >>"$tsv"
  echo "$t first status: ${first:-none}" >>"$work/logs/starts.txt"
  unset "prevline[$t]"
done
# Targets a resumed run left out this time keep their earlier figures (their corpus is kept too).
for t in "${!prevline[@]}"; do printf '%s\n' "${prevline[$t]%$'\t'}" >>"$tsv"; done

md="$out/summary.md"
{
  echo "# Fuzz long run"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n): $cores cores ($(nproc) online), $n targets," \
       "-fork=$workers each, ${wall}s of wall time in this call$([ $capped = 1 ] && echo \
       " (capped by --max-wall-seconds; $minutes CPU-minutes asked)")."
  [ -n "$resume" ] && echo "Resumed from $resume: each row sums the calls it counts (calls)."
  echo "core-min: the cores given to the target times the wall time; CPU-min: user + system time of"
  echo "the target and every worker it ran (from \`times\`). cov/ft/corpus: libFuzzer's last status line."
  echo "new units: files written to the output corpus (fork mode keeps some that a later merge"
  echo "supersedes). Crashes, timeouts, ooms: as libFuzzer counted them; inputs kept: files saved."
  echo
  echo "| target | calls | wall s | core-min | CPU-min | executions | exec/s | exec per CPU-s | cov | ft | corpus | new units | crashes | timeouts | ooms | inputs kept |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
  awk -F'\t' 'NR > 1 {
    eps = $3 > 0 ? $6 / $3 : 0; epc = $5 > 0 ? $6 / $5 : 0
    printf "| `fuzz_%s` | %s | %s | %s | %.1f | %s | %.0f | %.0f | %s | %s | %s | %s | %s | %s | %s | %s |\n",
      $1, $2, $3, $4, $5 / 60, $6, eps, epc, $7, $8, $9, $10, $11, $12, $13, $14 }' "$tsv"
  echo
  echo "Inputs kept from this call (in crashes.tar.gz as crashes/<target>/<file>):"
  found=0
  for t in "${names[@]}"; do
    for f in "$work/crashes/$t"/*; do
      [ -f "$f" ] || continue
      found=1
      echo "- \`$t/$(basename "$f")\` ($(stat -c %s "$f") bytes)"
    done
  done
  [ $found = 1 ] || echo "- none"
  echo
  echo "The sanitizer lines of the reports (the full logs are in logs.tar.gz):"
  echo '```'
  for t in "${names[@]}"; do
    grep -aE 'ERROR: |runtime error:' "$work/logs/$t.log" | sed -E 's/==[0-9]+== ?//' | sort | uniq -c | sed "s/^/$t: /" | head -20
  done
  echo '```'
} >"$md"

# --- packing: five files, so that the results fit a few-files transfer --------------------------
tar -C "$work" -czf "$out/logs.tar.gz" logs
tar -C "$work" -czf "$out/corpus.tar.gz" corpus
tar -C "$work" -czf "$out/crashes.tar.gz" crashes
for f in "$out"/*.tar.gz; do
  sz=$(stat -c %s "$f")
  [ "$sz" -lt $((16 * 1024 * 1024)) ] || echo "fuzz-long-run: warning: $f is $((sz / 1048576)) MiB" >&2
done
cat "$md"
[ $own_work = 1 ] && rm -rf "$work"
exit 0
