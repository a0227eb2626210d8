output "region" {
  value = var.region
}

output "instance_ids" {
  description = "Instance id per agent slot."
  value       = module.agents.instance_ids
}

output "private_ips" {
  value = module.agents.private_ips
}

output "public_ips" {
  value = module.agents.public_ips
}

output "instances" {
  description = "Per slot: id, addresses, zone and type (kfleetd reads this with terraform output -json)."
  value       = module.agents.instances
}

output "gpus_per_instance" {
  description = "GPUs, and so agents (one per GPU), on each instance."
  value       = module.agents.gpus_per_instance
}
