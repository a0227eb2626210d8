#!/usr/bin/env bash
# kfleet's three jobs on one machine without a GPU, with real compiles:
#   1. stockout fallback: a job on seed 001's zone list, with a simulated cloud whose first
#      zone is stocked out; the fallback lines show the job moving on to the next zone.
#   2. submit: the seed jobs in jobs/ are built and resource-gated for real by a compile agent
#      (nvcc for sm_89, clang-19 for gfx1151); a job that fails either never takes GPU time.
#      Jobs that pass go on to simulated GPU agents, whose results are marked [simulated].
#   3. fleet regression: a suite run twice over the simulated L4 and gfx1151 classes; the
#      second run's matrix has one cell scripted 5% slower, and its verdict says so.
# It installs and builds kfleet first; everything it writes goes to a new temp dir, never
# into the source tree. With an NVIDIA GPU, a CUDA agent joins too and takes its class's jobs.
#   scripts/demo.sh                 run, then keep kfleetd up for the dashboards (Ctrl-C stops)
#   scripts/demo.sh --exit          stop once the three parts are done
#   scripts/demo.sh --keep          stay up after the parts even without a terminal (until killed)
#   scripts/demo.sh --no-build      skip install-deps and the build (use what build/ has)
#   scripts/demo.sh --build-dir DIR the built binaries are in DIR (default: build)
#   scripts/demo.sh --help
# shellcheck source=lib/usage.sh
source "$(dirname "$0")/lib/usage.sh"
set -euo pipefail
cd "$(dirname "$0")/.."
keep=1 build=1 bdir=build force_keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --exit) keep=0 ;;
    --keep) force_keep=1 ;;
    --no-build) build=0 ;;
    --build-dir) [ $# -ge 2 ] || { echo "demo: --build-dir needs a folder" >&2; exit 2; }
                 bdir=$2; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "demo: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -t 0 ] || keep=0   # not interactive (CI, a pipe): never wait for Ctrl-C, unless --keep
[ "$force_keep" = 1 ] && keep=1

if [ "$build" = 1 ]; then
  # Each phase's time as it ends (scripts/test.sh prints its own the same way).
  t0=$(date +%s)
  scripts/install-deps.sh
  echo "demo: phase install: $(( $(date +%s) - t0 )) s"
  t0=$(date +%s)
  # What the demo runs, in the configuration scripts/test.sh builds the rest in.
  scripts/build.sh kfleetd kfleet-agent kfleet dashboards
  echo "demo: phase configure + build: $(( $(date +%s) - t0 )) s"
fi
bdir=$(cd "$bdir" && pwd)
kfleetd=$bdir/orchestrator/api/kfleetd agent_bin=$bdir/agent/kfleet-agent kfleet=$bdir/cli/kfleet
for b in "$kfleetd" "$agent_bin" "$kfleet"; do
  [ -x "$b" ] || { echo "demo: $b is missing: build it (scripts/build.sh) or drop --no-build" >&2; exit 1; }
done
dashboards=$bdir/dashboards/dist   # the build's, never the source tree's
[ -f "$dashboards/index.html" ] ||
  { echo "demo: $dashboards is missing: scripts/build.sh dashboards" >&2; exit 1; }

run=$(mktemp -d "${TMPDIR:-/tmp}/kfleet-demo.XXXXXX")
# Fresh random tokens for this demo, through the environment only (never on a command line):
# kfleetd stores the admin token's hash; the CLI reads KFLEET_TOKEN, agents KFLEET_ENROL_TOKEN.
rand_hex() { od -An -N32 -tx1 /dev/urandom | tr -d ' \n'; }
export KFLEET_TOKEN="kft_$(rand_hex)" KFLEET_ENROL_TOKEN="kfe_$(rand_hex)" NO_COLOR=${NO_COLOR:-1}
(umask 077; printf '%s\n' "$KFLEET_TOKEN" > "$run/admin.token")
export HOME=$run XDG_CONFIG_HOME=$run/config   # the CLI's config and history stay in the run dir
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM
t0=$(date +%s)

# Seed 001's zone list, from its YAML.
zones=$(sed -n 's/^ *regions: *\[\(.*\)\].*/\1/p' jobs/fa-s512/baseline.yaml | head -1)
first_zone=${zones%%,*}
cloud_regions=""
for z in ${zones//,/ }; do
  script='[]'
  [ "$z" = "$first_zone" ] && script='["stockout", "stockout"]'
  cloud_regions+="${cloud_regions:+,}
    {\"name\": \"$z\", \"gpu\": \"L4\", \"arch\": \"sm_89\", \"capacity\": 2, \"delay_ms\": 400, \"script\": $script}"
done
cat >"$run/cloud.json" <<JSON
{ "work_root": "$run/cloud", "max_instances": 3,
  "regions": [$cloud_regions
  ] }
JSON

# kfleetd exactly as a newcomer starts it from the source tree (tests/browser/demo.test.mjs
# runs this script and opens the URL it prints).
KFLEET_ADMIN_TOKEN="$KFLEET_TOKEN" "$kfleetd" --listen 127.0.0.1:0 --port-file "$run/port" \
  --db "$run/kfleet.db" --dashboards "$dashboards" \
  --provisioner simulated --simulated-cloud "$run/cloud.json" --agent-binary "$agent_bin" \
  >"$run/kfleetd.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$run/port" ] && break; sleep 0.1; done
[ -s "$run/port" ] || { echo "demo: kfleetd did not start; see $run/kfleetd.log" >&2; exit 1; }
export KFLEET_SERVER="http://127.0.0.1:$(cat "$run/port")"
echo "demo: kfleetd at $KFLEET_SERVER (SQLite file $run/kfleet.db; run dir $run)"

agent() {  # name, then agent flags
  local name=$1; shift
  "$agent_bin" --server "$KFLEET_SERVER" --name "$name" --work-dir "$run/$name" "$@" \
    >"$run/$name.log" 2>&1 &
  pids+=($!)
}
agent build-0 --backend compile --region build
nvcc_v=$( (/usr/local/cuda/bin/nvcc --version || nvcc --version) 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/nvcc \1/p')
clang_v=$(clang-19 --version 2>/dev/null | sed -n '1s/.*version \([0-9.]*\).*/clang \1/p')
echo "demo: compile agent build-0 (no GPU): ${nvcc_v:-no nvcc} for sm_*, ${clang_v:-no clang-19} for gfx*"
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "demo: NVIDIA GPU found ($(nvidia-smi -L | head -1)): a CUDA agent runs its GPU stages"
  agent gpu0 --backend cuda --region lab
else
  echo "demo: no GPU here: the GPU stages run on SIMULATED agents, and their results say [simulated]"
fi
agent sim-gfx1151 --backend simulated --gpu-class gfx1151 --arch gfx1151 --region lab
echo "demo: L4 agents come from the simulated cloud ($zones; $first_zone is stocked out)"

status=0
# A small kernel that builds for both arches (it includes nothing vendor-specific).
demo_jobs=$run/jobs
mkdir -p "$demo_jobs"
cat >"$demo_jobs/scale.cu" <<'CU'
// out[i] = 2 * in[i]: builds with nvcc (sm_89) and with HIP clang (gfx1151).
extern "C" __global__ void scale(float* out, const float* in, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.0f * in[i];
}
CU
kernel_yaml() {  # name, gpu, regions, simulate
  cat <<YAML
name: $1
target: {gpu: $2$3}
kernel: {family: attention, language: cuda, sources: [scale.cu], entry: scale}
gates:
  resources: {max_registers: 64, max_vgprs: 64, max_spill_bytes: 0, max_scratch_bytes: 0}
  correctness:
    dtype: fp16
    cases: [{name: small, shape: {B: 1, H: 2, S: 128, D: 64}, seeds: [0]}]
    tolerance: {atol: 1.0e-3, rtol: 1.0e-3}
  performance: {case: small, compare_to: baseline, threshold_pct: 1.0}
benchmark: {min_samples: 20}
simulate: $4
YAML
}

echo
echo "=== 1/3 stockout fallback: a job on seed 001's zones ($zones)"
kernel_yaml demo/fallback L4 ", regions: [$zones]" "{time_us: 50, stage_ms: 100}" >"$demo_jobs/fallback.yaml"
echo "== kfleet submit fallback.yaml --follow"
"$kfleet" submit "$demo_jobs/fallback.yaml" --follow || status=$?

echo
echo "=== 2/3 the seed jobs: real builds and resources gates on build-0, then the GPU stages"
for f in jobs/fa-s512/baseline.yaml jobs/fa-s512/iter1.yaml jobs/fp8-sdpa/stage2.yaml \
         jobs/fp8-sdpa/stage3-step2-xor.yaml jobs/scaled-mm-hip/stepC09.yaml jobs/custom-steps/job.yaml; do
  echo; echo "== kfleet submit $f --follow"
  "$kfleet" submit "$f" --follow --force || true   # a rejected job exits non-zero: expected here
done

echo
echo "=== 3/3 fleet regression: one suite over the simulated L4 and gfx1151 classes"
for v in v1 v2; do
  mkdir -p "$demo_jobs/$v"
  cp "$demo_jobs/scale.cu" "$demo_jobs/$v/"
  kernel_yaml demo/scale-a L4 "" "{time_us: 80, stage_ms: 20}" >"$demo_jobs/$v/a.yaml"
  slower=""; [ "$v" = v2 ] && slower=", slower_pct: {gfx1151: 5}"
  kernel_yaml demo/scale-b L4 "" "{time_us: 120, stage_ms: 20$slower}" >"$demo_jobs/$v/b.yaml"
  printf 'suite: demo-nightly\njobs: [a.yaml, b.yaml]\non: {gpus: [L4, gfx1151], regions: any}\ncompare_to: baseline\n' \
    >"$demo_jobs/$v/suite.yaml"
done
echo "== run 1 (sets the baselines): kfleet regress suite.yaml"
"$kfleet" regress "$demo_jobs/v1/suite.yaml" --timeout-s 300 || status=$?
echo
echo "== run 2 (scale-b scripted 5% slower on gfx1151): kfleet regress suite.yaml"
if "$kfleet" regress "$demo_jobs/v2/suite.yaml" --timeout-s 300 --markdown "$run/regression.md"; then
  echo "demo: expected the second run to find the regression"; status=1
fi

echo
"$kfleet" results
cat <<MSG

demo: done in $(( $(date +%s) - t0 )) s
demo: dashboards  $KFLEET_SERVER/   (sign in with the admin token in $run/admin.token)
demo: plain HTTP on loopback only (kfleetd --tls-cert/--tls-key for anything else; docs/security.md)
demo: API         $KFLEET_SERVER/api/v1/jobs   (openapi: orchestrator/api/openapi.yaml)
demo: metrics     $KFLEET_SERVER/metrics   (needs a token; kfleetd --metrics-open serves it openly)
demo: logs        $run/*.log
MSG
if [ "$keep" = 1 ]; then
  echo "demo: kfleetd and the agents keep running; Ctrl-C stops them"
  wait "${pids[0]}" || true
fi
exit "$status"
