variable "region" {
  description = "AWS region the agents run in; must match the provider's region."
  type        = string
  validation {
    condition     = can(regex("^[a-z]{2}(-gov)?-[a-z]+-[0-9]$", var.region))
    error_message = "region must be an AWS region name such as us-east-1."
  }
}

variable "agent_slots" {
  description = "One name per agent to run in this region; removing a name destroys exactly that agent."
  type        = set(string)
  validation {
    condition     = length(var.agent_slots) <= 16
    error_message = "At most 16 agents per region; raise the cap here deliberately, not by accident."
  }
  validation {
    condition     = alltrue([for s in var.agent_slots : can(regex("^[a-z0-9-]{1,40}$", s))])
    error_message = "agent_slots names must be 1-40 characters of [a-z0-9-]."
  }
}

variable "availability_zone" {
  description = "Pin the agents to one zone (e.g. us-east-1a); null lets EC2 choose."
  type        = string
  default     = null
}

variable "instance_type" {
  description = "A g6-family (NVIDIA L4) instance type, e.g. g6.xlarge or gr6.4xlarge."
  type        = string
  default     = "g6.xlarge"
  validation {
    condition     = can(regex("^(g6\\.(|2|4|8|12|16|24|48)xlarge|gr6\\.(4|8)xlarge)$", var.instance_type))
    error_message = "instance_type must be in the g6 family (NVIDIA L4): g6.xlarge ... g6.48xlarge or gr6.*; g6e is L40S, not L4."
  }
}

variable "gpus_per_instance" {
  description = "GPUs per instance, one kfleet-agent (one job slot) each; null takes the instance type's count (g6.12xlarge: 4, g6.48xlarge: 8, else 1)."
  type        = number
  default     = null
  validation {
    condition     = var.gpus_per_instance == null ? true : (var.gpus_per_instance >= 1 && var.gpus_per_instance <= 8 && floor(var.gpus_per_instance) == var.gpus_per_instance)
    error_message = "gpus_per_instance must be a whole number from 1 to 8 (a g6 instance has at most 8 L4s)."
  }
}

variable "ami_id" {
  description = "AMI with the NVIDIA driver (e.g. an AWS Deep Learning Base GPU AMI) for this region."
  type        = string
  validation {
    condition     = can(regex("^ami-([0-9a-f]{8}|[0-9a-f]{17})$", var.ami_id))
    error_message = "ami_id must look like ami-0123456789abcdef0."
  }
}

variable "subnet_id" {
  description = "Subnet to launch into; null uses the region's default VPC subnet."
  type        = string
  default     = null
}

variable "security_group_ids" {
  description = "Security groups; the agent only dials out, so no ingress is needed."
  type        = list(string)
  default     = []
}

variable "key_name" {
  description = "Optional EC2 key pair for SSH debugging."
  type        = string
  default     = null
}

variable "root_volume_gb" {
  description = "Root volume size: CUDA toolchains and kernel builds need room."
  type        = number
  default     = 100
  validation {
    condition     = var.root_volume_gb >= 30 && var.root_volume_gb <= 2000
    error_message = "root_volume_gb must be between 30 and 2000."
  }
}

variable "server_url" {
  description = "The orchestrator (kfleetd) URL the agents enrol with."
  type        = string
  validation {
    condition     = can(regex("^https?://[A-Za-z0-9.:/_~%+-]+$", var.server_url))
    error_message = "server_url must be a plain http(s) URL (letters, digits, . : / _ ~ % + -), e.g. https://kfleet.example.com."
  }
}

variable "enrol_token" {
  description = "The fleet's enrolment token, for the slots enrol_tokens gives none; written to a 0600 file (/etc/kfleet/enrol.token), never to the command line. Empty: every slot must have its own."
  type        = string
  sensitive   = true
  default     = ""
  validation {
    condition     = var.enrol_token == "" || (length(var.enrol_token) >= 16 && can(regex("^[A-Za-z0-9._~+/=-]+$", var.enrol_token)))
    error_message = "enrol_token must be at least 16 characters of [A-Za-z0-9._~+/=-]."
  }
}

