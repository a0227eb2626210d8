#!/usr/bin/env bash
# Enrols a host that no cloud offers (e.g. a gfx1151 workstation) as a static kfleet agent, from
# the agent's Debian packages, whose systemd unit the cloud fleets run too. Run as root on the
# GPU host:
#   KFLEET_ENROL_TOKEN=... ./install-agent.sh --server https://kfleet.example.com \
#       --region lab-berlin --backend hip --package kfleet-agent_*.deb \
#       --package kfleet-kernels_*.deb [--ca-file ca.pem]
#       (without --package: the kfleet-agent package is already installed)
#       [--root DIR]   unpack under DIR instead of installing, and start nothing (tests)
#       [--enrol-token-file F]  this host's own token (kfleet enrol-token mint --out F)
#       [--instance-id ID]      what the agent says it is (default /etc/machine-id)
# The token is read from a file, the environment or a prompt, so it never appears in argv; it and
# the CA that signed kfleetd's certificate (--ca-file) land in 0600 files under /etc/kfleet, and
# the agent finds the CA through KFLEET_CA_FILE (its --ca-file) in /etc/kfleet/agent.env.
set -euo pipefail

server="" region="" backend="hip" name=$(hostname) ca_file="" root="" token_file=""
packages=()
instance_id=$(cat /etc/machine-id 2>/dev/null || hostname)

usage() { sed -n '2,11p' "$0" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --server) server=$2; shift 2 ;;
    --region) region=$2; shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    --package) packages+=("$2"); shift 2 ;;
    --agent-binary) echo "--agent-binary is gone: install the packages (--package kfleet-agent_*.deb --package kfleet-kernels_*.deb; cpack -G DEB builds them)" >&2; exit 2 ;;
    --name) name=$2; shift 2 ;;
    --ca-file) ca_file=$2; shift 2 ;;
    --root) root=$2; shift 2 ;;
    --enrol-token-file) token_file=$2; shift 2 ;;
    --instance-id) instance_id=$2; shift 2 ;;
    *) usage ;;
  esac
done
[[ -n "$server" && -n "$region" ]] || usage
[[ -z "$ca_file" || -f "$ca_file" ]] || { echo "--ca-file $ca_file: no such file" >&2; exit 2; }
if [[ -n "$ca_file" ]] && ! grep -q -- "-----BEGIN CERTIFICATE-----" "$ca_file"; then
  echo "--ca-file $ca_file holds no PEM certificate (-----BEGIN CERTIFICATE-----)" >&2; exit 2
fi
if [[ -n "$root" ]]; then
  [[ -d "$root" ]] || { echo "--root $root: no such directory" >&2; exit 2; }
  root=$(cd "$root" && pwd)
fi
if [[ "$server" == http://* && ! "$server" =~ ^http://(127\.0\.0\.1|localhost)([:/]|$) ]]; then
  echo "warning: $server is plain HTTP: the tokens and every result travel in clear; use https://" >&2
fi
[[ "$server" =~ ^https?://[A-Za-z0-9.:/_~%+-]+$ ]] || { echo "--server must be a plain http(s) URL" >&2; exit 2; }
[[ "$backend" =~ ^(cuda|hip|compile)$ ]] || { echo "--backend must be cuda, hip or compile" >&2; exit 2; }
[[ -n "$root" || $EUID -eq 0 ]] || { echo "run as root: it installs packages and writes /etc/kfleet" >&2; exit 1; }
for p in "${packages[@]}"; do
  [[ -f "$p" ]] || { echo "--package $p: no such file" >&2; exit 2; }
done

# A per-host token (minted for this host, bound to its --instance-id) from a file, else the
# environment, else a prompt.
if [[ -n "$token_file" ]]; then
  [[ -f "$token_file" && -r "$token_file" ]] || { echo "--enrol-token-file $token_file: cannot read it" >&2; exit 2; }
  token=$(head -n 1 "$token_file" | tr -d '\r\n ')
else
  token=${KFLEET_ENROL_TOKEN:-}
fi
if [[ -z "$token" ]]; then read -r -s -p "enrolment token: " token; echo; fi
[[ "$instance_id" =~ ^[A-Za-z0-9._:-]{1,200}$ ]] || { echo "--instance-id must be 1 to 200 of [A-Za-z0-9._:-]" >&2; exit 2; }
[[ ${#token} -ge 16 ]] || { echo "the enrolment token looks too short" >&2; exit 1; }

# The packages: apt installs them with what they depend on (bubblewrap, libcurl); under --root
# they are only unpacked.
if [[ ${#packages[@]} -gt 0 ]]; then
  if [[ -n "$root" ]]; then
    for p in "${packages[@]}"; do dpkg-deb -x "$p" "$root"; done
  else
    abs=()
    for p in "${packages[@]}"; do abs+=("$(cd "$(dirname "$p")" && pwd)/$(basename "$p")"); done
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o Dpkg::Options::=--force-confold "${abs[@]}"
  fi
fi
for f in usr/bin/kfleet-agent usr/lib/kfleet/kfleet-seccomp-exec lib/systemd/system/kfleet-agent.service; do
  [[ -e "$root/$f" ]] || { echo "/$f is missing: install the kfleet-agent and kfleet-kernels packages (--package FILE.deb, twice)" >&2; exit 1; }
done

install -d -m 0755 "$root/etc/kfleet"
umask 077
ca_line=""
if [[ -n "$ca_file" ]]; then
  install -m 0600 "$ca_file" "$root/etc/kfleet/ca.pem"
  ca_line="KFLEET_CA_FILE=/etc/kfleet/ca.pem"
fi
cat >"$root/etc/kfleet/agent.env" <<ENV
KFLEET_SERVER=$server
KFLEET_REGION=$region
KFLEET_BACKEND=$backend
KFLEET_PROVIDER=static
KFLEET_INSTANCE_ID=$instance_id
KFLEET_NAME=$name
$ca_line
ENV
chmod 0600 "$root/etc/kfleet/agent.env"
# The token in a file of its own, read by the agent (--enrol-token-file), never its environment.
printf '%s\n' "$token" >"$root/etc/kfleet/enrol.token"
chmod 0600 "$root/etc/kfleet/enrol.token"
umask 022
if [[ -n "$root" ]]; then echo "kfleet-agent installed under $root (not started)"; exit 0; fi
# What this host can do, and what to install for what it lacks (the unit says it again in the
# journal before each start).
(set -a; . /etc/kfleet/agent.env; set +a
 kfleet-agent --check --server "$KFLEET_SERVER" --backend "$KFLEET_BACKEND" \
   --enrol-token-file /etc/kfleet/enrol.token --work-dir /var/lib/kfleet-agent) ||
  echo "install-agent.sh: kfleet-agent --check: this agent can take no job yet (above: what to install)" >&2
systemctl daemon-reload
systemctl enable --now kfleet-agent.service
echo "kfleet-agent enabled; follow it with: journalctl -u kfleet-agent -f"
