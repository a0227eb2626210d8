#include "common/exclusive.hpp"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

namespace kfleet::backends {

std::string describe_pids(const std::vector<unsigned>& pids) {
  std::string out;
  for (std::size_t i = 0; i < pids.size() && i < 3; ++i) {
    std::string name;
    std::ifstream comm("/proc/" + std::to_string(pids[i]) + "/comm");
    std::getline(comm, name);
    out += (i ? ", " : "") + std::string("pid ") + std::to_string(pids[i]) +
           (name.empty() ? "" : " (" + name + ")");
  }
  if (pids.size() > 3) out += " and " + std::to_string(pids.size() - 3) + " more";
  return out;
}

ExclusiveWait wait_for_exclusive_gpu(const std::function<Result<std::vector<unsigned>>()>& others,
                                     unsigned device, const ExclusivePolicy& policy,
                                     const std::function<bool()>& stop,
                                     const std::function<void(const std::string&)>& log) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  ExclusiveWait w;
  bool said = false;
  const std::string gpu = "GPU " + std::to_string(device);
  for (;;) {
    auto o = others();
    w.waited_s = std::chrono::duration<double>(clock::now() - t0).count();
    if (!o.ok()) {
      w.reason = "cannot tell whether " + gpu + " is free: " + o.error().message;
      return w;
    }
    w.pids = *o;
    if (w.pids.empty()) {
      w.ok = true;
      if (said) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "%s is free after %.1f s; benchmarking", gpu.c_str(), w.waited_s);
        log(buf);
      }
      return w;
    }
    if (w.waited_s >= policy.max_wait_s || (stop && stop())) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.0f s", w.waited_s);
      w.reason = gpu + " is busy: " + std::to_string(w.pids.size()) +
                 " other compute process(es) (" + describe_pids(w.pids) + ") still there after " +
                 buf + "; refusing to benchmark beside them";
      return w;
    }
    if (!said) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.0f s", policy.max_wait_s);
      log(gpu + " is busy with " + describe_pids(w.pids) + "; waiting up to " + buf +
          " for it to finish before benchmarking");
      said = true;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(policy.poll_s));
  }
}

}  // namespace kfleet::backends
