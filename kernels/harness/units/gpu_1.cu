// One of the harness's translation units: the sources below compiled together, so that the
// headers they share are compiled once (docs/building.md, "Build time"). A source that no unit
// includes is compiled on its own; a source that defines a family's entry (KFLEET_*_ENTRY) is
// left out of the units, as a job's build compiles it again with the job's own define.
#include "../src/activity.cu"
#include "../src/benchmark.cu"
#include "../src/cold_timer.cu"
#include "../src/correctness.cu"
#include "../src/device.cu"
#include "../src/gpu_reference.cu"
#include "../src/main.cu"
#include "../src/plan.cu"
#include "../src/problem.cu"
#include "../src/problem_ref_fp8_block_gemm.cu"
#include "../src/problem_ref_grouped_gemm.cu"
