// Kernels whose argument layout the HIP recorder must read from clang's metadata: a struct by
// value, scalars of every width after it (padding), and a kernel in an anonymous namespace.
#include "kfleet_harness/gpu_runtime.hpp"

struct Args {
  const float* a;
  float* b;
  int n;
  double s;
};
__global__ void scale(Args a, int extra) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < a.n) a.b[i] = a.a[i] * a.s + extra;
}
namespace {
__global__ void mixed(float* p, char c, short s, long long w) { p[0] = c + s + w; }
}  // namespace
void launch(Args a, hipStream_t s) {
  scale<<<1, 64, 0, s>>>(a, 3);
  mixed<<<1, 1, 0, s>>>(a.b, 1, 2, 3);
}
