region = "us-west-2"
