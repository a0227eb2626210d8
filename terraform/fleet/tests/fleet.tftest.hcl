# Offline: AWS is mocked; these check the root wiring per region and its input validation.
mock_provider "aws" {
  mock_data "aws_ami" {
    defaults = {
      id = "ami-0fedcba9876543210"
    }
  }
}

variables {
  region      = "us-west-2"
  server_url  = "https://kfleet.example.com"
  enrol_token = "enrol-0123456789abcdef"
  owner       = "kernels-team"
  cost_center = "cc-4711"
  offline     = true
}

run "count_names_slots_in_order" {
  command = plan
  variables {
    agent_count = 3
    ami_id      = "ami-0123456789abcdef0"
  }
  assert {
    condition     = toset(keys(module.agents.instance_ids)) == toset(["agent-00", "agent-01", "agent-02"])
    error_message = "agent_count must name slots agent-00.. in order"
  }
  assert {
    condition     = output.region == "us-west-2"
    error_message = "the state must be for the requested region"
  }
}

run "explicit_slots_win_over_count" {
  command = plan
  variables {
    agent_count = 5
    agent_slots = ["j42-1"]
    ami_id      = "ami-0123456789abcdef0"
  }
  assert {
    condition     = keys(module.agents.instance_ids) == ["j42-1"]
    error_message = "kfleetd's explicit slots must decide which agents exist"
  }
}

run "looks_up_the_ami_when_none_is_given" {
  command = plan
  variables {
    agent_count = 1
  }
  assert {
    condition     = length(data.aws_ami.dlami) == 1
    error_message = "without ami_id the DLAMI must be looked up"
  }
}

run "given_ami_skips_the_lookup" {
  command = plan
  variables {
    agent_count = 1
    ami_id      = "ami-0123456789abcdef0"
  }
  assert {
    condition     = length(data.aws_ami.dlami) == 0
    error_message = "an explicit AMI must not need the EC2 API at plan time"
  }
}

run "rejects_a_region_without_l4" {
  command = plan
  variables {
    region = "af-south-1"
  }
  expect_failures = [var.region]
}

run "rejects_a_zone_of_another_region" {
  command = plan
  variables {
    availability_zone = "us-east-1a"
  }
  expect_failures = [var.availability_zone]
}

run "rejects_negative_count" {
  command = plan
  variables {
    agent_count = -1
  }
  expect_failures = [var.agent_count]
}

run "rejects_fractional_count" {
  command = plan
  variables {
    agent_count = 1.5
  }
  expect_failures = [var.agent_count]
}

run "rejects_a_malformed_ami" {
  command = plan
  variables {
    ami_id = "ubuntu-22.04"
  }
  expect_failures = [var.ami_id]
}

run "rejects_a_non_l4_type_through_the_module" {
  command = plan
  variables {
    agent_count   = 1
    ami_id        = "ami-0123456789abcdef0"
    instance_type = "g5.xlarge"
  }
  expect_failures = [var.instance_type]
}
