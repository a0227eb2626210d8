# Sourced by the GPU scripts (gpu-proof, measure-quality, gpu-profile-check, gpu-exclusive-check):
# a kfleetd on a fresh SQLite file in RUN and one agent named gpu0, both on loopback.
#   start_local_cluster BIN RUN AGENT_FLAG...
#     makes fresh random tokens: exports KFLEET_TOKEN (kfleetd's first admin token, given to it
#     through its environment) and KFLEET_ENROL_TOKEN (kfleetd's, through its environment; the
#     agent reads it from RUN/enrol.token, mode 0600);
#     no token is ever on a command line. Exports KFLEET_SERVER; appends the two pids to
#     `pids` (kfleetd first) and traps EXIT to stop them (INT or TERM: stops them and exits,
#     saying so); returns once gpu0 is enrolled (non-zero, having said why, if kfleetd or the
#     agent does not come up).
#   json_field PATH [--table]   the field PATH (a.b.c) of the first JSON object on stdin; ""
#     when absent (with --table: "-", and floats rounded to 3 decimals).
#   job_outcome ID   sets state, gate and reason as `kfleet status ID` has them (through the
#     script's kf function): gate "-" when there is none, the state's reason when the verdict
#     gives none.
#   submit_expecting FILE ERR WANT_STATE WANT_GATE WANT_REASON   submits FILE (kfleet submit
#     --force --wait, its stderr into ERR) and sets id, rc, secs, state, gate, reason (a job
#     refused before it existed: id 0, state "refused", gate "submit", ERR's first lines) and ok:
#     OK, MISMATCH (not what the three regexes want) or ACCEPTED (a job meant to fail passed).
#     Appends its row to `rows` too (NAME: the job file's, as given after the five arguments).
#   print_rows TITLE NAME_WIDTH WANT_WIDTH REASON_CHARS   the rows as a table with that first
#     column's title: NAME EXPECTED GOT TIME CHECK REASON.

pids=()
random_token() { echo "${1}$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')"; }
stop_local_cluster() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
# A signal (a time limit's TERM, a ^C) ends the script where it is: the cluster stopped, the
# script does not go on to fail every later step against a kfleetd that is gone.
stopped_by() {
  echo "${0##*/}: stopped by SIG$1 after $SECONDS s; kfleetd and the agent stopped, their logs in ${LOCAL_CLUSTER_RUN:-the run folder}" >&2
  exit "$2"
}

start_local_cluster() {
  local bin=$1 run=$2; shift 2
  LOCAL_CLUSTER_RUN=$run
  trap stop_local_cluster EXIT
  trap 'stopped_by INT 130' INT
  trap 'stopped_by TERM 143' TERM
  export KFLEET_TOKEN KFLEET_ENROL_TOKEN
  KFLEET_TOKEN=$(random_token kft_)
  KFLEET_ENROL_TOKEN=$(random_token kfe_)
  KFLEET_ADMIN_TOKEN="$KFLEET_TOKEN" "$bin/kfleetd" --listen 127.0.0.1:0 --port-file "$run/port" \
    --db "$run/kfleet.db" >"$run/kfleetd.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 200); do [ -s "$run/port" ] && break; sleep 0.1; done
  [ -s "$run/port" ] || { tail "$run/kfleetd.log" >&2; echo "kfleetd did not start (log: $run/kfleetd.log)" >&2; return 1; }
  export KFLEET_SERVER="http://127.0.0.1:$(cat "$run/port")"
  # The agent reads its enrolment token from a 0600 file, as the systemd units have it.
  (umask 077; printf '%s\n' "$KFLEET_ENROL_TOKEN" >"$run/enrol.token")
  # KFLEET_GPU=G (a lane of scripts/gpu-detached.sh on a host of several GPUs): the agent serves
  # GPU G, found by NVML, and pins its children to it itself; the lane's CUDA_VISIBLE_DEVICES,
  # which NVML does not read, is not passed on.
  local gpu=()
  [ -n "${KFLEET_GPU:-}" ] && gpu=(--gpu "$KFLEET_GPU")
  env -u KFLEET_ENROL_TOKEN ${KFLEET_GPU:+-u CUDA_VISIBLE_DEVICES} "$bin/kfleet-agent" --server "$KFLEET_SERVER" --name gpu0 \
    --enrol-token-file "$run/enrol.token" --work-dir "$run/agent" "${gpu[@]}" "$@" >"$run/agent.log" 2>&1 &
  pids+=($!)
  local agent=$!
  for _ in $(seq 300); do
    "$bin/kfleet" --no-color --json agents 2>/dev/null | grep -q '"gpu0"' && return 0
    kill -0 "$agent" 2>/dev/null || { tail -20 "$run/agent.log" >&2; echo "the agent exited (log: $run/agent.log)" >&2; return 1; }
    sleep 0.1
  done
  tail "$run/agent.log" >&2
  echo "agent gpu0 never enrolled (log: $run/agent.log)" >&2
  return 1
}

