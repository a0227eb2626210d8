// Device facts for the `device` line and the roofline, device memory, and the SM clock probe.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <future>
#include <thread>

#include "harness.hpp"

namespace kfleet::harness {
#if defined(KFLEET_CUDA)  // gfx11's counters are narrow: HIP has no probe
namespace {

__global__ void sm_clock_probe(unsigned long long* out) {
  unsigned long long t0, t1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  const long long c0 = clock64();
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
  } while (t1 - t0 < 100000);  // 100 us: globaltimer's ~1 us steps then err by <= 1 %, fine
                               // enough for the throttle filter's 2 % threshold
  const long long c1 = clock64();
  out[0] = static_cast<unsigned long long>(c1 - c0);
  out[1] = t1 - t0;
  out[2] = t1;  // the GPU timer at the probe's end, paired with the host's clock (timer_rate.hpp)
}

}  // namespace
#endif

static std::vector<TimerStamp>& timer_stamps() {
  static std::vector<TimerStamp> stamps;
  return stamps;
}

std::vector<TimerStamp> take_timer_stamps() {
  std::vector<TimerStamp> taken;
  taken.swap(timer_stamps());
  return taken;
}

gpuStream_t harness_stream() {
  static gpuStream_t s = [] {
    gpuStream_t made{};
    KFLEET_GPU_CHECK(gpuStreamCreateWithFlags(&made, gpuStreamNonBlocking));
    return made;
  }();
  return s;
}

void device_sync_bounded(double timeout_s, const std::function<void()>& on_timeout) {
  auto done = std::async(std::launch::async, [] { return gpuDeviceSynchronize(); });
  if (done.wait_for(std::chrono::duration<double>(timeout_s)) != std::future_status::ready) {
    on_timeout();
    std::fflush(stdout);
    std::_Exit(1);  // the synchronising thread is still blocked: no orderly shutdown possible
  }
  const gpuError_t err = done.get();
  if (err != gpuSuccess)
    kfleet_harness_gpu_failure(static_cast<int>(err), gpuGetErrorName(err), gpuGetErrorString(err),
                               "gpuDeviceSynchronize() after the launch", __FILE__, __LINE__);
}

DeviceBuffer::DeviceBuffer(std::size_t bytes, Placement where, const std::string& name)
    : bytes_(bytes) {
  if (!bytes) return;
  if (where != Placement::plain && fixed_arena_active()) {
    p_ = fixed_alloc(bytes, where == Placement::input, name);
    if (!p_) fail_setup("could not map " + name + " (" + std::to_string(bytes) +
                        " bytes) in the replay arena");
    return;
  }
  if (where == Placement::input) p_ = protected_alloc(bytes);
  if (!p_) KFLEET_GPU_CHECK(gpuMalloc(&p_, bytes));
}

DeviceBuffer::~DeviceBuffer() {
  if (p_ && !fixed_free(p_) && !protected_free(p_)) KFLEET_GPU_CHECK(gpuFree(p_));
}

void DeviceBuffer::upload(const void* host, std::size_t bytes) {
  if (bytes > bytes_) std::abort();
  KFLEET_GPU_CHECK(gpuMemcpy(p_, host, bytes, gpuMemcpyHostToDevice));
}

std::vector<std::uint8_t> DeviceBuffer::download() const {
  std::vector<std::uint8_t> out(bytes_);
  if (bytes_) KFLEET_GPU_CHECK(gpuMemcpy(out.data(), p_, bytes_, gpuMemcpyDeviceToHost));
  return out;
}

