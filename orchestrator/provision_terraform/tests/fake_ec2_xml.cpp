// EC2 query-protocol XML bodies for the fake, shaped like the real service's.
#include "fake_ec2_xml.hpp"

namespace kfleet::provision::testing {
namespace {
constexpr const char* kXmlns = "http://ec2.amazonaws.com/doc/2016-11-15/";
}  // namespace

std::string base64_decode(const std::string& in) {
  static const std::string chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  int val = 0, bits = -8;
  for (char c : in) {
    auto pos = chars.find(c);
    if (pos == std::string::npos) break;
    val = (val << 6) + static_cast<int>(pos);
    bits += 6;
    if (bits >= 0) {
      out += static_cast<char>((val >> bits) & 0xFF);
      bits -= 8;
    }
  }
  return out;
}

std::string base64_encode(const std::string& in) {
  static const char* chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  int val = 0, bits = -6;
  for (unsigned char c : in) {
    val = (val << 8) + c;
    bits += 8;
    while (bits >= 0) {
      out += chars[(val >> bits) & 0x3F];
      bits -= 6;
    }
  }
  if (bits > -6) out += chars[((val << 8) >> (bits + 8)) & 0x3F];
  while (out.size() % 4) out += '=';
  return out;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string envelope(const std::string& action, const std::string& inner) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<" + action + "Response xmlns=\"" + kXmlns +
         "\"><requestId>0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0</requestId>" + inner + "</" + action + "Response>";
}

std::string state_code(const std::string& state) {
  if (state == "pending") return "0";
  if (state == "running") return "16";
  if (state == "shutting-down") return "32";
  return "48";
}

std::string instance_xml(const FakeInstance& i) {
  std::string tags;
  for (const auto& [k, v] : i.tags) tags += "<item><key>" + xml_escape(k) + "</key><value>" + xml_escape(v) + "</value></item>";
  return "<item><instanceId>" + i.id + "</instanceId><imageId>" + i.image_id +
         "</imageId><instanceState><code>" + state_code(i.state) + "</code><name>" + i.state +
         "</name></instanceState><privateDnsName>ip-" + i.private_ip + ".ec2.internal</privateDnsName><dnsName/>"
         "<reason/><amiLaunchIndex>0</amiLaunchIndex><productCodes/><instanceType>" + i.instance_type +
         "</instanceType><launchTime>2025-06-01T12:00:00.000Z</launchTime><placement><availabilityZone>" + i.zone +
         "</availabilityZone><groupName/><tenancy>default</tenancy></placement><monitoring><state>disabled</state>"
         "</monitoring><subnetId>subnet-0a1b2c3d4e5f60718</subnetId><vpcId>vpc-0a1b2c3d4e5f60718</vpcId>"
         "<privateIpAddress>" + i.private_ip + "</privateIpAddress><sourceDestCheck>true</sourceDestCheck>"
         "<groupSet><item><groupId>sg-0a1b2c3d4e5f60718</groupId><groupName>default</groupName></item></groupSet>"
         "<architecture>x86_64</architecture><rootDeviceType>ebs</rootDeviceType><rootDeviceName>/dev/sda1"
         "</rootDeviceName><blockDeviceMapping><item><deviceName>/dev/sda1</deviceName><ebs><volumeId>" +
         i.volume_id + "</volumeId><status>attached</status><attachTime>2025-06-01T12:00:01.000Z</attachTime>"
         "<deleteOnTermination>true</deleteOnTermination></ebs></item></blockDeviceMapping><virtualizationType>hvm"
         "</virtualizationType><clientToken/><tagSet>" + tags + "</tagSet><hypervisor>xen</hypervisor>"
         "<networkInterfaceSet/><ebsOptimized>false</ebsOptimized><enaSupport>true</enaSupport><cpuOptions>"
         "<coreCount>2</coreCount><threadsPerCore>2</threadsPerCore></cpuOptions><capacityReservationSpecification>"
         "<capacityReservationPreference>open</capacityReservationPreference></capacityReservationSpecification>"
         "<hibernationOptions><configured>false</configured></hibernationOptions><metadataOptions><state>applied"
         "</state><httpTokens>required</httpTokens><httpPutResponseHopLimit>2</httpPutResponseHopLimit><httpEndpoint>"
         "enabled</httpEndpoint><httpProtocolIpv6>disabled</httpProtocolIpv6><instanceMetadataTags>disabled"
         "</instanceMetadataTags></metadataOptions><enclaveOptions><enabled>false</enabled></enclaveOptions>"
         "<maintenanceOptions><autoRecovery>default</autoRecovery></maintenanceOptions><privateDnsNameOptions>"
         "<hostnameType>ip-name</hostnameType><enableResourceNameDnsARecord>false</enableResourceNameDnsARecord>"
         "<enableResourceNameDnsAAAARecord>false</enableResourceNameDnsAAAARecord></privateDnsNameOptions></item>";
}

std::string image_xml(const std::string& id) {
  return "<item><imageId>" + id + "</imageId><imageLocation>amazon/kfleet-test</imageLocation><imageState>"
               "available</imageState><imageOwnerId>123456789012</imageOwnerId><isPublic>true</isPublic>"
               "<architecture>x86_64</architecture><imageType>machine</imageType><name>kfleet-test-gpu</name>"
               "<rootDeviceType>ebs</rootDeviceType><rootDeviceName>/dev/sda1</rootDeviceName><blockDeviceMapping>"
               "<item><deviceName>/dev/sda1</deviceName><ebs><snapshotId>snap-0a1b2c3d4e5f60718</snapshotId>"
               "<volumeSize>60</volumeSize><deleteOnTermination>true</deleteOnTermination><volumeType>gp3"
               "</volumeType><encrypted>false</encrypted></ebs></item></blockDeviceMapping><virtualizationType>"
               "hvm</virtualizationType><hypervisor>xen</hypervisor><enaSupport>true</enaSupport></item>";
}

std::string instance_type_xml(const std::string& t) {
  return "<item><instanceType>" + t + "</instanceType><currentGeneration>true</currentGeneration>"
               "<freeTierEligible>false</freeTierEligible><supportedUsageClasses><item>on-demand</item></supportedUsageClasses>"
               "<supportedRootDeviceTypes><item>ebs</item></supportedRootDeviceTypes><bareMetal>false</bareMetal>"
               "<hypervisor>nitro</hypervisor><processorInfo><supportedArchitectures><item>x86_64</item>"
               "</supportedArchitectures></processorInfo><vCpuInfo><defaultVCpus>4</defaultVCpus><defaultCores>2"
               "</defaultCores><defaultThreadsPerCore>2</defaultThreadsPerCore></vCpuInfo><memoryInfo><sizeInMiB>"
               "16384</sizeInMiB></memoryInfo><instanceStorageSupported>true</instanceStorageSupported>"
               "<ebsInfo><ebsOptimizedSupport>default</ebsOptimizedSupport><encryptionSupport>supported"
               "</encryptionSupport><nvmeSupport>required</nvmeSupport></ebsInfo><gpuInfo><gpus><item><name>L4"
               "</name><manufacturer>NVIDIA</manufacturer><count>1</count><memoryInfo><sizeInMiB>22888</sizeInMiB>"
               "</memoryInfo></item></gpus><totalGpuMemoryInMiB>22888</totalGpuMemoryInMiB></gpuInfo>"
               "<burstablePerformanceSupported>false</burstablePerformanceSupported><hibernationSupported>false"
               "</hibernationSupported><autoRecoverySupported>false</autoRecoverySupported></item>";
}

std::string volume_xml(const FakeInstance& inst) {
  const std::string& id = inst.id;
  return "<item><volumeId>" + inst.volume_id + "</volumeId><size>100</size><snapshotId>snap-0a1b2c3d4e5f60718"
               "</snapshotId><availabilityZone>" + inst.zone + "</availabilityZone><status>in-use</status>"
               "<createTime>2025-06-01T12:00:01.000Z</createTime><attachmentSet><item><volumeId>" + inst.volume_id +
               "</volumeId><instanceId>" + id + "</instanceId><device>/dev/sda1</device><status>attached</status>"
               "<attachTime>2025-06-01T12:00:01.000Z</attachTime><deleteOnTermination>true</deleteOnTermination>"
               "</item></attachmentSet><volumeType>gp3</volumeType><iops>3000</iops><throughput>125</throughput>"
               "<encrypted>true</encrypted><multiAttachEnabled>false</multiAttachEnabled><tagSet/></item>";
}

}  // namespace kfleet::provision::testing
