# Sourced by the GPU scripts (gpu-proof, measure-quality, gpu-profile-check, gpu-exclusive-check):
# a kfleetd on a fresh SQLite file in RUN and one agent named gpu0, both on loopback.
#   start_local_cluster BIN RUN AGENT_FLAG...
#     makes fresh random tokens: exports KFLEET_TOKEN (kfleetd's first admin token, given to it
#     through its environment) and KFLEET_ENROL_TOKEN (kfleetd's, through its environment; the
#     agent reads it from RUN/enrol.token, mode 0600);
#     no token is ever on a command line. Exports KFLEET_SERVER; appends the two pids to
#     `pids` (kfleetd first) and traps EXIT/INT/TERM to stop them; returns once gpu0 is enrolled
#     (non-zero, having said why, if kfleetd or the agent does not come up).
#   json_field PATH [--table]   the field PATH (a.b.c) of the first JSON object on stdin; ""
#     when absent (with --table: "-", and floats rounded to 3 decimals).

pids=()
random_token() { echo "${1}$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')"; }
stop_local_cluster() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }

start_local_cluster() {
  local bin=$1 run=$2; shift 2
  trap stop_local_cluster EXIT INT TERM
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
  env -u KFLEET_ENROL_TOKEN "$bin/kfleet-agent" --server "$KFLEET_SERVER" --name gpu0 \
    --enrol-token-file "$run/enrol.token" --work-dir "$run/agent" "$@" >"$run/agent.log" 2>&1 &
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