DeviceInfo probe_device(int device) {
  int count = 0;
  KFLEET_GPU_CHECK(gpuGetDeviceCount(&count));
  if (device >= count)
    fail_setup("device " + std::to_string(device) + " requested but " + std::to_string(count) +
               " present");
  KFLEET_GPU_CHECK(gpuSetDevice(device));
  gpuDeviceProp_t prop;
  std::memset(&prop, 0, sizeof prop);
  KFLEET_GPU_CHECK(gpuGetDeviceProperties(&prop, device));
  DeviceInfo d;
  d.name = prop.name;
#if defined(KFLEET_HIP)
  d.arch = prop.gcnArchName;
  d.arch = d.arch.substr(0, d.arch.find(':'));  // "gfx1151:sramecc-:xnack-" -> "gfx1151"
#else
  d.arch = "sm_" + std::to_string(prop.major * 10 + prop.minor);
#endif
  d.mem_bytes = prop.totalGlobalMem;
  int v = 0;
  KFLEET_GPU_CHECK(gpuDeviceGetAttribute(&v, gpuDevAttrMultiProcessorCount, device));
  d.sm_count = v;
  KFLEET_GPU_CHECK(gpuDeviceGetAttribute(&v, gpuDevAttrL2CacheSize, device));
  d.l2_bytes = static_cast<std::size_t>(v);
  KFLEET_GPU_CHECK(gpuDeviceGetAttribute(&v, gpuDevAttrClockRate, device));
  d.sm_clock_mhz = v / 1000;
  KFLEET_GPU_CHECK(gpuDeviceGetAttribute(&v, gpuDevAttrMemoryClockRate, device));
  d.mem_clock_mhz = v / 1000;
  KFLEET_GPU_CHECK(gpuDeviceGetAttribute(&v, gpuDevAttrMemoryBusWidth, device));
  d.mem_bus_bits = v;
  d.peak_bw_gbs = 2.0 * d.mem_clock_mhz * 1e6 * (d.mem_bus_bits / 8.0) / 1e9;  // DDR
  d.peak_tflops = device_peaks(d.arch, d.sm_count, d.sm_clock_mhz, d.peak_bw_gbs, false).tflops;
  d.peak_tflops_fp8 = device_peaks(d.arch, d.sm_count, d.sm_clock_mhz, d.peak_bw_gbs, true).tflops;
  int runtime = 0, driver = 0;
  KFLEET_GPU_CHECK(gpuRuntimeGetVersion(&runtime));
  KFLEET_GPU_CHECK(gpuDriverGetVersion(&driver));
  JsonLine("device")
      .str("runtime", KFLEET_RUNTIME_NAME)
      .str("name", d.name)
      .str("arch", d.arch)
      .integer("sm_count", d.sm_count)
      .integer("l2_bytes", static_cast<long long>(d.l2_bytes))
      .integer("sm_clock_mhz", d.sm_clock_mhz)
      .integer("mem_clock_mhz", d.mem_clock_mhz)
      .integer("mem_bus_bits", d.mem_bus_bits)
      .integer("mem_bytes", static_cast<long long>(d.mem_bytes))
      .num("peak_bw_gbs", d.peak_bw_gbs)
      .num("peak_tflops", d.peak_tflops)
      .num("peak_tflops_fp8", d.peak_tflops_fp8)
      .integer("runtime_version", runtime)
      .integer("driver_version", driver)
      .print();
  return d;
}

double measure_sm_clock_mhz() {
#if defined(KFLEET_CUDA)
  // Never freed: a static's destructor would run after the runtime has shut down.
  static DeviceBuffer* buf = new DeviceBuffer(3 * sizeof(unsigned long long));
  gpuStream_t s = harness_stream();
  sm_clock_probe<<<1, 1, 0, s>>>(static_cast<unsigned long long*>(buf->get()));
  KFLEET_GPU_CHECK(gpuGetLastError());
  unsigned long long r[3];
  KFLEET_GPU_CHECK(gpuMemcpyAsync(r, buf->get(), sizeof r, gpuMemcpyDeviceToHost, s));
  KFLEET_GPU_CHECK(gpuStreamSynchronize(s));
  // The copy's completion lags the probe's end by a few microseconds, about the same each time;
  // timer_rate's median of slopes absorbs the rest.
  timespec host{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &host);
  timer_stamps().push_back({host.tv_sec * 1e9 + host.tv_nsec, static_cast<double>(r[2])});
  return r[1] ? 1000.0 * static_cast<double>(r[0]) / static_cast<double>(r[1]) : NAN;
#else
  return NAN;  // gfx11's counters are narrow; the agent samples clocks via amd-smi
#endif
}

}  // namespace kfleet::harness
