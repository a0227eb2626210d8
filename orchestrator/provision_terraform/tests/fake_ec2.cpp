#include "fake_ec2.hpp"
#include "fake_ec2_xml.hpp"

#include <atomic>
#include <cstdio>
#include <regex>

#include <boost/beast/http.hpp>

namespace kfleet::provision::testing {
namespace http = boost::beast::http;
using Params = std::multimap<std::string, std::string>;

namespace {

std::string param(const Params& p, const std::string& key) {
  auto it = p.find(key);
  return it == p.end() ? "" : it->second;
}

std::vector<std::string> indexed(const Params& p, const std::string& prefix) {
  std::vector<std::string> out;
  for (int i = 1;; ++i) {
    auto it = p.find(prefix + "." + std::to_string(i));
    if (it == p.end()) break;
    out.push_back(it->second);
  }
  return out;
}

// The region the SigV4 signature was made for: "Credential=AKID/20250101/us-east-1/ec2/aws4_request".
std::string signed_region(const std::string& authorization) {
  static const std::regex re(R"(Credential=[^/]+/[0-9]+/([a-z0-9-]+)/ec2/)");
  std::smatch m;
  return std::regex_search(authorization, m, re) ? m[1].str() : "unknown";
}

struct Reply {
  http::status status = http::status::ok;
  std::string body;
};

Reply aws_error(http::status status, const std::string& code, const std::string& message) {
  return {status, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error><Code>" + code +
                      "</Code><Message>" + xml_escape(message) +
                      "</Message></Error></Errors><RequestID>8f3a2c1d-5b6e-4f70-9a1b-2c3d4e5f6a7b</RequestID></Response>"};
}

}  // namespace

struct FakeEc2::State {
  mutable std::mutex mutex;
  std::map<std::string, RegionBehaviour> behaviour;
  std::map<std::string, FakeInstance> instances;  // by id
  std::map<std::string, std::map<std::string, std::string>> resource_tags;  // volumes etc.
  std::map<std::string, int> run_calls;
  std::vector<std::string> terminated;
  std::vector<std::string> unknown;
  std::map<std::string, int> drops;  // by action: answers still to cut off
  int next_id = 1;

