// The HIP device code as the recorder and kfleet-measure read it on an AMD agent
// (kernels/harness/cpu/amdgpu_code_object.cpp): the .hip_fatbin section of the job's own build,
// the clang offload bundles in it, the gfx1151 code object of each, and each kernel's argument
// layout from the code object's MessagePack metadata note. The job's build wrote every byte.
// Each input is read at every layer (as a host object, as a section of bundles, as one bundle,
// as a code object), so that the seeds of each layer (tests/fuzz/corpus/amdgpu_code_object: a
// clang-19 host object, its section, its code object) reach the parser behind it directly.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "amdgpu_code_object.hpp"
#include "fuzz_check.hpp"

namespace {

using kfleet::fuzz::check;
namespace h = kfleet::harness;

// What a reader hands out is a piece of what it was given, never bytes from elsewhere.
void piece_of(const std::string& part, const std::string& whole, const char* what) {
  check(part.size() <= whole.size() && whole.find(part) != std::string::npos, what);
}

void kernel_args(const std::string& code_object) {
  std::map<std::string, std::vector<h::ParamSlot>> kernels;
  if (!h::amdgpu_kernel_args(code_object, &kernels).empty()) return;
  for (const auto& [name, slots] : kernels) {
    piece_of(name, code_object, "a kernel name that is not in the code object");
    for (const auto& s : slots)  // the bound the reader promises: inside any kernarg segment
      check(s.offset <= (1u << 20) && s.size <= (1u << 20), "an argument outside any kernarg segment");
  }
}

void bundles(const std::string& section) {
  std::vector<std::string> objects;
  if (!h::fatbin_code_objects(section, "gfx1151", &objects).empty()) return;
  check(!objects.empty(), "a section of bundles accepted without a code object");
  for (const auto& co : objects) {
    piece_of(co, section, "a code object that is not in the section");
    kernel_args(co);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);

  std::string section;
  if (h::elf_section(in, ".hip_fatbin", &section).empty()) {
    piece_of(section, in, "a section that is not in the file");
    bundles(section);
  }
  bundles(in);

  std::string co;
  if (h::bundle_code_object(in, "gfx1151:xnack-", &co).empty()) {
    check(!co.empty(), "an empty code object handed out");
    piece_of(co, in, "a code object that is not in the bundle");
    kernel_args(co);
  }
  kernel_args(in);
  return 0;
}
