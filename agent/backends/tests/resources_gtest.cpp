// The resources gate against real compiler output: these tests run nvcc (ptxas needs no GPU)
// and clang-19 for gfx1151 on the kernels in tests/kernels/, and fail when a compiler is missing
// so that a CI machine without them cannot pass silently.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "common/resources.hpp"
#include "common/subprocess.hpp"
#include "common/toolchain.hpp"

namespace kb = kfleet::backends;
namespace fs = std::filesystem;

namespace {

const std::string kKernels = KFLEET_BACKEND_TEST_KERNELS;

fs::path scratch_dir(const std::string& tag) {
  auto d = fs::temp_directory_path() /
           ("kfleet_res_" + tag + "_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

// Compiles pressure.cu for `arch` and returns ptxas -v's report.
std::string ptxas_report(const std::string& arch) {
  auto nvcc = kb::find_nvcc();
  EXPECT_TRUE(nvcc.ok()) << (nvcc.ok() ? "" : nvcc.error().message);
  if (!nvcc.ok()) return "";
  auto out = scratch_dir(arch) / "pressure.o";
  kb::SubprocessSpec s;
  s.trust = kb::ProcessTrust::agent_tool;  // the spawning machinery itself
  s.argv = {*nvcc, "-c", "-maxrregcount=32", "-Xptxas", "-v"};
  for (auto& f : kb::nvcc_arch_flags(arch)) s.argv.push_back(f);
  s.argv.insert(s.argv.end(), {kKernels + "/pressure.cu", "-o", out.string()});
  s.timeout_s = 300;
  auto r = kb::run_subprocess(s);
  EXPECT_TRUE(r.ok());
  if (!r.ok()) return "";
  EXPECT_TRUE(r->ok()) << r->describe() << "\n" << r->err;
  fs::remove_all(out.parent_path());
  return r->err + r->out;
}

const kb::ResourceUsage* find(const std::vector<kb::ResourceUsage>& v, const std::string& short_name) {
  for (const auto& u : v) {
    if (u.name == short_name || u.name.find(" " + short_name + "(") != std::string::npos ||
        u.name.rfind(short_name + "(", 0) == 0)
      return &u;
  }
  return nullptr;
}

}  // namespace

TEST(PtxasParser, ParsesAHandWrittenReport) {
  const std::string text =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function '_Z10fa_s512_v3PK6__halfPS_' for 'sm_89'\n"
      "ptxas info    : Function properties for _Z10fa_s512_v3PK6__halfPS_\n"
      "    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Function properties for _Z6helperv\n"
      "    64 bytes stack frame, 64 bytes spill stores, 64 bytes spill loads\n"
      "ptxas info    : Used 144 registers, used 1 barriers, 49152 bytes smem, 400 bytes cmem[0]\n";
  auto v = kb::parse_ptxas_verbose(text);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].name, "fa_s512_v3(__half const*, __half*)");
  EXPECT_EQ(v[0].arch, "sm_89");
  EXPECT_EQ(v[0].registers, 144);
  EXPECT_EQ(v[0].barriers, 1);
  EXPECT_EQ(v[0].shared_bytes, 49152);
  EXPECT_EQ(v[0].const_bytes, 400);
  EXPECT_EQ(v[0].stack_bytes, 8);  // not the helper's 64
  EXPECT_EQ(v[0].spill_bytes(), 16);

  kfleet::ResourceBudget b;
  b.max_registers = 128;
  b.max_shared_bytes = 49152;
  b.max_spill_bytes = 0;
  auto viol = kb::evaluate_budget(v, b);
  ASSERT_EQ(viol.size(), 2u);
  EXPECT_EQ(viol[0].reason, "fa_s512_v3 (sm_89): 144 registers > budget 128");
  EXPECT_EQ(viol[0].field, "max_registers");
  EXPECT_EQ(viol[1].field, "max_spill_bytes");
  EXPECT_TRUE(kb::evaluate_budget(v, kfleet::ResourceBudget{}).empty());
}

