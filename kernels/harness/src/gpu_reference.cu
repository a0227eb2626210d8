// The harness's GPU fp32 references (independent of kernels/reference/, so one bug cannot hide
// in both) and the on-device check of every timed run's output.
#include <cmath>

#include "harness.hpp"
#include "kfleet_harness/kernel.hpp"

namespace kfleet::harness {
namespace {

constexpr int kMaxRefHeadDim = 512;
constexpr int kTile = 16;

__global__ void attention_f32(const float* q, const float* k, const float* v, float* out,
                              size_t rows, int seq, int dim, bool causal, float scale) {
  const size_t row = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const size_t S = seq, D = dim, base = (row / S) * S * D, i = row % S;
  const size_t keys = causal ? i + 1 : S;
  // Two passes (max, then weights) rather than online rescaling: simpler to trust.
  float m = -INFINITY;
  for (size_t j = 0; j < keys; ++j) {
    float dot = 0;
    for (size_t d = 0; d < D; ++d) dot += q[row * D + d] * k[base + j * D + d];
    m = fmaxf(m, dot * scale);
  }
  float acc[kMaxRefHeadDim];
  for (size_t d = 0; d < D; ++d) acc[d] = 0;
  float denom = 0;
  for (size_t j = 0; j < keys; ++j) {
    float dot = 0;
    for (size_t d = 0; d < D; ++d) dot += q[row * D + d] * k[base + j * D + d];
    const float p = expf(dot * scale - m);
    denom += p;
    for (size_t d = 0; d < D; ++d) acc[d] += p * v[base + j * D + d];
  }
  for (size_t d = 0; d < D; ++d) out[row * D + d] = acc[d] / denom;
}

__global__ void gemm_f32(const float* a, const float* b, const float* bias, float* out, int m,
                         int n, int k, bool b_nk, float scale) {
  __shared__ float as[kTile][kTile], bs[kTile][kTile];
  const int row = blockIdx.y * kTile + threadIdx.y, col = blockIdx.x * kTile + threadIdx.x;
  float acc = 0;
  for (int t = 0; t < k; t += kTile) {
    const int ak = t + threadIdx.x, bk = t + threadIdx.y;
    as[threadIdx.y][threadIdx.x] = (row < m && ak < k) ? a[(size_t)row * k + ak] : 0.0f;
    bs[threadIdx.y][threadIdx.x] =
        (col < n && bk < k) ? (b_nk ? b[(size_t)col * k + bk] : b[(size_t)bk * n + col]) : 0.0f;
    __syncthreads();
    for (int p = 0; p < kTile; ++p) acc += as[threadIdx.y][p] * bs[p][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) out[(size_t)row * n + col] = acc * scale + (bias ? bias[col] : 0.0f);
}

// Counters: [0] unwritten, [1] NaN, [2] Inf, [3] allclose violations, [4] max |x - r| bits.
__global__ void check_output(const void* out, kfleet_dtype t, const float* ref, size_t n,
                             float atol, float rtol, unsigned long long* counters) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    float x;
    if (t == KFLEET_FP32) {
      const uint32_t bits = static_cast<const uint32_t*>(out)[i];
      if (bits == 0xFFFFFFFFu) { atomicAdd(&counters[0], 1ull); continue; }  // poison never replaced
      x = kfleet_bits_to_float(bits);
    } else {
      const uint16_t bits = static_cast<const uint16_t*>(out)[i];
      if (bits == 0xFFFF) { atomicAdd(&counters[0], 1ull); continue; }  // poison never replaced
      x = t == KFLEET_BF16 ? kfleet_bf16_bits_to_float(bits) : kfleet_half_bits_to_float(bits);
    }
    if (isnan(x)) { atomicAdd(&counters[1], 1ull); continue; }
    if (isinf(x)) { atomicAdd(&counters[2], 1ull); continue; }
    const float e = fabsf(x - ref[i]);
    if (!(e <= atol + rtol * fabsf(ref[i]))) atomicAdd(&counters[3], 1ull);
    // Non-negative floats order like their bit patterns, so an integer max is a float max.
    atomicMax(&counters[4], (unsigned long long)kfleet_float_to_bits(e));
  }
}

}  // namespace

void attention_reference_f32(const float* q, const float* k, const float* v, float* out,
                             int batch, int heads, int seq, int dim, bool causal, float scale) {
  if (dim > kMaxRefHeadDim) fail_setup("head_dim > 512 is beyond the harness's reference");
  const size_t rows = (size_t)batch * heads * seq;
  attention_f32<<<(unsigned)((rows + 127) / 128), 128, 0, harness_stream()>>>(q, k, v, out, rows, seq, dim, causal, scale);
  KFLEET_GPU_CHECK(gpuGetLastError());
  KFLEET_GPU_CHECK(gpuStreamSynchronize(harness_stream()));
}

void scaled_mm_reference_f32(const float* a, const float* b, const float* bias, float* out,
                             int m, int n, int k, bool b_nk, float scale) {
  const dim3 threads(kTile, kTile), blocks((n + kTile - 1) / kTile, (m + kTile - 1) / kTile);
  gemm_f32<<<blocks, threads, 0, harness_stream()>>>(a, b, bias, out, m, n, k, b_nk, scale);
  KFLEET_GPU_CHECK(gpuGetLastError());
  KFLEET_GPU_CHECK(gpuStreamSynchronize(harness_stream()));
}

DeviceCheck check_on_device(const void* out, kfleet_dtype out_dtype, const float* ref,
                            std::size_t n, double atol, double rtol) {
  static DeviceBuffer* counters = new DeviceBuffer(5 * sizeof(unsigned long long));  // see device.cu
  gpuStream_t s = harness_stream();
  KFLEET_GPU_CHECK(gpuMemsetAsync(counters->get(), 0, counters->bytes(), s));
  auto* c = static_cast<unsigned long long*>(counters->get());
  check_output<<<1024, 256, 0, s>>>(out, out_dtype, ref, n, (float)atol, (float)rtol, c);
  KFLEET_GPU_CHECK(gpuGetLastError());
  unsigned long long h[5];
  KFLEET_GPU_CHECK(gpuMemcpyAsync(h, c, sizeof h, gpuMemcpyDeviceToHost, s));
  KFLEET_GPU_CHECK(gpuStreamSynchronize(s));
  DeviceCheck r;
  r.unwritten = h[0];
  r.nan = h[1];
  r.inf = h[2];
  r.violations = h[3];
  r.max_abs = kfleet_bits_to_float(static_cast<uint32_t>(h[4]));
  return r;
}

}  // namespace kfleet::harness
