// What kfleetd's terraform provisioner reads back from terraform and, through it, from EC2: the
// `-json` log of plan/apply/destroy (diagnostics carrying the AWS error), `terraform output
// -json` (the instances), and the classification of a failure's text into an outcome. The
// input is one answer, or two separated by a "====" line: the output document first, then
// the log.
#include <cstddef>
#include <cstdint>
#include <string>

#include "cloud_answers.hpp"
#include "fuzz_check.hpp"
#include "kfleet/provision_terraform/aws_error.hpp"
#include "kfleet/provision_terraform/terraform_output.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kfleet;
  using namespace kfleet::provision;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto parts = fuzz::split_parts(text);
  const std::string& output = parts.front();
  const std::string& log = parts.back();

  auto instances = parse_instances_output(output);
  if (instances) {
    for (const auto& [slot, inst] : *instances)
      fuzz::check(inst.slot == slot, "an instance filed under another slot");
  } else {
    fuzz::check(!instances.error().message.empty(), "a refused output without a reason");
  }
  const std::string diagnostics = error_text_from_json_log(log);
  const AwsFailure f = classify_aws_error(diagnostics);
  (void)outcome_name(f.outcome);
  (void)classify_aws_error(log);
  return 0;
}
