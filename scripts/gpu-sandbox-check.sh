#!/usr/bin/env bash
# Measures what the job sandbox costs on a real NVIDIA GPU: builds kfleetd, kfleet-agent and
# kfleet (as gpu-proof.sh does), then runs the suite kernels (jobs/fa-s512/baseline, iter1,
# jobs/fp8-sdpa/stage2, stage3-step2-xor, retargeted to this GPU as gpu-suite-campaigns.sh does)
# through a `--backend cuda` agent in alternating phases: sandboxed (the default: bwrap, uid
# 65534, only this GPU's /dev/nvidia* nodes, a cgroup) and `--unsandboxed`, ROUNDS times each
# (S U S U ...), with one build cache for all phases. Prints per kernel the median of each
# phase's median_us, their ratio, and whether every sandboxed verdict ran sandboxed and every
# unsandboxed one says `unsandboxed`. Also prints, once, what a job sees from inside: its uid,
# capabilities and /dev/nvidia* nodes (a custom job's step).
#   scripts/gpu-sandbox-check.sh [--bin DIR] [--run-dir DIR] [--gpu sm_90] [--rounds 2]
#                                [--bwrap-deb FILE] [--throttle-pct 0] [--kernels "a/b c/d"]
#     --bwrap-deb FILE  a bubblewrap .deb to unpack (dpkg -x) when bwrap is not installed
#                       (default: .device/bubblewrap*.deb, then ./bubblewrap*.deb)
#     --kernels LIST    a subset of the suite (default: all four)
# Exits 0 when every job got a verdict and every sandboxed median is within 1 % of its
# unsandboxed one, 1 otherwise, 2 on a setup failure.
# shellcheck source=lib/usage.sh
source "$(dirname "$0")/lib/usage.sh"
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
bin="" run="$root/gpu-sandbox-run" gpu=sm_90 rounds=2 deb="" throttle=0
kernels=(fa-s512/baseline fa-s512/iter1 fp8-sdpa/stage2 fp8-sdpa/stage3-step2-xor)
# shellcheck source=lib/options.sh
source "$root/scripts/lib/options.sh"
parse_options --bin=bin --run-dir=run --gpu=gpu --rounds=rounds --bwrap-deb=deb --throttle-pct=throttle --kernels=kernel_list -- "$@"
[ -z "${kernel_list:-}" ] || read -r -a kernels <<<"$kernel_list"
[ "$(id -u)" = 0 ] || die "run as root: the agent starts each job's processes as uid 65534"

# bubblewrap: installed, or unpacked from a carried .deb (the GPU machines have no network).
if ! command -v bwrap >/dev/null; then
  [ -n "$deb" ] || deb=$(ls "$root"/.device/bubblewrap*.deb "$root"/bubblewrap*.deb 2>/dev/null | head -1)
  [ -n "$deb" ] && [ -f "$deb" ] || die "no bwrap and no bubblewrap .deb (apt-get download bubblewrap; pass --bwrap-deb)"
  mkdir -p "$run.bwrap" && dpkg -x "$deb" "$run.bwrap" || die "cannot unpack $deb"
  export PATH="$run.bwrap/usr/bin:$PATH"
fi
command -v bwrap >/dev/null || die "bwrap is still not on PATH"
command -v setpriv >/dev/null || die "setpriv (util-linux) is missing"
echo "gpu-sandbox-check: $(bwrap --version) at $(command -v bwrap)"

need_bins
rm -rf "$run"; mkdir -p "$run/jobs"
export KFLEET_HARNESS_DIR=$root/kernels/harness
# shellcheck source=lib/local-cluster.sh
source "$root/scripts/lib/local-cluster.sh"
kf() { "$bin/kfleet" --no-color "$@"; }
command -v nvidia-smi >/dev/null && nvidia-smi -L

for f in "${kernels[@]}"; do
  mkdir -p "$run/jobs/$(dirname "$f")"
  sed -e "s/^\(  *gpu:\) L4$/\1 $gpu/" -e "s/^target: {gpu: L4}$/target: {gpu: $gpu}/" \
      -e '/^  regions:/d' "jobs/$f.yaml" >"$run/jobs/$f.yaml"
