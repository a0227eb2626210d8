#include "common/resources.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <regex>
#include <sstream>

namespace kfleet::backends {
namespace {

// "void big<64>(float*, float const*)" -> "big<64>": what a kernel engineer calls the kernel.
std::string short_name(const std::string& demangled) {
  std::string s = demangled;
  // Kernels in an unnamed namespace: "(anonymous namespace)::rows(args)" is "rows" to its author.
  const std::string anon = "(anonymous namespace)::";
  for (auto p = s.find(anon); p != std::string::npos; p = s.find(anon)) s.erase(p, anon.size());
  int depth = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '<') ++depth;
    if (c == '>') --depth;
    if (c == '(' && depth == 0) {
      s = s.substr(0, i);
      break;
    }
  }
  if (s.rfind("void ", 0) == 0) s = s.substr(5);
  return s;
}

struct Check {
  const char* field;
  const std::optional<std::int64_t>& limit;
  std::int64_t value;
  const char* what;  // "registers", "bytes of shared memory"
};

}  // namespace

std::string demangle(const std::string& symbol) {
  if (symbol.rfind("_Z", 0) != 0) return symbol;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(
      abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : symbol;
}

nlohmann::json to_json(const ResourceUsage& u) {
  nlohmann::json j = {{"name", u.name}, {"mangled", u.mangled}, {"arch", u.arch}};
  if (u.arch.rfind("gfx", 0) == 0) {
    j.update({{"vgprs", u.vgprs}, {"sgprs", u.sgprs}, {"agprs", u.agprs},
              {"lds_bytes", u.lds_bytes}, {"scratch_bytes", u.scratch_bytes},
              {"sgpr_spills", u.sgpr_spills}, {"vgpr_spills", u.vgpr_spills},
              {"dynamic_stack", u.dynamic_stack}});
    if (u.occupancy) j["occupancy_waves_per_simd"] = *u.occupancy;
  } else {
    j.update({{"registers", u.registers}, {"shared_bytes", u.shared_bytes},
              {"stack_bytes", u.stack_bytes}, {"spill_store_bytes", u.spill_store_bytes},
              {"spill_load_bytes", u.spill_load_bytes}, {"barriers", u.barriers},
              {"const_bytes", u.const_bytes}});
  }
  j["spill_bytes"] = u.spill_bytes();
  return j;
}

std::vector<ResourceViolation> evaluate_budget(const std::vector<ResourceUsage>& kernels,
                                               const ResourceBudget& b) {
  std::vector<ResourceViolation> out;
  for (const auto& k : kernels) {
    const Check checks[] = {
        {"max_registers", b.max_registers, k.registers, "registers"},
        {"max_shared_bytes", b.max_shared_bytes, k.shared_bytes, "bytes of shared memory"},
        {"max_spill_bytes", b.max_spill_bytes, k.spill_bytes(), "bytes of register spills"},
        {"max_stack_bytes", b.max_stack_bytes, k.stack_bytes, "bytes of stack frame"},
        {"max_vgprs", b.max_vgprs, k.vgprs, "VGPRs"},
        {"max_sgprs", b.max_sgprs, k.sgprs, "SGPRs"},
        {"max_lds_bytes", b.max_lds_bytes, k.lds_bytes, "bytes of LDS"},
        {"max_scratch_bytes", b.max_scratch_bytes, k.scratch_bytes, "bytes of scratch per lane"},
    };
    const std::string who = short_name(k.name) + (k.arch.empty() ? "" : " (" + k.arch + ")");
    for (const auto& c : checks) {
      if (!c.limit || c.value <= *c.limit) continue;
      std::ostringstream os;
      os << who << ": " << c.value << " " << c.what << " > budget " << *c.limit;
      out.push_back({k.name, c.field, c.value, *c.limit, os.str()});
    }
  }
  return out;
}

std::optional<std::int64_t> target_lds_bytes(const std::string& arch) {
  if (arch.rfind("gfx", 0) != 0) return std::nullopt;
  if (arch.rfind("gfx950", 0) == 0) return 160 * 1024;  // MI355X: 160 KiB of LDS per CU
  return 64 * 1024;  // gfx9 (MI100 to MI300), gfx10, gfx11 (gfx1151 included), gfx12
}

namespace {

std::string lds_reason(const std::string& who, const std::string& arch, std::int64_t value, std::int64_t limit) {
  return who + ": " + std::to_string(value) + " bytes of LDS > " + std::to_string(limit) +
         ", all the LDS a workgroup has on " + (arch.empty() ? std::string("its target") : arch) +
         " (a kernel given more than that reads memory it does not own; reduce its __shared__ arrays)";
}

}  // namespace

std::vector<ResourceViolation> evaluate_target(const std::vector<ResourceUsage>& kernels,
                                               const std::string& arch) {
  std::vector<ResourceViolation> out;
  for (const auto& k : kernels) {
    const std::string a = k.arch.empty() ? arch : k.arch;
    const auto limit = target_lds_bytes(a);
    if (!limit || k.lds_bytes <= *limit) continue;
    out.push_back({k.name, "lds_bytes", k.lds_bytes, *limit,
                   lds_reason(short_name(k.name) + " (" + a + ")", a, k.lds_bytes, *limit)});
  }
  return out;
}

std::optional<ResourceViolation> compiler_lds_refusal(const std::string& log, const std::string& arch) {
  static const std::regex re(R"(local memory \((\d+)\) exceeds limit \((\d+)\) in (?:function )?'([^']+)')");
  std::smatch m;
  if (!std::regex_search(log, m, re)) return std::nullopt;
  const std::int64_t value = std::stoll(m[1].str()), limit = std::stoll(m[2].str());
  const std::string name = m[3].str();
  return ResourceViolation{name, "lds_bytes", value, limit,
                           lds_reason(short_name(demangle(name)) + (arch.empty() ? "" : " (" + arch + ")"), arch, value, limit) +
                               "; the compiler refused it"};
}

std::vector<ResourceUsage> select_entry(const std::vector<ResourceUsage>& kernels,
                                        const std::string& entry) {
  if (entry.empty()) return kernels;
  std::vector<ResourceUsage> out;
  for (const auto& k : kernels) {
    std::string s = short_name(k.name);
    bool match = k.mangled == entry || s == entry || s.rfind(entry + "<", 0) == 0 ||
                 (s.size() > entry.size() + 2 &&
                  s.compare(s.size() - entry.size() - 2, std::string::npos, "::" + entry) == 0);
    if (match) out.push_back(k);
  }
  return out.empty() ? kernels : out;
}

}  // namespace kfleet::backends