  Reply handle(const std::string& region, const Params& p);
  Reply run_instances(const std::string& region, const Params& p);
  Reply describe_instances(const std::string& region, const Params& p);
};

Reply FakeEc2::State::run_instances(const std::string& region, const Params& p) {
  std::string type = param(p, "InstanceType");
  std::string zone = param(p, "Placement.AvailabilityZone");
  if (zone.empty()) zone = region + "a";
  run_calls[region]++;
  switch (behaviour.count(region) ? behaviour[region] : RegionBehaviour::capacity) {
    case RegionBehaviour::stockout:
      return aws_error(http::status::internal_server_error, "InsufficientInstanceCapacity",
                       "We currently do not have sufficient " + type + " capacity in the Availability Zone you "
                       "requested (" + zone + "). Our system will be working on provisioning additional capacity. "
                       "You can currently get " + type + " capacity by not specifying an Availability Zone in your "
                       "request or choosing " + region + "b, " + region + "c.");
    case RegionBehaviour::unsupported:
      return aws_error(http::status::bad_request, "Unsupported",
                       "Your requested instance type (" + type + ") is not supported in your requested "
                       "Availability Zone (" + zone + "). Please retry your request by not specifying an "
                       "Availability Zone or choosing " + region + "b, " + region + "c.");
    case RegionBehaviour::quota:
      return aws_error(http::status::bad_request, "VcpuLimitExceeded",
                       "You have requested more vCPU capacity than your current vCPU limit of 0 allows for the "
                       "instance bucket that the specified instance type belongs to. Please visit "
                       "http://aws.amazon.com/contact-us/ec2-request to request an adjustment to this limit.");
    default: break;
  }
  FakeInstance inst;
  char id[32];
  std::snprintf(id, sizeof id, "i-0%016x", next_id);
  inst.id = id;
  std::snprintf(id, sizeof id, "vol-0%016x", next_id);
  inst.volume_id = id;
  inst.private_ip = "10.0.0." + std::to_string(next_id + 10);
  ++next_id;
  inst.region = region;
  inst.instance_type = type;
  inst.image_id = param(p, "ImageId");
  inst.zone = zone;
  inst.state = "pending";
  inst.user_data = base64_decode(param(p, "UserData"));
  for (int s = 1;; ++s) {
    std::string spec = "TagSpecification." + std::to_string(s);
    if (!p.count(spec + ".ResourceType")) break;
    auto& tags = param(p, spec + ".ResourceType") == "instance" ? inst.tags : resource_tags[inst.volume_id];
    for (int t = 1; p.count(spec + ".Tag." + std::to_string(t) + ".Key"); ++t) {
      tags[param(p, spec + ".Tag." + std::to_string(t) + ".Key")] = param(p, spec + ".Tag." + std::to_string(t) + ".Value");
    }
  }
  std::string xml = instance_xml(inst);
  inst.state = "running";  // the provider's waiter sees it running on its first look
  instances[inst.id] = inst;
  return {http::status::ok, envelope("RunInstances", "<reservationId>r-0a1b2c3d4e5f60718</reservationId><ownerId>"
                                                      "123456789012</ownerId><groupSet/><instancesSet>" + xml +
                                                      "</instancesSet>")};
}

Reply FakeEc2::State::describe_instances(const std::string& region, const Params& p) {
  auto ids = indexed(p, "InstanceId");
  std::string items;
  for (const auto& id : ids) {
    auto it = instances.find(id);
    if (it == instances.end() || it->second.region != region) {
      return aws_error(http::status::bad_request, "InvalidInstanceID.NotFound",
                       "The instance ID '" + id + "' does not exist");
    }
  }
  for (const auto& [id, inst] : instances) {
    if (inst.region != region) continue;
    if (!ids.empty() && std::find(ids.begin(), ids.end(), id) == ids.end()) continue;
    items += instance_xml(inst);
  }
  std::string reservations = items.empty() ? "" : "<item><reservationId>r-0a1b2c3d4e5f60718</reservationId><ownerId>"
                                                  "123456789012</ownerId><groupSet/><instancesSet>" + items +
                                                  "</instancesSet></item>";
  return {http::status::ok, envelope("DescribeInstances", "<reservationSet>" + reservations + "</reservationSet>")};
}

Reply FakeEc2::State::handle(const std::string& region, const Params& p) {
  std::lock_guard lock(mutex);
  const std::string action = param(p, "Action");
  auto b = behaviour.count(region) ? behaviour[region] : RegionBehaviour::capacity;
  if (b == RegionBehaviour::auth) {
    return aws_error(http::status::unauthorized, "AuthFailure", "AWS was not able to validate the provided access credentials");
  }
  if (b == RegionBehaviour::throttled) {
    return aws_error(http::status::service_unavailable, "RequestLimitExceeded", "Request limit exceeded.");
  }
  if (action == "RunInstances") return run_instances(region, p);
  if (action == "DescribeInstances") return describe_instances(region, p);
  if (action == "TerminateInstances") {
    std::string items;
    for (const auto& id : indexed(p, "InstanceId")) {
      terminated.push_back(id);
      auto it = instances.find(id);
      if (it == instances.end()) return aws_error(http::status::bad_request, "InvalidInstanceID.NotFound", "The instance ID '" + id + "' does not exist");
      items += "<item><instanceId>" + id + "</instanceId><currentState><code>32</code><name>shutting-down</name>"
               "</currentState><previousState><code>16</code><name>running</name></previousState></item>";
      it->second.state = "terminated";
    }
    return {http::status::ok, envelope("TerminateInstances", "<instancesSet>" + items + "</instancesSet>")};
  }
  if (action == "DescribeImages") {
    std::string items;
    for (const auto& id : indexed(p, "ImageId")) {
      items += image_xml(id);
    }
    return {http::status::ok, envelope("DescribeImages", "<imagesSet>" + items + "</imagesSet>")};
  }
  if (action == "DescribeInstanceTypes") {
    std::string items;
    for (const auto& t : indexed(p, "InstanceType")) {
      items += instance_type_xml(t);
    }
    return {http::status::ok, envelope("DescribeInstanceTypes", "<instanceTypeSet>" + items + "</instanceTypeSet>")};
  }
  if (action == "DescribeInstanceAttribute") {
    const std::string id = param(p, "InstanceId"), attr = param(p, "Attribute");
    auto it = instances.find(id);
    if (it == instances.end()) return aws_error(http::status::bad_request, "InvalidInstanceID.NotFound", "The instance ID '" + id + "' does not exist");
    std::string value = attr == "userData" ? base64_encode(it->second.user_data)
                        : attr == "instanceInitiatedShutdownBehavior" ? "terminate"
                                                                      : "false";
    return {http::status::ok, envelope("DescribeInstanceAttribute", "<instanceId>" + id + "</instanceId><" + attr +
                                                                        "><value>" + value + "</value></" + attr + ">")};
  }
  if (action == "DescribeVolumes") {
    std::string items;
    for (const auto& [id, inst] : instances) {
      if (inst.region != region || inst.state == "terminated") continue;
      auto wanted = indexed(p, "VolumeId");
      if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), inst.volume_id) == wanted.end()) continue;
      items += volume_xml(inst);
    }
    return {http::status::ok, envelope("DescribeVolumes", "<volumeSet>" + items + "</volumeSet>")};
  }
  if (action == "CreateTags") {
    for (const auto& id : indexed(p, "ResourceId")) {
      auto& tags = instances.count(id) ? instances[id].tags : resource_tags[id];
      for (int t = 1; p.count("Tag." + std::to_string(t) + ".Key"); ++t) {
        tags[param(p, "Tag." + std::to_string(t) + ".Key")] = param(p, "Tag." + std::to_string(t) + ".Value");
      }
    }
    return {http::status::ok, envelope(action, "<return>true</return>")};
  }
  if (action == "DescribeTags") {
    // Filter.N.Name = resource-id | key | resource-type, with Filter.N.Value.M; the provider reads
    // volume tags and the launch-template tag of an instance this way.
    std::map<std::string, std::vector<std::string>> filters;
    for (int f = 1; p.count("Filter." + std::to_string(f) + ".Name"); ++f) {
      filters[param(p, "Filter." + std::to_string(f) + ".Name")] = indexed(p, "Filter." + std::to_string(f) + ".Value");
    }
    auto passes = [&](const std::string& name, const std::string& value) {
      auto it = filters.find(name);
      return it == filters.end() || std::find(it->second.begin(), it->second.end(), value) != it->second.end();
    };
    std::map<std::string, const std::map<std::string, std::string>*> all;
    for (const auto& [id, inst] : instances) all[id] = &inst.tags;
    for (const auto& [id, tags] : resource_tags) all[id] = &tags;
    std::string items;
    for (const auto& [id, tags] : all) {
      std::string type = id.rfind("vol-", 0) == 0 ? "volume" : "instance";
      if (!passes("resource-id", id) || !passes("resource-type", type)) continue;
      for (const auto& [k, v] : *tags) {
        if (!passes("key", k)) continue;
        items += "<item><resourceId>" + id + "</resourceId><resourceType>" + type + "</resourceType><key>" +
                 xml_escape(k) + "</key><value>" + xml_escape(v) + "</value></item>";
      }
    }
    return {http::status::ok, envelope("DescribeTags", "<tagSet>" + items + "</tagSet>")};
  }
  if (action == "DescribeVpcs") {
    return {http::status::ok,
            envelope(action, "<vpcSet><item><vpcId>vpc-0a1b2c3d4e5f60718</vpcId><ownerId>123456789012</ownerId>"
                             "<state>available</state><cidrBlock>10.0.0.0/16</cidrBlock><dhcpOptionsId>"
                             "dopt-0a1b2c3d4e5f60718</dhcpOptionsId><instanceTenancy>default</instanceTenancy>"
                             "<isDefault>true</isDefault></item></vpcSet>")};
  }
  if (action == "DescribeSubnets") {
    return {http::status::ok,
            envelope(action, "<subnetSet><item><subnetId>subnet-0a1b2c3d4e5f60718</subnetId><state>available</state>"
                             "<vpcId>vpc-0a1b2c3d4e5f60718</vpcId><ownerId>123456789012</ownerId><cidrBlock>"
                             "10.0.0.0/20</cidrBlock><availableIpAddressCount>4000</availableIpAddressCount>"
                             "<availabilityZone>" + region + "a</availabilityZone><defaultForAz>true</defaultForAz>"
                             "<mapPublicIpOnLaunch>false</mapPublicIpOnLaunch></item></subnetSet>")};
  }
  if (action == "DeleteTags" || action == "ModifyInstanceAttribute" ||
      action == "ModifyInstanceMetadataOptions") {
    return {http::status::ok, envelope(action, "<return>true</return>")};
  }
  unknown.push_back(action);
  return aws_error(http::status::bad_request, "InvalidAction", "The action " + action + " is not valid for this web service.");
}

