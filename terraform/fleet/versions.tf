terraform {
  required_version = ">= 1.7"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.0, < 7.0"
    }
  }
  # State is local to the working directory: kfleetd gives every region its own directory, so
  # one region's broken state or stuck lock never blocks another (see terraform/README.md).
}
