#include "inputs.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "numeric.hpp"
#include "problem_inputs.hpp"
#include "problem_spec.hpp"

namespace kfleet::harness {
namespace {

std::uint64_t splitmix64(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

std::size_t dtype_size(kfleet_dtype t) {
  switch (t) {
    case KFLEET_FP16: case KFLEET_BF16: return 2;
    case KFLEET_FP8_E4M3: return 1;
    case KFLEET_FP32: case KFLEET_INT32: return 4;
    case KFLEET_INT64: return 8;
  }
  return 0;
}

const char* dtype_name(kfleet_dtype t) {
  switch (t) {
    case KFLEET_FP16: return "fp16";
    case KFLEET_BF16: return "bf16";
    case KFLEET_FP8_E4M3: return "fp8_e4m3";
    case KFLEET_FP32: return "fp32";
    case KFLEET_INT32: return "int32";
    case KFLEET_INT64: return "int64";
  }
  return "?";
}

bool parse_dtype(const std::string& s, kfleet_dtype* out) {
  if (s == "fp16" || s == "f16" || s == "half") *out = KFLEET_FP16;
  else if (s == "bf16") *out = KFLEET_BF16;
  else if (s == "fp8_e4m3" || s == "fp8" || s == "e4m3") *out = KFLEET_FP8_E4M3;
  else if (s == "fp32" || s == "f32") *out = KFLEET_FP32;
  else return false;
  return true;
}

std::uint64_t tensor_seed(const std::string& case_name, std::uint64_t seed, int tensor_index) {
  std::uint64_t s = fnv1a64(case_name.data(), case_name.size()) ^ (seed * 0x100000001b3ULL);
  s ^= static_cast<std::uint64_t>(tensor_index) << 56;
  splitmix64(s);
  return splitmix64(s);
}

HostTensor random_tensor(kfleet_dtype dtype, std::size_t n, std::uint64_t seed, double amplitude) {
  std::vector<double> x(n);
  for (auto& v : x) v = amplitude * (2.0 * static_cast<double>(splitmix64(seed) >> 11) * 0x1.0p-53 - 1.0);
  return encoded_tensor(dtype, x);
}

HostTensor drawn_tensor(kfleet_dtype dtype, std::size_t n, std::size_t cols, const SpecInit& init,
                        std::uint64_t stream) {
  const RealDraw d = spec_real_draw(init, static_cast<long long>(cols), stream);
  const std::vector<RowDraw> rows = draw_rows(d, stream, cols ? n / cols : 0);
  std::vector<double> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = draw_value(d, stream, i, rows.empty() ? nullptr : rows.data());
  return encoded_tensor(dtype, x);
}

HostTensor encoded_tensor(kfleet_dtype dtype, const std::vector<double>& x) {
  HostTensor t;
  t.dtype = dtype;
  const std::size_t n = x.size();
  t.bytes.resize(n * dtype_size(dtype));
  t.real.resize(n);
  if (dtype == KFLEET_FP8_E4M3) {
    double amax = 0;
    for (double v : x) amax = std::max(amax, std::abs(v));
    t.scale = static_cast<float>(amax > 0 ? amax / kFp8E4m3Max : 1.0);
    for (std::size_t i = 0; i < n; ++i) {
      t.bytes[i] = fp8_e4m3_encode(x[i] / t.scale);
      t.real[i] = fp8_e4m3_decode(t.bytes[i]) * t.scale;
    }
    return t;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const auto f = static_cast<float>(x[i]);
    if (dtype == KFLEET_FP32) {
      std::memcpy(&t.bytes[4 * i], &f, 4);
      t.real[i] = f;
      continue;
    }
    const std::uint16_t h = dtype == KFLEET_BF16 ? bf16_encode(f) : fp16_encode(f);
    std::memcpy(&t.bytes[2 * i], &h, 2);
    t.real[i] = dtype == KFLEET_BF16 ? bf16_decode(h) : fp16_decode(h);
  }
  return t;
}

std::uint64_t fnv1a64(const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

}  // namespace kfleet::harness
