output "instance_ids" {
  description = "Instance id per slot."
  value       = { for k, i in aws_instance.agent : k => i.id }
}

output "private_ips" {
  description = "Private IPv4 address per slot."
  value       = { for k, i in aws_instance.agent : k => i.private_ip }
}

output "public_ips" {
  description = "Public IPv4 address per slot (empty when the subnet assigns none)."
  value       = { for k, i in aws_instance.agent : k => i.public_ip }
}

output "instances" {
  description = "Everything kfleet needs per slot: id, addresses and zone."
  value = { for k, i in aws_instance.agent : k => {
    id                = i.id
    private_ip        = i.private_ip
    public_ip         = i.public_ip
    availability_zone = i.availability_zone
    instance_type     = i.instance_type
  } }
}

output "gpus_per_instance" {
  description = "GPUs (and so agents, one per GPU) on each instance."
  value       = local.gpus_per_instance
}
