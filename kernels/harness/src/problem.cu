// Problem: inputs on the device (encoded, plus dequantised fp32 copies for the reference),
// the poisoned output, and the checks that do not depend on the family.
#include <cstring>

#include "device_codec.hpp"
#include "../cpu/problem_inputs.hpp"
#include "../cpu/problem_spec.hpp"
#include "harness.hpp"
#include "kfleet_harness/kernel.hpp"

namespace kfleet::harness {

Problem::Input& Problem::add_input(const std::string& name, HostTensor t) {
  Input in;
  in.name = name;
  in.host = std::move(t);
  in.hash = fnv1a64(in.host.bytes.data(), in.host.bytes.size());
  in.scale = in.host.scale;
  in.device = std::make_unique<DeviceBuffer>(in.host.bytes.size(), Placement::input, "input " + name);
  in.device->upload(in.host.bytes.data(), in.host.bytes.size());
  // The fp32 copy for the reference is filled only while a reference is computed
  // (compute_reference) and zeroed afterwards (scrub_reference).
  in.real_f32 = std::make_unique<DeviceBuffer>(in.host.real.size() * sizeof(float));
  KFLEET_GPU_CHECK(gpuMemset(in.real_f32->get(), 0, in.real_f32->bytes()));
  inputs_.push_back(std::move(in));
  return inputs_.back();
}

void Problem::allocate_output(kfleet_dtype t, std::size_t elements) {
  out_dtype_ = t;
  out_elements_ = elements;
  output_ = std::make_unique<DeviceBuffer>(elements * dtype_size(t), Placement::kernel, "output");
  reference_ = std::make_unique<DeviceBuffer>(elements * sizeof(float));
  KFLEET_GPU_CHECK(gpuMemset(reference_->get(), 0, reference_->bytes()));
}

std::vector<double> Problem::reference_host() const {
  const auto raw = reference_->download();
  std::vector<double> out(out_elements_);
  for (std::size_t i = 0; i < out_elements_; ++i) {
    float f;
    std::memcpy(&f, &raw[i * sizeof(float)], sizeof f);
    out[i] = f;
  }
  return out;
}

std::vector<float> Problem::output_host(std::size_t* unwritten) const {
  const auto raw = output_->download();
  std::vector<float> out(out_elements_);
  *unwritten = 0;
  for (std::size_t i = 0; i < out_elements_; ++i) {
    std::uint16_t bits;
    std::memcpy(&bits, &raw[2 * i], 2);
    if (bits == 0xFFFF) ++*unwritten;  // the poison pattern (a NaN) was never overwritten
    out[i] = out_dtype_ == KFLEET_BF16 ? kfleet_bf16_bits_to_float(bits)
                                       : kfleet_half_bits_to_float(bits);
  }
  return out;
}

std::string Problem::inputs_changed() const {
  for (const auto& in : inputs_) {
    const auto now = in.device->download();
    if (fnv1a64(now.data(), now.size()) != in.hash)
      return "input " + in.name + " was modified by the kernel";
  }
  return "";
}

std::unique_ptr<Problem> with_python_scratch(const Options& o, std::unique_ptr<Problem> p) {
  if (o.python_scratch_mib <= 0 || (o.plan_path.empty() && o.replay_path.empty())) return p;
  // torch's temporaries are a few times a case's own data (an op's result, an fp32 copy of an
  // fp16 input), held twice over: the uncaptured first call's pool keeps its blocks while each
  // capture allocates its own (the scratch allocator never hands memory back). The option's
  // megabytes plus eight times the buffers mapped so far: four each (fp8_block_gemm's eager
  // reference on its largest case, 122 MiB of buffers, needed about 850 MiB on an H200).
  std::uint64_t own = 0;
  for (const auto& b : fixed_buffers()) own += b.bytes;
  const std::uint64_t granule = 2ull << 20;
  const std::uint64_t want = (static_cast<std::uint64_t>(o.python_scratch_mib) << 20) + 8 * own;
  p->python_scratch = std::make_unique<DeviceBuffer>((want + granule - 1) / granule * granule,
                                                     Placement::kernel, "python scratch");
  return p;
}

HostTensor family_input(const Options& o, const char* family, const char* name, int slot,
                        kfleet_dtype t, std::size_t n, std::size_t cols, std::uint64_t seed) {
  const auto it = o.init.find(name);
  if (it == o.init.end()) return random_tensor(t, n, tensor_seed(o.case_name, seed, slot));
  SpecInit init;
  const std::string err = parse_init_text(it->second, t, &init);
  if (!err.empty()) fail_usage(std::string("--init ") + name + ": " + err);
  return drawn_tensor(t, n, cols, init, input_stream(family, "case/" + o.case_name, seed, slot));
}

std::string unknown_init(const Options& o, const std::vector<std::string>& inputs) {
  for (const auto& [name, _] : o.init) {
    bool known = false;
    for (const auto& i : inputs) known = known || i == name;
    if (!known) return "--init names '" + name + "', which is not an input of this family";
  }
  return "";
}

std::unique_ptr<Problem> make_problem(const Options& o, std::uint64_t seed) {
  if (!o.problem_spec.empty()) return make_generic_problem(o, seed);  // a problem of the library
  // The measuring process of replay mode links no kernel: the shape says the family.
  const bool replay = !o.replay_path.empty();
  const bool attention = replay || attention_kernel_linked(),
             scaled_mm = replay || scaled_mm_kernel_linked();
  if (attention && scaled_mm) {  // both linked: the shape says which family this case is
    if (o.shape.count("M")) return with_python_scratch(o, make_scaled_mm_problem(o, seed));
    return with_python_scratch(o, make_attention_problem(o, seed));
  }
  if (attention) return with_python_scratch(o, make_attention_problem(o, seed));
  if (scaled_mm) return with_python_scratch(o, make_scaled_mm_problem(o, seed));
  fail_setup("the kernel defines neither kfleet_attention_launch nor kfleet_scaled_mm_launch "
             "(or the KFLEET_*_ENTRY it was built with); see kernels/harness/ABI.md");
}

}  // namespace kfleet::harness

