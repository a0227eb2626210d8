// Problem: inputs on the device (encoded, plus dequantised fp32 copies for the reference),
// the poisoned output, and the checks that do not depend on the family.
#include <cstring>

#include "harness.hpp"
#include "kfleet_harness/kernel.hpp"

namespace kfleet::harness {

Problem::Input& Problem::add_input(const std::string& name, HostTensor t) {
  Input in;
  in.name = name;
  in.host = std::move(t);
  in.hash = fnv1a64(in.host.bytes.data(), in.host.bytes.size());
  in.device = std::make_unique<DeviceBuffer>(in.host.bytes.size());
  in.device->upload(in.host.bytes.data(), in.host.bytes.size());
  std::vector<float> real(in.host.real.begin(), in.host.real.end());
  in.real_f32 = std::make_unique<DeviceBuffer>(real.size() * sizeof(float));
  in.real_f32->upload(real.data(), real.size() * sizeof(float));
  inputs_.push_back(std::move(in));
  return inputs_.back();
}

void Problem::allocate_output(kfleet_dtype t, std::size_t elements) {
  out_dtype_ = t;
  out_elements_ = elements;
  output_ = std::make_unique<DeviceBuffer>(elements * dtype_size(t));
  reference_ = std::make_unique<DeviceBuffer>(elements * sizeof(float));
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

std::unique_ptr<Problem> make_problem(const Options& o, std::uint64_t seed) {
  const bool attention = attention_kernel_linked(), scaled_mm = scaled_mm_kernel_linked();
  if (attention && scaled_mm) {  // both linked: the shape says which family this case is
    if (o.shape.count("M")) return make_scaled_mm_problem(o, seed);
    return make_attention_problem(o, seed);
  }
  if (attention) return make_attention_problem(o, seed);
  if (scaled_mm) return make_scaled_mm_problem(o, seed);
  fail_setup("the kernel defines neither kfleet_attention_launch nor kfleet_scaled_mm_launch "
             "(or the KFLEET_*_ENTRY it was built with); see kernels/harness/ABI.md");
}

}  // namespace kfleet::harness
