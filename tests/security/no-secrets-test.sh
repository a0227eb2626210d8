#!/usr/bin/env bash
# No token leaks: starts kfleetd and an agent the way the scripts do (scripts/lib/local-cluster.sh),
# makes a user token with the CLI, submits and finishes a job, and then checks that none of the
# secrets (admin, enrolment, user and agent tokens) appears in
#   - a process's argv (/proc/PID/cmdline of kfleetd, the agent, and the CLI while it runs),
#   - the logs, /metrics, the API's answers,
#   - the SQLite file (which holds their SHA-256 only),
#   - the agent's environment (/proc/PID/environ; it reads its token from a 0600 file).
# Usage: no-secrets-test.sh KFLEETD KFLEET_AGENT KFLEET
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 KFLEETD KFLEET_AGENT KFLEET" >&2; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kfleet-secrets-XXXXXX")
bin=$tmp/bin run=$tmp/run
mkdir -p "$bin" "$run"
ln -s "$(realpath "$1")" "$bin/kfleetd"; ln -s "$(realpath "$2")" "$bin/kfleet-agent"; ln -s "$(realpath "$3")" "$bin/kfleet"
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }
. "$root/scripts/lib/local-cluster.sh"
cleanup() { stop_local_cluster; if [ "$fail" = 0 ]; then rm -rf "$tmp"; else echo "kept $tmp" >&2; fi; }
start_local_cluster "$bin" "$run" --backend simulated --gpu-class L4 --arch sm_89
trap cleanup EXIT
export NO_COLOR=1 HOME=$tmp
kfleet() { "$bin/kfleet" "$@"; }

# A user token, written to a 0600 file by the CLI; the CLI then reads it from the file.
kfleet token create --user alice --scope submit --out "$tmp/alice.token" >/dev/null
[ "$(stat -c %a "$tmp/alice.token")" = 600 ] || bad "kfleet token create --out wrote a file that is not 0600"
alice=$(cat "$tmp/alice.token")
mkdir -p "$tmp/job"
printf '__global__ void k() {}\n' > "$tmp/job/k.cu"
printf 'name: secrets/job\ntarget: {gpu: L4}\nkernel: {family: attention, language: cuda, sources: [k.cu]}\nsimulate: {time_us: 50, stage_ms: 200}\n' > "$tmp/job/job.yaml"
# While the CLI runs (it follows the job for a second or more), record every argv on the machine.
KFLEET_TOKEN= KFLEET_TOKEN_FILE="$tmp/alice.token" kfleet submit "$tmp/job/job.yaml" --follow >"$run/cli.log" 2>&1 &
cli=$!
argv_dump=$tmp/argv
: > "$argv_dump"
while kill -0 "$cli" 2>/dev/null; do
  for p in /proc/[0-9]*; do { tr '\0' ' ' < "$p/cmdline"; } 2>/dev/null >> "$argv_dump" || true; echo >> "$argv_dump"; done
  sleep 0.2
done
wait "$cli" || bad "kfleet submit --follow failed: $(tail -3 "$run/cli.log")"
for p in "${pids[@]}"; do { tr '\0' ' ' < "/proc/$p/cmdline"; } 2>/dev/null >> "$argv_dump" || true; done
grep -q "kfleetd" "$argv_dump" || bad "the argv capture saw no kfleetd"
grep -q "kfleet-agent" "$argv_dump" || bad "the argv capture saw no agent"

# The agent's own token: only in kfleetd's memory (as a hash) and the agent's. Fetch it from
# the agent's process environment? It is never there either; we check its hash is stored.
curl_api() { curl -sf -H @"$tmp/auth-header" "$KFLEET_SERVER$1"; }
umask 077; printf 'Authorization: Bearer %s\n' "$KFLEET_TOKEN" > "$tmp/auth-header"; umask 022
answers=$tmp/answers
for p in /api/v1/jobs /api/v1/agents /api/v1/tokens /api/v1/audit /api/v1/results "/api/v1/events?after=0" /metrics; do
  curl_api "$p" >> "$answers" || bad "GET $p failed"
done
sleep 0.5   # let the WAL settle
secrets=("$KFLEET_TOKEN" "$KFLEET_ENROL_TOKEN" "$alice")
for s in "${secrets[@]}"; do
  [ -n "$s" ] || { bad "an empty secret"; continue; }
  label="${s:0:6}…"
  grep -qF -- "$s" "$argv_dump" && bad "secret $label is on a command line"
  grep -qF -- "$s" "$run"/*.log && bad "secret $label is in a log"
  grep -qF -- "$s" "$answers" && bad "secret $label is in an API answer or /metrics"
  grep -qaF -- "$s" "$run"/kfleet.db* && bad "secret $label is in the SQLite file"
done
# The agent's environment (what a job could once read in /proc/<agent>/environ): no token. It
# reads the enrolment token from its 0600 file.
agent_pid=${pids[1]}
[ -r "/proc/$agent_pid/environ" ] || bad "cannot read the agent's environment (pid $agent_pid)"
grep -qaF -- "$KFLEET_ENROL_TOKEN" "/proc/$agent_pid/environ" && bad "the enrolment token is in the agent's environment"
[ "$(stat -c %a "$run/enrol.token")" = 600 ] || bad "the agent's enrolment token file is not 0600"
hash=$(printf '%s' "$alice" | sha256sum | cut -d' ' -f1)
grep -qaF "$hash" "$run"/kfleet.db* || bad "the SQLite file does not hold alice's token hash"
# The agent token: enrolment answered it to the agent only; the store has its hash.
agent_hashes=$(python3 - "$run/kfleet.db" <<'PY'
import sqlite3, sys
print(sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True).execute("select count(*) from agents where length(token_hash)=64").fetchone()[0])
PY
)
[ "$agent_hashes" -ge 1 ] || bad "no agent token hash stored"
grep -qE 'kfa_[0-9a-f]{64}' "$run"/*.log "$answers" "$argv_dump" && bad "an agent token appears in a log, an answer or an argv"
grep -qaE 'kfa_[0-9a-f]{64}' "$run"/kfleet.db* && bad "an agent token is in the SQLite file"
if [ "$fail" = 0 ]; then echo "PASS: no token in argv, logs, /metrics, API answers or the SQLite file"; fi
exit "$fail"
