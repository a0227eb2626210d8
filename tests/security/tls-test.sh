#!/usr/bin/env bash
# kfleetd over HTTPS with a CA and certificates made now (tests/support/make-test-certs.sh), and
# the real kfleet and kfleet-agent binaries against it:
#   - the CLI refuses a certificate it cannot verify, and works with --ca-file;
#   - the agent refuses it too (never enrols), and enrols with --ca-file, or with KFLEET_CA_FILE
#     (how the systemd unit gives it the CA file from /etc/kfleet/agent.env);
#   - kfleetd --agent-ca-file: the agents its simulated cloud starts get the CA as a 0600 file
#     and --ca-file, enrol over HTTPS and run a job; no token is on their command line;
#   - with --tls-client-ca, an agent without a client certificate is refused and one with a
#     certificate the CA signed enrols (mTLS); users need no certificate;
#   - kfleetd refuses plain HTTP on a non-loopback address.
# Usage: tls-test.sh KFLEETD KFLEET_AGENT KFLEET
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 KFLEETD KFLEET_AGENT KFLEET" >&2; exit 2; }
kfleetd=$1 agent=$2 cli=$3
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kfleet-tls-XXXXXX")
fail=0 pids=()
bad() { echo "FAIL: $*" >&2; fail=1; }
ok() { echo "ok: $*"; }
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "$fail" = 0 ]; then rm -rf "$tmp"; else echo "kept $tmp" >&2; fi
}
trap cleanup EXIT
"$root/tests/support/make-test-certs.sh" "$tmp/certs"
c=$tmp/certs
rand() { od -An -N32 -tx1 /dev/urandom | tr -d ' \n'; }
export KFLEET_ADMIN_TOKEN="kft_$(rand)" KFLEET_ENROL_TOKEN="kfe_$(rand)" NO_COLOR=1 HOME=$tmp

start_kfleetd() {  # name, extra flags
  local name=$1; shift
  mkdir -p "$tmp/$name"
  "$kfleetd" --listen 127.0.0.1:0 --port-file "$tmp/$name/port" --db "$tmp/$name/kfleet.db" \
    --tls-cert "$c/server.pem" --tls-key "$c/server.key" "$@" >"$tmp/$name/kfleetd.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 200); do [ -s "$tmp/$name/port" ] && break; sleep 0.05; done
  [ -s "$tmp/$name/port" ] || { cat "$tmp/$name/kfleetd.log" >&2; bad "kfleetd ($name) did not start"; exit 1; }
  url="https://127.0.0.1:$(cat "$tmp/$name/port")"
}
agents() { KFLEET_TOKEN=$KFLEET_ADMIN_TOKEN "$cli" --server "$url" --ca-file "$c/ca.pem" --json agents; }
start_agent() {  # name, flags
  local name=$1; shift
  mkdir -p "$tmp/$name"
  "$agent" --server "$url" --name "$name" --backend simulated --gpu-class L4 --arch sm_89 \
    --work-dir "$tmp/$name" "$@" >"$tmp/$name.log" 2>&1 &
  pids+=($!)
}
enrolled() {  # name, seconds
  for _ in $(seq $(( $2 * 10 ))); do agents 2>/dev/null | grep -q "\"$1\"" && return 0; sleep 0.1; done
  return 1
}

start_kfleetd one
export KFLEET_TOKEN=$KFLEET_ADMIN_TOKEN
# The CLI: an unknown CA is refused with a message that says what to pass; the right CA works.
set +e
out=$("$cli" --server "$url" --ca-file "$c/other-ca.pem" agents 2>&1); rc=$?
set -e
[ "$rc" = 5 ] && grep -q -- "--ca-file" <<<"$out" && ok "the CLI refuses an unknown certificate (exit 5)" ||
  bad "the CLI accepted an unknown certificate or said nothing useful (exit $rc): $out"
set +e
out=$("$cli" --server "$url" agents 2>&1); rc=$?   # the system's CAs do not know the test CA
set -e
[ "$rc" = 5 ] || bad "the CLI accepted a certificate of a private CA without --ca-file (exit $rc): $out"
"$cli" --server "$url" --ca-file "$c/ca.pem" agents >/dev/null && ok "the CLI accepts the right CA" ||
  bad "the CLI refused the right CA"
out=$("$cli" --server "$url" --insecure agents 2>&1) || bad "--insecure did not connect: $out"
grep -q "WARNING" <<<"$out" && ok "--insecure warns loudly" || bad "--insecure did not warn: $out"

# The agent: the wrong CA never enrols; the right one does.
start_agent rogue-trust --ca-file "$c/other-ca.pem"
sleep 2
enrolled rogue-trust 1 && bad "an agent that cannot verify kfleetd enrolled anyway"
grep -q "ca-file" "$tmp/rogue-trust.log" && ok "the agent refuses an unknown certificate and says why" ||
  bad "the agent log does not say why: $(tail -3 "$tmp/rogue-trust.log")"
