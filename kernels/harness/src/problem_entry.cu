// The launch function of a problem's kernel (PROBLEM-ABI.md): weak, so that a binary built
// without one (kfleet-measure, which replays) says so instead of failing to link. Its own
// translation unit: kernel.hpp declares the entry strong, and this file must not see that.
#include "harness.hpp"

#ifndef KFLEET_PROBLEM_ENTRY
#define KFLEET_PROBLEM_ENTRY kfleet_problem_launch
#endif
extern "C" __attribute__((weak)) int KFLEET_PROBLEM_ENTRY(const kfleet_problem_args*, gpuStream_t);

namespace kfleet::harness {

bool problem_kernel_linked() { return &KFLEET_PROBLEM_ENTRY != nullptr; }

int call_problem_entry(const kfleet_problem_args* args, gpuStream_t stream) {
  if (!problem_kernel_linked()) fail_setup("this binary has no kfleet_problem_launch");
  return KFLEET_PROBLEM_ENTRY(args, stream);
}

}  // namespace kfleet::harness
