#!/usr/bin/env bash
# The Debian packages, as CI builds them, run from an empty prefix with the source and build
# trees out of reach: cpack makes the packages from this build's binaries, they are unpacked into
# a fresh folder, and, in a mount namespace where the source and build folders are empty, the
# unpacked kfleetd serves its problem library and dashboards, `kfleet-agent --check` finds the
# harness and problems and says what it can do, the agent builds its measuring process (for
# sm_89, no GPU needed), and a compile agent takes a problem job, building and gating it for real,
# before a simulated L4 agent runs its GPU stages (marked simulated).
# Usage: installed-layout-test.sh SOURCE_DIR BUILD_DIR   (as root: it unshares a mount namespace)
set -euo pipefail
src=$(cd "$1" && pwd) build=$(cd "$2" && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "run as root: the test hides the source tree in a mount namespace (unshare -m), and the agent's sandbox needs root"
for t in cpack dpkg-deb unshare; do command -v $t >/dev/null || fail "$t is not installed (apt-get install cmake dpkg util-linux)"; done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kfleet-pkg-XXXXXX")
case "$tmp" in "$src"/*|"$build"/*) fail "TMPDIR ($tmp) is inside the tree the test hides";; esac
cleanup() { local rc=$?; if [ "$rc" = 0 ]; then rm -rf "$tmp"; else echo "kept $tmp" >&2; fi; }
trap cleanup EXIT
t0=$(date +%s)

# 1. The packages, from this build's binaries (cpack installs each component, strips it, packs).
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/packages" >"$tmp/cpack.log" 2>&1 ||
  { tail -20 "$tmp/cpack.log" >&2; fail "cpack failed"; }
for p in kfleet-agent kfleet-kernels kfleetd kfleet; do
  ls "$tmp/packages/${p}_"*.deb >/dev/null 2>&1 || fail "cpack made no $p package: $(ls "$tmp/packages")"
done
echo "ok: cpack made $(cd "$tmp/packages" && echo *.deb) ($(( $(date +%s) - t0 )) s)"
deps=$(dpkg-deb -f "$tmp/packages"/kfleet-agent_*.deb Depends)
for want in "bubblewrap" "kfleet-kernels (=" "libcurl4 (>= 7.74) | libcurl4t64"; do
  grep -qF "$want" <<<"$deps" || fail "kfleet-agent does not depend on '$want': $deps"
done
grep -qF "libsqlite3-0" <<<"$(dpkg-deb -f "$tmp/packages"/kfleetd_*.deb Depends)" || fail "kfleetd does not depend on libsqlite3-0"
[ "$(dpkg-deb -f "$tmp/packages"/kfleet-kernels_*.deb Architecture)" = all ] || fail "kfleet-kernels is not Architecture: all"
# The listing read whole first: grep -q ending early would stop tar with SIGPIPE, which
# pipefail reads as a failure.
ctrl=$(dpkg-deb --ctrl-tarfile "$tmp/packages"/kfleetd_*.deb | tar -t)
for f in postinst prerm postrm; do
  grep -qx "./$f" <<<"$ctrl" || fail "kfleetd has no $f: $ctrl"
done
echo "ok: dependencies and maintainer scripts declared"

# 2. Unpacked into an empty prefix (no maintainer scripts: a folder, not a system).
P=$tmp/prefix
mkdir -p "$P"
for d in "$tmp/packages"/*.deb; do dpkg-deb -x "$d" "$P"; done
for f in usr/bin/kfleet-agent usr/bin/kfleetd usr/bin/kfleet usr/lib/kfleet/kfleet-seccomp-exec \
         usr/share/kfleet/kernels/harness/include usr/share/kfleet/kernels/harness/python/kfleet_record.py \
         usr/share/kfleet/kernels/problems/rmsnorm/problem.yaml lib/systemd/system/kfleet-agent@.service \
         lib/systemd/system/kfleetd.service usr/share/kfleet/agent.env usr/share/kfleet/kfleetd.env; do
  [ -e "$P/$f" ] || fail "the packages do not install /$f"
done
if ldd "$P/usr/bin/kfleet-agent" | grep -q yaml-cpp; then fail "kfleet-agent links yaml-cpp dynamically (its soname differs between Debian 12 and Ubuntu 24.04)"; fi
echo "ok: unpacked into $P"

# The job: a problem of the installed library, its kernel from the installed library (lib:).
mkdir -p "$tmp/job"
cat >"$tmp/job/rmsnorm.yaml" <<'YAML'
name: packaged/rmsnorm-naive
target: {gpu: L4}
kernel: {problem: rmsnorm@2, language: cuda, sources: ["lib:problems/rmsnorm/naive.cu"]}
gates:
  correctness: {cases: [{name: small, seeds: [0]}, {name: stress, seeds: [0]}]}
  performance: {case: small}
simulate: {time_us: 40, stage_ms: 20}
max_attempts: 1
YAML

# 3. Everything else in a mount namespace where the source and build trees are empty folders.
cat >"$tmp/inside.sh" <<'INSIDE'
set -euo pipefail
P=$1 tmp=$2; shift 2
for d in "$@"; do mount -t tmpfs -o size=1m kfleet-hidden "$d"; done
fail() { echo "FAIL: $*" >&2; exit 1; }
for d in "$@"; do [ ! -e "$d" ] || [ -z "$(ls -A "$d")" ] || fail "$d is still visible"; done
echo "ok: the source and build trees are out of reach ($*)"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true' EXIT
export KFLEET_TOKEN="kft_$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')"
export KFLEET_ENROL_TOKEN="kfe_$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')"
(umask 077; printf '%s\n' "$KFLEET_ENROL_TOKEN" >"$tmp/enrol.token")
KFLEET_ADMIN_TOKEN=$KFLEET_TOKEN "$P/usr/bin/kfleetd" --listen 127.0.0.1:0 --port-file "$tmp/port" \
  --db "$tmp/kfleet.db" >"$tmp/kfleetd.log" 2>&1 &
pids+=($!)
for _ in $(seq 200); do [ -s "$tmp/port" ] && break; sleep 0.1; done
[ -s "$tmp/port" ] || { cat "$tmp/kfleetd.log" >&2; fail "kfleetd did not start"; }
export KFLEET_SERVER="http://127.0.0.1:$(cat "$tmp/port")"
grep -q "problem library $P/usr/share/kfleet/kernels/problems: [0-9]* problems" "$tmp/kfleetd.log" ||
  { cat "$tmp/kfleetd.log" >&2; fail "kfleetd did not load the installed problem library"; }
echo "ok: kfleetd serves the installed problem library"
unset KFLEET_ENROL_TOKEN
agent=(env -u KFLEET_TOKEN "$P/usr/bin/kfleet-agent" --server "$KFLEET_SERVER" --enrol-token-file "$tmp/enrol.token")

# --check of a compile agent: it can take builds.
"${agent[@]}" --check --backend compile --work-dir "$tmp/build-0" >"$tmp/check-compile.txt" 2>"$tmp/check-compile.err" ||
  { cat "$tmp/check-compile.txt" "$tmp/check-compile.err" >&2; fail "kfleet-agent --check --backend compile says the agent can take no job"; }
cat "$tmp/check-compile.txt"
grep -q "^  ok    harness    $P/usr/share/kfleet/kernels/harness " "$tmp/check-compile.txt" || fail "--check did not find the installed harness"
grep -q "^  ok    problems   $P/usr/share/kfleet/kernels/problems " "$tmp/check-compile.txt" || fail "--check did not find the installed problems"
grep -q "^  ok    sandbox .*$P/usr/lib/kfleet/kfleet-seccomp-exec" "$tmp/check-compile.txt" || fail "--check did not find the installed syscall filter helper"
grep -q "^  ok    server " "$tmp/check-compile.txt" || fail "--check did not reach kfleetd"

# --check of a CUDA agent aimed at sm_89 on this GPU-less host: it builds the measuring process
# from the installed harness (and says it can take no job: there is no GPU).
if "${agent[@]}" --check --backend cuda --arch sm_89 --work-dir "$tmp/gpu0" >"$tmp/check-cuda.txt" 2>"$tmp/check-cuda.err"; then
  cat "$tmp/check-cuda.txt"; fail "--check --backend cuda said yes on a host without a GPU"
fi
cat "$tmp/check-cuda.txt"
grep -q "^  ok    measuring  harness objects for sm_89 ready: .*measuring process $tmp/gpu0/build-cache/measure/" "$tmp/check-cuda.txt" ||
  { cat "$tmp/check-cuda.err" >&2; fail "the measuring process was not built from the installed harness"; }
grep -q "^  FAIL  backend .*no GPU" "$tmp/check-cuda.txt" || fail "--check did not say there is no GPU"
grep -q "^verdict: this agent can take NO job" "$tmp/check-cuda.txt" || fail "--check gave no verdict"

# A compile agent and a simulated L4 agent, both from the prefix; the job through both.
"${agent[@]}" --name build-0 --backend compile --region build --work-dir "$tmp/build-0" >"$tmp/build-0.log" 2>&1 &
pids+=($!)
"${agent[@]}" --name sim-l4 --backend simulated --gpu-class L4 --arch sm_89 --region build \
  --work-dir "$tmp/sim-l4" >"$tmp/sim-l4.log" 2>&1 &
pids+=($!)
for _ in $(seq 300); do
  n=$("$P/usr/bin/kfleet" --no-color --json agents 2>/dev/null | grep -o '"name": *"\(build-0\|sim-l4\)"' | wc -l || true)
  [ "$n" = 2 ] && break
  sleep 0.1
done
[ "$n" = 2 ] || { tail "$tmp/build-0.log" "$tmp/sim-l4.log" >&2; fail "the agents did not enrol"; }
out=$(timeout 300 "$P/usr/bin/kfleet" --no-color submit "$tmp/job/rmsnorm.yaml" --kernel-lib "$P/usr/share/kfleet/kernels" --follow 2>&1) ||
  { echo "$out" >&2; tail -30 "$tmp/build-0.log" >&2; fail "the job did not pass"; }
echo "$out"
grep -q "^\[build\] ok .* on build-0" <<<"$out" || fail "build-0 did not build the job"
grep -q "^\[resources\] .*ok" <<<"$out" || fail "no resources gate on build-0"
grep -q "^PASSED.*\[simulated\]" <<<"$out" || fail "no verdict marked simulated"
echo "ok: a compile agent from the packages built and gated a problem job"
INSIDE
# The build folder first: it may be inside the source folder, which then hides its path.
unshare --mount --propagation private bash "$tmp/inside.sh" "$P" "$tmp" "$build" "$src"
echo "PASS: the packages run from an empty prefix with the source tree out of reach ($(( $(date +%s) - t0 )) s)"
