#pragma once
// What the compiler says each kernel uses (registers, shared memory, spills, ...), parsed from
// `ptxas -v` (CUDA) or AMDGPU resource remarks / code-object metadata (HIP), and the resources
// gate that holds it against a job's budget.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kfleet/common/jobspec.hpp"

namespace kfleet::backends {

struct ResourceUsage {
  std::string name;          // demangled: "void big<64>(float*, float const*)" or "smem"
  std::string mangled;       // as the compiler printed it
  std::string arch;          // "sm_89", "sm_90a", "gfx1151"
  // NVIDIA (ptxas)
  std::int64_t registers = 0, shared_bytes = 0, stack_bytes = 0;
  std::int64_t spill_store_bytes = 0, spill_load_bytes = 0, barriers = 0, const_bytes = 0;
  // AMD
  std::int64_t vgprs = 0, sgprs = 0, agprs = 0, lds_bytes = 0, scratch_bytes = 0;
  std::int64_t sgpr_spills = 0, vgpr_spills = 0;
  bool dynamic_stack = false;
  std::optional<std::int64_t> occupancy;  // waves per SIMD, when the compiler reports it

  // NVIDIA: spill stores + loads. AMD: each spilled VGPR costs 4 bytes of scratch per lane
  // (SGPR spills land in VGPR lanes, not memory, so they do not count).
  std::int64_t spill_bytes() const {
    return spill_store_bytes + spill_load_bytes + 4 * vgpr_spills;
  }
};

nlohmann::json to_json(const ResourceUsage& u);

struct ResourceViolation {
  std::string kernel;
  std::string field;  // the budget key: max_registers, max_vgprs, ...
  std::int64_t value = 0, limit = 0;
  std::string reason;  // "fa_s512_v3: 144 registers > budget 128"
};

// Every budget entry each kernel breaks, in kernel order. An empty budget never rejects.
std::vector<ResourceViolation> evaluate_budget(const std::vector<ResourceUsage>& kernels,
                                               const ResourceBudget& budget);

// What the target itself holds, whatever the job's budget: the LDS a workgroup has on an AMD
// target (64 KiB on gfx1151 and the other gfx9 to gfx12 parts, 160 KiB on gfx950), or nullopt
// for a target without such a limit here.
std::optional<std::int64_t> target_lds_bytes(const std::string& arch);
// Each kernel whose LDS is more than its target has: refused by the resources gate, naming the
// amount (ROCm has run such a kernel reading memory it does not own).
std::vector<ResourceViolation> evaluate_target(const std::vector<ResourceUsage>& kernels,
                                               const std::string& arch);
// clang's own refusal of a kernel's LDS in a compile log ("local memory (73728) exceeds limit
// (65536) in 'big(float*)'"), as the resources gate's violation; nullopt when there is none.
std::optional<ResourceViolation> compiler_lds_refusal(const std::string& log, const std::string& arch);

// Parses the stderr of `nvcc -Xptxas -v` (or ptxas -v). Kernels compiled for several archs
// appear once per arch. Names are demangled.
std::vector<ResourceUsage> parse_ptxas_verbose(const std::string& text);

// Parses clang's `-Rpass-analysis=kernel-resource-usage` remarks (one block per kernel).
std::vector<ResourceUsage> parse_amdgpu_remarks(const std::string& text,
                                                const std::string& arch = "");

// Parses `llvm-readelf --notes` of an AMDGPU code object (the amdhsa.kernels metadata).
std::vector<ResourceUsage> parse_amdgpu_notes(const std::string& text,
                                              const std::string& arch = "");

// "_Z3bigILi64EEvPfPKf" -> "void big<64>(float*, float const*)"; unmangled names pass through.
std::string demangle(const std::string& symbol);

// Only the kernels whose demangled name starts with (or mangled name equals) `entry`, so a job
// is gated on its own entry point, not on helpers; all kernels when entry is empty or unmatched.
std::vector<ResourceUsage> select_entry(const std::vector<ResourceUsage>& kernels,
                                        const std::string& entry);

}  // namespace kfleet::backends