json_field() {
  python3 -c '
import json, sys
text = sys.stdin.read(); i = text.find("{")
obj = json.JSONDecoder().raw_decode(text[i:])[0] if i >= 0 else {}
for k in sys.argv[1].split("."):
    obj = obj.get(k, "") if isinstance(obj, dict) else ""
if sys.argv[2:] == ["--table"]:  # for tables: "-" when absent, floats to 3 decimals
    obj = "-" if obj == "" else round(obj, 3) if isinstance(obj, float) else obj
print(obj if not isinstance(obj, (dict, list)) else json.dumps(obj))' "$@"
}

job_outcome() {
  local status
  status=$(kf --json status "$1" 2>/dev/null)
  state=$(printf '%s' "$status" | json_field job.state)
  gate=$(printf '%s' "$status" | json_field job.verdict.gate)
  reason=$(printf '%s' "$status" | json_field job.verdict.reason)
  [ -n "$reason" ] || reason=$(printf '%s' "$status" | json_field job.state_reason)
  [ -n "$gate" ] || gate=-
}

submit_expecting() {
  local file=$1 err=$2 want_state=$3 want_gate=$4 want_reason=$5 t0 res
  t0=$(date +%s)
  res=$(kf --json submit "$file" --force --wait 2>"$err"); rc=$?
  secs=$(( $(date +%s) - t0 ))
  id=$(printf '%s' "$res" | json_field job.id)
  if [ -n "$id" ]; then
    job_outcome "$id"
  else
    # Refused before a job existed: the CLI's (or kfleetd's) error is the verdict.
    id=0 state=refused gate=submit
    reason=$(grep -v '^\s*$' "$err" | head -3 | tr '\n' ' ')
  fi
  ok=OK
  [[ "$state" =~ ^($want_state)$ ]] || ok=MISMATCH
  [[ "$gate" =~ ^($want_gate)$ ]] || ok=MISMATCH
  [[ "$reason" =~ $want_reason ]] || ok=MISMATCH
  if [ "$want_state" != passed ] && [ "$state" = passed ]; then ok=ACCEPTED; fi
  rows+=("$(printf '%s\t%s\t%s\t%s\t%s\t%s' "${6:-$file}" "$want_state/$want_gate" "$state/$gate" \
            "${secs}s" "$ok" "$reason")")
}

print_rows() {
  local title=$1 nw=$2 ww=$3 chars=$4 r f e a s ok why
  printf "%-${nw}s %-${ww}s %-22s %-6s %-9s %s\n" "$title" EXPECTED GOT TIME CHECK REASON
  for r in "${rows[@]}"; do
    IFS=$'\t' read -r f e a s ok why <<<"$r"
    printf "%-${nw}s %-${ww}s %-22s %-6s %-9s %s\n" "$f" "$e" "$a" "$s" "$ok" "${why:0:$chars}"
  done
}
