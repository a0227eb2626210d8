#pragma once
// The benchmark's exclusivity rule (MEASUREMENT.md): never time a kernel while another process
// computes on the same GPU. A busy GPU is waited for, within a bound, before refusing.
#include <functional>
#include <string>
#include <vector>

#include "kfleet/common/result.hpp"

namespace kfleet::backends {

struct ExclusiveWait {
  bool ok = false;
  std::string reason;     // why not, in one line
  double waited_s = 0;
  std::vector<unsigned> pids;  // the other processes last seen
};

struct ExclusivePolicy {
  double max_wait_s = 60;  // how long a busy GPU is waited for
  double poll_s = 1;
};

// Polls `others` (pids of other compute processes on `device`) until it is empty, the wait runs
// out, `stop` says so, or it fails. `log` hears once that we are waiting and on whom.
ExclusiveWait wait_for_exclusive_gpu(const std::function<Result<std::vector<unsigned>>()>& others,
                                     unsigned device, const ExclusivePolicy& policy,
                                     const std::function<bool()>& stop,
                                     const std::function<void(const std::string&)>& log);

// "pid 747 (python3)", with the name from /proc when this process can see it.
std::string describe_pids(const std::vector<unsigned>& pids);

}  // namespace kfleet::backends
