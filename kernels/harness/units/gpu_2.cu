// One of the harness's translation units: the sources below compiled together, so that the
// headers they share are compiled once (docs/building.md, "Build time"). A source that no unit
// includes is compiled on its own; a source that defines a family's entry (KFLEET_*_ENTRY) is
// left out of the units, as a job's build compiles it again with the job's own define.
#include "../src/problem_ref_rmsnorm.cu"
#include "../src/problem_ref_rope.cu"
#include "../src/problem_ref_softmax.cu"
#include "../src/problem_ref_topk.cu"
#include "../src/protect.cu"
#include "../src/record.cu"
#include "../src/record_hip.cu"
#include "../src/replay.cu"
#include "../src/replay_bare.cu"
#include "../src/replay_hip.cu"
#include "../src/report.cu"
#include "../src/problem_draw.cu"
