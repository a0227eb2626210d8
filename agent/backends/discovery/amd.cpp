#include "discovery/amd.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "common/subprocess.hpp"
#include "discovery/gpu_naming.hpp"

namespace kfleet::backends {
namespace fs = std::filesystem;
namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

// "123 Mhz" / "(1500Mhz)" / "45.0" -> the first number in the string.
double first_number(const std::string& s) {
  static const std::regex re(R"(([0-9]+(\.[0-9]+)?))");
  std::smatch m;
  return std::regex_search(s, m, re) ? std::stod(m[1]) : 0;
}

// A KFD property that may use all 64 bits (unique_id).
unsigned long long kfd_property_u64(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string line, k;
  unsigned long long v = 0;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    if (ls >> k >> v && k == key) return v;
  }
  return 0;
}

}  // namespace

long kfd_property(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string k;
  long v = 0;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    if (ls >> k >> v && k == key) return v;
  }
  return 0;
}

std::vector<GpuInfo> discover_amd_gpus(const std::string& sys_root) {
  std::vector<GpuInfo> out;
  std::error_code ec;
  fs::path nodes = fs::path(sys_root) / "class/kfd/kfd/topology/nodes";
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(nodes, ec)) dirs.push_back(e.path());
  // Node numbers order the GPUs the way the ROCm runtime enumerates them.
  std::sort(dirs.begin(), dirs.end(), [](const fs::path& a, const fs::path& b) {
    return std::atol(a.filename().c_str()) < std::atol(b.filename().c_str());
  });
  // Names and VRAM sizes of the AMD DRM cards, in card order.
  std::vector<std::pair<std::string, std::int64_t>> cards;
  std::vector<fs::path> card_dirs;
  for (const auto& e : fs::directory_iterator(fs::path(sys_root) / "class/drm", ec)) {
    auto n = e.path().filename().string();
    if (n.rfind("card", 0) == 0 && n.find('-') == std::string::npos) card_dirs.push_back(e.path());
  }
  std::sort(card_dirs.begin(), card_dirs.end());
  for (const auto& c : card_dirs) {
    if (trim(read_file(c / "device/vendor")) != "0x1002") continue;
    std::string name = trim(read_file(c / "device/product_name"));
    auto vram = static_cast<std::int64_t>(first_number(read_file(c / "device/mem_info_vram_total")));
    cards.emplace_back(name, vram);
  }
  for (const auto& d : dirs) {
    std::string props = read_file(d / "properties");
    auto arch = amd_gfx_arch(kfd_property(props, "gfx_target_version"));
    if (!arch) continue;  // a CPU node
    GpuInfo g;
    g.vendor = "amd";
    g.arch = *arch;
    g.gpu_class = *arch;  // AMD jobs name the gfx target (there is no stable marketing class)
    std::size_t i = out.size();
    g.name = trim(read_file(d / "name"));
    if (i < cards.size()) {
      if (!cards[i].first.empty()) g.name = cards[i].first;
      g.memory_bytes = cards[i].second;
    }
    if (g.name.empty()) g.name = "AMD " + *arch;
    g.extra["index"] = i;
    g.extra["kfd_node"] = d.filename().string();
    // /dev/dri/renderD<drm_render_minor>: the only render node its job's sandbox gets.
    if (auto m = kfd_property(props, "drm_render_minor"); m > 0) g.extra["render_minor"] = m;
    g.extra["kfd_gpu_id"] = static_cast<std::int64_t>(first_number(read_file(d / "gpu_id")));
    g.extra["simd_count"] = kfd_property(props, "simd_count");
    // The identities a stage reports, and HIP_VISIBLE_DEVICES / rocm-smi accept.
    if (auto uid = kfd_property_u64(props, "unique_id"); uid != 0) {
      char buf[40];
      std::snprintf(buf, sizeof buf, "GPU-%016llx", uid);
      g.extra["uuid"] = buf;
    }
    if (long loc = kfd_property(props, "location_id"); loc != 0) {
      char buf[40];
      std::snprintf(buf, sizeof buf, "%04lx:%02lx:%02lx.%lx", kfd_property(props, "domain"),
                    (loc >> 8) & 0xff, (loc >> 3) & 0x1f, loc & 0x7);
      g.extra["pci_bus_id"] = buf;
    }
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<unsigned> amd_compute_processes(const std::string& sys_root, unsigned long gpu_id,
                                            unsigned self) {
  std::vector<unsigned> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(sys_root) / "class/kfd/kfd/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto pid = static_cast<unsigned>(std::stoul(name));
    if (pid == self) continue;
    bool uses = false;
    std::error_code qec;
    for (const auto& q : fs::directory_iterator(e.path() / "queues", qec)) {
      const auto id = static_cast<unsigned long>(first_number(read_file(q.path() / "gpuid")));
      if (gpu_id == 0 || id == gpu_id) uses = true;
    }
    std::error_code vec;
    for (const auto& f : fs::directory_iterator(e.path(), vec)) {
      const std::string fn = f.path().filename().string();
      if (fn.rfind("vram_", 0) != 0) continue;
      if (gpu_id != 0 && fn != "vram_" + std::to_string(gpu_id)) continue;
      if (first_number(read_file(f.path())) > 0) uses = true;
    }
    if (uses) out.push_back(pid);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<GpuSnapshot> parse_rocm_smi_json(const std::string& text, unsigned index) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return make_error(Errc::invalid_argument, "rocm-smi printed no JSON");
  }
  auto card = j.find("card" + std::to_string(index));
  if (card == j.end() || !card->is_object()) {
    return make_error(Errc::not_found, "rocm-smi does not list card" + std::to_string(index));
  }
  GpuSnapshot s;
  for (const auto& [k, v] : card->items()) {
    if (!v.is_string()) continue;
    std::string val = v.get<std::string>();
    if (k.find("sclk clock") != std::string::npos) s.sm_clock_mhz = static_cast<int>(first_number(val));
    else if (k.find("mclk clock") != std::string::npos) s.mem_clock_mhz = static_cast<int>(first_number(val));
    else if (k.find("Temperature") != std::string::npos && k.find("edge") != std::string::npos)
      s.temperature_c = static_cast<int>(first_number(val));
    else if (k.find("Power (W)") != std::string::npos) s.power_w = first_number(val);
  }
  return s;
}

