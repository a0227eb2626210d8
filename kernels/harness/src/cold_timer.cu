// The cold timer (cold_timer.hpp): the timed window and everything around it.
#include "cold_timer.hpp"

#include <algorithm>

namespace kfleet::harness {
namespace {

__global__ void harness_noop() {}

}  // namespace

void launch_harness_noop(gpuStream_t stream) {
  harness_noop<<<1, 1, 0, stream>>>();
  KFLEET_GPU_CHECK(gpuGetLastError());
}

ColdTimer::ColdTimer(const Options& o, const ActivityTracer* tracer) : o_(o), tracer_(tracer) {
  KFLEET_GPU_CHECK(gpuEventCreate(&start_));
  KFLEET_GPU_CHECK(gpuEventCreate(&stop_));
}

ColdTimer::~ColdTimer() {
  flush_.reset();
  if (noop_graph_) KFLEET_GPU_CHECK(gpuGraphExecDestroy(noop_graph_));
  KFLEET_GPU_CHECK(gpuEventDestroy(start_));
  KFLEET_GPU_CHECK(gpuEventDestroy(stop_));
}

void ColdTimer::arm_flush(const DeviceInfo& dev) {
  flush_bytes_ = o_.l2_flush ? std::max<std::size_t>(2 * dev.l2_bytes, kMinFlushBytes) : 0;
  flush_ = std::make_unique<DeviceBuffer>(flush_bytes_);
}

void ColdTimer::prepare(Problem& p, std::uint64_t input_seed, int flush_value) {
  p.refresh_inputs(input_seed);
  poison_and_flush(p, flush_value);
}

void ColdTimer::prepare_same(Problem& p, const std::string& mode, int flush_value) {
  gpuStream_t hs = harness_stream();
  if (mode == "draw" || !same_taken_) {
    p.refresh_inputs(0);
    if (mode == "copy") take_inputs(hs);
    same_taken_ = true;
  } else if (mode == "copy") {
    for (const auto& c : same_copies_)
      KFLEET_GPU_CHECK(gpuMemcpyAsync(c.input, c.copy->get(), c.copy->bytes(), gpuMemcpyDeviceToDevice, hs));
  }
  poison_and_flush(p, flush_value);
}

Launch ColdTimer::time(Problem& p) {
  Launch l;
  protect_inputs();  // a sample's inputs were, before its flush; a warm-up launch's are here
  l.t0 = tracer_ ? tracer_->now() : 0;
  KFLEET_GPU_CHECK(gpuEventRecord(start_, nullptr));
  set_phase("kernel");
  l.status = p.launch(nullptr);
  KFLEET_GPU_CHECK(gpuGetLastError());
  KFLEET_GPU_CHECK(gpuEventRecord(stop_, nullptr));
  l.t_return = tracer_ ? tracer_->now() : 0;
  device_sync_bounded(o_.idle_timeout_s, [&] {
    const std::string why = "the device did not go idle within " +
                            JsonLine::number(o_.idle_timeout_s) +
                            " s after the launch returned: a persistent kernel or work left "
                            "running past the stop event";
    JsonLine("bench").str("case", o_.case_name).boolean("suspect", true)
        .str("suspect_reason", why).print();
  });
  l.t1 = tracer_ ? tracer_->now() : 0;
  set_phase("setup");
  inputs_read_only(false);
  l.event_us = elapsed_us();
  return l;
}

Launch ColdTimer::time_noop(const Problem& p) {
  Launch l;
  if (p.replay && replay_is_graph(*p.replay) && !noop_graph_) noop_graph_ = make_noop_graph();
  l.t0 = tracer_->now();
  KFLEET_GPU_CHECK(gpuEventRecord(start_, nullptr));
  if (noop_graph_)
    KFLEET_GPU_CHECK(gpuGraphLaunch(noop_graph_, nullptr));
  else
    harness_noop<<<1, 1, 0, nullptr>>>();
  KFLEET_GPU_CHECK(gpuGetLastError());
  KFLEET_GPU_CHECK(gpuEventRecord(stop_, nullptr));
  l.t_return = tracer_->now();
  KFLEET_GPU_CHECK(gpuDeviceSynchronize());
  l.t1 = tracer_->now();
  l.event_us = elapsed_us();
  return l;
}

void ColdTimer::protect_inputs() {
  if (o_.inputs_writable || inputs_are_read_only_now()) return;
  read_only_ = inputs_read_only(true);  // a write to an input faults at once
  if (read_only_) warm_translations();  // the flip dropped the GPU's translations
}

void ColdTimer::poison_and_flush(Problem& p, int flush_value) {
  gpuStream_t hs = harness_stream();
  p.prepare_outputs(hs);  // poisoned outputs, in-place slots given their input again
  // The inputs read-only before the flush, not after it: the flip drops the GPU's address
  // translations and warm_translations() reads every page back, so after the flush the launch
  // finds them as a launch in a program finds its tensors', warm but for what the flush's own
  // pages evicted. Warmed after the flush, they were all warm: the Triton softmax (qwen2_vocab)
  // replayed 1.4 % faster than in-process on an H100 and as fast as in-process with no flip at
  // all (2026-12-06, measurement.md, "Found and fixed").
  KFLEET_GPU_CHECK(gpuDeviceSynchronize());  // the draws and the poison written before the flip
  protect_inputs();
  if (flush_bytes_) KFLEET_GPU_CHECK(gpuMemsetAsync(flush_->get(), flush_value, flush_bytes_, hs));
  KFLEET_GPU_CHECK(gpuDeviceSynchronize());
}

void ColdTimer::take_inputs(gpuStream_t hs) {
  for (const FixedBuffer& b : fixed_input_buffers()) {
    void* input = reinterpret_cast<void*>(static_cast<std::uintptr_t>(b.va));
    auto copy = std::make_unique<DeviceBuffer>(b.bytes, Placement::plain, "a copy of " + b.name);
    KFLEET_GPU_CHECK(gpuMemcpyAsync(copy->get(), input, b.bytes, gpuMemcpyDeviceToDevice, hs));
    same_copies_.push_back({input, std::move(copy)});
  }
  if (same_copies_.empty())
    fail_setup("--same-inputs copy: the replay arena holds no input to copy back");
}

double ColdTimer::elapsed_us() {
  float ms = 0;
  KFLEET_GPU_CHECK(gpuEventElapsedTime(&ms, start_, stop_));
  return 1000.0 * ms;
}

}  // namespace kfleet::harness
