// Device facts for the `device` line and the roofline, device memory, and the SM clock probe.
#include <cmath>
#include <cstring>

#include "harness.hpp"

namespace kfleet::harness {
namespace {

// Dense tensor-core flops per SM (CU) per clock, rounded up from the fastest dtype each
// generation has (fp8 where it exists). No attribute reports this; it only feeds the roofline
// floor, where an overestimate is the safe side (a lower floor flags fewer honest results).
double flops_per_sm_per_clock(const std::string& arch) {
  if (arch.rfind("sm_", 0) == 0) {
    const int cc = std::atoi(arch.c_str() + 3);
    if (cc >= 100) return 16384;
    if (cc >= 90) return 8192;
    if (cc >= 89) return 2048;
    if (cc >= 80) return 2048;
    return 1024;
  }
  if (arch.rfind("gfx9", 0) == 0) return 8192;   // CDNA: MI300-class fp8
  if (arch.rfind("gfx12", 0) == 0) return 2048;
  return 1024;                                   // RDNA3/3.5 WMMA fp16 and others
}

__global__ void sm_clock_probe(unsigned long long* out) {
#if defined(KFLEET_CUDA)
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
#else
  out[0] = out[1] = 0;
#endif
}

}  // namespace

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes) KFLEET_GPU_CHECK(gpuMalloc(&p_, bytes));
}

DeviceBuffer::~DeviceBuffer() {
  if (p_) KFLEET_GPU_CHECK(gpuFree(p_));
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
  d.peak_tflops = d.sm_count * (d.sm_clock_mhz * 1e6) * flops_per_sm_per_clock(d.arch) / 1e12;
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
      .integer("runtime_version", runtime)
      .integer("driver_version", driver)
      .print();
  return d;
}

double measure_sm_clock_mhz() {
#if defined(KFLEET_CUDA)
  // Never freed: a static's destructor would run after the runtime has shut down.
  static DeviceBuffer* buf = new DeviceBuffer(2 * sizeof(unsigned long long));
  sm_clock_probe<<<1, 1>>>(static_cast<unsigned long long*>(buf->get()));
  KFLEET_GPU_CHECK(gpuGetLastError());
  KFLEET_GPU_CHECK(gpuDeviceSynchronize());
  unsigned long long r[2];
  KFLEET_GPU_CHECK(gpuMemcpy(r, buf->get(), sizeof r, gpuMemcpyDeviceToHost));
  return r[1] ? 1000.0 * static_cast<double>(r[0]) / static_cast<double>(r[1]) : NAN;
#else
  return NAN;  // gfx11's counters are narrow; the agent samples clocks via amd-smi
#endif
}

}  // namespace kfleet::harness
