// The trusted GPU reference of rmsnorm (problem.yaml; docs/problems.md): one thread per row, in
// fp64, from the inputs decoded to fp32. Not timed; compiled into the harness by
// kernels/harness/src/problem_ref_rmsnorm.cu.
#include "../../harness/src/problem_reference.hpp"

namespace kfleet::harness {
// In a namespace of its own: the harness compiles the references in one translation unit
// (kernels/harness/units), where another reference's names would clash.
namespace rmsnorm_ref {
namespace {

enum { X = 0, WEIGHT = 1 };
enum { DIM_T = 0, DIM_H = 1 };
enum { SCALAR_EPS = 0 };
enum { OUT_Y = 0 };

__global__ void rmsnorm_reference(const float* x, const float* w, float* y, long long T, long long H,
                                  double eps) {
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= T) return;
  const float* row = x + t * H;
  double ss = 0;
  for (long long i = 0; i < H; ++i) ss += (double)row[i] * (double)row[i];
  const double inv = 1.0 / sqrt(ss / (double)H + eps);
  for (long long i = 0; i < H; ++i) y[t * H + i] = (float)((double)row[i] * inv * (double)w[i]);
}

}  // namespace

void launch(const ProblemRefArgs& a) {
  const long long T = a.dims[DIM_T], H = a.dims[DIM_H];
  rmsnorm_reference<<<ref_blocks(T, 128), 128, 0, a.stream>>>(a.in[X], a.in[WEIGHT], a.out[OUT_Y], T, H,
                                                              a.scalars[SCALAR_EPS]);
}

}  // namespace rmsnorm_ref

void gpu_reference_rmsnorm(const ProblemRefArgs& a) { rmsnorm_ref::launch(a); }

}  // namespace kfleet::harness
