#!/usr/bin/env bash
# terraform/static/install-agent.sh (the static-host install) under a temp root (--root): the
# enrolment token comes from the environment and lands only in the 0600 enrol.token (never
# agent.env, the agent's environment); --ca-file
# lands in a 0600 ca.pem that agent.env names as KFLEET_CA_FILE (the agent's --ca-file); the
# unit it installs starts the agent with no token on its command line. Also: what it refuses.
# Usage: install-agent-test.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
script=$root/terraform/static/install-agent.sh
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kfleet-install-XXXXXX")
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }
ok() { echo "ok: $*"; }
trap 'if [ "$fail" = 0 ]; then rm -rf "$tmp"; else echo "kept $tmp" >&2; fi' EXIT

"$root/tests/support/make-test-certs.sh" "$tmp/certs" >/dev/null
# A stand-in for the kfleet-agent package: the real unit, fake programs. make_deb NAME [--no-helper]
make_deb() {
  local d=$tmp/deb-$1
  mkdir -p "$d/DEBIAN" "$d/usr/bin" "$d/usr/lib/kfleet" "$d/lib/systemd/system"
  printf 'Package: kfleet-agent\nVersion: 0.0.1\nArchitecture: all\nMaintainer: test <t@localhost>\nDescription: fake\n' >"$d/DEBIAN/control"
  printf '#!/bin/sh\necho fake agent\n' >"$d/usr/bin/kfleet-agent"
  [ "${2:-}" = --no-helper ] || printf '#!/bin/sh\necho fake helper\n' >"$d/usr/lib/kfleet/kfleet-seccomp-exec"
  chmod 0755 "$d"/usr/bin/* "$d"/usr/lib/kfleet/* 2>/dev/null || true
  cp "$root/packaging/systemd/kfleet-agent.service" "$d/lib/systemd/system/"
  dpkg-deb -b --root-owner-group "$d" "$tmp/$1.deb" >/dev/null
}
make_deb kfleet-agent
make_deb lone --no-helper
token="kfe_$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')"

install_into() {  # dir, then flags
  local dir=$1; shift
  mkdir -p "$dir"
  KFLEET_ENROL_TOKEN=$token bash "$script" --server https://kfleet.example.com:8470 --region lab-1 \
    --backend hip --package "$tmp/kfleet-agent.deb" --name gfx-box --root "$dir" "$@"
}

# With a CA.
r=$tmp/with-ca
install_into "$r" --ca-file "$tmp/certs/ca.pem" >"$tmp/with-ca.log" 2>&1 || bad "install failed: $(cat "$tmp/with-ca.log")"
env=$r/etc/kfleet/agent.env unit=$r/lib/systemd/system/kfleet-agent.service
[ "$(stat -c %a "$env" 2>/dev/null)" = 600 ] && ok "agent.env is 0600" || bad "agent.env is not 0600"
[ "$(stat -c %a "$r/etc/kfleet/ca.pem" 2>/dev/null)" = 600 ] && ok "ca.pem is 0600" || bad "ca.pem is not 0600"
cmp -s "$r/etc/kfleet/ca.pem" "$tmp/certs/ca.pem" || bad "ca.pem is not the --ca-file given"
grep -qx "KFLEET_CA_FILE=/etc/kfleet/ca.pem" "$env" && ok "agent.env names the CA (KFLEET_CA_FILE)" ||
  bad "agent.env does not name the CA: $(cat "$env")"
tok=$r/etc/kfleet/enrol.token
[ "$(stat -c %a "$tok" 2>/dev/null)" = 600 ] && ok "enrol.token is 0600" || bad "enrol.token is not 0600"
grep -qx -- "$token" "$tok" && ok "the token is in enrol.token" || bad "the token is not in enrol.token"
grep -q KFLEET_ENROL_TOKEN "$env" && bad "the token is in agent.env (the agent's environment)"
grep '^ExecStart=' "$unit" | grep -q -- '--enrol-token-file /etc/kfleet/enrol.token' &&
  ok "the unit reads the token file" || bad "the unit does not pass --enrol-token-file"
grep -qx "KFLEET_SERVER=https://kfleet.example.com:8470" "$env" || bad "agent.env has no KFLEET_SERVER"
[ -x "$r/usr/bin/kfleet-agent" ] || bad "the agent binary was not installed from the package"
[ -x "$r/usr/lib/kfleet/kfleet-seccomp-exec" ] &&
  ok "kfleet-seccomp-exec is installed from the package" || bad "kfleet-seccomp-exec was not installed"
cmp -s "$unit" "$root/packaging/systemd/kfleet-agent.service" && ok "the unit is the package's own" ||
  bad "the installed unit differs from packaging/systemd/kfleet-agent.service"
grep -q '^EnvironmentFile=/etc/kfleet/agent.env$' "$unit" || bad "the unit does not read agent.env"
grep '^ExecStart=' "$unit" | sed 's|--enrol-token-file /etc/kfleet/enrol.token||' | grep -qi 'token' && bad "a token on the unit's command line: $(grep '^ExecStart=' "$unit")"
[ "$(grep -rlF -- "$token" "$r" | wc -l)" = 1 ] && ok "the token is in enrol.token only" ||
  bad "the token is in more files: $(grep -rlF -- "$token" "$r")"

# Without a CA: the agent trusts the system's CAs; nothing names a CA file.
r=$tmp/no-ca
install_into "$r" >"$tmp/no-ca.log" 2>&1 || bad "install without a CA failed: $(cat "$tmp/no-ca.log")"
[ ! -e "$r/etc/kfleet/ca.pem" ] && ! grep -q KFLEET_CA_FILE "$r/etc/kfleet/agent.env" &&
  ok "no CA given: no ca.pem, no KFLEET_CA_FILE" || bad "a CA file appeared without --ca-file"

# Refusals: a CA file that holds no certificate, and no token.
printf 'not a certificate\n' >"$tmp/junk.pem"
if install_into "$tmp/junk" --ca-file "$tmp/junk.pem" >"$tmp/junk.log" 2>&1; then
  bad "a --ca-file without a certificate was accepted"
else
  grep -q "no PEM certificate" "$tmp/junk.log" && ok "a --ca-file without a certificate is refused" ||
    bad "the refusal does not say why: $(cat "$tmp/junk.log")"
fi
# A package without the sandbox's syscall filter helper: the agent would refuse to start, so the
# install refuses first; and a bare binary (the old --agent-binary) is refused, saying what to use.
mkdir -p "$tmp/nohelper"
if KFLEET_ENROL_TOKEN=$token bash "$script" --server https://k.example.com --region r --root "$tmp/nohelper" \
     --package "$tmp/lone.deb" </dev/null >"$tmp/nohelper.log" 2>&1; then
  bad "a package without kfleet-seccomp-exec was accepted"
else
  grep -q "/usr/lib/kfleet/kfleet-seccomp-exec is missing" "$tmp/nohelper.log" && ok "an agent without its filter helper is refused" ||
    bad "the refusal does not say why: $(cat "$tmp/nohelper.log")"
fi
if KFLEET_ENROL_TOKEN=$token bash "$script" --server https://k.example.com --region r --root "$tmp/nohelper" \
     --agent-binary /bin/true </dev/null >"$tmp/bare.log" 2>&1; then
  bad "--agent-binary was accepted"
else
  grep -q -- "--package kfleet-agent_" "$tmp/bare.log" && ok "a bare agent binary is refused, naming the packages" ||
    bad "the refusal does not say why: $(cat "$tmp/bare.log")"
fi
mkdir -p "$tmp/notoken"
if KFLEET_ENROL_TOKEN=short bash "$script" --server https://k.example.com --region r --root "$tmp/notoken" \
     --package "$tmp/kfleet-agent.deb" </dev/null >"$tmp/notoken.log" 2>&1; then
  bad "a short enrolment token was accepted"
else
  ok "a short enrolment token is refused"
fi
# A per-host token from a file (kfleet enrol-token mint --out), bound to the host's instance id:
# the file's token lands in enrol.token, never in argv or agent.env, and agent.env carries the id
# the token is bound to.
host_token="kfe_$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')"
printf '%s\n' "$host_token" >"$tmp/host.token"
chmod 0600 "$tmp/host.token"
r=$tmp/per-host
mkdir -p "$r"
if env -u KFLEET_ENROL_TOKEN bash "$script" --server https://kfleet.example.com:8470 --region lab-1 \
     --package "$tmp/kfleet-agent.deb" --root "$r" --enrol-token-file "$tmp/host.token" \
     --instance-id gfx-box-7 </dev/null >"$tmp/per-host.log" 2>&1; then
  grep -qx -- "$host_token" "$r/etc/kfleet/enrol.token" && ok "a per-host token file lands in enrol.token" ||
    bad "enrol.token does not hold the per-host token"
  [ "$(stat -c %a "$r/etc/kfleet/enrol.token" 2>/dev/null)" = 600 ] || bad "the per-host enrol.token is not 0600"
  grep -qx "KFLEET_INSTANCE_ID=gfx-box-7" "$r/etc/kfleet/agent.env" && ok "agent.env carries the --instance-id" ||
    bad "agent.env does not carry the instance id: $(cat "$r/etc/kfleet/agent.env")"
  grep -qF -- "$host_token" "$r/etc/kfleet/agent.env" && bad "the per-host token is in agent.env"
else
  bad "install with --enrol-token-file failed: $(cat "$tmp/per-host.log")"
fi
mkdir -p "$tmp/badid"
if bash "$script" --server https://k.example.com --region r --root "$tmp/badid" --package "$tmp/kfleet-agent.deb" \
     --enrol-token-file "$tmp/host.token" --instance-id 'a b;c' </dev/null >"$tmp/badid.log" 2>&1; then
  bad "an instance id with spaces and ; was accepted"
else
  grep -q "instance-id must be" "$tmp/badid.log" && ok "a bad --instance-id is refused, saying why" ||
    bad "the refusal does not say why: $(cat "$tmp/badid.log")"
fi
if bash "$script" --server https://k.example.com --region r --root "$tmp/badid" --package "$tmp/kfleet-agent.deb" \
     --enrol-token-file "$tmp/missing.token" </dev/null >"$tmp/missing.log" 2>&1; then
  bad "a missing --enrol-token-file was accepted"
else
  grep -q "cannot read it" "$tmp/missing.log" && ok "a missing --enrol-token-file is refused" ||
    bad "the refusal does not say why: $(cat "$tmp/missing.log")"
fi
[ "$fail" = 0 ] && echo "PASS: static install delivers the CA and the token as 0600 files"
exit "$fail"
