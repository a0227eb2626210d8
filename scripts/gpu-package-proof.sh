#!/usr/bin/env bash
# The Debian packages on a GPU host (Ubuntu 24.04, offline): they are installed there, the agent's
# `--check` says what it found, and a real CUDA job and a Triton job pass through the installed
# kfleetd and kfleet-agent, with the source tree out of reach (hidden in a mount namespace).
#
#   scripts/gpu-package-proof.sh --prepare
#       on the Debian 12 build machine: the packages (cpack, from build/) into .device/packages/,
#       and Debian 12's .debs of what an offline GPU host may lack (bubblewrap, libsqlite3-0,
#       libpq5 and its libldap-2.5-0) into .device/packages/deps/ (an ignored folder: carry it)
#   scripts/gpu-package-proof.sh [--log FILE] [--python PY] [--backend cuda|simulated]
#       on the GPU host, as root: installs the carried dependencies that are missing there, then
#       kfleet-kernels, kfleet-agent, kfleetd and kfleet; starts kfleetd and the agent from their
#       units (systemd's, or scripts/lib/fake_systemctl.py where none runs); runs the jobs; prints
#       a table last. --python: the agent's Python (default /opt/torch/.venv/bin/python3);
#       --backend simulated only tries the script on a host without a GPU (results say simulated).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
carry=$repo/.device/packages
log="" python=/opt/torch/.venv/bin/python3 prepare=0 backend=cuda
while [[ $# -gt 0 ]]; do
  case "$1" in
    --prepare) prepare=1; shift ;;
    --log) log=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    *) sed -n '2,18p' "$0" >&2; exit 2 ;;
  esac
done
fail() { echo "gpu-package-proof: FAIL: $*" >&2; exit 1; }