FakeEc2::FakeEc2()
    : state_(std::make_shared<State>()),
      server_(std::make_unique<LoopbackHttpServer>([s = state_.get()](const LoopbackHttpServer::Request& req) {
        const auto params = parse_form(req.body());
        Reply reply = s->handle(signed_region(std::string(req[http::field::authorization])), params);
        LoopbackHttpServer::Response res{reply.status, req.version()};
        {
          std::lock_guard lock(s->mutex);
          if (int& left = s->drops[param(params, "Action")]; left > 0) {
            --left;
            res.set(LoopbackHttpServer::kCutHeader, "1");
          }
        }
        res.set(http::field::content_type, "text/xml;charset=UTF-8");
        res.set(http::field::server, "AmazonEC2");
        res.body() = std::move(reply.body);
        return res;
      })) {}

FakeEc2::~FakeEc2() = default;

std::string FakeEc2::endpoint() const { return server_->base_url(); }

void FakeEc2::set_behaviour(const std::string& region, RegionBehaviour b) {
  std::lock_guard lock(state_->mutex);
  state_->behaviour[region] = b;
}

void FakeEc2::drop_answers(const std::string& action, int times) {
  std::lock_guard lock(state_->mutex);
  state_->drops[action] = times;
}

std::vector<FakeInstance> FakeEc2::instances(const std::string& region) const {
  std::lock_guard lock(state_->mutex);
  std::vector<FakeInstance> out;
  for (const auto& [id, inst] : state_->instances) {
    if (inst.region == region) out.push_back(inst);
  }
  return out;
}

int FakeEc2::run_instances_calls(const std::string& region) const {
  std::lock_guard lock(state_->mutex);
  auto it = state_->run_calls.find(region);
  return it == state_->run_calls.end() ? 0 : it->second;
}

std::vector<std::string> FakeEc2::terminate_requests() const {
  std::lock_guard lock(state_->mutex);
  return state_->terminated;
}

std::vector<std::string> FakeEc2::unknown_actions() const {
  std::lock_guard lock(state_->mutex);
  return state_->unknown;
}

}  // namespace kfleet::provision::testing
