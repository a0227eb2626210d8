#include "kfleet/common/language.hpp"

#include <algorithm>

namespace kfleet {

bool is_python_language(const std::string& language) {
  return language == "triton" || language == "torch";
}

bool gpu_runs_language(const GpuInfo& gpu, const std::string& language) {
  if (gpu.simulated || gpu.vendor == "simulated") return true;
  if (language == "cuda") return gpu.vendor == "nvidia";
  if (language == "hip") return gpu.vendor == "amd";
  if (language != "triton" && language != "torch") return false;
  if (gpu.vendor != "nvidia") return false;  // the Python recorder uses the CUDA driver
  const auto& e = gpu.extra;
  if (!e.is_object() || !e.contains("python") || !e["python"].is_object()) return false;
  const auto& py = e["python"];
  if (!py.contains("languages") || !py["languages"].is_array()) return false;
  const auto& langs = py["languages"];
  return std::find(langs.begin(), langs.end(), language) != langs.end();
}

std::string python_runtime_summary(const nlohmann::json& extra) {
  if (!extra.is_object() || !extra.contains("python") || !extra["python"].is_object()) return "-";
  const auto& py = extra["python"];
  auto s = [&](const char* k) {
    return py.contains(k) && py[k].is_string() ? py[k].get<std::string>() : std::string();
  };
  if (!s("error").empty()) return "no python (" + s("error") + ")";
  std::string out;
  if (!s("torch").empty()) out = "torch " + s("torch");
  if (!s("triton").empty()) out += (out.empty() ? "" : ", ") + std::string("triton ") + s("triton");
  if (py.contains("missing") && py["missing"].is_array() && !py["missing"].empty() &&
      py["missing"][0].is_string()) {
    out += (out.empty() ? "" : "; ") + std::string("no ") + py["missing"][0].get<std::string>();
  }
  return out.empty() ? "-" : out;
}

}  // namespace kfleet
