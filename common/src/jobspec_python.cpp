#include "jobspec_python.hpp"

#include <algorithm>
#include <string_view>

#include "kfleet/common/language.hpp"

namespace kfleet::spec {
namespace {

std::string extension(const std::string& path) {
  const auto slash = path.find_last_of('/');
  const auto dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string e = path.substr(dot);
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return std::tolower(c); });
  return e;
}

bool one_of(const std::string& e, std::initializer_list<std::string_view> set) {
  for (auto s : set)
    if (e == s) return true;
  return false;
}

YAML::Node at(const YAML::Node& n, const char* key) {
  if (!n.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  return n[key];
}

}  // namespace

void check_kernel_language(Issues& is, const YAML::Node& root, const JobSpec& spec) {
  const KernelSpec& k = spec.kernel;
  const YAML::Node kernel = at(root, "kernel");
  const YAML::Mark km = YAML::Mark();
  const YAML::Node lang = at(kernel, "language");
  const YAML::Node srcs = at(kernel, "sources");
  auto source_mark = [&](std::size_t i) {
    return srcs.IsSequence() && i < srcs.size() ? mark_of(srcs[i], mark_of(srcs, km)) : mark_of(kernel, km);
  };
  const bool python = is_python_language(k.language);

  if (!python) {
    // A C++ language with a Python source: the file would be handed to nvcc or hipcc.
    for (std::size_t i = 0; i < k.sources.size(); ++i) {
      if (extension(k.sources[i]) != ".py" || k.family == "custom") continue;
      is.add(source_mark(i), item("kernel.sources", i),
             "'" + k.sources[i] + "' is Python: a " + k.language + " kernel is compiled by " +
                 (k.language == "hip" ? "hipcc" : "nvcc") +
                 "; say language: triton (a Triton kernel) or torch (torch ops and "
                 "torch.utils.cpp_extension) for a Python launch module");
    }
    return;
  }

  if (k.family == "custom") {
    is.add(mark_of(lang, km), "kernel.language",
           "language " + k.language + " is for the harness families and the problems of the "
           "library, whose Python launch function kfleet records and replays; a custom job runs "
           "its own steps: say cuda or hip");
    return;
  }
  // The first source is the launch module; Triton kernels are Python only; a torch kernel may
  // bring the C++/CUDA files its extension compiles (torch.utils.cpp_extension.load).
  for (std::size_t i = 0; i < k.sources.size(); ++i) {
    const std::string e = extension(k.sources[i]);
    if (i == 0 && e != ".py") {
      is.add(source_mark(i), item("kernel.sources", i),
             "'" + k.sources[i] + "': a " + k.language + " kernel's first source is its Python "
             "launch module (.py), which defines " +
             (k.family == "scaled_mm"   ? "kfleet_scaled_mm_launch"
              : k.family == "attention" ? "kfleet_attention_launch"
                                        : "kfleet_problem_launch") +
             "(args, stream)" + (one_of(e, {".cu", ".cuh", ".hip"}) ? "; a .cu kernel is language: cuda" : ""));
    } else if (i > 0 && k.language == "triton" && e != ".py") {
      is.add(source_mark(i), item("kernel.sources", i),
             "'" + k.sources[i] + "' is not Python: a triton kernel's sources are .py files; "
             "CUDA C++ is language: cuda, or language: torch with torch.utils.cpp_extension");
    } else if (i > 0 && k.language == "torch" &&
               !one_of(e, {".py", ".cu", ".cuh", ".cpp", ".cc", ".h", ".hpp"})) {
      is.add(source_mark(i), item("kernel.sources", i),
             "'" + k.sources[i] + "': a torch kernel's sources are .py files and the .cu, .cuh, "
             ".cpp, .cc, .h, .hpp files its extension compiles");
    }
  }
  auto refuse_key = [&](const char* key, const std::string& why) {
    const YAML::Node n = at(kernel, key);
    is.add(mark_of(n, mark_of(kernel, km)), std::string("kernel.") + key, why);
  };
  if (!k.defines.empty())
    refuse_key("defines", "defines go to nvcc or hipcc; a " + k.language + " kernel compiles itself "
               "(" + (k.language == "triton" ? "Triton's JIT" : "torch.utils.cpp_extension") +
               ", in the recorder): put constants in the Python source");
  if (!k.flags.empty())
    refuse_key("flags", "flags go to nvcc or hipcc; a " + k.language + " kernel compiles itself: "
               "pass compiler options in the Python source (extra_cuda_cflags, num_warps, ...)");
  const auto& p = k.params;
  if (p.is_object() && p.contains("timing") && p["timing"] == "in_process") {
    const YAML::Node params = at(kernel, "params");
    is.add(mark_of(at(params, "timing"), mark_of(params, km)), "kernel.params.timing",
           "a " + k.language + " kernel is always recorded and replayed: its Python never runs in "
           "the measuring process");
  }
  if (spec.target.gpu.rfind("gfx", 0) == 0) {
    const YAML::Node t = at(root, "target");
    is.add(mark_of(at(t, "gpu"), mark_of(t, km)), "target.gpu",
           "a " + k.language + " kernel is recorded through the CUDA driver: AMD GPUs (" +
               spec.target.gpu + ") cannot run it yet");
  }
  if (spec.profile && spec.profile->tool == "rocprofv3") {
    const YAML::Node pr = at(root, "profile");
    is.add(mark_of(at(pr, "tool"), mark_of(pr, km)), "profile.tool",
           "rocprofv3 cannot profile " + k.language + " kernels (they run on CUDA); use ncu");
  }
  if (spec.gates.resources && !spec.gates.resources->empty()) {
    const YAML::Node g = at(root, "gates");
    is.add(mark_of(at(g, "resources"), mark_of(g, km)), "gates.resources",
           "the resources gate reads nvcc's -Xptxas -v; a " + k.language + " kernel's registers "
           "and shared memory are not read yet: drop gates.resources");
  }
}

}  // namespace kfleet::spec
