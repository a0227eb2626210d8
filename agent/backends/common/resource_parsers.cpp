// Parsers for the compilers' resource reports. They are line-oriented and tolerant: a line they
// do not recognise is skipped, because every CUDA / LLVM release words a few lines differently.
#include <regex>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "common/resources.hpp"

namespace kfleet::backends {
namespace {

std::int64_t to_i64(const std::string& s) { return std::strtoll(s.c_str(), nullptr, 10); }

// Finds "<N> <label>" in a ptxas line: "Used 71 registers", "16384 bytes smem".
std::optional<std::int64_t> number_before(const std::string& line, const std::string& label) {
  std::regex re("(\\d+) " + label);
  std::smatch m;
  if (std::regex_search(line, m, re)) return to_i64(m[1]);
  return std::nullopt;
}

void set_if(std::int64_t& field, std::optional<std::int64_t> v) {
  if (v) field = *v;
}

std::string trim_line(std::string s) {
  auto b = s.find_first_not_of(" \t\r");
  auto e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

}  // namespace

std::vector<ResourceUsage> parse_ptxas_verbose(const std::string& text) {
  static const std::regex entry_re(R"(Compiling entry function '([^']+)' for '([^']+)')");
  static const std::regex props_re(R"(Function properties for (\S+))");
  std::vector<ResourceUsage> out;
  // ptxas also prints "Function properties" for non-inlined device functions; their stack and
  // spills are not the entry's, so only the entry's own block is taken.
  bool in_entry_props = false;
  std::istringstream in(text);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, entry_re)) {
      ResourceUsage u;
      u.mangled = m[1];
      u.name = demangle(u.mangled);
      u.arch = m[2];
      out.push_back(std::move(u));
      in_entry_props = false;
      continue;
    }
    if (out.empty()) continue;
    ResourceUsage& cur = out.back();
    if (std::regex_search(line, m, props_re)) {
      in_entry_props = m[1] == cur.mangled;
      continue;
    }
    if (line.find("bytes stack frame") != std::string::npos) {
      if (!in_entry_props) continue;
      set_if(cur.stack_bytes, number_before(line, "bytes stack frame"));
      set_if(cur.spill_store_bytes, number_before(line, "bytes spill stores"));
      set_if(cur.spill_load_bytes, number_before(line, "bytes spill loads"));
      continue;
    }
    if (line.find("Used ") != std::string::npos && line.find("registers") != std::string::npos) {
      set_if(cur.registers, number_before(line, "registers"));
      set_if(cur.barriers, number_before(line, "barriers"));
      set_if(cur.shared_bytes, number_before(line, "bytes smem"));
      set_if(cur.const_bytes, number_before(line, "bytes cmem\\[0\\]"));
      // Newer ptxas reports the stack including callees here; keep the larger figure.
      if (auto cum = number_before(line, "bytes cumulative stack size")) {
        cur.stack_bytes = std::max(cur.stack_bytes, *cum);
      }
      in_entry_props = false;
    }
  }
  return out;
}

std::vector<ResourceUsage> parse_amdgpu_remarks(const std::string& text, const std::string& arch) {
  std::vector<ResourceUsage> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto r = line.find("remark:");
    if (r == std::string::npos) continue;
    std::string body = line.substr(r + 7);
    auto tag = body.rfind(" [-R");
    if (tag != std::string::npos) body = body.substr(0, tag);
    auto colon = body.find(':');
    if (colon == std::string::npos) continue;
    std::string key = trim_line(body.substr(0, colon));
    std::string val = trim_line(body.substr(colon + 1));
    if (key == "Function Name") {
      ResourceUsage u;
      u.mangled = val;
      u.name = demangle(val);
      u.arch = arch;
      out.push_back(std::move(u));
      continue;
    }
    if (out.empty()) continue;
    ResourceUsage& u = out.back();
    if (key == "SGPRs") u.sgprs = to_i64(val);
    else if (key == "VGPRs") u.vgprs = to_i64(val);
    else if (key == "AGPRs") u.agprs = to_i64(val);
    else if (key == "ScratchSize [bytes/lane]") u.scratch_bytes = to_i64(val);
    else if (key == "Dynamic Stack") u.dynamic_stack = val == "True" || val == "true";
    else if (key == "Occupancy [waves/SIMD]") u.occupancy = to_i64(val);
    else if (key == "SGPRs Spill") u.sgpr_spills = to_i64(val);
    else if (key == "VGPRs Spill") u.vgpr_spills = to_i64(val);
    else if (key == "LDS Size [bytes/block]") u.lds_bytes = to_i64(val);
  }
  return out;
}

std::vector<ResourceUsage> parse_amdgpu_notes(const std::string& text, const std::string& arch) {
  // The metadata is a YAML document between "---" and "..." inside readelf's note listing.
  std::vector<ResourceUsage> out;
  std::istringstream in(text);
  std::string line, doc;
  bool inside = false;
  while (std::getline(in, line)) {
    std::string t = trim_line(line);
    if (!inside && t == "---") {
      inside = true;
      doc.clear();
      continue;
    }
    if (inside && t == "...") {
      inside = false;
      try {
        YAML::Node root = YAML::Load(doc);
        std::string target_arch = arch;
        if (root["amdhsa.target"]) {
          auto target = root["amdhsa.target"].as<std::string>();
          auto dash = target.rfind("--");
          if (dash != std::string::npos) target_arch = target.substr(dash + 2);
          auto colon = target_arch.find(':');  // "gfx90a:xnack-"
          if (colon != std::string::npos) target_arch = target_arch.substr(0, colon);
        }
        for (const auto& k : root["amdhsa.kernels"]) {
          auto i64 = [&](const char* key) {
            return k[key] ? k[key].as<std::int64_t>() : std::int64_t{0};
          };
          ResourceUsage u;
          u.mangled = k[".name"] ? k[".name"].as<std::string>() : "";
          u.name = demangle(u.mangled);
          u.arch = target_arch;
          u.sgprs = i64(".sgpr_count");
          u.vgprs = i64(".vgpr_count");
          u.agprs = i64(".agpr_count");
          u.lds_bytes = i64(".group_segment_fixed_size");
          u.scratch_bytes = i64(".private_segment_fixed_size");
          u.sgpr_spills = i64(".sgpr_spill_count");
          u.vgpr_spills = i64(".vgpr_spill_count");
          u.dynamic_stack = k[".uses_dynamic_stack"] && k[".uses_dynamic_stack"].as<bool>();
          out.push_back(std::move(u));
        }
      } catch (const YAML::Exception&) {
        // A document we cannot read contributes nothing; the caller reports "no kernels".
      }
      continue;
    }
    if (inside) doc += line + "\n";
  }
  return out;
}

}  // namespace kfleet::backends
