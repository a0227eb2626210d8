#pragma once
// The recording plan for Python kernels (PYTHON.md): kfleet-measure --plan maps a
// stage's buffers in the fixed arena, as it will when it replays, and writes what the Python
// recorder needs to call the job's launch on the same buffers with the same args: per recording,
// the args struct's bytes (checked by the measurer against its own), the buffers, and the args'
// fields (tensors: address, dtype, shape; values) from which the recorder builds torch views.
// Plain C++ so the format is tested without a GPU (tests/python_plan_gtest.cpp).
#include <cstdint>
#include <string>
#include <vector>

#include "launch_list.hpp"

namespace kfleet::harness {

struct PlanRecording {
  std::string what;                // recording_name(): "correctness seed 3" | "benchmark"
  std::vector<std::uint8_t> args;  // the family's ABI args struct
  std::vector<FixedBuffer> buffers;
  std::string fields;              // "" : args_fields_json(family, args)
};

// {"tensors":[{"name","va","bytes","dtype","shape"}...],"values":{...}} for `family`'s args
// struct in `args`, or "" with *error set (wrong size, an unknown dtype).
std::string args_fields_json(const std::string& family, const std::vector<std::uint8_t>& args,
                             std::string* error);

struct ProblemSpec;
struct SpecCase;

// The fields of a problem of the library (family "problem"): its tensors by the spec's slot
// names (then "workspace"), its dims and scalars by name, "problem", "problem_version",
// "workspace_bytes" and "abi_version", read from the kfleet_problem_args bytes in `args`; ""
// with *error set (wrong size, a name two fields share).
std::string problem_fields_json(const ProblemSpec& spec, const SpecCase& c,
                                const std::vector<std::uint8_t>& args, std::string* error);

// The whole plan, one JSON object: {"type":"plan","version":1,"family","arena":[lo,hi],
// "recordings":[{"what","args","buffers","fields"}...]}; "" with *error on a bad args struct.
// A recording's `fields` may be given (a problem's, from problem_fields_json); else they are
// the family's, from its args.
std::string plan_json(const std::string& family, std::uint64_t arena_lo, std::uint64_t arena_hi,
                      const std::vector<PlanRecording>& recordings, std::string* error);

}  // namespace kfleet::harness
