# Root configuration for one region's L4 agents. One state per region: kfleetd runs it in a
# working directory per region, and people use one workspace (or directory) per region.

provider "aws" {
  region      = var.region
  max_retries = var.aws_max_retries

  skip_credentials_validation = var.offline
  skip_requesting_account_id  = var.offline
  skip_metadata_api_check     = var.offline
  skip_region_validation      = var.offline

  # Only when an endpoint is overridden: the provider validates an endpoints block (one attribute
  # per AWS service) each time it checks its configuration, about 2 s of CPU every time even with
  # every endpoint null, and a terraform apply checks it several times. The AWS SDK's own
  # AWS_ENDPOINT_URL_EC2 (and _STS) environment variables reach the same place without it.
  dynamic "endpoints" {
    for_each = var.ec2_endpoint != null || var.sts_endpoint != null ? [1] : []
    content {
      ec2 = var.ec2_endpoint
      sts = var.sts_endpoint
    }
  }
}

data "aws_ami" "dlami" {
  count       = var.ami_id == null ? 1 : 0
  most_recent = true
  owners      = ["amazon"]
  filter {
    name   = "name"
    values = ["Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) *"]
  }
  filter {
    name   = "architecture"
    values = ["x86_64"]
  }
}

locals {
  slots = var.agent_slots != null ? var.agent_slots : [for i in range(var.agent_count) : format("agent-%02d", i)]
}

module "agents" {
  source = "../modules/l4-agents"

  region             = var.region
  availability_zone  = var.availability_zone
  agent_slots        = toset(local.slots)
  instance_type      = var.instance_type
  gpus_per_instance  = var.gpus_per_instance
  ami_id             = var.ami_id != null ? var.ami_id : data.aws_ami.dlami[0].id
  subnet_id          = var.subnet_id
  security_group_ids = var.security_group_ids
  server_url         = var.server_url
  enrol_token        = var.enrol_token
  enrol_tokens       = var.enrol_tokens
  server_ca_pem      = var.server_ca_pem
  agent_packages     = var.agent_packages
  python_packages    = var.python_packages
  owner              = var.owner
  cost_center        = var.cost_center
  extra_tags         = var.extra_tags
}
