# L4 (g6-family) kfleet agents in one region: one instance per slot name, each bootstrapped to
# install kfleet-agent as a systemd unit and enrol with the orchestrator.

locals {
  # Ownership and cost tags come last so extra_tags can never hide who pays for a GPU.
  ownership_tags = {
    Project      = "kfleet"
    Owner        = var.owner
    CostCenter   = var.cost_center
    KfleetRegion = var.region
    KfleetRole   = "agent"
    KfleetGpu    = "L4"
    ManagedBy    = "terraform"
  }
  tags = merge(var.extra_tags, local.ownership_tags)

  # L4s per g6 instance type; the agents run one per GPU (kfleet-agent@N).
  known_gpus = {
    "g6.12xlarge" = 4
    "g6.24xlarge" = 4
    "g6.48xlarge" = 8
  }
  gpus_per_instance = coalesce(var.gpus_per_instance, lookup(local.known_gpus, var.instance_type, 1))

  # Each slot's user data, with its own enrolment token when enrol_tokens has one (kfleet
  # enrol-token mint --name SLOT --uses <GPUs>), else the fleet's.
  user_data = { for slot in var.agent_slots : slot => templatefile("${path.module}/templates/user-data.sh.tftpl", {
    server_url        = var.server_url
    region            = var.region
    enrol_token       = lookup(var.enrol_tokens, slot, var.enrol_token)
    server_ca_pem     = var.server_ca_pem
    agent_packages    = var.agent_packages
    python_packages   = var.python_packages
    gpus_per_instance = local.gpus_per_instance
  }) }
}

resource "aws_instance" "agent" {
  for_each = var.agent_slots

  ami                    = var.ami_id
  instance_type          = var.instance_type
  subnet_id              = var.subnet_id
  availability_zone      = var.subnet_id == null ? var.availability_zone : null
  vpc_security_group_ids = length(var.security_group_ids) > 0 ? var.security_group_ids : null
  key_name               = var.key_name
  user_data              = local.user_data[each.key]

  # A benchmark host shuts down only when kfleet releases it; never leave a stopped GPU billing EBS.
  instance_initiated_shutdown_behavior = "terminate"

  metadata_options {
    http_tokens   = "required"
    http_endpoint = "enabled"
  }

  root_block_device {
    volume_size = var.root_volume_gb
    volume_type = "gp3"
    encrypted   = true
    tags        = merge(local.tags, { Name = "${var.name_prefix}-${var.region}-${each.key}" })
  }

  tags = merge(local.tags, {
    Name       = "${var.name_prefix}-${var.region}-${each.key}"
    KfleetSlot = each.key
  })

  lifecycle {
    # A new AMI or token must not recycle agents mid-benchmark; kfleet replaces agents by slot.
    ignore_changes = [ami, user_data]
    precondition {
      condition     = lookup(var.enrol_tokens, each.key, var.enrol_token) != ""
      error_message = "slot ${each.key} has no enrolment token: set enrol_tokens[\"${each.key}\"] (kfleet enrol-token mint) or the fleet's enrol_token."
    }
  }
}
