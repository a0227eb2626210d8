#include "discovery/gpu_naming.hpp"

#include <array>
#include <cctype>

namespace kfleet::backends {

std::string nvidia_gpu_class(const std::string& name) {
  // Longest names first so that "H100" does not shadow "H100 NVL"-style variants we care about.
  static const std::array<const char*, 16> known = {
      "GH200", "GB200", "H200", "H100", "H800", "B200", "B100", "A100", "A800",
      "L40S",  "L40",   "L4",   "A10G", "A10",  "T4",   "V100"};
  std::string upper;
  for (char c : name) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const char* k : known) {
    std::string key = k;
    for (std::size_t pos = upper.find(key); pos != std::string::npos;
         pos = upper.find(key, pos + 1)) {
      bool left = pos == 0 || !std::isalnum(static_cast<unsigned char>(upper[pos - 1]));
      std::size_t end = pos + key.size();
      bool right = end == upper.size() || !std::isalnum(static_cast<unsigned char>(upper[end]));
      if (left && right) return key;
    }
  }
  std::string s = name;
  for (const char* prefix : {"NVIDIA ", "Tesla ", "GeForce "}) {
    std::string p = prefix;
    if (s.rfind(p, 0) == 0) s = s.substr(p.size());
  }
  if (auto g = s.find(" Generation"); g != std::string::npos) s = s.substr(0, g);
  return s.empty() ? name : s;
}

std::string nvidia_arch(int cc_major, int cc_minor) {
  std::string arch = "sm_" + std::to_string(cc_major) + std::to_string(cc_minor);
  if (cc_major == 9 || cc_major == 10) arch += "a";
  return arch;
}

std::optional<std::string> amd_gfx_arch(long v) {
  if (v <= 0) return std::nullopt;
  long major = v / 10000, minor = (v / 100) % 100, stepping = v % 100;
  const char* hex = "0123456789abcdef";
  if (minor > 15 || stepping > 15) return std::nullopt;
  return "gfx" + std::to_string(major) + hex[minor] + hex[stepping];
}

}  // namespace kfleet::backends
