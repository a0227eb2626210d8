#pragma once
// Seeded input tensors (ABI.md: uniform real values in [-1, 1), fp8 quantised with scale
// amax/448). Host-side and deterministic for (case, seed, tensor): a kernel cannot tune itself
// to fixed data, and a failing case can be replayed exactly.
#include <cstdint>
#include <string>
#include <vector>

#include "kfleet_harness/abi.h"

namespace kfleet::harness {

struct HostTensor {
  kfleet_dtype dtype = KFLEET_FP16;
  std::vector<std::uint8_t> bytes;  // the encoded elements, as the device sees them
  std::vector<double> real;         // decoded value * scale, what the references consume
  float scale = 1.0f;               // dequantisation scale (1 for fp16/bf16/fp32)
  std::size_t elements() const { return real.size(); }
};

std::size_t dtype_size(kfleet_dtype t);
const char* dtype_name(kfleet_dtype t);
bool parse_dtype(const std::string& s, kfleet_dtype* out);  // fp16 | bf16 | fp8_e4m3 | fp32

// Stream of independent seeds: one per (case name, seed, tensor index).
std::uint64_t tensor_seed(const std::string& case_name, std::uint64_t seed, int tensor_index);

// n elements of dtype, real values uniform in [-amplitude, amplitude).
HostTensor random_tensor(kfleet_dtype dtype, std::size_t n, std::uint64_t seed,
                         double amplitude = 1.0);

// n elements of dtype drawn as a problem's case draws them (problem_inputs.hpp: `init`, rows of
// `cols` elements, counter-based from `stream`), fp8 with one scale for the tensor (amax/448):
// the bytes kfleet::problems::make_case draws for the same init and stream.
struct SpecInit;
HostTensor drawn_tensor(kfleet_dtype dtype, std::size_t n, std::size_t cols, const SpecInit& init,
                        std::uint64_t stream);

// Real values x encoded to dtype (fp8: one scale, amax / 448).
HostTensor encoded_tensor(kfleet_dtype dtype, const std::vector<double>& x);

// FNV-1a 64 of a byte range: detects a kernel writing its inputs.
std::uint64_t fnv1a64(const void* data, std::size_t n);

}  // namespace kfleet::harness
