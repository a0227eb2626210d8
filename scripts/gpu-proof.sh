#!/usr/bin/env bash
# Proves kfleet's real CUDA path on an NVIDIA GPU: builds kfleetd, kfleet-agent and kfleet,
# starts kfleetd on a fresh SQLite file and one `kfleet-agent --backend cuda`, submits every job
# listed in jobs/gpu/expected.tsv with `kfleet submit --wait`, and prints a table of expected vs
# actual outcome, gate and reason. Exits 1 on any mismatch, 2 on a setup failure.
#   scripts/gpu-proof.sh [--bin DIR] [--run-dir DIR] [--backend cuda] [--arch A] [--build-only]
#     --bin DIR      use kfleetd/kfleet-agent/kfleet already in DIR (skips the build)
#     --run-dir DIR  where the database, agent work dir and logs go (default ./gpu-run)
#     --backend B    agent backend (cuda; `simulated --arch sm_90a` only tests this script)
#     --build-only   build, print where the binaries are, and stop
# Hosts without libsqlite3-dev (the lent GPU machines: Ubuntu 24.04 has libsqlite3.so.0 through
# Python, but no sqlite3.h) get the header from .device/sqlite/sqlite3.h, an ignored copy of the
# header this repo's Debian machine has; the SQLite C API is stable, so any 3.x header fits.
# shellcheck source=lib/usage.sh
source "$(dirname "$0")/lib/usage.sh"
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
bin="" run="$root/gpu-run" backend=cuda arch="" build_only=0
# shellcheck source=lib/options.sh
source "$root/scripts/lib/options.sh"
parse_options --bin=bin --run-dir=run --backend=backend --arch=arch --build-only=build_only! -- "$@"

build() {
  local b=$root/build-gpu cm=()
  if [ ! -e /usr/include/sqlite3.h ]; then
    local lib
    lib=$(ls /usr/lib/x86_64-linux-gnu/libsqlite3.so.0 /usr/lib/x86_64-linux-gnu/libsqlite3.so 2>/dev/null | head -1)
    [ -n "$lib" ] || die "no libsqlite3 on this host: install libsqlite3-dev"
    [ -e "$root/.device/sqlite/sqlite3.h" ] ||
      die "no sqlite3.h here: copy one to .device/sqlite/sqlite3.h (cp /usr/include/sqlite3.h on a host with libsqlite3-dev)"
    cm+=(-DSQLite3_INCLUDE_DIR="$root/.device/sqlite" -DSQLite3_LIBRARY="$lib")
    echo "gpu-proof: no sqlite3.h installed: using .device/sqlite/sqlite3.h with $lib"
  fi
  # The GPU machines have no libpq-dev: kfleetd runs on SQLite there.
  pkg-config --exists libpq 2>/dev/null || cm+=(-DKFLEET_WITH_POSTGRESQL=OFF)
  local gen=() ; command -v ninja >/dev/null && gen=(-G Ninja)
  # Unity batches off: each source compiled as written (the GPU machine's g++ 13 crashed on a
  # batch that g++ 12 compiles), and its 16 cores make the batches' saving small there.
  cmake -S "$root" -B "$b" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DKFLEET_BUILD_TESTS=OFF -DKFLEET_BUILD_DASHBOARDS=OFF \
    -DKFLEET_UNITY_BUILD=OFF -DKFLEET_BUILD_BENCH=OFF -DKFLEET_WERROR=OFF "${cm[@]}" >"$b.configure.log" 2>&1 ||
    { tail -30 "$b.configure.log"; die "configure failed (log: $b.configure.log)"; }
  # -Werror off here: a GPU machine's compilers (g++ 13) are not CI's; their warnings are counted
  # instead, so the proof's log shows whether the build is quiet there too.
  cmake --build "$b" -j"$(nproc)" --target kfleetd kfleet-agent kfleet-seccomp-exec kfleet >"$b.build.log" 2>&1
  local rc=$?
  tail -40 "$b.build.log"
  [ "$rc" = 0 ] || die "build failed (log: $b.build.log)"
  echo "gpu-proof: build warnings: $(grep -c 'warning:' "$b.build.log" || true) ($(c++ --version | head -1))"
  mkdir -p "$b/bin"
  # kfleet-seccomp-exec beside kfleet-agent: the sandbox's syscall filter, which the agent finds there.
  cp "$b/orchestrator/api/kfleetd" "$b/agent/kfleet-agent" "$b/agent/kfleet-seccomp-exec" "$b/cli/kfleet" "$b/bin/"
  bin=$b/bin
}

