#pragma once
// XML bodies of the fake EC2 (see fake_ec2.hpp): the fields the AWS provider reads.
#include <string>

#include "fake_ec2.hpp"

namespace kfleet::provision::testing {

std::string base64_decode(const std::string& in);
std::string base64_encode(const std::string& in);
std::string xml_escape(const std::string& s);
// "<ActionResponse xmlns=...><requestId>..</requestId>inner</ActionResponse>"
std::string envelope(const std::string& action, const std::string& inner);
std::string state_code(const std::string& state);
std::string instance_xml(const FakeInstance& i);
std::string image_xml(const std::string& image_id);
std::string instance_type_xml(const std::string& instance_type);
std::string volume_xml(const FakeInstance& inst);

}  // namespace kfleet::provision::testing
