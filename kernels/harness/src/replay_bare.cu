// kfleet-measure --replay-bare N (a diagnostic of the method, harness.hpp and options.hpp): the
// replay timed inside the measuring process without its sample loop, then with each step of the
// loop added to every launch; with --replay-bare-trigger, before and after one kind of launch.
// On H100s (2026-12-05) they showed the replayed graph's edges as short as in a process of its
// own until a kernel was launched on a stream other than the harness's (the legacy stream, one
// made blocking or not, before or after the graph), and about 0.33 us longer each for good after
// it; a graph of that kernel, a memset, and kernels on the harness's stream left them as they
// were. calibrate_cross_check's empty kernel had been that launch; it is now issued as a graph
// where the replay is one (docs/measurement.md). Samples and the verdict never see these launches.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "harness.hpp"
#include "replay_mode.hpp"
#include "../cpu/bench_summary.hpp"

namespace kfleet::harness {
namespace {

// The L2 flush by the SMs' own stores, as the in-process yardstick's torch fill_ makes it, beside
// cudaMemsetAsync's (kBareKernelFlush: does the memset leave the L2 as cold?).
__global__ void harness_flush_fill(uint4* p, std::size_t n, unsigned v) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    p[i] = make_uint4(v, v, v, v);
}

}  // namespace

void replay_bare_trigger(const std::string& kind) {
  if (std::find(kReplayBareTriggers.begin(), kReplayBareTriggers.end(), kind) == kReplayBareTriggers.end())
    fail_setup("--replay-bare-trigger: no launch kind '" + kind + "' here");
  gpuStream_t own{};
  gpuGraphExec_t graph{};
  if (kind == "noop-nonblocking") KFLEET_GPU_CHECK(gpuStreamCreateWithFlags(&own, gpuStreamNonBlocking));
  if (kind == "noop-blocking") KFLEET_GPU_CHECK(gpuStreamCreate(&own));
  if (kind == "noop-graph") graph = make_noop_graph();
  DeviceBuffer small(256);
  for (int i = 0; i < 9; ++i) {  // as calibrate_cross_check's nine
    if (kind == "noop-legacy") launch_harness_noop(nullptr);
    if (kind == "noop-harness") launch_harness_noop(harness_stream());
    if (own) launch_harness_noop(own);
    if (kind == "param-legacy") {
      harness_flush_fill<<<1, 1, 0, nullptr>>>(static_cast<uint4*>(small.get()), 1, 0);
      KFLEET_GPU_CHECK(gpuGetLastError());
    }
    if (graph) KFLEET_GPU_CHECK(gpuGraphLaunch(graph, nullptr));
    if (kind == "memset-legacy") KFLEET_GPU_CHECK(gpuMemsetAsync(small.get(), i, 256, nullptr));
    KFLEET_GPU_CHECK(gpuDeviceSynchronize());
  }
  if (graph) KFLEET_GPU_CHECK(gpuGraphExecDestroy(graph));
  if (own) KFLEET_GPU_CHECK(gpuStreamDestroy(own));
}

void replay_bare_runs(const Options& o, std::size_t bytes, Problem& p, ActivityTracer& tracer, const char* when,
                      unsigned with) {
  DeviceBuffer flush(bytes);
  gpuStream_t hs = harness_stream();
  gpuEvent_t a{}, b{};
  KFLEET_GPU_CHECK(gpuEventCreate(&a));
  KFLEET_GPU_CHECK(gpuEventCreate(&b));
  std::vector<std::pair<std::uint64_t, std::uint64_t>> windows;
  std::vector<double> events;
  std::vector<ActivityRecord> records;
  (void)tracer.flush();
  for (int i = 0; i < o.replay_bare + 10; ++i) {
    if (with & kBareRefresh)
      p.refresh_inputs((with & kBareSameSeed) ? 0 : (with & kBareSeedOne) ? 1 : static_cast<std::uint64_t>(i) + 1);
    if (with & kBareMallocFree) DeviceBuffer(4096).upload(&i, sizeof i);  // as refresh's row draws
    if (with & kBarePoison) p.prepare_outputs(hs);  // before the flush, as ColdTimer::prepare
    if (with & kBareKernelFlush)
      harness_flush_fill<<<1024, 256, 0, hs>>>(static_cast<uint4*>(flush.get()), bytes / sizeof(uint4),
                                               0x01010101u * static_cast<unsigned>(i & 0xff));
    else
      KFLEET_GPU_CHECK(gpuMemsetAsync(flush.get(), i & 0xff, bytes, hs));
    KFLEET_GPU_CHECK(gpuDeviceSynchronize());
    const std::uint64_t t0 = tracer.now();
    KFLEET_GPU_CHECK(gpuEventRecord(a, nullptr));
    if (p.launch(nullptr) != KFLEET_OK) break;
    KFLEET_GPU_CHECK(gpuEventRecord(b, nullptr));
    device_sync_bounded(o.idle_timeout_s, [] {});
    float ms = 0;
    KFLEET_GPU_CHECK(gpuEventElapsedTime(&ms, a, b));
    if (i >= 10) windows.push_back({t0, tracer.now()}), events.push_back(1000.0 * ms);
    if (with & kBareTracerFlush)
      for (const auto& r : tracer.flush()) records.push_back(r);
    if (with & kBareClockProbe) (void)measure_sm_clock_mhz();
  }
  if (with & kBareRefresh) p.refresh_inputs(0);  // the inputs the samples' args expect
  KFLEET_GPU_CHECK(gpuEventDestroy(a));
  KFLEET_GPU_CHECK(gpuEventDestroy(b));
  std::vector<ActivityRecord> kernels;
  for (const auto& r : tracer.flush()) records.push_back(r);
  for (const auto& r : records)
    if (r.kind == ActivityRecord::kernel_kind && r.stream != tracer.harness_stream_id()) kernels.push_back(r);
  std::sort(kernels.begin(), kernels.end(), [](const auto& x, const auto& y) { return x.start < y.start; });
  std::vector<double> spans, gaps;
  std::size_t k = 0, per_launch = 0;
  for (const auto& w : windows) {
    while (k < kernels.size() && kernels[k].start < w.first) ++k;
    std::size_t j = k;
    double gap = 0;
    for (; j < kernels.size() && kernels[j].end <= w.second; ++j)
      if (j > k) gap += (static_cast<double>(kernels[j].start) - static_cast<double>(kernels[j - 1].end)) / 1000.0;
    if (j == k) continue;
    spans.push_back((kernels[j - 1].end - kernels[k].start) / 1000.0);
    gaps.push_back(gap);
    per_launch = j - k;
    k = j;
  }
  JsonLine("replay_bare").str("case", o.case_name).str("when", when)
      .integer("launches", (long long)windows.size()).integer("kernels_per_launch", (long long)per_launch)
      .num("span_us", spans.empty() ? NAN : quantile(spans, 0.5))
      .num("gaps_us", gaps.empty() ? NAN : quantile(gaps, 0.5))
      .num("event_us", events.empty() ? NAN : quantile(events, 0.5)).print();
}

}  // namespace kfleet::harness
