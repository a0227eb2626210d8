// A do-nothing rope (scripts/gpu-problems-direct.sh): launches a kernel that writes nothing and
// returns KFLEET_OK. The harness must reject it: outputs left as poisoned ("never written"), or
// an in-place output left holding its input (its tolerance check).
#include "kfleet_harness/kernel.hpp"

namespace {

__global__ void does_nothing(kfleet_problem_args) {}

}  // namespace

extern "C" int kfleet_problem_launch(const kfleet_problem_args* args, gpuStream_t stream) {
  does_nothing<<<1, 32, 0, stream>>>(*args);
  return KFLEET_OK;
}
