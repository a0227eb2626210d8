// One of the harness's translation units: the sources below compiled together, so that the
// headers they share are compiled once (docs/building.md, "Build time"). A source that no unit
// includes is compiled on its own; a source that defines a family's entry (KFLEET_*_ENTRY) is
// left out of the units, as a job's build compiles it again with the job's own define.
#include "../cpu/options.cpp"
#include "../cpu/problem_args.cpp"
#include "../cpu/problem_checks.cpp"
#include "../cpu/problem_cpu_references.cpp"
#include "../cpu/problem_reference_check.cpp"
#include "../cpu/problem_spec.cpp"
#include "../cpu/python_plan.cpp"
