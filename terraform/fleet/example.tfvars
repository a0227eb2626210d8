# Copy to terraform.tfvars and edit; the enrolment token goes in TF_VAR_enrol_token.
server_url  = "https://kfleet.example.com"
owner       = "kernels-team"
cost_center = "cc-0000"
agent_count = 1
