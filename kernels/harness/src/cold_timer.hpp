#pragma once
// The cold timer (PROTOCOL.md, "What a sample is"): what happens around a benchmark's timed
// window. prepare() is everything outside it: new input content, a poisoned output, inputs
// read-only, a cold L2, an idle device. time() is the window: one launch on the legacy default
// stream between two events, then a bounded wait for the device to go idle (a persistent kernel
// never lets it), then the inputs writable again. Host timestamps come from the tracer's clock
// when there is one. The benchmark stage (benchmark.cu) decides when each runs and what a sample
// is.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "harness.hpp"
#include "replay_mode.hpp"  // the graph API

namespace kfleet::harness {

constexpr std::size_t kMinFlushBytes = 64u << 20;  // the L2 flush's least size

// One timed launch: the events' time, the tracer's host stamps around it, its status.
struct Launch {
  double event_us = NAN;
  std::uint64_t t0 = 0, t_return = 0, t1 = 0;
  int status = KFLEET_OK;
};

class ColdTimer {
 public:
  ColdTimer(const Options& o, const ActivityTracer* tracer);
  ColdTimer(const ColdTimer&) = delete;
  ColdTimer& operator=(const ColdTimer&) = delete;
  ~ColdTimer();

  // The flush buffer, from the first cold sample on (warm-up runs without flushes): twice the
  // L2, at least kMinFlushBytes; none when the options turn the flush off.
  void arm_flush(const DeviceInfo& dev);
  std::size_t flush_bytes() const { return flush_bytes_; }

  // Outside the window: new input content from `input_seed`, the output poisoned, the inputs
  // made read-only (their translations warmed again), then the L2 overwritten (with
  // `flush_value`, so that no two flushes write the same bytes), and the whole device idle.
  // The flush comes last, so nothing the launch reads or writes is in the L2: an in-place slot
  // given its input again after it started warm (a compiled rope, 40 MB in place, ran 3.5 %
  // faster so on an H100, 2026-12-05), and an output poisoned after it took its writes in the
  // L2 (4 to 11 % faster); nor are the translations the flush's pages evicted warmed again.
  void prepare(Problem& p, std::uint64_t input_seed, int flush_value);

  // prepare() for --same-inputs MODE (options.hpp): the plan's draw (seed 0 of the refresh)
  // before every sample, drawn again (`draw`), copied back from the copy the first sample took
  // (`copy`, as the in-process yardstick's copy_ restores it), or left as the first sample
  // wrote it (`kept`).
  void prepare_same(Problem& p, const std::string& mode, int flush_value);

  // The window: p's launch, timed.
  Launch time(Problem& p);

  // The harness's own empty kernel, timed like a launch (calibrates the cross-check bound), and
  // issued as the job's launch is: as a graph of one node where the replay is a graph. Any kernel
  // launched on a stream but the harness's lengthened every edge of the replayed graph after it,
  // for good (0.33 us each on H100s, 2026-12-05: `--replay-bare-trigger`); a graph's did not.
  Launch time_noop(const Problem& p);

  bool read_only() const { return read_only_; }

 private:
  void poison_and_flush(Problem& p, int flush_value);
  // The inputs read-only (unless --inputs-writable) and their translations warmed again, once
  // per launch: before the flush for a sample, in time() for a warm-up launch.
  void protect_inputs();
  // --same-inputs copy: a plain device copy of every input the arena holds, as drawn now.
  void take_inputs(gpuStream_t hs);
  double elapsed_us();

  const Options& o_;
  const ActivityTracer* tracer_;
  gpuEvent_t start_{}, stop_{};
  gpuGraphExec_t noop_graph_{};  // time_noop's, for a replayed graph
  std::size_t flush_bytes_ = 0;
  std::unique_ptr<DeviceBuffer> flush_;
  bool read_only_ = false;
  struct InputCopy {
    void* input;
    std::unique_ptr<DeviceBuffer> copy;
  };
  std::vector<InputCopy> same_copies_;  // --same-inputs copy
  bool same_taken_ = false;             // --same-inputs: the plan's draw written once
};

}  // namespace kfleet::harness
