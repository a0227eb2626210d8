#!/usr/bin/env bash
# Enrols a host that no cloud offers (e.g. a gfx1151 workstation) as a static kfleet agent, with
# the same systemd unit as the terraform fleet. Run as root on the GPU host:
#   KFLEET_ENROL_TOKEN=... ./install-agent.sh --server https://kfleet.example.com \
#       --region lab-berlin --backend hip [--agent-binary ./kfleet-agent] [--ca-file ca.pem]
#       (--agent-binary installs kfleet-seccomp-exec from beside it too: the job sandbox's
#       syscall filter, which the agent looks for beside itself)
#       [--root DIR]   install under DIR instead of / and start nothing (packaging, tests)
#       [--enrol-token-file F]  this host's own token (kfleet enrol-token mint --out F)
#       [--instance-id ID]      what the agent says it is (default /etc/machine-id)
# The token is read from a file, the environment or a prompt, so it never appears in argv; it and
# the CA that signed kfleetd's certificate (--ca-file) land in 0600 files under /etc/kfleet, and
# the agent finds the CA through KFLEET_CA_FILE (its --ca-file) in /etc/kfleet/agent.env.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
unit_src="$here/../modules/l4-agents/files/kfleet-agent.service"
server="" region="" backend="hip" binary="" name=$(hostname) ca_file="" root="" token_file=""
instance_id=$(cat /etc/machine-id 2>/dev/null || hostname)

usage() { sed -n '2,11p' "$0" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --server) server=$2; shift 2 ;;
    --region) region=$2; shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    --agent-binary) binary=$2; shift 2 ;;
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
[[ "$backend" =~ ^(cuda|hip)$ ]] || { echo "--backend must be cuda or hip" >&2; exit 2; }
[[ -n "$root" || $EUID -eq 0 ]] || { echo "run as root: it writes /etc/kfleet and a systemd unit" >&2; exit 1; }
[[ -f "$unit_src" ]] || { echo "unit template missing at $unit_src" >&2; exit 1; }

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

install -d -m 0755 "$root/usr/local/bin" "$root/etc/systemd/system"
if [[ -n "$binary" ]]; then
  helper="$(dirname "$binary")/kfleet-seccomp-exec"
  [[ -x "$helper" ]] || { echo "no kfleet-seccomp-exec beside $binary: the job sandbox needs it (it is built and installed with kfleet-agent)" >&2; exit 1; }
  install -m 0755 "$binary" "$root/usr/local/bin/kfleet-agent"
  install -m 0755 "$helper" "$root/usr/local/bin/kfleet-seccomp-exec"
fi
[[ -x "$root/usr/local/bin/kfleet-agent" ]] || { echo "install kfleet-agent to /usr/local/bin or pass --agent-binary" >&2; exit 1; }
[[ -x "$root/usr/local/bin/kfleet-seccomp-exec" ]] || { echo "install kfleet-seccomp-exec beside kfleet-agent in /usr/local/bin, or pass --agent-binary with it beside" >&2; exit 1; }

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
install -m 0644 "$unit_src" "$root/etc/systemd/system/kfleet-agent.service"
if [[ -n "$root" ]]; then echo "kfleet-agent installed under $root (not started)"; exit 0; fi
systemctl daemon-reload
systemctl enable --now kfleet-agent.service
echo "kfleet-agent enabled; follow it with: journalctl -u kfleet-agent -f"
