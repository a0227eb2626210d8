// A do-nothing kernel for any problem of the library (jobs/problems/*-nothing.yaml): it launches
// a kernel that writes nothing and returns KFLEET_OK, so every output keeps what the harness
// left in it (poison; an in-place output, its input). The correctness gate must reject it for
// every problem, naming the output (the problem's `lazy` outputs are what the library's tests
// hold each check to failing). It launches a kernel, as a lazy kernel would: a source with no
// kernel at all stops earlier, at the resources gate, which finds nothing to gate.
#include "kfleet_harness/kernel.hpp"

namespace {

__global__ void does_nothing(kfleet_problem_args) {}

}  // namespace

extern "C" int kfleet_problem_launch(const kfleet_problem_args* args, gpuStream_t stream) {
  does_nothing<<<1, 32, 0, stream>>>(*args);
  return KFLEET_OK;
}
