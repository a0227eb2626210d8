// kernel.language triton | torch (kernels/harness/PYTHON.md): accepted for the
// harness families with a Python launch module, and every wrong combination named where it is.
#include "kfleet/common/jobspec.hpp"
#include "spec_issues.hpp"

#include <gtest/gtest.h>

namespace kfleet {
namespace {

using kfleet::testing::find_issue;

SpecParse parse(const std::string& kernel, const std::string& extra = "") {
  return parse_job_spec("name: t/py\ntarget: {gpu: H200}\nkernel:\n" + kernel + extra, "py.yaml");
}

TEST(JobSpecPython, TritonAndTorchAreAcceptedWithAPythonLaunchModule) {
  auto t = parse("  family: attention\n  language: triton\n  sources: [attn.py, helpers.py]\n");
  ASSERT_TRUE(t.ok()) << t.error_text();
  EXPECT_EQ(t.spec->kernel.language, "triton");
  auto s = parse("  family: scaled_mm\n  language: torch\n  sources: [mm.py, mm_kernel.cu, mm.h]\n"
                 "  entry: launch\n");
  ASSERT_TRUE(s.ok()) << s.error_text();
  EXPECT_EQ(s.spec->kernel.entry, "launch");
  EXPECT_EQ(to_json(*s.spec)["kernel"]["language"], "torch");
}

TEST(JobSpecPython, ACudaSourceWithLanguageTritonIsNamedAtItsLine) {
  auto p = parse("  family: attention\n  language: triton\n  sources: [attn.cu]\n");
  ASSERT_FALSE(p.ok());
  const SpecIssue* i = find_issue(p, "kernel.sources[0]");
  ASSERT_NE(i, nullptr) << p.error_text();
  EXPECT_EQ(i->line, 6);
  EXPECT_EQ(i->column, 13);
  EXPECT_NE(i->message.find("'attn.cu': a triton kernel's first source is its Python launch "
                            "module (.py), which defines kfleet_attention_launch(args, stream); "
                            "a .cu kernel is language: cuda"), std::string::npos) << i->message;
  EXPECT_NE(p.error_text().find("py.yaml:6:13: kernel.sources[0]"), std::string::npos) << p.error_text();
}

TEST(JobSpecPython, ATritonJobTakesPythonOnlyATorchJobItsExtensionsFiles) {
  auto t = parse("  family: attention\n  language: triton\n  sources: [attn.py, extra.cu]\n");
  ASSERT_FALSE(t.ok());
  ASSERT_NE(find_issue(t, "kernel.sources[1]"), nullptr) << t.error_text();
  EXPECT_NE(find_issue(t, "kernel.sources[1]")->message.find("'extra.cu' is not Python"),
            std::string::npos);
  auto s = parse("  family: attention\n  language: torch\n  sources: [attn.py, data.bin]\n");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(find_issue(s, "kernel.sources[1]"), nullptr) << s.error_text();
}

TEST(JobSpecPython, APythonSourceWithLanguageCudaIsNamed) {
  auto p = parse("  family: attention\n  language: cuda\n  sources: [k.cu, attn.py]\n");
  ASSERT_FALSE(p.ok());
  const SpecIssue* i = find_issue(p, "kernel.sources[1]");
  ASSERT_NE(i, nullptr) << p.error_text();
  EXPECT_NE(i->message.find("'attn.py' is Python: a cuda kernel is compiled by nvcc; say language: "
                            "triton"), std::string::npos) << i->message;
}

TEST(JobSpecPython, WhatAPythonKernelCannotHaveIsRefusedWhereItIs) {
  auto p = parse("  family: attention\n  language: triton\n  sources: [attn.py]\n"
                 "  defines: {BLOCK: 64}\n  flags: [-O3]\n  params: {timing: in_process}\n",
                 "gates:\n  resources: {max_registers: 128}\nprofile: {tool: rocprofv3}\n");
  ASSERT_FALSE(p.ok());
  for (const char* f : {"kernel.defines", "kernel.flags", "kernel.params.timing", "gates.resources",
                        "profile.tool"})
    EXPECT_NE(find_issue(p, f), nullptr) << f << "\n" << p.error_text();
  EXPECT_NE(find_issue(p, "kernel.params.timing")->message.find("always recorded and replayed"),
            std::string::npos);
  EXPECT_EQ(find_issue(p, "kernel.defines")->line, 7);
}

TEST(JobSpecPython, CustomJobsAndAmdTargetsAreRefused) {
  auto c = parse("  family: custom\n  language: torch\n  steps: {test: 'true', bench: 'true'}\n");
  ASSERT_FALSE(c.ok());
  ASSERT_NE(find_issue(c, "kernel.language"), nullptr) << c.error_text();
  EXPECT_NE(find_issue(c, "kernel.language")->message.find("is for the harness families"), std::string::npos);
  auto a = parse_job_spec("name: t/py\ntarget: {gpu: gfx1151}\nkernel: {family: attention, "
                          "language: triton, sources: [a.py]}\n", "amd.yaml");
  ASSERT_FALSE(a.ok());
  ASSERT_NE(find_issue(a, "target.gpu"), nullptr) << a.error_text();
  EXPECT_EQ(find_issue(a, "target.gpu")->line, 2);
}

TEST(JobSpecPython, AnUnknownLanguageListsThePythonOnes) {
  auto p = parse("  family: attention\n  language: jax\n  sources: [a.py]\n");
  ASSERT_FALSE(p.ok());
  ASSERT_NE(find_issue(p, "kernel.language"), nullptr) << p.error_text();
  EXPECT_NE(find_issue(p, "kernel.language")->message.find("triton"), std::string::npos)
      << find_issue(p, "kernel.language")->message;
}

}  // namespace
}  // namespace kfleet