if [[ $prepare = 1 ]]; then
  rm -rf "$carry"; mkdir -p "$carry/deps"
  cpack -G DEB --config "$repo/build/CPackConfig.cmake" -B "$carry/cpack" >/dev/null || fail "cpack failed (build first: scripts/build.sh)"
  mv "$carry"/cpack/*.deb "$carry/"; rm -rf "$carry/cpack"
  (cd "$carry/deps" && apt-get download bubblewrap libsqlite3-0 libpq5 libldap-2.5-0 >/dev/null) ||
    fail "apt-get download failed (apt-get update first)"
  ls -l "$carry" "$carry/deps"
  echo "gpu-package-proof: carry .device/packages to the GPU host ($(du -sh "$carry" | cut -f1))"
  exit 0
fi

if [[ -n "$log" ]]; then mkdir -p "$(dirname "$log")"; exec > >(tee "$log") 2>&1; fi
[[ $EUID -eq 0 ]] || fail "run as root (it installs packages)"
ls "$carry"/kfleet-agent_*.deb >/dev/null 2>&1 || fail "no packages in $carry: run --prepare on the build machine and carry .device/packages"
t0=$(date +%s)
declare -a rows=()
row() { rows+=("$1|$2"); echo "--> $1: $2"; }
echo "== host: $(. /etc/os-release; echo "$PRETTY_NAME"), $(uname -r), $(nvidia-smi -L 2>/dev/null | head -1 || echo 'no nvidia-smi')"

echo "== 1. what this host lacks of the packages' dependencies, from the carried Debian 12 .debs"
forced=()
for deb in "$carry"/deps/*.deb; do
  pkg=$(dpkg-deb -f "$deb" Package)
  if dpkg-query -W -f '${Status}' "$pkg" 2>/dev/null | grep -q "ok installed"; then
    echo "$pkg: installed here ($(dpkg-query -W -f '${Version}' "$pkg"))"
  elif dpkg -i "$deb" >/tmp/kfleet-dep.log 2>&1; then
    echo "$pkg: installed from $(basename "$deb")"
  else
    # A Debian 12 library whose dependency has another name on Ubuntu 24.04 (libssl3t64, ...):
    # installed without that check; whether its libraries load is checked with ldd below.
    dpkg -i --force-depends "$deb" >/dev/null 2>&1 || fail "$pkg: $(cat /tmp/kfleet-dep.log)"
    forced+=("$pkg")
    echo "$pkg: installed from $(basename "$deb") with --force-depends ($(grep -o 'depends on [^;]*' /tmp/kfleet-dep.log | head -2 | tr '\n' ' '))"
  fi
done
row "carried dependencies" "$(ls "$carry"/deps | wc -l) .debs; forced: ${forced[*]:-none}"

echo "== 2. the kfleet packages"
# dpkg, not apt: the host is offline, and a dependency forced in above would make apt refuse
# everything until it is "fixed"; dpkg still checks each kfleet package's own dependencies.
dpkg -i "$carry"/kfleet-kernels_*.deb "$carry"/kfleet-agent_*.deb "$carry"/kfleetd_*.deb \
  "$carry"/kfleet_*.deb 2>&1 | tail -12 || fail "dpkg could not install the packages"
for p in kfleet-kernels kfleet-agent kfleetd kfleet; do
  dpkg-query -W -f '${Status}' "$p" | grep -q "ok installed" || fail "$p is not installed"
done
for b in /usr/bin/kfleetd /usr/bin/kfleet-agent /usr/bin/kfleet /usr/lib/kfleet/kfleet-seccomp-exec; do
  if ldd "$b" | grep -q "not found"; then ldd "$b"; fail "$b: a library does not load"; fi
done
row "packages" "$(dpkg-query -W -f '${binary:Package} ${Version}, ' kfleet-kernels kfleet-agent kfleetd kfleet)libraries all load"

# Everything the run needs from the tree, copied out; then the tree is hidden.
tmp=$(mktemp -d /tmp/kfleet-gpu-pkg-XXXXXX)
cp "$here/lib/fake_systemctl.py" "$tmp/"
mkdir -p "$tmp/kernels" && cp -r "$repo/kernels/triton" "$tmp/kernels/"
cat >"$tmp/inside.sh" <<'INSIDE'
set -euo pipefail
tmp=$1 repo=$2 python=$3 results=$4 backend=$5
mount -t tmpfs -o size=1m kfleet-hidden "$repo"
fail() { echo "gpu-package-proof: FAIL: $*" >&2; exit 1; }
row() { echo "$1|$2" >>"$results"; echo "--> $1: $2"; }
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
cd /
[ -z "$(ls -A "$repo")" ] || fail "the source tree is still visible"
echo "source tree hidden: $repo is empty; kfleet is $(command -v kfleet-agent)"
if [ -d /run/systemd/system ]; then sysctl=systemctl; else
  sysctl="python3 $tmp/fake_systemctl.py"; echo "no systemd running here: units run by scripts/lib/fake_systemctl.py"
fi

echo "== 3. kfleetd from its unit"
$sysctl start kfleetd.service
for _ in $(seq 150); do curl -sf http://127.0.0.1:8470/api/v1/health >/dev/null 2>&1 && break; sleep 0.2; done
curl -sf http://127.0.0.1:8470/api/v1/health >/dev/null || fail "kfleetd did not come up (journalctl -u kfleetd, or /var/log/kfleet-units)"
row "kfleetd" "up on 127.0.0.1:8470 as $(ps -o user= -C kfleetd | head -1), store /var/lib/kfleetd"
export KFLEET_SERVER=http://127.0.0.1:8470 KFLEET_TOKEN_FILE=/etc/kfleet/kfleetd/admin.token

echo "== 4. the agent: its config, --check, its unit"
install -m 0600 /etc/kfleet/kfleetd/enrol.token /etc/kfleet/enrol.token
cat >/etc/kfleet/agent.env <<ENV
KFLEET_SERVER=http://127.0.0.1:8470
KFLEET_BACKEND=$backend
KFLEET_REGION=lab
KFLEET_NAME=gpu0
KFLEET_PYTHON=$python
ENV
chmod 0600 /etc/kfleet/agent.env
set +e
(set -a; . /etc/kfleet/agent.env; set +a
 kfleet-agent --check --server "$KFLEET_SERVER" --backend "$backend" --enrol-token-file /etc/kfleet/enrol.token \
   --work-dir /var/lib/kfleet-agent) | tee "$tmp/check.txt"
check_rc=${PIPESTATUS[0]}
set -e
grep -q "^  ok    harness    /usr/share/kfleet/kernels/harness" "$tmp/check.txt" || fail "--check did not find the installed harness"
row "kfleet-agent --check" "exit $check_rc: $(grep '^verdict' "$tmp/check.txt")"
[ "$check_rc" = 0 ] || fail "--check says the agent can take no job"
$sysctl start kfleet-agent.service
for _ in $(seq 600); do kfleet --no-color --json agents 2>/dev/null | grep -q '"gpu0"' && break; sleep 0.5; done
kfleet --no-color agents
gpu=$(kfleet --no-color --json agents | python3 -c 'import json,sys; a=[x for x in json.load(sys.stdin).get("agents", []) if x.get("name")=="gpu0"]; print(a[0]["gpus"][0]["arch"] if a and a[0].get("gpus") else "")' 2>/dev/null || true)
[ -n "$gpu" ] || gpu=$(grep -o 'sm_[0-9]*a\?' "$tmp/check.txt" | head -1)
echo "agent gpu0 enrolled; jobs target ${gpu:-its GPU}"

echo "== 5. a CUDA job (problem rmsnorm@2, the installed library's naive kernel) and a Triton job"
mkdir -p "$tmp/jobs"
cat >"$tmp/jobs/cuda.yaml" <<YAML
name: packages/rmsnorm-naive
target: {gpu: ${gpu%a}}
kernel: {problem: rmsnorm@2, language: cuda, sources: ["lib:problems/rmsnorm/naive.cu"]}
gates:
  correctness: {cases: [{name: small, seeds: [0, 1]}, {name: llama3_8b, seeds: [0]}, {name: stress, seeds: [0]}]}
  performance: {case: llama3_8b}
benchmark: {min_samples: 10, max_noise_pct: 2.0, max_time_s: 2, warmup_max_s: 0.5}
max_attempts: 1
timeout_s: 600
simulate: {time_us: 50}   # only a simulated agent reads it (--backend simulated)
YAML
cat >"$tmp/jobs/triton.yaml" <<YAML
name: packages/fa-triton-seed
target: {gpu: ${gpu%a}}
kernel: {family: attention, language: triton, sources: ["lib:triton/attention.py"]}
gates:
  correctness:
    dtype: fp16
    cases: [{name: small, shape: {B: 1, H: 2, S: 128, D: 64}, seeds: [0, 1]}]
    tolerance: {atol: 1.0e-3, rtol: 1.0e-3, rel_l2: 0.01}
  performance: {case: small}
benchmark: {min_samples: 10, max_time_s: 5}
max_attempts: 1
timeout_s: 900
simulate: {time_us: 40}
YAML
for j in cuda triton; do
  lib=/usr/share/kfleet/kernels; [ $j = triton ] && lib=$tmp/kernels
  set +e
  out=$(timeout 1500 kfleet --no-color submit "$tmp/jobs/$j.yaml" --kernel-lib "$lib" --follow 2>&1)
  rc=$?
  set -e
  echo "$out"
  row "$j job" "exit $rc: $(grep -E '^(PASSED|REJECTED|ERROR|CANCELLED)' <<<"$out" | tail -1)"
done
$sysctl stop kfleet-agent.service || true
$sysctl stop kfleetd.service || true
INSIDE
results=$tmp/results
: >"$results"
unshare --mount --propagation private bash "$tmp/inside.sh" "$tmp" "$repo" "$python" "$results" "$backend" || fail "see above"
while IFS= read -r line; do rows+=("$line"); done <"$results"
echo
echo "gpu-package-proof: $(( $(date +%s) - t0 )) s"
printf '%-22s %s\n' STEP RESULT
for r in "${rows[@]}"; do printf '%-22s %s\n' "${r%%|*}" "${r#*|}"; done