start_agent trusting --ca-file "$c/ca.pem"
enrolled trusting 15 && ok "the agent enrols with --ca-file" || bad "the agent with the right CA did not enrol: $(tail -3 "$tmp/trusting.log")"
KFLEET_CA_FILE="$c/ca.pem" start_agent env-trust
enrolled env-trust 15 && ok "the agent enrols with KFLEET_CA_FILE (the systemd unit's way)" ||
  bad "the agent with KFLEET_CA_FILE did not enrol: $(tail -3 "$tmp/env-trust.log")"

# kfleetd's simulated cloud over HTTPS: its agents get the CA (--agent-ca-file) as a file.
mkdir -p "$tmp/sim"
cat >"$tmp/sim/cloud.json" <<JSON
{ "work_root": "$tmp/sim/cloud", "max_instances": 1,
  "regions": [{"name": "sim-1", "gpu": "L4", "arch": "sm_89", "capacity": 1}] }
JSON
start_kfleetd sim --provisioner simulated --simulated-cloud "$tmp/sim/cloud.json" \
  --agent-binary "$agent" --agent-ca-file "$c/ca.pem"
printf '__global__ void k() {}\n' >"$tmp/sim/k.cu"
printf 'name: tls/sim\ntarget: {gpu: L4}\nkernel: {family: attention, language: cuda, sources: [k.cu]}\nsimulate: {time_us: 50, stage_ms: 1}\n' >"$tmp/sim/job.yaml"
if out=$(timeout 60 "$cli" --server "$url" --ca-file "$c/ca.pem" submit "$tmp/sim/job.yaml" --follow 2>&1); then
  ok "a job ran on an agent the simulated cloud started against https kfleetd"
else
  bad "the job on the simulated cloud did not finish: $(tail -5 <<<"$out"); $(tail -3 "$tmp"/sim/cloud/*/agent.log 2>/dev/null)"
fi
inst=$(ls -d "$tmp"/sim/cloud/*/ 2>/dev/null | head -1)
if [ -n "$inst" ] && [ -f "$inst/ca.pem" ]; then
  [ "$(stat -c %a "$inst/ca.pem")" = 600 ] && [ "$(stat -c %a "$inst/enrol-token")" = 600 ] &&
    ok "the instance's CA and enrolment token are 0600 files" || bad "ca.pem or enrol-token is not 0600"
  cmp -s "$inst/ca.pem" "$c/ca.pem" || bad "the instance's ca.pem is not kfleetd's --agent-ca-file"
else
  bad "the simulated instance has no ca.pem (${inst:-no instance dir})"
fi
seen=0
for p in $(pgrep -f -- "--work-dir $tmp/sim/cloud" || true); do
  argv=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null || true)
  [ -n "$argv" ] || continue
  seen=$((seen + 1))
  grep -q -- "--ca-file $tmp/sim/cloud/[^ ]*/ca.pem" <<<"$argv" && ok "the simulated agent runs with --ca-file" ||
    bad "the simulated agent's argv has no --ca-file: $argv"
  grep -qF -- "$KFLEET_ENROL_TOKEN" <<<"$argv" && bad "the enrolment token is on the simulated agent's command line"
done
[ "$seen" -gt 0 ] || bad "no simulated agent process to check the command line of"

# mTLS: agent calls need a client certificate the client CA signed.
start_kfleetd two --tls-client-ca "$c/ca.pem"
start_agent no-cert --ca-file "$c/ca.pem"
sleep 2
enrolled no-cert 1 && bad "an agent without a client certificate enrolled under --tls-client-ca"
grep -q "client certificate" "$tmp/no-cert.log" && ok "an agent without a client certificate is refused" ||
  bad "the no-cert agent log does not say why: $(tail -3 "$tmp/no-cert.log")"
start_agent with-cert --ca-file "$c/ca.pem" --tls-cert "$c/client.pem" --tls-key "$c/client.key"
enrolled with-cert 15 && ok "mTLS: the agent with a client certificate enrols" ||
  bad "the agent with a client certificate did not enrol: $(tail -3 "$tmp/with-cert.log")"

# Plain HTTP beyond loopback is refused.
set +e
out=$("$kfleetd" --listen 0.0.0.0:0 --db "$tmp/plain.db" 2>&1); rc=$?
set -e
[ "$rc" = 2 ] && grep -q "refusing to serve plain HTTP" <<<"$out" && ok "plain HTTP on 0.0.0.0 is refused" ||
  bad "kfleetd served plain HTTP on 0.0.0.0 (exit $rc): $out"
[ "$fail" = 0 ] && echo "PASS: TLS"
exit "$fail"
