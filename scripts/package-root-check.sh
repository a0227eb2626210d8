#!/usr/bin/env bash
# The Debian packages on a fresh Debian 12, the way a cloud VM and an operator's host meet them:
#   1. a fresh Debian 12 root (mmdebstrap, from Debian's archive) with what the packages depend on,
#      clang-19 and the HIP headers (this root's compiler: Debian has no nvcc), and no kfleet;
#   2. kfleetd, kfleet-kernels and kfleet installed from the packages, kfleetd started from its
#      unit (as the kfleetd user, its SQLite store in /var/lib/kfleetd);
#   3. the Compute Engine startup script (kfleetd's gce provisioner renders it) and the terraform
#      user data (the l4-agents module's template, rendered by terraform) run in the root as a
#      VM's boot would: they fetch the agent's packages from a fake metadata/download server on
#      loopback, check their SHA-256, install them with apt, write the agent's config, run
#      `kfleet-agent --check` and start the units. systemd is replaced by a shim that runs each
#      unit's ExecStartPre and ExecStart (scripts/lib/fake_systemctl.py). There is no GPU here:
#      --check says so and the cuda agents do not start, as on a VM without a driver;
#   4. terraform/static/install-agent.sh turns the host into a compile agent (KFLEET_BACKEND=compile);
#      its unit's --check passes, the agent enrols, and a HIP job for gfx1151 is built and gated
#      for real with the root's clang-19, its GPU stages on a simulated agent (marked simulated).
# Everything runs in private mount, PID and network namespaces (no network but loopback).
# Usage (as root): scripts/package-root-check.sh [--packages DIR] [--log FILE] [--keep]
#                                                 [--root-tarball FILE]
#   --packages DIR         the .deb files (default: build/packages, made with cpack when absent)
#   --log FILE             also write everything to FILE
#   --root-tarball FILE    unpack this tarball of a root that mmdebstrap made (with the --include
#                          list below, never used since) instead of running mmdebstrap
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
packages="" log="" keep=0 tarball=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --packages) packages=$2; shift 2 ;;
    --log) log=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --root-tarball) tarball=$2; shift 2 ;;
    *) sed -n '2,26p' "$0" >&2; exit 2 ;;
  esac
done
if [[ -n "$log" ]]; then
  mkdir -p "$(dirname "$log")"
  exec > >(tee "$log") 2>&1
fi
fail() { echo "package-root-check: FAIL: $*" >&2; exit 1; }
[[ $EUID -eq 0 ]] || fail "run as root (mmdebstrap, chroot, namespaces)"
for t in mmdebstrap unshare terraform; do
  command -v $t >/dev/null || fail "$t is not installed (apt-get install mmdebstrap util-linux; terraform: scripts/install-deps.sh)"
done
t0=$(date +%s)
declare -a steps=()
step() { echo; echo "=== $*"; }
result() { steps+=("$1|$2"); echo "--> $1: $2"; }

# The packages.
if [[ -z "$packages" ]]; then
  packages=$repo/build/packages
  if ! ls "$packages"/kfleet-agent_*.deb >/dev/null 2>&1; then
    step "cpack (build/packages)"
    cpack -G DEB --config "$repo/build/CPackConfig.cmake" >/dev/null
  fi
fi
packages=$(cd "$packages" && pwd)
for p in kfleet-agent kfleet-kernels kfleetd kfleet; do
  ls "$packages/${p}_"*.deb >/dev/null 2>&1 || fail "no ${p}_*.deb in $packages"
done
startup_tool=$repo/build/orchestrator/provision_gce/kfleet-gce-startup-script
[[ -x "$startup_tool" ]] || fail "$startup_tool is not built (scripts/build.sh kfleet-gce-startup-script)"

