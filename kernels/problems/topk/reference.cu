// The trusted GPU reference of topk (problem.yaml; docs/problems.md): one thread per row, k
// passes each taking the largest value after the last one taken in the order (value
// descending, index ascending). Writes the values and the indices (as fp32 values; the check
// accepts any order of tied values' indices). Not timed; compiled into the harness by
// kernels/harness/src/problem_ref_topk.cu.
#include "../../harness/src/problem_reference.hpp"

namespace kfleet::harness {
// In a namespace of its own: the harness compiles the references in one translation unit
// (kernels/harness/units), where another reference's names would clash.
namespace topk_ref {
namespace {

enum { X = 0 };
enum { DIM_R = 0, DIM_V = 1, DIM_KK = 2 };
enum { OUT_VALUES = 0, OUT_INDICES = 1 };

__global__ void topk_reference(const float* x, float* values, float* indices, long long R, long long V,
                               long long KK) {
  const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= R) return;
  const float* row = x + r * V;
  float last_v = INFINITY;
  long long last_i = -1;
  for (long long j = 0; j < KK; ++j) {
    float best_v = -INFINITY;
    long long best_i = -1;
    for (long long i = 0; i < V; ++i) {
      const float v = row[i];
      const bool after_last = v < last_v || (v == last_v && i > last_i);
      if (after_last && (best_i < 0 || v > best_v)) {  // ascending i: the first of equals wins
        best_v = v;
        best_i = i;
      }
    }
    values[r * KK + j] = best_v;
    indices[r * KK + j] = (float)best_i;
    last_v = best_v;
    last_i = best_i;
  }
}

}  // namespace

void launch(const ProblemRefArgs& a) {
  const long long R = a.dims[DIM_R], V = a.dims[DIM_V], KK = a.dims[DIM_KK];
  topk_reference<<<ref_blocks(R, 64), 64, 0, a.stream>>>(a.in[X], a.out[OUT_VALUES], a.out[OUT_INDICES], R, V, KK);
}

}  // namespace topk_ref

void gpu_reference_topk(const ProblemRefArgs& a) { topk_ref::launch(a); }

}  // namespace kfleet::harness
