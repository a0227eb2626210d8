// The trusted GPU reference of fp8_block_gemm (problem.yaml; docs/problems.md): the problem's
// formula from the encoded operands and the scale tensors, as the definition states it (a[m, k]
// times a_scale[m, k / 128], b[n, k] times b_scale[n / 128, k / 128]), summed in fp32 with
// 16x16 shared-memory tiles. Not timed; compiled into the harness by
// kernels/harness/src/problem_ref_fp8_block_gemm.cu.
#include <cstdint>

#include "../../harness/src/problem_reference.hpp"
#include "kfleet_harness/kernel.hpp"

namespace kfleet::harness {
// In a namespace of its own: the harness compiles the references in one translation unit
// (kernels/harness/units), where another reference's names would clash.
namespace fp8_block_gemm_ref {
namespace {

enum { A = 0, B = 1, A_SCALE = 2, B_SCALE = 3 };
enum { DIM_M = 0, DIM_N = 1, DIM_K = 2 };
enum { OUT = 0 };
constexpr int kTile = 16;
constexpr long long kBlock = 128;

__global__ void fp8_block_gemm_reference(const uint8_t* a, const uint8_t* b, const float* a_scale,
                                         const float* b_scale, float* out, long long M, long long N,
                                         long long K) {
  __shared__ float as[kTile][kTile];  // [row][k]
  __shared__ float bs[kTile][kTile];  // [k][col]
  const long long kb = (K + kBlock - 1) / kBlock;
  const long long row0 = (long long)blockIdx.y * kTile, col0 = (long long)blockIdx.x * kTile;
  const long long row = row0 + threadIdx.y, col = col0 + threadIdx.x;
  float acc = 0;
  for (long long t = 0; t < K; t += kTile) {
    const long long k = t + threadIdx.x;
    as[threadIdx.y][threadIdx.x] =
        row < M && k < K ? kfleet_fp8_e4m3_to_float(a[row * K + k]) * a_scale[row * kb + k / kBlock] : 0.0f;
    const long long bn = col0 + threadIdx.y;
    bs[threadIdx.x][threadIdx.y] =
        bn < N && k < K ? kfleet_fp8_e4m3_to_float(b[bn * K + k]) * b_scale[(bn / kBlock) * kb + k / kBlock] : 0.0f;
    __syncthreads();
    for (int p = 0; p < kTile; ++p) acc += as[threadIdx.y][p] * bs[p][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) out[row * N + col] = acc;
}

}  // namespace

void launch(const ProblemRefArgs& a) {
  const long long M = a.dims[DIM_M], N = a.dims[DIM_N], K = a.dims[DIM_K];
  const dim3 threads(kTile, kTile), blocks(ref_blocks(N, kTile), ref_blocks(M, kTile));
  fp8_block_gemm_reference<<<blocks, threads, 0, a.stream>>>(
      static_cast<const uint8_t*>(a.raw[A]), static_cast<const uint8_t*>(a.raw[B]), a.in[A_SCALE],
      a.in[B_SCALE], a.out[OUT], M, N, K);
}

}  // namespace fp8_block_gemm_ref

void gpu_reference_fp8_block_gemm(const ProblemRefArgs& a) { fp8_block_gemm_ref::launch(a); }

}  // namespace kfleet::harness