variable "enrol_tokens" {
  description = "Per-slot enrolment tokens (slot name => token), each minted for that host with kfleet enrol-token mint --name SLOT --uses <GPUs per instance> --expires-in 1h: the host's agents use it instead of the fleet's long-lived token, which then never reaches that host."
  type        = map(string)
  sensitive   = true
  default     = {}
  validation {
    condition     = alltrue([for t in values(var.enrol_tokens) : length(t) >= 16 && can(regex("^[A-Za-z0-9._~+/=-]+$", t))])
    error_message = "each of enrol_tokens must be at least 16 characters of [A-Za-z0-9._~+/=-]."
  }
}

variable "server_ca_pem" {
  description = "PEM of the CA that signed kfleetd's TLS certificate (empty: the system's CAs). Written to /etc/kfleet/ca.pem (0600) and given to the agent as KFLEET_CA_FILE."
  type        = string
  default     = ""
  validation {
    # The whole value, not just its start: it lands in a shell heredoc of the user data.
    condition     = var.server_ca_pem == "" || can(regex("^(-----BEGIN CERTIFICATE-----\r?\n([A-Za-z0-9+/=]{1,76}\r?\n)+-----END CERTIFICATE-----\r?\n?)+$", var.server_ca_pem))
    error_message = "server_ca_pem must be empty or PEM certificates only (-----BEGIN CERTIFICATE----- ... -----END CERTIFICATE-----)."
  }
}

variable "agent_packages" {
  description = "The agent's Debian packages (kfleet-agent and kfleet-kernels, as cpack builds them): each downloaded from url and checked against sha256 before apt installs them. [] means the AMI already has them installed."
  type = list(object({
    url    = string
    sha256 = string
  }))
  default = []
  validation {
    # Both land in the user data's shell commands.
    condition     = alltrue([for p in var.agent_packages : can(regex("^https?://[A-Za-z0-9.:/_~%+=?&-]+$", p.url)) && can(regex("^[0-9a-f]{64}$", p.sha256))])
    error_message = "agent_packages: each url must be a plain http(s) URL (no spaces, quotes or shell characters) and each sha256 64 lowercase hex digits (sha256sum FILE.deb)."
  }
}

variable "python_packages" {
  description = "pip packages of the venv /opt/kfleet-python that each agent records Triton and torch kernels with (KFLEET_PYTHON; kernels/harness/PYTHON.md). [] installs no venv: the agents then run CUDA jobs only."
  type        = list(string)
  default     = ["torch", "triton", "ninja"]
  validation {
    condition     = alltrue([for p in var.python_packages : can(regex("^[A-Za-z0-9][A-Za-z0-9._=<>!~+-]*$", p))])
    error_message = "python_packages must be plain pip requirement specifiers such as torch or triton==3.5.0 (no spaces, quotes or shell characters)."
  }
}

variable "owner" {
  description = "Who answers for these instances (tag Owner)."
  type        = string
  validation {
    condition     = length(trimspace(var.owner)) > 0
    error_message = "owner must name a person or team: instances nobody owns are never cleaned up."
  }
}

variable "cost_center" {
  description = "Cost center the instance hours are billed to (tag CostCenter)."
  type        = string
  validation {
    condition     = length(trimspace(var.cost_center)) > 0
    error_message = "cost_center must be set so the GPU hours can be attributed."
  }
}

variable "name_prefix" {
  description = "Prefix of instance Name tags and agent names."
  type        = string
  default     = "kfleet-l4"
  validation {
    condition     = can(regex("^[a-z0-9-]{1,32}$", var.name_prefix))
    error_message = "name_prefix must be 1-32 characters of [a-z0-9-]."
  }
}

variable "extra_tags" {
  description = "Additional tags; they cannot override the ownership tags."
  type        = map(string)
  default     = {}
}