// ---- Fresh inputs on the device, the reference on demand, and nothing left to find ----
namespace kfleet::harness {
namespace {

constexpr float kFp8RefreshScale = 1.0f / 448.0f;  // refreshed values lie in [-1, 1)

__device__ std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

__global__ void generate(void* out, kfleet_dtype t, size_t n, std::uint64_t seed, float inv_scale) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    const float x = (float)((double)(mix(seed ^ (i * 0x9e3779b97f4a7c15ULL)) >> 11) * 0x1.0p-53 * 2.0 - 1.0);
    if (t == KFLEET_FP8_E4M3) static_cast<std::uint8_t*>(out)[i] = fp8_e4m3_encode_dev(x * inv_scale);
    else if (t == KFLEET_BF16) static_cast<std::uint16_t*>(out)[i] = kfleet_float_to_bf16_bits(x);
    else if (t == KFLEET_FP32) static_cast<float*>(out)[i] = x;
    else static_cast<std::uint16_t*>(out)[i] = kfleet_float_to_half_bits(x);
  }
}

__global__ void decode(const void* in, kfleet_dtype t, size_t n, float scale, float* out) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    float x;
    if (t == KFLEET_FP8_E4M3) x = kfleet_fp8_e4m3_to_float(static_cast<const std::uint8_t*>(in)[i]) * scale;
    else if (t == KFLEET_BF16) x = kfleet_bf16_bits_to_float(static_cast<const std::uint16_t*>(in)[i]);
    else if (t == KFLEET_FP32) x = static_cast<const float*>(in)[i];
    else x = kfleet_half_bits_to_float(static_cast<const std::uint16_t*>(in)[i]);
    out[i] = x;
  }
}

__global__ void count_diff(const std::uint8_t* a, const std::uint8_t* b, size_t n,
                           unsigned long long* diff) {
  unsigned long long local = 0;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    local += a[i] != b[i];
  if (local) atomicAdd(diff, local);
}

std::uint64_t tensor_refresh_seed(std::uint64_t seed, std::size_t index) {
  return seed ^ (0x632be59bd9b4e019ULL * (index + 1));
}

}  // namespace

