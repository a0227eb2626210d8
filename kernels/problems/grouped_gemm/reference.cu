// The trusted GPU reference of grouped_gemm (problem.yaml; docs/problems.md): out[m, n] =
// sum_k a[m, k] * w[g(m), n, k] with g(m) the group whose [ends[g-1], ends[g]) holds m, in
// fp32 with 16x16 shared-memory tiles (a plain tiled GEMM per group present in the tile; each
// row keeps its own group's sum). Not timed; compiled into the harness by
// kernels/harness/src/problem_ref_grouped_gemm.cu.
#include <cstdint>

#include "../../harness/src/problem_reference.hpp"

namespace kfleet::harness {
// In a namespace of its own: the harness compiles the references in one translation unit
// (kernels/harness/units), where another reference's names would clash.
namespace grouped_gemm_ref {
namespace {

enum { A = 0, W = 1, ENDS = 2 };
enum { DIM_G = 0, DIM_M = 1, DIM_N = 2, DIM_K = 3 };
enum { OUT = 0 };
constexpr int kTile = 16;

// The first group whose end is past row m (G when there is none).
__device__ long long group_of(const int32_t* ends, long long G, long long m) {
  long long lo = 0, hi = G;
  while (lo < hi) {
    const long long mid = (lo + hi) / 2;
    if (ends[mid] > m) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

__global__ void grouped_gemm_reference(const float* a, const float* w, const int32_t* ends, float* out,
                                       long long G, long long M, long long N, long long K) {
  __shared__ float as[kTile][kTile];  // [row][k]
  __shared__ float ws[kTile][kTile];  // [k][col]
  const long long row0 = (long long)blockIdx.y * kTile, col0 = (long long)blockIdx.x * kTile;
  const long long row = row0 + threadIdx.y, col = col0 + threadIdx.x;
  const long long last = (row0 + kTile < M ? row0 + kTile : M) - 1;
  const long long g_lo = group_of(ends, G, row0);
  long long g_hi = group_of(ends, G, last);
  if (g_hi > G - 1) g_hi = G - 1;
  const long long mine = row < M ? group_of(ends, G, row) : -1;
  float result = 0;
  for (long long g = g_lo; g <= g_hi; ++g) {  // the same for every thread of the block
    float acc = 0;
    for (long long t = 0; t < K; t += kTile) {
      const long long ak = t + threadIdx.x;
      as[threadIdx.y][threadIdx.x] = row < M && ak < K ? a[row * K + ak] : 0.0f;
      const long long wn = col0 + threadIdx.y, wk = t + threadIdx.x;  // read along k: coalesced
      ws[threadIdx.x][threadIdx.y] = wn < N && wk < K ? w[(g * N + wn) * K + wk] : 0.0f;
      __syncthreads();
      for (int p = 0; p < kTile; ++p) acc += as[threadIdx.y][p] * ws[p][threadIdx.x];
      __syncthreads();
    }
    if (g == mine) result = acc;
  }
  if (row < M && col < N) out[row * N + col] = result;
}

}  // namespace

void launch(const ProblemRefArgs& a) {
  const long long G = a.dims[DIM_G], M = a.dims[DIM_M], N = a.dims[DIM_N], K = a.dims[DIM_K];
  const dim3 threads(kTile, kTile), blocks(ref_blocks(N, kTile), ref_blocks(M, kTile));
  grouped_gemm_reference<<<blocks, threads, 0, a.stream>>>(a.in[A], a.in[W], static_cast<const int32_t*>(a.raw[ENDS]),
                                                           a.out[OUT], G, M, N, K);
}

}  // namespace grouped_gemm_ref

void gpu_reference_grouped_gemm(const ProblemRefArgs& a) { grouped_gemm_ref::launch(a); }

}  // namespace kfleet::harness
