// The scaled_mm family (ABI.md, "scaled_mm").
#include "../cpu/cpu_reference.hpp"
#include "harness.hpp"

#ifndef KFLEET_SCALED_MM_ENTRY
#define KFLEET_SCALED_MM_ENTRY kfleet_scaled_mm_launch
#endif
extern "C" __attribute__((weak)) int KFLEET_SCALED_MM_ENTRY(const kfleet_scaled_mm_args*,
                                                             gpuStream_t);

namespace kfleet::harness {
namespace {

class ScaledMmProblem : public Problem {
 public:
  ScaledMmProblem(const Options& o, std::uint64_t seed) {
    const std::string missing = require_dims(o, {"M", "N", "K"});
    if (!missing.empty()) fail_usage(missing + " (scaled_mm needs M, N, K)");
    m_ = (int)o.shape.at("M");
    n_ = (int)o.shape.at("N");
    k_ = (int)o.shape.at("K");
    for (const char* key : {"a", "b"})
      if (o.dtype.count(key) && o.dtype.at(key) != KFLEET_FP8_E4M3)
        fail_usage("scaled_mm inputs a and b must be fp8_e4m3");
    const kfleet_dtype out_t = o.dtype.count("out") ? o.dtype.at("out") : KFLEET_FP16;
    if (out_t != KFLEET_FP16 && out_t != KFLEET_BF16) fail_usage("scaled_mm out must be fp16 or bf16");
    b_nk_ = o.b_layout == KFLEET_B_NK;
    const std::size_t M = m_, N = n_, K = k_;
    if (const std::string bad = unknown_init(o, {"a", "b"}); !bad.empty()) fail_usage(bad);
    if (!b_nk_ && o.init.count("b"))
      fail_usage("--init b draws b as [N, K] (its problem's layout); it does not go with --b-layout kn");
    const Input& a = add_input("A", family_input(o, "scaled_mm", "a", 0, KFLEET_FP8_E4M3, M * K, K, seed));
    const Input& b = add_input("B", family_input(o, "scaled_mm", "b", 1, KFLEET_FP8_E4M3, K * N, K, seed));
    const Input* bias = o.bias ? &add_input("bias", random_tensor(out_t, N, tensor_seed(o.case_name, seed, 2))) : nullptr;
    a_scale_ = a.host.scale;
    b_scale_ = b.host.scale;
    allocate_output(out_t, M * N);
    workspace_ = std::make_unique<DeviceBuffer>((std::size_t)o.workspace_mib << 20, Placement::kernel, "workspace");
    if (workspace_->bytes()) KFLEET_GPU_CHECK(gpuMemset(workspace_->get(), 0, workspace_->bytes()));

    args_.abi_version = KFLEET_ABI_VERSION;
    args_.m = m_;
    args_.n = n_;
    args_.k = k_;
    args_.b_layout = o.b_layout;
    args_.a_dtype = args_.b_dtype = KFLEET_FP8_E4M3;
    args_.out_dtype = out_t;
    args_.a = inputs_[0].device->get();
    args_.b = inputs_[1].device->get();
    args_.bias = bias ? inputs_[2].device->get() : nullptr;
    args_.d = output_->get();
    args_.a_scale = a_scale_;
    args_.b_scale = b_scale_;
    args_.workspace = workspace_->get();
    args_.workspace_bytes = workspace_->bytes();

    fp8_operands = true;
    flops = 2.0 * M * N * K;
    bytes = (double)(M * K + K * N) + (double)(M * N + (bias ? N : 0)) * dtype_size(out_t);
  }

  std::vector<std::uint8_t> args_bytes() const override {
    const auto* b = reinterpret_cast<const std::uint8_t*>(&args_);
    return std::vector<std::uint8_t>(b, b + sizeof args_);
  }

  int launch_entry(gpuStream_t stream) override { return KFLEET_SCALED_MM_ENTRY(&args_, stream); }

  void run_reference() override {
    // The fp32 copies are already dequantised (scale applied), so the reference scale is 1.
    const bool bias = inputs_.size() > 2;
    scaled_mm_reference_f32(static_cast<const float*>(inputs_[0].real_f32->get()),
                            static_cast<const float*>(inputs_[1].real_f32->get()),
                            bias ? static_cast<const float*>(inputs_[2].real_f32->get()) : nullptr,
                            static_cast<float*>(reference_->get()), m_, n_, k_, b_nk_, 1.0f);
  }

  void update_scales() override {
    a_scale_ = args_.a_scale = inputs_[0].scale;
    b_scale_ = args_.b_scale = inputs_[1].scale;
  }

  std::vector<DoNothing> do_nothing_outputs() const override {
    std::vector<DoNothing> out = {{"an all-zeros output", std::vector<float>(out_elements_, 0.0f)}};
    if (inputs_.size() > 2) {  // the bias alone, broadcast over the rows
      std::vector<float> b(out_elements_);
      for (std::size_t i = 0; i < out_elements_; ++i) b[i] = (float)inputs_[2].host.real[i % n_];
      out.push_back({"the bias alone (no matrix product)", std::move(b)});
    }
    return out;
  }

  std::vector<double> cpu_reference() const override {
    const std::vector<double> bias = inputs_.size() > 2 ? inputs_[2].host.real : std::vector<double>{};
    return scaled_mm_reference(m_, n_, k_, inputs_[0].host.real, inputs_[1].host.real, b_nk_, 1.0,
                               1.0, bias);
  }

  std::vector<double> cpu_reference_terms() const override {
    auto magnitude = [](std::vector<double> v) {
      for (double& x : v) x = std::abs(x);
      return v;
    };
    const std::vector<double> bias = inputs_.size() > 2 ? magnitude(inputs_[2].host.real) : std::vector<double>{};
    return scaled_mm_reference(m_, n_, k_, magnitude(inputs_[0].host.real),
                               magnitude(inputs_[1].host.real), b_nk_, 1.0, 1.0, bias);
  }

 private:
  int m_ = 0, n_ = 0, k_ = 0;
  bool b_nk_ = true;
  float a_scale_ = 1, b_scale_ = 1;
  kfleet_scaled_mm_args args_{};
};

}  // namespace

bool scaled_mm_kernel_linked() { return &KFLEET_SCALED_MM_ENTRY != nullptr; }

std::unique_ptr<Problem> make_scaled_mm_problem(const Options& o, std::uint64_t seed) {
  if (o.replay_path.empty() && !scaled_mm_kernel_linked()) fail_usage("this binary has no scaled_mm kernel");
  return std::make_unique<ScaledMmProblem>(o, seed);
}

}  // namespace kfleet::harness
