#include "options.hpp"

#include <cmath>

#include <gtest/gtest.h>

namespace kfleet::harness {
namespace {

std::string parse(std::vector<const char*> args, Options* o) {
  args.insert(args.begin(), "kfleet-harness");
  return parse_options(static_cast<int>(args.size()), args.data(), o);
}

TEST(Options, ParsesACorrectnessCommand) {
  Options o;
  ASSERT_EQ(parse({"correctness", "--case", "small", "--shape", "B=1,H=4,S=256,D=64", "--seeds",
                   "0,1,2", "--dtype", "q=fp16,kv=fp8_e4m3,out=fp16", "--causal", "--max-abs",
                   "0.06"}, &o), "");
  EXPECT_EQ(o.stage, "correctness");
  EXPECT_EQ(o.case_name, "small");
  EXPECT_EQ(o.shape.at("S"), 256);
  EXPECT_EQ(o.seeds, (std::vector<std::uint64_t>{0, 1, 2}));
  EXPECT_EQ(o.dtype.at("kv"), KFLEET_FP8_E4M3);
  EXPECT_TRUE(o.causal);
  EXPECT_DOUBLE_EQ(o.tolerance.max_abs, 0.06);
  EXPECT_LT(o.tolerance.atol, 0);  // an explicit bound replaces the default allclose
}

TEST(Options, DefaultsToAllcloseWhenNoBoundIsGiven) {
  Options o;
  ASSERT_EQ(parse({"benchmark", "--shape", "M=8,N=8,K=8", "--b-layout", "kn", "--min-samples",
                   "20", "--max-samples", "5"}, &o), "");
  EXPECT_DOUBLE_EQ(o.tolerance.atol, 1e-2);
  EXPECT_DOUBLE_EQ(o.tolerance.rtol, 1e-2);
  EXPECT_EQ(o.b_layout, KFLEET_B_KN);
  EXPECT_EQ(o.stop.min_samples, 20u);
  EXPECT_EQ(o.stop.max_samples, 20u);  // never below min_samples
}

TEST(Options, RejectsBadInputWithAMessageNamingIt) {
  Options o;
  EXPECT_NE(parse({}, &o).find("usage"), std::string::npos);
  EXPECT_NE(parse({"bench"}, &o).find("unknown stage"), std::string::npos);
  EXPECT_NE(parse({"probe", "--shape", "B=0"}, &o).find("B=0"), std::string::npos);
  EXPECT_NE(parse({"probe", "--dtype", "fp7"}, &o).find("fp7"), std::string::npos);
  EXPECT_NE(parse({"probe", "--frobnicate"}, &o).find("--frobnicate"), std::string::npos);
  EXPECT_NE(parse({"probe", "--atol"}, &o).find("--atol"), std::string::npos);
  EXPECT_NE(parse({"probe", "--b-layout", "mk"}, &o).find("--b-layout"), std::string::npos);
}

// dot_rtol widens allclose by each output's sum of |terms| (scaled_mm@4's stress): with --atol
// and --rtol only, and not for a problem's spec, whose outputs have no such sums.
TEST(Options, DotRtolWidensAllcloseAndNeedsIt) {
  Options o;
  ASSERT_EQ(parse({"correctness", "--shape", "M=64,N=256,K=512", "--atol", "0.01", "--rtol", "0.01",
                   "--dot-rtol", "0.001"}, &o), "");
  EXPECT_DOUBLE_EQ(o.tolerance.dot_rtol, 0.001);
  Options alone;
  EXPECT_NE(parse({"correctness", "--dot-rtol", "0.001"}, &alone).find("give --atol and --rtol"),
            std::string::npos);
  Options spec;
  EXPECT_NE(parse({"correctness", "--problem-spec", "p.spec", "--case", "c", "--atol", "0.01",
                   "--rtol", "0", "--dot-rtol", "0.001"}, &spec).find("scaled_mm family"),
            std::string::npos);
  Options bare;
  ASSERT_EQ(parse({"correctness", "--shape", "M=8,N=8,K=8"}, &bare), "");
  EXPECT_LT(bare.tolerance.dot_rtol, 0);  // the default allclose takes no sums
}

// The diagnostics that issue a replayed chain op by op, or even one operation as a graph: only
// with --replay, graph or stream.
TEST(Options, ReplayIssueIsGraphOrStreamAndGoesWithReplay) {
  Options o;
  EXPECT_EQ(parse({"benchmark", "--replay", "l.txt", "--device-code", "a.o", "--replay-issue", "stream"}, &o), "");
  EXPECT_EQ(o.replay_issue, "stream");
  Options g;
  EXPECT_EQ(parse({"benchmark", "--replay", "l.txt", "--device-code", "a.o", "--replay-issue", "graph"}, &g), "");
  EXPECT_EQ(g.replay_issue, "graph");  // even one operation as a graph (a diagnostic)
  Options bad;
  EXPECT_NE(parse({"benchmark", "--replay", "l.txt", "--device-code", "a.o", "--replay-issue", "host"}, &bad)
                .find("--replay-issue"), std::string::npos);
  Options alone, alone_graph, dot;
  EXPECT_NE(parse({"benchmark", "--replay-issue", "stream"}, &alone).find("go with --replay"), std::string::npos);
  EXPECT_NE(parse({"benchmark", "--replay-issue", "graph"}, &alone_graph).find("go with --replay"), std::string::npos);
  EXPECT_NE(parse({"benchmark", "--replay-dot", "g.dot"}, &dot).find("go with --replay"), std::string::npos);
}

// The diagnostic that swaps every kernel node for the harness's empty kernel: job or builtin,
// only with --replay, in the benchmark stage, and as a graph (its empty kernels compute nothing).
TEST(Options, ReplayKernelsBuiltinIsAGraphDiagnosticOfTheBenchmark) {
  const std::vector<const char*> replay = {"--replay", "l.txt", "--device-code", "a.o", "--replay-kernels"};
  auto with = [&](std::vector<const char*> a, const char* v) {
    a.insert(a.end(), replay.begin(), replay.end());
    a.push_back(v);
    return a;
  };
  Options b;
  EXPECT_EQ(parse(with({"benchmark"}, "builtin"), &b), "");
  EXPECT_TRUE(b.replay_builtin_kernels);
  EXPECT_FALSE(b.replay_builtin_unloaded);
  Options u;
  EXPECT_EQ(parse(with({"benchmark"}, "builtin-unloaded"), &u), "");
  EXPECT_TRUE(u.replay_builtin_kernels);
  EXPECT_TRUE(u.replay_builtin_unloaded);
  Options j;
  EXPECT_EQ(parse(with({"benchmark"}, "job"), &j), "");
  EXPECT_FALSE(j.replay_builtin_kernels);
  EXPECT_FALSE(j.replay_builtin_unloaded);
  Options bad, stage, stream, alone;
  EXPECT_NE(parse(with({"benchmark"}, "none"), &bad).find("--replay-kernels"), std::string::npos);
  EXPECT_NE(parse(with({"correctness"}, "builtin"), &stage).find("benchmark stage"), std::string::npos);
  EXPECT_NE(parse(with({"benchmark", "--replay-issue", "stream"}, "builtin"), &stream).find("--replay-issue stream"),
            std::string::npos);
  EXPECT_NE(parse({"benchmark", "--replay-kernels", "builtin"}, &alone).find("go with --replay"), std::string::npos);
  Options order, order_alone;
  EXPECT_EQ(parse({"benchmark", "--replay", "l.txt", "--device-code", "a.o", "--replay-graph-before-tracer"}, &order), "");
  EXPECT_TRUE(order.replay_graph_before_tracer);
  EXPECT_FALSE(b.replay_graph_before_tracer);
  EXPECT_NE(parse({"benchmark", "--replay-graph-before-tracer"}, &order_alone).find("go with --replay"),
            std::string::npos);
}

// --same-inputs MODE: a replayed benchmark only, the mode named (how the plan's draw is there
// before each sample: drawn again, copied back, or left).
TEST(Options, SameInputsIsAReplayedBenchmarksDiagnostic) {
  for (const char* mode : {"draw", "copy", "kept"}) {
    Options o;
    EXPECT_EQ(parse({"benchmark", "--replay", "l.txt", "--device-code", "a.o", "--same-inputs", mode}, &o), "");
    EXPECT_EQ(o.same_inputs, mode);
  }
  Options plain;
  EXPECT_EQ(parse({"benchmark", "--replay", "l.txt", "--device-code", "a.o"}, &plain), "");
  EXPECT_EQ(plain.same_inputs, "");  // the agent's samples draw new inputs each time
  Options bad;
  EXPECT_NE(parse({"benchmark", "--same-inputs", "copy"}, &bad).find("--same-inputs is a diagnostic"), std::string::npos);
  EXPECT_NE(parse({"correctness", "--replay", "l.txt", "--device-code", "a.o", "--same-inputs", "copy"}, &bad)
                .find("--same-inputs is a diagnostic"), std::string::npos);
  EXPECT_NE(parse({"benchmark", "--replay", "l.txt", "--device-code", "a.o", "--same-inputs", "fresh"}, &bad)
                .find("--same-inputs wants draw, copy or kept"), std::string::npos);
  EXPECT_NE(parse({"benchmark", "--replay", "l.txt", "--device-code", "a.o", "--same-inputs"}, &bad)
                .find("--same-inputs needs a valid value"), std::string::npos);
}

// The diagnostics that time the replay without the sample loop (--replay-bare N, and one launch
// kind between two such runs): a replayed benchmark only, N from 1, the kinds named.
TEST(Options, ReplayBareIsAReplayedBenchmarksDiagnostic) {
  const std::vector<const char*> replay = {"benchmark", "--replay", "l.txt", "--device-code", "a.o"};
  auto with = [&](std::vector<const char*> extra) {
    std::vector<const char*> a = replay;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  Options b, t, none;
  EXPECT_EQ(parse(with({"--replay-bare", "200"}), &b), "");
  EXPECT_EQ(b.replay_bare, 200);
  EXPECT_EQ(b.replay_bare_trigger, "");
  EXPECT_EQ(parse(with({"--replay-bare", "20", "--replay-bare-trigger", "noop-graph"}), &t), "");
  EXPECT_EQ(t.replay_bare_trigger, "noop-graph");
  EXPECT_EQ(parse(replay, &none), "");
  EXPECT_EQ(none.replay_bare, 0);
  Options zero, word, alone, trigger_alone, kind, stage;
  EXPECT_NE(parse(with({"--replay-bare", "0"}), &zero).find("--replay-bare"), std::string::npos);
  EXPECT_NE(parse(with({"--replay-bare", "many"}), &word).find("--replay-bare"), std::string::npos);
  EXPECT_NE(parse({"benchmark", "--replay-bare", "5"}, &alone).find("go with --replay"), std::string::npos);
  EXPECT_NE(parse(with({"--replay-bare-trigger", "noop-legacy"}), &trigger_alone).find("goes with --replay-bare N"),
            std::string::npos);
  EXPECT_NE(parse(with({"--replay-bare", "5", "--replay-bare-trigger", "fork"}), &kind).find("--replay-bare-trigger"),
            std::string::npos);
  EXPECT_NE(parse({"correctness", "--replay", "l.txt", "--device-code", "a.o", "--replay-bare", "5"}, &stage)
                .find("--replay-bare is a diagnostic of the benchmark stage"),
            std::string::npos);
}

TEST(Options, CuptiHardwareTraceIsForTheBenchmarkStage) {
  Options b;
  EXPECT_EQ(parse({"benchmark", "--cupti-hw-trace"}, &b), "");
  EXPECT_TRUE(b.cupti_hw_trace);
  Options none;
  EXPECT_EQ(parse({"benchmark"}, &none), "");
  EXPECT_FALSE(none.cupti_hw_trace);
  Options c;
  EXPECT_NE(parse({"correctness", "--cupti-hw-trace"}, &c).find("benchmark stage"), std::string::npos);
}

TEST(StopRule, StopsOnNoiseTargetOnlyAfterMinSamples) {
  StopRule rule({5, 100, 0.5, 15});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(rule.add(100.0, 0.1), "");
  EXPECT_EQ(rule.add(100.0, 0.1), "noise_target");
}

TEST(StopRule, NoisySamplesRunToTheTimeOrSampleCap) {
  StopRule by_time({3, 100, 0.5, 1.0});
  EXPECT_EQ(by_time.add(100, 0.1), "");
  EXPECT_EQ(by_time.add(120, 0.2), "");
  EXPECT_EQ(by_time.add(80, 0.5), "");
  EXPECT_EQ(by_time.add(110, 1.0), "max_time");
  StopRule by_count({3, 4, 0.5, 100});
  for (double v : {100.0, 130.0, 70.0}) EXPECT_EQ(by_count.add(v, 0), "");
  EXPECT_EQ(by_count.add(100, 0), "max_samples");
  EXPECT_GT(by_count.rel_stdev_pct(), 10);
}

// A problem of the library: the spec gives shapes, dtypes and checks, so the family options
// are refused with it rather than silently ignored; the Python plan is for the families only.
TEST(Options, ProblemSpecTakesACaseAndRefusesFamilyOptions) {
  Options o;
  ASSERT_EQ(parse({"correctness", "--problem-spec", "/run/rmsnorm.spec", "--case", "small", "--seeds", "0,1",
                   "--record", "l.txt"}, &o), "");
  EXPECT_EQ(o.problem_spec, "/run/rmsnorm.spec");
  EXPECT_EQ(o.case_name, "small");
  for (const char* flag : {"--shape", "--atol", "--dtype"}) {
    Options p;
    const char* value = std::string(flag) == "--shape" ? "M=1,N=1,K=1" : std::string(flag) == "--atol" ? "0.1" : "fp16";
    const std::string err = parse({"correctness", "--problem-spec", "s", "--case", "small", flag, value}, &p);
    EXPECT_NE(err.find(std::string(flag) + " does not apply with --problem-spec"), std::string::npos) << err;
  }
  Options q;
  EXPECT_NE(parse({"correctness", "--causal", "--problem-spec", "s"}, &q).find("--causal does not apply"), std::string::npos);
  // A Python kernel of a problem is recorded on a plan too (PYTHON.md), with torch's scratch.
  Options r;
  EXPECT_EQ(parse({"correctness", "--problem-spec", "s", "--case", "small", "--plan", "p.json",
                   "--python-scratch-mib", "256"}, &r), "");
  EXPECT_EQ(r.plan_path, "p.json");
  EXPECT_EQ(r.python_scratch_mib, 256);
  Options s;
  EXPECT_NE(parse({"correctness", "--problem-spec", "s", "--python-scratch-mib", "256"}, &s)
                .find("--python-scratch-mib is for replaying a Python kernel"), std::string::npos);
  Options u;
  EXPECT_NE(parse({"benchmark", "--plan", "p.json", "--python-scratch-mib", "-1"}, &u).find("needs a valid value"),
            std::string::npos);
  Options t;
  EXPECT_NE(parse({"correctness", "--problem-spec"}, &t).find("needs a valid value"), std::string::npos);
  // The proofs' diagnostic of the read-only flip: a replayed benchmark only.
  Options w;
  EXPECT_EQ(parse({"benchmark", "--problem-spec", "s", "--replay", "l.txt", "--device-code", "d.cubin",
                   "--inputs-writable"}, &w), "");
  EXPECT_TRUE(w.inputs_writable);
  Options x;
  EXPECT_NE(parse({"benchmark", "--problem-spec", "s", "--inputs-writable"}, &x)
                .find("--inputs-writable is a diagnostic of a replayed benchmark"), std::string::npos);
  // The proofs' diagnostic of each kernel's executed config: the benchmark stage only.
  Options k;
  EXPECT_EQ(parse({"benchmark", "--problem-spec", "s", "--kernel-configs"}, &k), "");
  EXPECT_TRUE(k.kernel_configs);
  Options c;
  EXPECT_NE(parse({"correctness", "--problem-spec", "s", "--kernel-configs"}, &c)
                .find("--kernel-configs is a diagnostic of the benchmark stage"), std::string::npos);
}

// The reference check the agent runs once per run (PROBLEM-ABI.md, "The GPU reference,
// checked"): a correctness stage of a problem that runs no kernel, so no recording either.
TEST(Options, TheReferenceCheckIsAProblemsCorrectnessStageWithoutAKernel) {
  Options o;
  ASSERT_EQ(parse({"correctness", "--case", "small", "--problem-spec", "/c/rmsnorm@2.spec", "--seeds", "0",
                   "--reference-check", "--result-fd", "3"}, &o), "");
  EXPECT_TRUE(o.reference_check);
  EXPECT_EQ(o.case_name, "small");
  Options p, q, r;
  EXPECT_NE(parse({"correctness", "--case", "small", "--reference-check"}, &p).find("--reference-check is a correctness stage of a problem"),
            std::string::npos);
  EXPECT_NE(parse({"benchmark", "--problem-spec", "s", "--case", "small", "--reference-check"}, &q)
                .find("--reference-check is a correctness stage of a problem"),
            std::string::npos);
  EXPECT_NE(parse({"correctness", "--problem-spec", "s", "--case", "small", "--reference-check", "--replay", "l",
                   "--device-code", "k.o"}, &r).find("runs no kernel"),
            std::string::npos);
}

}  // namespace
}  // namespace kfleet::harness
