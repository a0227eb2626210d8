// One of the harness's translation units: the sources below compiled together, so that the
// headers they share are compiled once (docs/building.md, "Build time"). A source that no unit
// includes is compiled on its own; a source that defines a family's entry (KFLEET_*_ENTRY) is
// left out of the units, as a job's build compiles it again with the job's own define.
#include "../cpu/amdgpu_code_object.cpp"
#include "../cpu/cpu_reference.cpp"
#include "../cpu/device_code.cpp"
#include "../cpu/inputs.cpp"
#include "../cpu/integrity.cpp"
#include "../cpu/launch_list.cpp"
#include "../cpu/metrics.cpp"
#include "../cpu/numeric.cpp"
