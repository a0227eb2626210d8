#pragma once
// How a problem's inputs are drawn (PROBLEM-ABI.md, "Inputs"): counter-based, so element i of a
// tensor is a pure function of (the tensor's seed, i) and the same code runs on the host (CI
// tests the distributions) and on the device (the harness fills large tensors there, and
// regenerates them to see whether a kernel wrote an input). Header-only; plain C++17 on the host.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#if defined(__CUDACC__) || defined(__HIPCC__) || defined(__HIP__)
#define KFLEET_HD __host__ __device__
#else
#define KFLEET_HD
#endif

namespace kfleet::harness {

// A real-valued draw: normal (a = mean, b = std) or uniform (a = min, b = max), times a
// log-uniform per-block factor in [amp_lo, amp_hi] when amp_hi > 0.
struct RealDraw {
  int normal = 0;
  double a = 0, b = 1;
  double amp_lo = 0, amp_hi = 0;
};

KFLEET_HD inline std::uint64_t draw_mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Uniform in [0, 1), 53 bits, for counter i of stream `seed`.
KFLEET_HD inline double draw_unit(std::uint64_t seed, std::uint64_t i) {
  return static_cast<double>(draw_mix(seed ^ draw_mix(i)) >> 11) * 0x1.0p-53;
}

// normal: Irwin-Hall, the sum of 12 uniforms less 6 (mean 0, variance 1, within 0.01 of the
// normal CDF everywhere, tails cut at 6 std): no transcendental function, so the host and every
// device compute the same bits.
KFLEET_HD inline double draw_real(const RealDraw& d, std::uint64_t seed, std::uint64_t i) {
  if (d.normal) {
    double sum = 0;
    for (std::uint64_t j = 0; j < 12; ++j) sum += draw_unit(seed, 12 * i + j);
    return d.a + d.b * (sum - 6.0);
  }
  return d.a + (d.b - d.a) * draw_unit(seed, i);
}

// The factor of block `block` (1 when the draw has no amplitude): log-uniform in [amp_lo,
// amp_hi]. Host only (the harness uploads the factors of a tensor's blocks).
inline double draw_amplitude(const RealDraw& d, std::uint64_t seed, std::uint64_t block) {
  if (!(d.amp_hi > 0)) return 1.0;
  const double u = draw_unit(seed ^ 0x5851f42d4c957f2dULL, block);
  return std::exp(std::log(d.amp_lo) + (std::log(d.amp_hi) - std::log(d.amp_lo)) * u);
}

// An integer in [lo, hi] for counter i.
KFLEET_HD inline std::int64_t draw_int(std::uint64_t seed, std::uint64_t i, std::int64_t lo, std::int64_t hi) {
  const std::uint64_t span = static_cast<std::uint64_t>(hi - lo) + 1;
  const std::uint64_t r = draw_mix(seed ^ draw_mix(i ^ 0x2545f4914f6cdd1dULL));
  return lo + static_cast<std::int64_t>(span == 0 ? r : r % span);
}

// Blocks of a row-major tensor of rank <= 6 (fp8 block scales): block b is numbered row-major
// over the blocks, as the scale tensor holds them; edge blocks may be partial.
struct BlockMap {
  int rank = 0;
  long long shape[6] = {};
  long long block[6] = {};
};

// The block that element i lies in.
KFLEET_HD inline std::size_t block_index(std::size_t i, const BlockMap& m) {
  std::size_t b = 0, stride = 1;
  for (int d = m.rank - 1; d >= 0; --d) {
    const std::size_t extent = static_cast<std::size_t>(m.shape[d]), edge = static_cast<std::size_t>(m.block[d]);
    const std::size_t coord = i % extent;
    i /= extent;
    b += coord / edge * stride;
    stride *= (extent + edge - 1) / edge;
  }
  return b;
}

// Block b's coordinates (in blocks) into bc; returns how many positions it spans (its full
// volume, the partial edge included).
KFLEET_HD inline std::size_t block_origin(std::size_t b, const BlockMap& m, long long* bc) {
  std::size_t volume = 1;
  for (int d = m.rank - 1; d >= 0; --d) {
    const std::size_t nb = static_cast<std::size_t>((m.shape[d] + m.block[d] - 1) / m.block[d]);
    bc[d] = static_cast<long long>(b % nb);
    b /= nb;
    volume *= static_cast<std::size_t>(m.block[d]);
  }
  return volume;
}

// Position j of the block at bc: false past the tensor's edge, else its element index in *i.
KFLEET_HD inline bool block_element(const long long* bc, std::size_t j, const BlockMap& m, std::size_t* i) {
  std::size_t index = 0, stride = 1;
  for (int d = m.rank - 1; d >= 0; --d) {
    const long long c = bc[d] * m.block[d] + static_cast<long long>(j % static_cast<std::size_t>(m.block[d]));
    j /= static_cast<std::size_t>(m.block[d]);
    if (c >= m.shape[d]) return false;
    index += static_cast<std::size_t>(c) * stride;
    stride *= static_cast<std::size_t>(m.shape[d]);
  }
  *i = index;
  return true;
}

// The stream of one tensor of one case at one seed: every (problem, case, seed, slot) its own.
inline std::uint64_t input_stream(const std::string& problem, const std::string& case_name,
                                  std::uint64_t seed, int slot) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : problem + "/" + case_name) h = (h ^ c) * 0x100000001b3ULL;
  return draw_mix(h ^ draw_mix(seed * 0x100000001b3ULL + static_cast<std::uint64_t>(slot) + 1));
}

}  // namespace kfleet::harness
