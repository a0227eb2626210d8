variable "region" {
  description = "The one AWS region this state manages."
  type        = string
  validation {
    condition = contains([
      "us-east-1", "us-east-2", "us-west-2", "ca-central-1", "sa-east-1",
      "eu-west-1", "eu-west-2", "eu-central-1", "eu-north-1", "eu-south-2",
      "ap-south-1", "ap-northeast-1", "ap-northeast-2", "ap-southeast-1", "ap-southeast-2",
    ], var.region)
    error_message = "region must be one where AWS offers g6 (L4) instances, e.g. us-east-1, us-west-2, eu-west-1."
  }
}

variable "availability_zone" {
  description = "Pin this apply to one zone of the region (e.g. us-east-1a); null lets EC2 choose."
  type        = string
  default     = null
  validation {
    condition     = var.availability_zone == null || can(regex("^${var.region}[a-z]$", var.availability_zone))
    error_message = "availability_zone must be a zone of the chosen region, e.g. us-east-1a."
  }
}

variable "agent_count" {
  description = "How many agents to run here, named agent-00, agent-01, ... (ignored when agent_slots is set)."
  type        = number
  default     = 0
  validation {
    condition     = var.agent_count >= 0 && var.agent_count <= 16 && floor(var.agent_count) == var.agent_count
    error_message = "agent_count must be a whole number from 0 to 16."
  }
}

variable "agent_slots" {
  description = "Explicit agent names (kfleetd uses these so it can release one agent by name)."
  type        = list(string)
  default     = null
  validation {
    condition     = var.agent_slots == null || length(coalesce(var.agent_slots, [])) <= 16
    error_message = "At most 16 agents per region."
  }
}

variable "gpus_per_instance" {
  description = "GPUs per instance (one agent each); null takes the instance type's count (g6.48xlarge: 8)."
  type        = number
  default     = null
}

variable "instance_type" {
  description = "g6-family (L4) instance type."
  type        = string
  default     = "g6.xlarge"
  validation {
    condition     = can(regex("^(g6\\.(|2|4|8|12|16|24|48)xlarge|gr6\\.(4|8)xlarge)$", var.instance_type))
    error_message = "instance_type must be in the g6 family (NVIDIA L4), e.g. g6.xlarge; g5 is A10G and g6e is L40S."
  }
}

variable "ami_id" {
  description = "NVIDIA-driver AMI; null looks up the newest AWS Deep Learning Base GPU AMI (needs the EC2 API)."
  type        = string
  default     = null
  validation {
    condition     = var.ami_id == null || can(regex("^ami-([0-9a-f]{8}|[0-9a-f]{17})$", coalesce(var.ami_id, "x")))
    error_message = "ami_id must be null or look like ami-0123456789abcdef0."
  }
}

variable "subnet_id" {
  type    = string
  default = null
}

variable "security_group_ids" {
  type    = list(string)
  default = []
}

variable "server_url" {
  description = "kfleetd URL the agents enrol with."
  type        = string
}

variable "enrol_token" {
  description = "The fleet's enrolment token, for the slots enrol_tokens gives none; pass it as TF_VAR_enrol_token, not -var, so it stays off command lines."
  type        = string
  sensitive   = true
  default     = ""
}

variable "enrol_tokens" {
  description = "Per-slot enrolment tokens (agent-00 => token), each minted with kfleet enrol-token mint --name agent-00 --uses <GPUs per instance>; pass them as TF_VAR_enrol_tokens. A slot with its own token never receives the fleet's."
  type        = map(string)
  sensitive   = true
  default     = {}
}

variable "server_ca_pem" {
  description = "PEM of the CA that signed kfleetd's TLS certificate; empty: the system's CAs."
  type        = string
  default     = ""
}

variable "agent_packages" {
  description = "The agent's Debian packages, [{url, sha256}] (modules/l4-agents); [] when the AMI has them."
  type = list(object({
    url    = string
    sha256 = string
  }))
  default = []
}

variable "python_packages" {
  description = "pip packages of the agents' Python venv for Triton and torch kernels (modules/l4-agents); [] for CUDA-only agents."
  type        = list(string)
  default     = ["torch", "triton", "ninja"]
}

variable "owner" {
  type = string
}

variable "cost_center" {
  type = string
}

variable "extra_tags" {
  type    = map(string)
  default = {}
}

# Provider behaviour: kfleetd wants a stockout back in seconds, not after minutes of retries.
variable "aws_max_retries" {
  description = "AWS SDK retries per call; kfleetd retries transient failures itself with backoff."
  type        = number
  default     = 2
  validation {
    condition     = var.aws_max_retries >= 0 && var.aws_max_retries <= 25
    error_message = "aws_max_retries must be between 0 and 25."
  }
}

variable "offline" {
  description = "Skip credential, account and metadata checks (CI plans and tests against a fake EC2)."
  type        = bool
  default     = false
}

variable "ec2_endpoint" {
  description = "Override the EC2 endpoint (tests point it at a fake on loopback)."
  type        = string
  default     = null
}

variable "sts_endpoint" {
  type    = string
  default = null
}
