#!/usr/bin/env bash
# The long run: every fuzz target at once, each with WORKERS libFuzzer fork workers for SECONDS,
# from the repo's corpus and dictionary. Crashes do not stop it (they are kept and listed).
# Writes everything under OUT_DIR: <target>.log, corpus/<target>/ (the grown corpus, the
# seeds included) and crashes/<target>/.
#   long_run.sh BIN_DIR CORPUS_DIR DICT_DIR OUT_DIR SECONDS WORKERS
# BIN_DIR holds the fuzz_* binaries; a lib/ beside them is put on LD_LIBRARY_PATH. Prefix the
# call with `nice -n 19` on a shared machine.
set -uo pipefail
bin=$1 corpus=$2 dict=$3 out=$4 secs=$5 workers=$6
mkdir -p "$out/corpus" "$out/crashes" "$out/tmp"
[ -d "$bin/lib" ] && export LD_LIBRARY_PATH="$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TMPDIR="$out/tmp" ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}" UBSAN_OPTIONS="print_stacktrace=1"
pids=()
for f in "$bin"/fuzz_*; do
  name=$(basename "$f"); name=${name#fuzz_}
  mkdir -p "$out/corpus/$name" "$out/crashes/$name"
  cp "$corpus/$name"/* "$out/corpus/$name/"
  d=(); [ -f "$dict/$name.dict" ] && d=("-dict=$dict/$name.dict")
  # /usr/bin/time: the CPU seconds the target and its fork workers used (user + system).
  /usr/bin/time -f "cpu_seconds %U user %S system" -o "$out/$name.cpu" \
  "$f" "${d[@]}" -fork="$workers" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
       -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
       -artifact_prefix="$out/crashes/$name/" -print_final_stats=1 \
       "$out/corpus/$name" >"$out/$name.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
for f in "$bin"/fuzz_*; do
  name=$(basename "$f"); name=${name#fuzz_}
  echo "== $name: $(grep -E '^#[0-9]+' "$out/$name.log" | tail -1)"
  echo "   crashes kept: $(ls "$out/crashes/$name" | wc -l); $(cat "$out/$name.cpu")"
done
