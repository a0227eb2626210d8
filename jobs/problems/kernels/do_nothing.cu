// A do-nothing kernel for any problem of the library (jobs/problems/*-nothing.yaml): it returns
// KFLEET_OK and writes nothing, so every output keeps what the harness left in it. The
// correctness gate must reject it for every problem (the problem's `lazy` outputs are what the
// library's tests hold each check to failing; this is the same on a GPU).
#include "kfleet_harness/kernel.hpp"

extern "C" int kfleet_problem_launch(const kfleet_problem_args* args, gpuStream_t stream) {
  (void)args;
  (void)stream;
  return KFLEET_OK;
}