TEST(PtxasParser, RealNvccReportForSm89GatesSpillsAndSharedMemory) {
  auto v = kb::parse_ptxas_verbose(ptxas_report("sm_89"));
  ASSERT_EQ(v.size(), 2u);
  auto* spill = find(v, "pressure<64>");
  auto* tile = find(v, "tile_transpose");
  ASSERT_NE(spill, nullptr);
  ASSERT_NE(tile, nullptr);
  EXPECT_EQ(spill->arch, "sm_89");
  EXPECT_LE(spill->registers, 32);
  EXPECT_GT(spill->spill_store_bytes, 0);
  EXPECT_GT(spill->spill_load_bytes, 0);
  EXPECT_EQ(tile->shared_bytes, 64 * 65 * 4);
  EXPECT_EQ(tile->barriers, 1);
  EXPECT_EQ(tile->spill_bytes(), 0);

  kfleet::ResourceBudget b;
  b.max_spill_bytes = 0;
  b.max_shared_bytes = 16 * 1024;
  auto viol = kb::evaluate_budget(v, b);
  ASSERT_EQ(viol.size(), 2u);
  bool saw_spill = false, saw_smem = false;
  for (const auto& x : viol) {
    saw_spill |= x.field == "max_spill_bytes" && x.reason.rfind("pressure<64>", 0) == 0;
    saw_smem |= x.field == "max_shared_bytes" && x.value == 16640 &&
                x.reason == "tile_transpose (sm_89): 16640 bytes of shared memory > budget 16384";
  }
  EXPECT_TRUE(saw_spill);
  EXPECT_TRUE(saw_smem);
  b.max_shared_bytes = 48 * 1024;
  b.max_spill_bytes = 4096;
  EXPECT_TRUE(kb::evaluate_budget(v, b).empty());
}

TEST(PtxasParser, RealNvccReportForSm90a) {
  auto v = kb::parse_ptxas_verbose(ptxas_report("sm_90a"));
  ASSERT_EQ(v.size(), 2u);
  for (const auto& u : v) EXPECT_EQ(u.arch, "sm_90a");
  auto* spill = find(v, "pressure<64>");
  ASSERT_NE(spill, nullptr);
  kfleet::ResourceBudget b;
  b.max_registers = 16;
  auto viol = kb::evaluate_budget(kb::select_entry(v, "pressure"), b);
  ASSERT_EQ(viol.size(), 1u);  // select_entry keeps the gate on the job's own kernel
  EXPECT_EQ(viol[0].value, spill->registers);
}

TEST(AmdgpuParser, RealClangRemarksAndCodeObjectNotesAgree) {
  auto clang = kb::find_hip_clang();
  ASSERT_TRUE(clang.ok()) << clang.error().message;
  auto readelf = kb::find_llvm_readelf();
  ASSERT_TRUE(readelf.ok()) << readelf.error().message;
  auto dir = scratch_dir("gfx1151");
  auto co = (dir / "pressure.co").string();
  kb::SubprocessSpec s;
  s.trust = kb::ProcessTrust::agent_tool;  // the spawning machinery itself
  s.argv = kb::hip_clang_device_argv(*clang, "gfx1151", kKernels + "/pressure.hip", co);
  s.timeout_s = 300;
  auto r = kb::run_subprocess(s);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r->ok()) << r->describe() << "\n" << r->err;

  auto remarks = kb::parse_amdgpu_remarks(r->err, "gfx1151");
  ASSERT_EQ(remarks.size(), 2u);
  auto* spill = find(remarks, "pressure<64>");
  auto* tile = find(remarks, "tile_transpose");
  ASSERT_NE(spill, nullptr);
  ASSERT_NE(tile, nullptr);
  EXPECT_LE(spill->vgprs, 32);
  EXPECT_GT(spill->vgpr_spills, 0);
  EXPECT_GT(spill->scratch_bytes, 0);
  ASSERT_TRUE(spill->occupancy.has_value());
  EXPECT_GT(*spill->occupancy, 0);
  EXPECT_EQ(tile->lds_bytes, 64 * 65 * 4);
  EXPECT_EQ(tile->scratch_bytes, 0);

  kb::SubprocessSpec n;
  n.trust = kb::ProcessTrust::agent_tool;  // the spawning machinery itself
  n.argv = {*readelf, "--notes", co};
  auto nr = kb::run_subprocess(n);
  ASSERT_TRUE(nr.ok());
  ASSERT_TRUE(nr->ok()) << nr->err;
  auto notes = kb::parse_amdgpu_notes(nr->out);
  ASSERT_EQ(notes.size(), 2u);
  for (const auto& from_notes : notes) {
    EXPECT_EQ(from_notes.arch, "gfx1151");
    auto* same = find(remarks, from_notes.name.substr(0, from_notes.name.find('(')));
    ASSERT_NE(same, nullptr) << from_notes.name;
    EXPECT_EQ(same->vgprs, from_notes.vgprs);
    EXPECT_EQ(same->sgprs, from_notes.sgprs);
    EXPECT_EQ(same->lds_bytes, from_notes.lds_bytes);
    EXPECT_EQ(same->scratch_bytes, from_notes.scratch_bytes);
    EXPECT_EQ(same->vgpr_spills, from_notes.vgpr_spills);
  }

  kfleet::ResourceBudget b;
  b.max_scratch_bytes = 0;
  b.max_lds_bytes = 65536;
  b.max_vgprs = 256;
  auto viol = kb::evaluate_budget(remarks, b);
  ASSERT_EQ(viol.size(), 1u);
  EXPECT_EQ(viol[0].field, "max_scratch_bytes");
  EXPECT_NE(viol[0].reason.find("pressure<64> (gfx1151): "), std::string::npos) << viol[0].reason;
  b.max_lds_bytes = 1024;
  EXPECT_EQ(kb::evaluate_budget(remarks, b).size(), 2u);
  fs::remove_all(dir);
}

