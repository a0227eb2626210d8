#include "cpu_reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace kfleet::harness {

std::vector<double> attention_reference(const AttentionShape& s, const std::vector<double>& q,
                                        const std::vector<double>& k,
                                        const std::vector<double>& v, bool causal,
                                        double softmax_scale) {
  const std::size_t n = s.elements();
  if (q.size() != n || k.size() != n || v.size() != n) std::abort();  // caller's bug
  const std::size_t S = s.seq_len, D = s.head_dim;
  std::vector<double> out(n, 0.0), score(S);
  for (std::size_t bh = 0; bh < static_cast<std::size_t>(s.batch) * s.heads; ++bh) {
    const double* Q = &q[bh * S * D];
    const double* K = &k[bh * S * D];
    const double* V = &v[bh * S * D];
    double* O = &out[bh * S * D];
    for (std::size_t i = 0; i < S; ++i) {
      const std::size_t keys = causal ? i + 1 : S;
      double row_max = -std::numeric_limits<double>::infinity();
      for (std::size_t j = 0; j < keys; ++j) {
        double dot = 0;
        for (std::size_t d = 0; d < D; ++d) dot += Q[i * D + d] * K[j * D + d];
        score[j] = dot * softmax_scale;
        row_max = std::max(row_max, score[j]);
      }
      double denom = 0;
      for (std::size_t j = 0; j < keys; ++j) denom += (score[j] = std::exp(score[j] - row_max));
      for (std::size_t j = 0; j < keys; ++j) {
        const double p = score[j] / denom;
        for (std::size_t d = 0; d < D; ++d) O[i * D + d] += p * V[j * D + d];
      }
    }
  }
  return out;
}

std::vector<double> scaled_mm_reference(int m, int n, int k, const std::vector<double>& a,
                                        const std::vector<double>& b, bool b_nk, double a_scale,
                                        double b_scale, const std::vector<double>& bias) {
  const std::size_t M = m, N = n, K = k;
  if (a.size() != M * K || b.size() != K * N || !(bias.empty() || bias.size() == N)) std::abort();
  std::vector<double> out(M * N);
  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t j = 0; j < N; ++j) {
      double acc = 0;
      for (std::size_t p = 0; p < K; ++p) acc += a[i * K + p] * (b_nk ? b[j * K + p] : b[p * N + j]);
      out[i * N + j] = a_scale * b_scale * acc + (bias.empty() ? 0.0 : bias[j]);
    }
  return out;
}

}  // namespace kfleet::harness