void Problem::refresh_inputs(std::uint64_t seed) {
  refresh_seed_ = seed;
  gpuStream_t s = harness_stream();
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    Input& in = inputs_[i];
    const std::size_t n = in.host.elements();
    in.scale = in.host.dtype == KFLEET_FP8_E4M3 ? kFp8RefreshScale : 1.0f;
    generate<<<1024, 256, 0, s>>>(in.device->get(), in.host.dtype, n, tensor_refresh_seed(seed, i),
                                  1.0f / in.scale);
    KFLEET_GPU_CHECK(gpuGetLastError());
  }
  update_scales();
}

std::string Problem::inputs_changed_since_refresh() {
  static DeviceBuffer* counter = new DeviceBuffer(sizeof(unsigned long long));  // see device.cu
  gpuStream_t s = harness_stream();
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    Input& in = inputs_[i];
    DeviceBuffer again(in.device->bytes());
    generate<<<1024, 256, 0, s>>>(again.get(), in.host.dtype, in.host.elements(),
                                  tensor_refresh_seed(refresh_seed_, i), 1.0f / in.scale);
    KFLEET_GPU_CHECK(gpuMemsetAsync(counter->get(), 0, sizeof(unsigned long long), s));
    count_diff<<<1024, 256, 0, s>>>(static_cast<const std::uint8_t*>(in.device->get()),
                                    static_cast<const std::uint8_t*>(again.get()), again.bytes(),
                                    static_cast<unsigned long long*>(counter->get()));
    KFLEET_GPU_CHECK(gpuGetLastError());
    unsigned long long diff = 0;
    KFLEET_GPU_CHECK(gpuMemcpyAsync(&diff, counter->get(), sizeof diff, gpuMemcpyDeviceToHost, s));
    KFLEET_GPU_CHECK(gpuStreamSynchronize(s));
    if (diff)
      return "input " + in.name + " was modified by the kernel (" + std::to_string(diff) +
             " bytes differ from what was generated)";
  }
  return "";
}

void Problem::compute_reference(bool decode_inputs) {
  gpuStream_t s = harness_stream();
  if (decode_inputs) {
    for (auto& in : inputs_) {
      decode<<<1024, 256, 0, s>>>(in.device->get(), in.host.dtype, in.host.elements(), in.scale,
                                  static_cast<float*>(in.real_f32->get()));
      KFLEET_GPU_CHECK(gpuGetLastError());
    }
  } else {
    for (auto& in : inputs_) {
      std::vector<float> real(in.host.real.begin(), in.host.real.end());
      KFLEET_GPU_CHECK(gpuMemcpyAsync(in.real_f32->get(), real.data(), real.size() * sizeof(float),
                                      gpuMemcpyHostToDevice, s));
      KFLEET_GPU_CHECK(gpuStreamSynchronize(s));
    }
  }
  run_reference();
}

void Problem::prepare_outputs(gpuStream_t stream) {
  KFLEET_GPU_CHECK(gpuMemsetAsync(output_->get(), 0xFF, output_->bytes(), stream));
}

std::string Problem::recheck_outputs(const Options& o, float* max_abs) {
  const double atol = o.tolerance.atol >= 0 ? o.tolerance.atol : 0;
  const double rtol = o.tolerance.atol >= 0 ? o.tolerance.rtol : 0;
  compute_reference(true);
  const DeviceCheck c = check_on_device(output_->get(), out_dtype_, reference_device(), out_elements_,
                                        atol, rtol);
  scrub_reference();
  *max_abs = c.max_abs;
  if (c.unwritten) return std::to_string(c.unwritten) + " elements never written";
  if (c.nan || c.inf) return "output has NaN/Inf";
  if (atol > 0 || rtol > 0 ? c.violations != 0 : false)
    return std::to_string(c.violations) + " elements outside atol/rtol";
  if (o.tolerance.max_abs >= 0 && c.max_abs > o.tolerance.max_abs)
    return "max_abs " + std::to_string(c.max_abs) + " over the bound";
  return "";
}

void Problem::scrub_reference() {
  gpuStream_t s = harness_stream();
  KFLEET_GPU_CHECK(gpuMemsetAsync(reference_->get(), 0, reference_->bytes(), s));
  for (auto& in : inputs_)
    KFLEET_GPU_CHECK(gpuMemsetAsync(in.real_f32->get(), 0, in.real_f32->bytes(), s));
  KFLEET_GPU_CHECK(gpuStreamSynchronize(s));
}

}  // namespace kfleet::harness