TEST(ResourceGate, KernelsInAnUnnamedNamespaceKeepTheirName) {
  const std::string text =
      "ptxas info    : Compiling entry function "
      "'_ZN49_GLOBAL__N__e33efc99_16_attention_ref_cu_7a23aae214attention_rowsE21kfleet_attention_args'"
      " for 'sm_89'\n"
      "ptxas info    : Used 40 registers, used 0 barriers, 1024 bytes cumulative stack size\n";
  auto v = kb::parse_ptxas_verbose(text);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].stack_bytes, 1024);
  EXPECT_EQ(kb::select_entry(v, "attention_rows").size(), 1u);
  kfleet::ResourceBudget b;
  b.max_registers = 32;
  auto viol = kb::evaluate_budget(v, b);
  ASSERT_EQ(viol.size(), 1u);
  EXPECT_EQ(viol[0].reason, "attention_rows (sm_89): 40 registers > budget 32");
}

TEST(Demangle, KernelNames) {
  EXPECT_EQ(kb::demangle("_Z8pressureILi64EEvPfPKf"), "void pressure<64>(float*, float const*)");
  EXPECT_EQ(kb::demangle("tile_transpose"), "tile_transpose");
  EXPECT_EQ(kb::demangle("_Znot-valid"), "_Znot-valid");
}

// The LDS a target has holds whatever the job's budget: a kernel over it is refused by the
// resources gate, naming the amount (KernelArena's report: ROCm ran a fused kernel 256 bytes
// over MI300X's LDS on uninitialised memory). clang-19 itself refuses the allocation for
// gfx1151; the gate turns its error into the gate's reason.
TEST(ResourceGate, MoreLdsThanTheTargetHasIsRefusedNamingTheAmount) {
  EXPECT_EQ(kb::target_lds_bytes("gfx1151").value_or(0), 65536);
  EXPECT_EQ(kb::target_lds_bytes("gfx942").value_or(0), 65536);
  EXPECT_EQ(kb::target_lds_bytes("gfx950").value_or(0), 163840);
  EXPECT_FALSE(kb::target_lds_bytes("sm_90a"));
  kb::ResourceUsage u;
  u.name = "void big<8>(float*)";
  u.arch = "gfx1151";
  u.lds_bytes = 65536;
  EXPECT_TRUE(kb::evaluate_target({u}, "gfx1151").empty());  // exactly all of it is fine
  u.lds_bytes = 65792;
  auto v = kb::evaluate_target({u}, "gfx1151");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].field, "lds_bytes");
  EXPECT_EQ(v[0].value, 65792);
  EXPECT_EQ(v[0].limit, 65536);
  EXPECT_EQ(v[0].reason.rfind("big<8> (gfx1151): 65792 bytes of LDS > 65536, all the LDS a workgroup has on gfx1151", 0), 0u)
      << v[0].reason;

  auto clang = kb::find_hip_clang();
  ASSERT_TRUE(clang.ok()) << clang.error().message;
  auto dir = scratch_dir("lds");
  kb::SubprocessSpec s;
  s.trust = kb::ProcessTrust::agent_tool;  // the spawning machinery itself
  s.argv = kb::hip_clang_device_argv(*clang, "gfx1151", kKernels + "/lds_over.hip", (dir / "lds.co").string());
  s.timeout_s = 300;
  auto r = kb::run_subprocess(s);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->ok()) << "clang-19 built a kernel with 65792 bytes of LDS for gfx1151";
  auto refused = kb::compiler_lds_refusal(r->err, "gfx1151");
  ASSERT_TRUE(refused.has_value()) << r->err;
  EXPECT_EQ(refused->value, 65792);
  EXPECT_EQ(refused->limit, 65536);
  EXPECT_EQ(refused->reason.rfind("staged (gfx1151): 65792 bytes of LDS > 65536, all the LDS a workgroup has on gfx1151", 0), 0u)
      << refused->reason;
  EXPECT_FALSE(kb::compiler_lds_refusal("error: use of undeclared identifier 'x'", "gfx1151"));
  fs::remove_all(dir);
}