if [ -z "$bin" ]; then
  t0=$(date +%s)
  build
  echo "gpu-proof: built in $(( $(date +%s) - t0 )) s: $bin"
fi
[ "$build_only" = 1 ] && exit 0
for x in kfleetd kfleet-agent kfleet; do [ -x "$bin/$x" ] || die "$bin/$x is missing"; done

rm -rf "$run"; mkdir -p "$run"
export KFLEET_TOKEN=gpu-proof-user KFLEET_ENROL_TOKEN=gpu-proof-enrol
export KFLEET_HARNESS_DIR=$root/kernels/harness
# shellcheck source=lib/local-cluster.sh
source "$root/scripts/lib/local-cluster.sh"
agent_flags=(--backend "$backend")
[ -n "$arch" ] && agent_flags+=(--arch "$arch" --gpu-class "$arch")
start_local_cluster "$bin" "$run" "${agent_flags[@]}" || die "kfleetd and agent gpu0 did not come up"
kf() { "$bin/kfleet" --no-color "$@"; }
command -v nvidia-smi >/dev/null && nvidia-smi -L
echo "gpu-proof: kfleetd $KFLEET_SERVER, agent gpu0 (--backend $backend)"
kf agents


rows=() mismatches=0
while IFS=$'\t' read -r file want_state want_gate want_reason; do
  case "$file" in ''|'#'*) continue ;; esac
  echo; echo "== kfleet submit jobs/gpu/$file --wait --force"
  t0=$(date +%s)
  out=$(kf --json submit "jobs/gpu/$file" --force --wait 2>"$run/submit.err"); rc=$?
  secs=$(( $(date +%s) - t0 ))
  id=$(printf '%s' "$out" | json_field job.id)
  [ -n "$id" ] || { cat "$run/submit.err"; id=0; }
  job_outcome "$id"
  ok=OK
  [[ "$state" =~ ^($want_state)$ ]] || ok=MISMATCH
  [[ "$gate" =~ ^($want_gate)$ ]] || ok=MISMATCH
  [[ "$reason" =~ $want_reason ]] || ok=MISMATCH
  [ "$ok" = OK ] || mismatches=$((mismatches + 1))
  echo "job $id: exit $rc after ${secs}s: $state / $gate / $reason"
  kf status "$id" 2>&1 | sed 's/^/  /'
  rows+=("$(printf '%s\t%s\t%s\t%s\t%s\t%s\t%s' "$file" "$want_state/$want_gate" "$state/$gate" "${secs}s" "$ok" "$reason" "$id")")
done <jobs/gpu/expected.tsv

echo
echo "== gpu-proof results (agent gpu0, backend $backend)"
printf '%-30s %-28s %-22s %-6s %-8s %s\n' JOB EXPECTED ACTUAL TIME CHECK REASON
for r in "${rows[@]}"; do
  IFS=$'\t' read -r f e a s ok why _ <<<"$r"
  printf '%-30s %-28s %-22s %-6s %-8s %s\n' "$f" "$e" "$a" "$s" "$ok" "${why:0:140}"
done
kill -0 "${pids[1]}" 2>/dev/null && echo "gpu-proof: agent gpu0 still running after every job" ||
  { echo "gpu-proof: agent gpu0 DIED"; mismatches=$((mismatches + 1)); }
echo "gpu-proof: $mismatches mismatch(es); logs in $run"
[ "$mismatches" = 0 ]
