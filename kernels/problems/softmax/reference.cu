// The trusted GPU reference of softmax (problem.yaml; docs/problems.md): one thread per row:
// the max, then the sum of exponentials (each in fp32, summed in fp64), then each probability. Not timed; compiled into the
// harness by kernels/harness/src/problem_ref_softmax.cu.
#include "../../harness/src/problem_reference.hpp"

namespace kfleet::harness {
// In a namespace of its own: the harness compiles the references in one translation unit
// (kernels/harness/units), where another reference's names would clash.
namespace softmax_ref {
namespace {

enum { X = 0 };
enum { DIM_R = 0, DIM_V = 1 };
enum { OUT_Y = 0 };

__global__ void softmax_reference(const float* x, float* y, long long R, long long V) {
  const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= R) return;
  const float* row = x + r * V;
  float m = -INFINITY;
  for (long long i = 0; i < V; ++i) m = fmaxf(m, row[i]);
  double sum = 0;
  for (long long i = 0; i < V; ++i) sum += (double)expf(row[i] - m);
  for (long long i = 0; i < V; ++i) y[r * V + i] = (float)((double)expf(row[i] - m) / sum);
}

}  // namespace

void launch(const ProblemRefArgs& a) {
  const long long R = a.dims[DIM_R], V = a.dims[DIM_V];
  softmax_reference<<<ref_blocks(R, 32), 32, 0, a.stream>>>(a.in[X], a.out[OUT_Y], R, V);
}

}  // namespace softmax_ref

void gpu_reference_softmax(const ProblemRefArgs& a) { softmax_ref::launch(a); }

}  // namespace kfleet::harness