done
# What a job sees from inside (a custom job's step, on this GPU).
mkdir -p "$run/jobs/look"
cat >"$run/jobs/look/look.sh" <<'SH'
echo "uid=$(id -u) gid=$(id -g)"
grep -E '^(Cap|Seccomp)' /proc/self/status
echo "devices: $(ls /dev | tr '\n' ' ')"
echo "processes visible: $(ls /proc | grep -c '^[0-9]')"
echo "network: $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\n' ' ')"
SH
cat >"$run/jobs/look/job.yaml" <<YAML
name: sandbox-look
target: {gpu: $gpu}
kernel:
  family: custom
  language: cuda
  sources: [look.sh]
  steps:
    build: "true"
    test: "sh look.sh"
    bench: "echo '{\"metric\": \"time_ms\", \"value\": 1.0}'"
YAML

results=$run/results.tsv
: >"$results"
fails=0
phase() {  # round mode(sandboxed|unsandboxed)
  local r=$1 mode=$2 flags=(--backend cuda --throttle-pct "$throttle")
  [ "$mode" = unsandboxed ] && flags+=(--unsandboxed)
  rm -f "$run/kfleet.db" "$run/port"
  start_local_cluster "$bin" "$run" "${flags[@]}" || { tail -20 "$run/agent.log"; die "cluster ($mode) did not come up"; }
  grep -m1 -E "job sandbox|unsandboxed" "$run/agent.log" | sed "s/^/  [$mode] agent: /"
  if [ "$r" = 1 ]; then
    kf submit "$run/jobs/look/job.yaml" --force --wait >>"$run/submit.err" 2>&1
    echo "  [$mode] from inside a job (run 1, the phase's first):"
    kf logs 1 2>/dev/null | grep -E "uid=|Cap|Seccomp|devices:|processes visible|network:" | sed 's/^/    /'
  fi
  for f in "${kernels[@]}"; do
    out=$(kf --json submit "$run/jobs/$f.yaml" --kernel-lib "$root/kernels" --force --wait 2>>"$run/submit.err")
    id=$(printf '%s' "$out" | json_field job.id)
    st=$(kf --json status "$id" 2>/dev/null)
    state=$(printf '%s' "$st" | json_field job.state)
    med=$(printf '%s' "$st" | json_field job.verdict.median_us)
    uns=$(printf '%s' "$st" | json_field job.verdict.unsandboxed)
    echo "  [$mode] round $r $f: job $id $state median_us=${med:--} unsandboxed=${uns:-false}"
    [ -n "$med" ] || fails=$((fails + 1))
    if [ "$mode" = unsandboxed ] && [ "$uns" != True ] && [ "$uns" != true ]; then
      echo "  [$mode] $f: the verdict does not say unsandboxed"; fails=$((fails + 1))
    fi
    if [ "$mode" = sandboxed ] && { [ "$uns" = True ] || [ "$uns" = true ]; }; then
      echo "  [$mode] $f: the verdict says unsandboxed"; fails=$((fails + 1))
    fi
    printf '%s\t%s\t%s\t%s\n' "$f" "$mode" "$r" "${med:-}" >>"$results"
  done
  stop_local_cluster; pids=()
}

for r in $(seq "$rounds"); do
  phase "$r" sandboxed
  phase "$r" unsandboxed
done

echo
python3 - "$results" <<'PY' || fails=$((fails + 1))
import collections, statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
m = collections.defaultdict(list)
for k, mode, r, med in rows:
    if med: m[(k, mode)].append(float(med))
bad = 0
print(f"{'kernel':28} {'sandboxed_us':>13} {'unsandboxed_us':>15} {'ratio':>8}  per-round (s | u)")
for k in dict.fromkeys(r[0] for r in rows):
    s, u = m[(k, "sandboxed")], m[(k, "unsandboxed")]
    if not s or not u:
        print(f"{k:28} {'-':>13} {'-':>15} {'-':>8}"); bad += 1; continue
    ms, mu = statistics.median(s), statistics.median(u)
    ratio = ms / mu
    ok = abs(ratio - 1) <= 0.01
    bad += not ok
    print(f"{k:28} {ms:13.3f} {mu:15.3f} {ratio:8.4f}  {s} | {u}  {'ok' if ok else 'OVER 1%'}")
sys.exit(1 if bad else 0)
PY
echo "gpu-sandbox-check: $fails problem(s); logs in $run"
[ "$fails" = 0 ]