work=$(mktemp -d /var/tmp/kfleet-root-check-XXXXXX)
root=$work/root
cleanup() {
  local s=$?
  if [[ $keep = 1 || $s != 0 ]]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

step "1. a fresh Debian 12 root (mmdebstrap bookworm, minbase)"
# The packages' dependencies are in the root before the network goes away (the scripts then
# install kfleet's packages offline, as apt would online), with the root's toolchain (clang-19,
# lld-19, the HIP headers) and what the scripts call (curl, iproute2, python3 for pip).
deps=bubblewrap,util-linux,ca-certificates,libcurl4,libsqlite3-0,libpq5,libssl3,adduser,curl,python3,python3-venv,clang-19,lld-19,libamdhip64-dev,iproute2,procps
if [[ -n "$tarball" ]]; then
  echo "from $tarball ($(stat -c '%y' "$tarball" | cut -d. -f1)), made by: mmdebstrap --variant=minbase --include=$deps bookworm $(basename "$tarball")"
  mkdir -p "$root" && tar -C "$root" -xf "$tarball"
else
  echo "mmdebstrap --variant=minbase --include=$deps bookworm $root"
  mmdebstrap --variant=minbase --include="$deps" bookworm "$root" >"$work/mmdebstrap.log" 2>&1 ||
    { tail -20 "$work/mmdebstrap.log"; fail "mmdebstrap failed"; }
fi
for p in ${deps//,/ }; do chroot "$root" dpkg-query -W "$p" >/dev/null 2>&1 || fail "the root lacks $p"; done
! chroot "$root" dpkg-query -W 'kfleet*' >/dev/null 2>&1 || fail "the fresh root already has kfleet"
result "fresh Debian 12 root" "$(. "$root/etc/os-release"; echo "$PRETTY_NAME"), $(chroot "$root" dpkg-query -W -f '${binary:Package}\n' | wc -l) packages, no kfleet"

# What the root is given from outside: the packages (served as downloads), the shims, the
# scripts, one job and its kernel library.
mkdir -p "$root/opt/check/packages" "$root/opt/check/jobs" "$root/opt/check/kernels"
cp "$packages"/*.deb "$root/opt/check/packages/"
install -m 0755 "$here/lib/fake_systemctl.py" "$root/usr/local/sbin/systemctl"
install -m 0644 "$here/lib/fake_cloud_metadata.py" "$root/opt/check/fake_cloud_metadata.py"
install -m 0755 "$repo/terraform/static/install-agent.sh" "$root/opt/check/install-agent.sh"
cp -r "$repo/jobs/scaled-mm-hip" "$root/opt/check/jobs/"
cp -r "$repo/kernels/suite" "$root/opt/check/kernels/"
echo "127.0.0.1 metadata.google.internal" >>"$root/etc/hosts"
sha() { sha256sum "$1" | cut -d' ' -f1; }
agent_deb=$(basename "$packages"/kfleet-agent_*.deb)
kernels_deb=$(basename "$packages"/kfleet-kernels_*.deb)

# The rest runs in the namespaces: loopback only, 169.254.169.254 on it for EC2's IMDS.
cat >"$work/inside.sh" <<'INSIDE'
set -euo pipefail
root=$1 work=$2 startup_tool=$3 repo=$4 agent_deb=$5 kernels_deb=$6 agent_sha=$7 kernels_sha=$8
fail() { echo "package-root-check: FAIL: $*" >&2; exit 1; }
result() { echo "$1|$2" >>"$work/results"; echo "--> $1: $2"; }
step() { echo; echo "=== $*"; }
ip link set lo up
ip addr add 169.254.169.254/32 dev lo
# The root a mount point of its own, as a machine's / is (bubblewrap makes / a slave mount).
mount --bind "$root" "$root"
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
mount -t tmpfs tmpfs "$root/run"
mount -t tmpfs tmpfs "$root/tmp"
in_root() { chroot "$root" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }
in_root python3 /opt/check/fake_cloud_metadata.py /opt/check/packages >"$work/fake-cloud.log" 2>&1 &
for _ in $(seq 100); do in_root curl -sf -H 'Metadata-Flavor: Google' http://metadata.google.internal/computeMetadata/v1/instance/name >/dev/null && break; sleep 0.1; done

step "2. kfleetd, kfleet-kernels and kfleet from the packages; kfleetd from its unit"
quiet() { grep -v "^\(Reading\|Building\|Selecting\|Preparing\|Unpacking\|Get:\|Ign:\|Err:\|(Reading\)" || true; }
in_root sh -c 'apt-get install -y -q /opt/check/packages/kfleetd_*.deb /opt/check/packages/kfleet-kernels_*.deb \
  /opt/check/packages/kfleet_*.deb' >"$work/apt-kfleetd.log" 2>&1 || { cat "$work/apt-kfleetd.log"; fail "apt could not install kfleetd"; }
quiet <"$work/apt-kfleetd.log"
getent -s files passwd kfleetd >/dev/null 2>&1 || in_root getent passwd kfleetd >/dev/null || fail "postinst made no kfleetd user"
echo "kfleetd user: $(in_root getent passwd kfleetd); state: $(in_root stat -c '%U %a %n' /var/lib/kfleetd); tokens: $(in_root stat -c '%U %a %n' /etc/kfleet/kfleetd/admin.token /etc/kfleet/kfleetd/enrol.token | tr '\n' ' ')"
in_root systemctl start kfleetd.service
for _ in $(seq 150); do in_root curl -sf http://127.0.0.1:8470/api/v1/health >/dev/null && break; sleep 0.2; done
in_root curl -sf http://127.0.0.1:8470/api/v1/health >/dev/null || { cat "$root/var/log/kfleet-units/kfleetd.service.log"; fail "kfleetd did not come up"; }
sed -n '1,6p' "$root/var/log/kfleet-units/kfleetd.service.log"
in_root ps -o user=,args= -C kfleetd | head -1
result "kfleetd from its package" "up on 127.0.0.1:8470 as user $(in_root ps -o user= -C kfleetd | head -1), store $(in_root ls /var/lib/kfleetd | tr '\n' ' ')"
enrol=$(cat "$root/etc/kfleet/kfleetd/enrol.token")
export KFLEET_TOKEN_FILE=/etc/kfleet/kfleetd/admin.token KFLEET_SERVER=http://127.0.0.1:8470

step "3a. the Compute Engine startup script (rendered by kfleetd's gce provisioner), run as the VM's boot"
cat >"$work/gce.json" <<JSON
{"project": "kfleet-check", "zones": ["us-central1-a"], "owner": "check", "cost_center": "cc-check",
 "server_url": "http://127.0.0.1:8470", "enrol_token": "$enrol", "per_instance_enrolment": false,
 "agent_packages": [{"url": "http://127.0.0.1/packages/$agent_deb", "sha256": "$agent_sha"},
                    {"url": "http://127.0.0.1/packages/$kernels_deb", "sha256": "$kernels_sha"}]}
JSON
"$startup_tool" "$work/gce.json" us-central1-a >"$root/opt/check/gce-startup.sh"
sed "s/$enrol/<the enrolment token>/" "$root/opt/check/gce-startup.sh"
echo "--- running it"
set +e
in_root bash /opt/check/gce-startup.sh >"$work/gce-startup.log" 2>&1
gce_rc=$?
quiet <"$work/gce-startup.log"
set -e
in_root dpkg-query -W -f '${binary:Package} ${Version} ${Status}\n' kfleet-agent kfleet-kernels
in_root test -x /usr/bin/kfleet-agent || fail "the startup script did not install kfleet-agent"
grep -q "^  FAIL  backend .*no GPU" "$root/var/log/kfleet-units/kfleet-agent@0.service.log" ||
  fail "kfleet-agent@0's --check did not say there is no GPU"
result "GCE startup script" "exit $gce_rc: packages fetched, SHA-256 checked, installed by apt; --check ran; kfleet-agent@0's ExecStartPre (--check) refused: no GPU here"

step "3b. the terraform user data (the l4-agents template, rendered by terraform), run as the VM's boot"
mkdir -p "$work/tf"
cat >"$work/tf/main.tf" <<TF
output "user_data" {
  sensitive = true
  value = templatefile("$repo/terraform/modules/l4-agents/templates/user-data.sh.tftpl", {
    server_url        = "http://127.0.0.1:8470"
    region            = "us-east-1"
    enrol_token       = "$enrol"
    server_ca_pem     = ""
    agent_packages    = [{ url = "http://127.0.0.1/packages/$agent_deb", sha256 = "$agent_sha" }, { url = "http://127.0.0.1/packages/$kernels_deb", sha256 = "$kernels_sha" }]
    python_packages   = []
    gpus_per_instance = 1
  })
}
TF
(cd "$work/tf" && TF_IN_AUTOMATION=1 CHECKPOINT_DISABLE=1 terraform init -no-color >/dev/null &&
  TF_IN_AUTOMATION=1 CHECKPOINT_DISABLE=1 terraform apply -auto-approve -no-color >/dev/null &&
  terraform output -raw user_data) >"$root/opt/check/user-data.sh" || fail "terraform could not render the user data"
in_root systemctl stop kfleet-agent@0.service
rm -f "$root/run/fake-systemd/kfleet-agent@0.service.enabled"
echo "--- running it (the first lines: $(head -2 "$root/opt/check/user-data.sh" | tail -1))"
set +e
in_root bash /opt/check/user-data.sh >"$work/user-data.log" 2>&1
tf_rc=$?
quiet <"$work/user-data.log"
set -e
grep -q "KFLEET_PROVIDER=terraform" "$root/etc/kfleet/agent.env" || fail "the user data did not write agent.env"
grep -q "KFLEET_INSTANCE_ID=i-0kfleet0000000001" "$root/etc/kfleet/agent.env" || fail "the user data did not read the instance id from IMDSv2"
result "terraform user data" "exit $tf_rc: packages fetched, SHA-256 checked, installed by apt; instance id from IMDSv2; --check ran; kfleet-agent@0 refused: no GPU here"

step "4. install-agent.sh (static hosts) from the packages: a compile agent, and a job through it"
in_root systemctl stop kfleet-agent@0.service
in_root bash /opt/check/install-agent.sh --server http://127.0.0.1:8470 --region build --backend compile \
  --name build-0 --enrol-token-file /etc/kfleet/kfleetd/enrol.token \
  --package /opt/check/packages/"$agent_deb" --package /opt/check/packages/"$kernels_deb" >"$work/install-agent.log" 2>&1 ||
  { cat "$work/install-agent.log"; fail "install-agent.sh failed"; }
quiet <"$work/install-agent.log"
in_root systemctl is-active kfleet-agent.service || { cat "$root/var/log/kfleet-units/kfleet-agent.service.log"; fail "kfleet-agent.service is not running"; }
# The GPU stages: a simulated gfx1151 agent (the same packaged binary, --backend simulated).
(umask 077; cp "$root/etc/kfleet/kfleetd/enrol.token" "$root/root/sim.token")
in_root kfleet-agent --server http://127.0.0.1:8470 --name sim-gfx1151 --backend simulated --gpu-class gfx1151 \
  --arch gfx1151 --region build --enrol-token-file /root/sim.token --work-dir /root/sim >"$work/sim.log" 2>&1 &
for _ in $(seq 300); do
  n=$(in_root env KFLEET_TOKEN_FILE=$KFLEET_TOKEN_FILE KFLEET_SERVER=$KFLEET_SERVER kfleet --no-color --json agents 2>/dev/null | grep -o '"name": *"\(build-0\|sim-gfx1151\)"' | wc -l || true)
  [ "$n" = 2 ] && break
  sleep 0.2
done
[ "$n" = 2 ] || { cat "$root/var/log/kfleet-units/kfleet-agent.service.log" "$work/sim.log"; fail "the agents did not enrol"; }
in_root env KFLEET_TOKEN_FILE=$KFLEET_TOKEN_FILE KFLEET_SERVER=$KFLEET_SERVER kfleet --no-color agents
set +e
out=$(in_root env KFLEET_TOKEN_FILE=$KFLEET_TOKEN_FILE KFLEET_SERVER=$KFLEET_SERVER timeout 600 kfleet --no-color \
  submit /opt/check/jobs/scaled-mm-hip/stepC09.yaml --kernel-lib /opt/check/kernels --follow 2>&1)
job_rc=$?
set -e
echo "$out"
grep -q "^\[build\] ok .* on build-0" <<<"$out" || { tail -30 "$root/var/log/kfleet-units/kfleet-agent.service.log"; fail "build-0 did not build the job"; }
grep -q "^\[resources\] .*ok" <<<"$out" || fail "no resources gate on build-0"
grep -q "\[simulated\]" <<<"$out" || fail "the GPU stages' results are not marked simulated"
result "compile agent build-0 (install-agent.sh)" "--check passed, enrolled; built scaled-mm-hip/stepC09 with $(in_root clang-19 --version | head -1 | sed 's/ (.*//'), resources gate ok; verdict exit $job_rc [simulated GPU stages]"
INSIDE

result_file=$work/results
: >"$result_file"
unshare --mount --pid --net --fork --propagation private bash "$work/inside.sh" "$root" "$work" "$startup_tool" "$repo" \
  "$agent_deb" "$kernels_deb" "$(sha "$packages/$agent_deb")" "$(sha "$packages/$kernels_deb")" ||
  fail "see above"
while IFS= read -r line; do steps+=("$line"); done <"$result_file"

echo
echo "package-root-check: $(( $(date +%s) - t0 )) s; packages: $(cd "$packages" && echo *.deb)"
printf '%-42s %s\n' STEP RESULT
for s in "${steps[@]}"; do printf '%-42s %s\n' "${s%%|*}" "${s#*|}"; done
