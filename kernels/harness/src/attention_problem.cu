// The attention family (ABI.md, "attention").
#include <cmath>

#include "../cpu/cpu_reference.hpp"
#include "harness.hpp"

#ifndef KFLEET_ATTENTION_ENTRY
#define KFLEET_ATTENTION_ENTRY kfleet_attention_launch
#endif
// Weak: a binary built with a scaled_mm kernel has no attention symbol, and says so.
extern "C" __attribute__((weak)) int KFLEET_ATTENTION_ENTRY(const kfleet_attention_args*,
                                                             gpuStream_t);

namespace kfleet::harness {
namespace {

class AttentionProblem : public Problem {
 public:
  AttentionProblem(const Options& o, std::uint64_t seed) {
    const std::string missing = require_dims(o, {"B", "H", "S", "D"});
    if (!missing.empty()) fail_usage(missing + " (attention needs B, H, S, D)");
    shape_ = AttentionShape{(int)o.shape.at("B"), (int)o.shape.at("H"), (int)o.shape.at("S"),
                            (int)o.shape.at("D")};
    auto dtype = [&](const char* key, kfleet_dtype fallback) {
      return o.dtype.count(key) ? o.dtype.at(key) : fallback;
    };
    const kfleet_dtype q_t = dtype("q", KFLEET_FP16), kv_t = dtype("kv", KFLEET_FP16),
                       out_t = dtype("out", KFLEET_FP16);
    if (q_t != KFLEET_FP16 || out_t != KFLEET_FP16 ||
        (kv_t != KFLEET_FP16 && kv_t != KFLEET_FP8_E4M3))
      fail_usage("attention supports q=fp16, kv=fp16|fp8_e4m3, out=fp16");
    causal_ = o.causal;
    scale_ = o.softmax_scale > 0 ? o.softmax_scale : 1.0 / std::sqrt((double)shape_.head_dim);
    const std::size_t n = shape_.elements();
    if (const std::string bad = unknown_init(o, {"q", "k", "v"}); !bad.empty()) fail_usage(bad);
    const std::size_t D = (std::size_t)shape_.head_dim;
    const Input& q = add_input("Q", family_input(o, "attention", "q", 0, q_t, n, D, seed));
    const Input& k = add_input("K", family_input(o, "attention", "k", 1, kv_t, n, D, seed));
    const Input& v = add_input("V", family_input(o, "attention", "v", 2, kv_t, n, D, seed));
    allocate_output(out_t, n);
    workspace_ = std::make_unique<DeviceBuffer>((std::size_t)o.workspace_mib << 20, Placement::kernel, "workspace");
    if (workspace_->bytes()) KFLEET_GPU_CHECK(gpuMemset(workspace_->get(), 0, workspace_->bytes()));

    args_.abi_version = KFLEET_ABI_VERSION;
    args_.batch = shape_.batch;
    args_.heads = shape_.heads;
    args_.seq_len = shape_.seq_len;
    args_.head_dim = shape_.head_dim;
    args_.causal = causal_ ? 1 : 0;
    args_.q_dtype = q_t;
    args_.kv_dtype = kv_t;
    args_.out_dtype = out_t;
    args_.q = inputs_[0].device->get();
    args_.k = inputs_[1].device->get();
    args_.v = inputs_[2].device->get();
    args_.o = output_->get();
    args_.q_scale = q.host.scale;
    args_.k_scale = k.host.scale;
    args_.v_scale = v.host.scale;
    args_.softmax_scale = (float)scale_;
    args_.workspace = workspace_->get();
    args_.workspace_bytes = workspace_->bytes();

    fp8_operands = kv_t == KFLEET_FP8_E4M3;
    const double s = shape_.seq_len, pairs = causal_ ? s * (s + 1) / 2 : s * s;
    flops = 4.0 * shape_.batch * shape_.heads * pairs * shape_.head_dim;
    bytes = (double)n * (dtype_size(q_t) + 2 * dtype_size(kv_t) + dtype_size(out_t));
  }

  std::vector<std::uint8_t> args_bytes() const override {
    const auto* b = reinterpret_cast<const std::uint8_t*>(&args_);
    return std::vector<std::uint8_t>(b, b + sizeof args_);
  }

  int launch_entry(gpuStream_t stream) override { return KFLEET_ATTENTION_ENTRY(&args_, stream); }

  void run_reference() override {
    attention_reference_f32(static_cast<const float*>(inputs_[0].real_f32->get()),
                            static_cast<const float*>(inputs_[1].real_f32->get()),
                            static_cast<const float*>(inputs_[2].real_f32->get()),
                            static_cast<float*>(reference_->get()), shape_.batch, shape_.heads,
                            shape_.seq_len, shape_.head_dim, causal_, (float)scale_);
  }

  void update_scales() override {
    args_.q_scale = inputs_[0].scale;
    args_.k_scale = inputs_[1].scale;
    args_.v_scale = inputs_[2].scale;
  }

  std::vector<DoNothing> do_nothing_outputs() const override {
    return {{"an all-zeros output", std::vector<float>(out_elements_, 0.0f)},
            {"the mean of V (attention that ignores Q and K)",
             mean_of_v_output(shape_, inputs_[2].host.real, causal_)}};
  }

  std::vector<double> cpu_reference() const override {
    return attention_reference(shape_, inputs_[0].host.real, inputs_[1].host.real,
                               inputs_[2].host.real, causal_, scale_);
  }

 private:
  AttentionShape shape_;
  bool causal_ = false;
  double scale_ = 1;
  kfleet_attention_args args_{};
};

}  // namespace

bool attention_kernel_linked() { return &KFLEET_ATTENTION_ENTRY != nullptr; }

std::unique_ptr<Problem> make_attention_problem(const Options& o, std::uint64_t seed) {
  if (o.replay_path.empty() && !attention_kernel_linked()) fail_usage("this binary has no attention kernel");
  return std::make_unique<AttentionProblem>(o, seed);
}

}  // namespace kfleet::harness