Result<GpuSnapshot> amd_snapshot(unsigned index) {
  std::string tool = find_program("rocm-smi");
  if (tool.empty()) {
    return make_error(Errc::unavailable,
                      "rocm-smi not found: install ROCm's rocm-smi for clocks and power");
  }
  SubprocessSpec s;
  s.argv = {tool, "--showclocks", "--showtemp", "--showpower", "--json"};
  s.timeout_s = 20;
  s.trust = ProcessTrust::agent_tool;  // the agent's own GPU probe, no job input
  auto r = run_subprocess(s);
  if (!r.ok()) return r.error();
  if (!r->ok()) return make_error(Errc::unavailable, "rocm-smi failed: " + r->describe());
  return parse_rocm_smi_json(r->out, index);
}

namespace {

void flatten(const std::string& prefix, const nlohmann::json& v, nlohmann::json& out) {
  if (v.is_object()) {
    for (const auto& [k, x] : v.items()) flatten(prefix + "." + k, x, out);
  } else if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i) flatten(prefix + "." + std::to_string(i), v[i], out);
  } else {
    out[prefix] = v;
  }
}

}  // namespace

Result<void> parse_amd_smi_settings(const std::string& text, unsigned index,
                                    const std::vector<std::string>& keys, nlohmann::json& out) {
  // amd-smi may print a line of warnings before its JSON.
  const auto start = text.find_first_of("[{");
  auto j = start == std::string::npos ? nlohmann::json()
                                      : nlohmann::json::parse(text.substr(start), nullptr, false);
  if (j.is_discarded() || !(j.is_array() || j.is_object()))
    return make_error(Errc::invalid_argument, "amd-smi printed no JSON");
  const nlohmann::json* gpu = nullptr;
  if (j.is_object()) {
    gpu = &j;
  } else {
    for (const auto& g : j)
      if (g.is_object() && g.value("gpu", -1) == static_cast<int>(index)) gpu = &g;
  }
  if (!gpu) return make_error(Errc::not_found, "amd-smi does not list GPU " + std::to_string(index));
  for (const auto& k : keys)
    if (auto it = gpu->find(k); it != gpu->end()) flatten(k, *it, out);
  return {};
}

Result<nlohmann::json> amd_settings(unsigned index) {
  const std::string tool = find_program("amd-smi");
  if (tool.empty())
    return make_error(Errc::unavailable,
                      "amd-smi not found: install ROCm's amd-smi to check the GPU's settings");
  nlohmann::json out = nlohmann::json::object();
  const std::string gpu = std::to_string(index);
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> reads = {
      {{"static", "-g", gpu, "--limit", "--clock", "--partition", "--json"},
       {"limit", "clock", "partition"}},
      {{"metric", "-g", gpu, "--perf-level", "--json"}, {"perf_level"}}};
  for (const auto& [args, keys] : reads) {
    SubprocessSpec s;
    s.argv = {tool};
    s.argv.insert(s.argv.end(), args.begin(), args.end());
    s.timeout_s = 20;
    s.trust = ProcessTrust::agent_tool;  // the agent's own GPU probe, no job input
    auto r = run_subprocess(s);
    if (!r.ok()) return r.error();
    if (!r->ok()) return make_error(Errc::unavailable, "amd-smi " + args[0] + " failed: " + r->describe());
    if (auto p = parse_amd_smi_settings(r->out, index, keys, out); !p) return p.error();
  }
  if (out.empty())
    return make_error(Errc::unavailable, "amd-smi reported none of the GPU's settings");
  return out;
}

}  // namespace kfleet::backends
