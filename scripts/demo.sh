#!/usr/bin/env bash
# The main job on one machine: installs and builds kfleet, starts kfleetd on its SQLite file,
# starts local agents, submits the example jobs in jobs/ and prints their verdicts, the
# dashboard URL and the API URL. With an NVIDIA GPU the agent uses it (CUDA backend);
# without one, agents use the simulated GPU backend and every result says "simulated".
#   scripts/demo.sh            run, then keep kfleetd up for the dashboards (Ctrl-C stops)
#   scripts/demo.sh --exit     stop once every job has a verdict
set -euo pipefail
cd "$(dirname "$0")/.."
keep=1
for a in "$@"; do
  case "$a" in
    --exit) keep=0 ;;
    -h|--help) sed -n 2,8p "$0"; exit 0 ;;
    *) echo "demo: unknown option '$a' (try --help)" >&2; exit 2 ;;
  esac
done
[ -t 0 ] || keep=0   # not interactive (CI, a pipe): never wait for Ctrl-C

scripts/install-deps.sh
scripts/build.sh kfleetd kfleet-agent kfleet dashboards   # what the demo runs; tests build in test.sh

run=$PWD/demo-run
mkdir -p "$run"
rm -f "$run/kfleet.db" "$run/kfleet.db-wal" "$run/kfleet.db-shm" "$run/port"
# Fresh random tokens for this demo, through the environment only (never on a command line):
# kfleetd stores the admin token's hash; the CLI reads KFLEET_TOKEN, agents KFLEET_ENROL_TOKEN.
rand_hex() { od -An -N32 -tx1 /dev/urandom | tr -d ' \n'; }
export KFLEET_TOKEN="kft_$(rand_hex)" KFLEET_ENROL_TOKEN="kfe_$(rand_hex)"
umask 077; printf '%s\n' "$KFLEET_TOKEN" > "$run/admin.token"; umask 022
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

KFLEET_ADMIN_TOKEN="$KFLEET_TOKEN" build/orchestrator/api/kfleetd --listen 127.0.0.1:0 \
  --port-file "$run/port" --db "$run/kfleet.db" --dashboards dashboards \
  >"$run/kfleetd.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$run/port" ] && break; sleep 0.1; done
[ -s "$run/port" ] || { echo "demo: kfleetd did not start; see $run/kfleetd.log" >&2; exit 1; }
export KFLEET_SERVER="http://127.0.0.1:$(cat "$run/port")"

agent() {  # name, then agent flags
  local name=$1; shift
  build/agent/kfleet-agent --server "$KFLEET_SERVER" --name "$name" --work-dir "$run/$name" "$@" \
    >"$run/$name.log" 2>&1 &
  pids+=($!)
}
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "demo: NVIDIA GPU found ($(nvidia-smi -L | head -1)): a CUDA agent runs on it"
  agent gpu0 --backend cuda
else
  echo "demo: no GPU on this machine: agents use the SIMULATED GPU backend; every result is marked simulated"
fi
# The example jobs target an L4 and a gfx1151; simulated agents stand in for both.
agent sim-l4 --backend simulated --gpu-class L4 --arch sm_89 --region us-central1-a
agent sim-gfx1151 --backend simulated --gpu-class gfx1151 --arch gfx1151 --region lab

echo "demo: kfleetd at $KFLEET_SERVER (SQLite file $run/kfleet.db)"
status=0
for f in jobs/fa-s512/baseline.yaml jobs/fa-s512/iter1.yaml jobs/fp8-sdpa/stage2.yaml \
         jobs/fp8-sdpa/stage3-step2-xor.yaml jobs/scaled-mm-hip/stepC09.yaml jobs/custom-steps/job.yaml; do
  echo; echo "== kfleet submit $f --follow"
  build/cli/kfleet submit "$f" --follow --force || status=$?
done
echo
build/cli/kfleet results
cat <<MSG

demo: dashboards  $KFLEET_SERVER/   (sign in with the admin token in $run/admin.token)
demo: plain HTTP on loopback only (kfleetd --tls-cert/--tls-key for anything else; README: Security)
demo: API         $KFLEET_SERVER/api/v1/jobs   (openapi: orchestrator/api/openapi.yaml)
demo: metrics     $KFLEET_SERVER/metrics   (needs a token; kfleetd --metrics-open serves it openly)
demo: logs        $run/*.log
MSG
if [ "$keep" = 1 ]; then
  echo "demo: kfleetd and the agents keep running; Ctrl-C stops them"
  wait
fi
exit 0
