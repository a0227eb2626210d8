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
};

// {"tensors":[{"name","va","bytes","dtype","shape"}...],"values":{...}} for `family`'s args
// struct in `args`, or "" with *error set (wrong size, an unknown dtype).
std::string args_fields_json(const std::string& family, const std::vector<std::uint8_t>& args,
                             std::string* error);

// The whole plan, one JSON object: {"type":"plan","version":1,"family","arena":[lo,hi],
// "recordings":[{"what","args","buffers","fields"}...]}; "" with *error on a bad args struct.
std::string plan_json(const std::string& family, std::uint64_t arena_lo, std::uint64_t arena_hi,
                      const std::vector<PlanRecording>& recordings, std::string* error);

}  // namespace kfleet::harness
