#pragma once
// The whole CLI run in-process (run_cli), as `kfleet ARGS...` with exactly the environment given,
// and what it printed; retries back off in milliseconds, not seconds.
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "kfleet/cli/app.hpp"
#include "kfleet/common/clock.hpp"

namespace kfleet::cli::test {

struct Ran {
  int code = -1;
  std::string out, err;
};

inline Ran run_kfleet(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
  args.insert(args.begin(), "kfleet");
  std::vector<const char*> argv;
  for (auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  CliIo io{out, err,
           [env](const std::string& k) -> std::optional<std::string> {
             auto it = env.find(k);
             return it == env.end() ? std::nullopt : std::optional(it->second);
           },
           disk_reader(), std::make_shared<ManualClock>(), false};
  io.backoff_initial_ms = 1;
  io.backoff_max_ms = 5;
  Ran r;
  r.code = run_cli(static_cast<int>(argv.size()), argv.data(), io);
  r.out = out.str();
  r.err = err.str();
  return r;
}

}  // namespace kfleet::cli::test
