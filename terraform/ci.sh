#!/usr/bin/env bash
# Offline checks of terraform/: fmt, init from the local plugin dir, validate, terraform test with
# mocked AWS, and an offline plan of the root. Fails (never skips) when a tool is missing: a CI
# that silently skipped these would let a broken fleet definition through.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
plugin_dir=${KFLEET_TF_PLUGIN_DIR:-/opt/tf-plugins}

fail() { echo "terraform/ci.sh: FAIL: $*" >&2; exit 1; }

command -v terraform >/dev/null 2>&1 || fail "terraform is not on PATH (install Terraform >= 1.7; scripts/install-deps.sh does)"
[[ -d "$plugin_dir/registry.terraform.io/hashicorp/aws" ]] ||
  fail "no AWS provider under $plugin_dir (set KFLEET_TF_PLUGIN_DIR or run scripts/install-deps.sh)"

# Work on a scratch copy so .terraform dirs and lock files never land in the source tree.
work=$(mktemp -d)
provider_pid=
stop_provider() {
  if [ -n "$provider_pid" ]; then
    kill "$provider_pid" 2>/dev/null || true
    wait "$provider_pid" 2>/dev/null || true
    provider_pid=
  fi
}
trap 'stop_provider; rm -rf "$work"' EXIT
cp -r "$here/modules" "$here/fleet" "$work/"
export TF_CLI_CONFIG_FILE="$work/terraformrc"
: >"$TF_CLI_CONFIG_FILE"
export TF_IN_AUTOMATION=1 TF_INPUT=0 CHECKPOINT_DISABLE=1

step() { echo "== $*"; }

step "terraform fmt -check -recursive"
terraform -chdir="$here" fmt -check -recursive -diff || fail "run: terraform -chdir=terraform fmt -recursive"

for dir in modules/l4-agents fleet; do
  step "$dir: init"
  terraform -chdir="$work/$dir" init -backend=false -plugin-dir="$plugin_dir" -no-color >/dev/null ||
    fail "$dir: terraform init -plugin-dir=$plugin_dir failed"
done

# validate and the mocked `terraform test` runs only read the provider's schema, but each starts
# the provider (a 700 MB Go binary, about 0.7 s of CPU to start) anew: twice per run block, about
# 70 times in all. Here one process of the very provider that init selected serves them all, one
# command after another: started in the provider's debug mode, attached through
# TF_REATTACH_PROVIDERS, stopped when this script exits. The plans below start their own.
provider_bin=$(find -L "$work/fleet/.terraform/providers/registry.terraform.io/hashicorp/aws" \
  -name 'terraform-provider-aws_*' -type f | head -1)
[[ -x "$provider_bin" ]] || fail "init installed no AWS provider binary under $work/fleet/.terraform"
TMPDIR=$work "$provider_bin" -debug >"$work/provider.out" 2>"$work/provider.log" &
provider_pid=$!
reattach=
for _ in $(seq 600); do # until it says where it listens: 60 s at most
  reattach=$(sed -n "s/^[[:space:]]*TF_REATTACH_PROVIDERS='\(.*\)'$/\1/p" "$work/provider.out")
  [[ -n "$reattach" ]] && break
  kill -0 "$provider_pid" 2>/dev/null || fail "the AWS provider exited in debug mode: $(cat "$work/provider.log")"
  sleep 0.1
done
[[ -n "$reattach" ]] || fail "the AWS provider printed no TF_REATTACH_PROVIDERS within 60 s"

for dir in modules/l4-agents fleet; do
  step "$dir: validate / test"
  TF_REATTACH_PROVIDERS=$reattach terraform -chdir="$work/$dir" validate -no-color || fail "$dir: validate failed"
  TF_REATTACH_PROVIDERS=$reattach terraform -chdir="$work/$dir" test -no-color || fail "$dir: terraform test failed"
done
stop_provider

# A plan of the real root with the real provider, offline: skip flags + a dummy credential, and
# an explicit AMI so no data source needs the EC2 API.
for region in us-east-1 eu-west-1; do
  step "fleet: offline plan for $region"
  out=$(AWS_ACCESS_KEY_ID=AKIAKFLEETCIDUMMY000 AWS_SECRET_ACCESS_KEY=ci-dummy-secret \
    AWS_EC2_METADATA_DISABLED=true TF_VAR_enrol_token=enrol-ci-0123456789abcdef \
    terraform -chdir="$work/fleet" plan -no-color -lock=false -input=false \
    -var "region=$region" -var offline=true -var ami_id=ami-0123456789abcdef0 \
    -var server_url=https://kfleet.example.com -var owner=ci -var cost_center=cc-ci \
    -var agent_count=2) || fail "offline plan for $region failed"
  grep -q "Plan: 2 to add, 0 to change, 0 to destroy" <<<"$out" || fail "plan for $region did not add 2 agents:
$out"
  grep -q "\"KfleetRegion\" *= \"$region\"" <<<"$out" || fail "plan for $region lacks the KfleetRegion tag"
done

# The kfleet tests reach their fake EC2 through AWS_ENDPOINT_URL_EC2; the ec2_endpoint variable
# must still route EC2 calls where it says. Without an ami_id the AMI lookup calls EC2: at a
# loopback port where nothing listens it fails, and the error names that endpoint.
step "fleet: ec2_endpoint reaches the provider"
if out=$(AWS_ACCESS_KEY_ID=AKIAKFLEETCIDUMMY000 AWS_SECRET_ACCESS_KEY=ci-dummy-secret \
  AWS_EC2_METADATA_DISABLED=true TF_VAR_enrol_token=enrol-ci-0123456789abcdef \
  terraform -chdir="$work/fleet" plan -no-color -lock=false -input=false \
  -var region=us-east-1 -var offline=true -var aws_max_retries=1 \
  -var ec2_endpoint=http://127.0.0.1:1 -var server_url=https://kfleet.example.com \
  -var owner=ci -var cost_center=cc-ci -var agent_count=1 2>&1); then
  fail "a plan whose EC2 endpoint refuses connections succeeded:
$out"
fi
grep -q 'http://127.0.0.1:1/' <<<"$out" || fail "the AMI lookup did not go to ec2_endpoint:
$out"

echo "terraform/ci.sh: OK"
