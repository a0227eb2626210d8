// The trusted GPU reference of rope (problem.yaml; docs/problems.md): one thread per rotated
// pair (token, head, i < D/2), for q and for k, in fp64, reading the cache at the token's
// position. A position outside the cache gives NaN, which no output passes. Not timed;
// compiled into the harness by kernels/harness/src/problem_ref_rope.cu.
#include <cstdint>

#include "../../harness/src/problem_reference.hpp"

namespace kfleet::harness {
// In a namespace of its own: the harness compiles the references in one translation unit
// (kernels/harness/units), where another reference's names would clash.
namespace rope_ref {
namespace {

enum { Q = 0, K = 1, POSITIONS = 2, COS_SIN = 3 };
enum { DIM_T = 0, DIM_HQ = 1, DIM_HK = 2, DIM_D = 3, DIM_P = 4 };
enum { OUT_Q = 0, OUT_K = 1 };

__global__ void rope_reference(const float* x, const int32_t* pos, const float* cos_sin, float* out,
                               long long T, long long heads, long long D, long long P) {
  const long long half = D / 2;
  const long long n = T * heads * half;
  for (long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x; idx < n;
       idx += (long long)gridDim.x * blockDim.x) {
    const long long i = idx % half, th = idx / half, t = th / heads;
    const long long base = th * D;
    const long long p = pos[t];
    if (p < 0 || p >= P) {
      out[base + i] = out[base + half + i] = NAN;
      continue;
    }
    const double c = cos_sin[p * D + i], s = cos_sin[p * D + half + i];
    const double x1 = x[base + i], x2 = x[base + half + i];
    out[base + i] = (float)(x1 * c - x2 * s);
    out[base + half + i] = (float)(x2 * c + x1 * s);
  }
}

}  // namespace

void launch(const ProblemRefArgs& a) {
  const long long T = a.dims[DIM_T], D = a.dims[DIM_D], P = a.dims[DIM_P];
  const auto* pos = static_cast<const int32_t*>(a.raw[POSITIONS]);
  rope_reference<<<1024, 256, 0, a.stream>>>(a.in[Q], pos, a.in[COS_SIN], a.out[OUT_Q], T, a.dims[DIM_HQ], D, P);
  rope_reference<<<1024, 256, 0, a.stream>>>(a.in[K], pos, a.in[COS_SIN], a.out[OUT_K], T, a.dims[DIM_HK], D, P);
}

}  // namespace rope_ref

void gpu_reference_rope(const ProblemRefArgs& a) { rope_ref::launch(a); }

}  // namespace kfleet::harness
