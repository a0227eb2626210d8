#!/usr/bin/env bash
# One fuzz target's CI run: every corpus input once (the regression cases), then fuzzing for
# SECONDS from a copy of the corpus. Writes only under WORKDIR. A crash fails the test and
# prints its reproducer (the input as hex and base64, and the command that replays it).
# SLOW_DIR (optional) holds inputs that were once slow: each must finish within
# KFLEET_FUZZ_SLOW_TIMEOUT seconds (default 5) under the sanitizers, or libFuzzer reports a
# timeout and the test fails. The bound is loose (the fixed code takes a small fraction of
# it); it catches a return to a parser whose cost explodes, not a few percent.
#   run_target.sh BINARY CORPUS_DIR DICT_OR_EMPTY WORKDIR SECONDS [SLOW_DIR]
set -euo pipefail
bin=$1 corpus=$2 dict=$3 work=$4 secs=$5 slow=${6:-}
name=$(basename "$bin")
[ -x "$bin" ] || { echo "$name: fuzz target $bin was not built (see the fuzz_build test)" >&2; exit 1; }
[ -d "$corpus" ] && [ -n "$(ls -A "$corpus")" ] || { echo "$name: empty corpus $corpus" >&2; exit 1; }
rm -rf "$work"; mkdir -p "$work/corpus" "$work/artifacts"
export TMPDIR="$work" ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}" UBSAN_OPTIONS="print_stacktrace=1"
dict_arg=(); [ -n "$dict" ] && dict_arg=("-dict=$dict")

report() {  # prints every crash input so that CI's log alone reproduces it
  local found=0
  for f in "$work"/artifacts/*; do
    [ -f "$f" ] || continue
    found=1
    echo "=== $name: reproducer $(basename "$f") ($(stat -c %s "$f") bytes)"
    echo "--- base64:"; base64 -w 100 "$f"
    echo "--- hex:"; od -An -tx1 -v "$f" | head -40
    echo "--- replay: save it under tests/fuzz/corpus/${name#fuzz_}/ and run $bin <file>"
  done
  return $found
}

# 1. Regression: each corpus file once, in one process.
if ! "$bin" -artifact_prefix="$work/artifacts/" -timeout=30 "$corpus"/* >"$work/replay.log" 2>&1; then
  tail -60 "$work/replay.log"
  echo "$name: a corpus input fails; reproducer: $(grep '^Running: ' "$work/replay.log" | tail -1 | cut -c10-)" >&2
  exit 1
fi
echo "$name: $(ls "$corpus" | wc -l) corpus inputs pass"

# 1b. Inputs that were once slow, each under a timeout (a timeout is a crash for libFuzzer).
if [ -n "$slow" ]; then
  limit=${KFLEET_FUZZ_SLOW_TIMEOUT:-5}
  if ! "$bin" -artifact_prefix="$work/artifacts/" -timeout="$limit" "$slow"/* >"$work/slow.log" 2>&1; then
    tail -30 "$work/slow.log"
    echo "$name: an input in $slow took longer than ${limit}s (a slow parser is back)" >&2
    exit 1
  fi
  echo "$name: $(ls "$slow" | wc -l) once-slow inputs each within ${limit}s:" \
       "$(grep -o 'in [0-9]* ms' "$work/slow.log" | tr '\n' ' ')"
fi

# 2. A short fuzzing run from a copy of the corpus (new inputs go to the copy, never the tree).
cp "$corpus"/* "$work/corpus/"
if ! "$bin" "${dict_arg[@]}" -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 -max_len=65536 \
      -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$work/corpus" >"$work/fuzz.log" 2>&1; then
  tail -80 "$work/fuzz.log"; echo "$name: fuzzing found a crash" >&2; report || true; exit 1
fi
grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|cov:" "$work/fuzz.log" | tail -3
echo "$name: no crash in $secs s"
