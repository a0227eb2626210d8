#pragma once
// fp64 CPU references for the harness families (ABI.md). Inputs are the real (dequantised)
// values, so the same functions check fp16 and fp8 variants; used by CI tests and, for small
// cases, to cross-check the harness's GPU fp32 reference.
#include <cstddef>
#include <vector>

namespace kfleet::harness {

struct AttentionShape {
  int batch = 1, heads = 1, seq_len = 1, head_dim = 1;
  std::size_t elements() const {
    return static_cast<std::size_t>(batch) * heads * seq_len * head_dim;
  }
};

// q, k, v, result: [B, H, S, D] row-major.
std::vector<double> attention_reference(const AttentionShape& s, const std::vector<double>& q,
                                        const std::vector<double>& k,
                                        const std::vector<double>& v, bool causal,
                                        double softmax_scale);

// a: [M, K] row-major; b: [N, K] row-major when b_nk, else [K, N]; bias: empty or [N].
// Result [M, N]: a_scale * b_scale * A B + bias.
std::vector<double> scaled_mm_reference(int m, int n, int k, const std::vector<double>& a,
                                        const std::vector<double>& b, bool b_nk, double a_scale,
                                        double b_scale, const std::vector<double>& bias);

}  // namespace kfleet::harness
