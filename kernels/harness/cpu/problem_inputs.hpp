#pragma once
// How a problem's inputs are drawn (PROBLEM-ABI.md, "Inputs"): counter-based, so element i of a
// tensor is a pure function of (the tensor's seed, i) and the same code runs on the host (CI
// tests the distributions) and on the device (the harness fills large tensors there, and
// regenerates them to see whether a kernel wrote an input). Header-only; plain C++17 on the host.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#if defined(__CUDACC__) || defined(__HIPCC__) || defined(__HIP__)
#define KFLEET_HD __host__ __device__
#else
#define KFLEET_HD
#endif

namespace kfleet::harness {

// Arithmetic that no compiler may contract into an FMA: the host and every device must round
// each step the same way, so that an input drawn on the GPU equals the one the CPU side draws.
#if defined(__CUDA_ARCH__)
KFLEET_HD inline double draw_mul(double a, double b) { return __dmul_rn(a, b); }
KFLEET_HD inline double draw_add(double a, double b) { return __dadd_rn(a, b); }
#else
KFLEET_HD inline double draw_mul(double a, double b) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
  return a * b;
}
KFLEET_HD inline double draw_add(double a, double b) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
  return a + b;
}
#endif

constexpr int kMaxOutlierColumns = 16;

// A real-valued draw: normal (a = mean, b = std) or uniform (a = min, b = max), times a
// log-uniform per-block factor in [amp_lo, amp_hi] when amp_hi > 0 (fp8 block scales). The
// shapes of real data at its edge (docs/problems.md, "Inputs as real models make them"), per
// row (the last dimension's extent is `cols`) and column:
//   row_scale [lo, hi]     each row's values times a log-uniform factor (logits' spreads)
//   row_offset [lo, hi]    each row's values plus a uniform offset (logits' offsets, logprobs)
//   outliers               `n_outliers` columns (the same in every row: an activation's massive
//                          channels) hold +-uniform(outlier_lo, outlier_hi) instead
//   step                   values rounded to a multiple of it (repeats and ties)
//   neg_inf [lo, hi]       in each row a uniform fraction of the values is -inf (masked)
// The per-row factors and the outlier columns are drawn on the host (draw_rows,
// choose_outlier_columns); every element is then a pure function of (stream, i).
struct RealDraw {
  int normal = 0;
  double a = 0, b = 1;
  double amp_lo = 0, amp_hi = 0;
  long long cols = 1;
  double row_scale_lo = 0, row_scale_hi = 0;
  double row_offset_lo = 0, row_offset_hi = 0;
  double neg_inf_lo = 0, neg_inf_hi = 0;
  double step = 0;
  int n_outliers = 0;
  double outlier_lo = 0, outlier_hi = 0;
  long long outlier_cols[kMaxOutlierColumns] = {};
  bool per_row() const { return row_scale_hi > 0 || row_offset_lo != 0 || row_offset_hi != 0 || neg_inf_hi > 0; }
};

// What draw_rows gives each row.
struct RowDraw {
  double scale = 1, offset = 0, neg_inf = 0;
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

// An integer in [lo, hi] for counter i.
KFLEET_HD inline std::int64_t draw_int(std::uint64_t seed, std::uint64_t i, std::int64_t lo, std::int64_t hi) {
  const std::uint64_t span = static_cast<std::uint64_t>(hi - lo) + 1;
  const std::uint64_t r = draw_mix(seed ^ draw_mix(i ^ 0x2545f4914f6cdd1dULL));
  return lo + static_cast<std::int64_t>(span == 0 ? r : r % span);
}

// The sub-streams of one tensor's stream, one per kind of draw.
constexpr std::uint64_t kStreamAmplitude = 0x5851f42d4c957f2dULL;
constexpr std::uint64_t kStreamRowScale = 0x2c1b3c6d9f8e7a55ULL;
constexpr std::uint64_t kStreamRowOffset = 0x7a3d5e9c1b2f4d61ULL;
constexpr std::uint64_t kStreamRowInf = 0x41c64e6da3bc0f2bULL;
constexpr std::uint64_t kStreamInf = 0x6c8e9cf570932bd5ULL;
constexpr std::uint64_t kStreamOutlierSign = 0x1d8e4e27c47d124fULL;
constexpr std::uint64_t kStreamOutlierSize = 0x3b9ac9ff5e2f1c8dULL;
constexpr std::uint64_t kStreamOutlierCols = 0x9e6c63d0676a9a99ULL;

// normal: Irwin-Hall, the sum of 12 uniforms less 6 (mean 0, variance 1, within 0.01 of the
// normal CDF everywhere, tails cut at 6 std): no transcendental function, so the host and every
// device compute the same bits.
KFLEET_HD inline double draw_real(const RealDraw& d, std::uint64_t seed, std::uint64_t i) {
  if (d.normal) {
    double sum = 0;
    for (std::uint64_t j = 0; j < 12; ++j) sum = draw_add(sum, draw_unit(seed, 12 * i + j));
    return draw_add(d.a, draw_mul(d.b, sum - 6.0));
  }
  return draw_add(d.a, draw_mul(d.b - d.a, draw_unit(seed, i)));
}

// Element i of a tensor drawn with `d`: the base draw shaped by the row's factors (`rows`, one
// per row, from draw_rows; null when the draw has none) and the outlier columns. -inf where
// the row masks it.
KFLEET_HD inline double draw_value(const RealDraw& d, std::uint64_t seed, std::uint64_t i, const RowDraw* rows) {
  const std::uint64_t cols = d.cols > 0 ? static_cast<std::uint64_t>(d.cols) : 1;
  const std::uint64_t row = i / cols, col = i % cols;
  double x = draw_real(d, seed, i);
  if (rows) x = draw_mul(x, rows[row].scale);
  for (int k = 0; k < d.n_outliers && k < kMaxOutlierColumns; ++k) {
    if (static_cast<std::uint64_t>(d.outlier_cols[k]) != col) continue;
    const double size = draw_add(d.outlier_lo, draw_mul(d.outlier_hi - d.outlier_lo, draw_unit(seed ^ kStreamOutlierSize, i)));
    x = draw_unit(seed ^ kStreamOutlierSign, i) < 0.5 ? -size : size;
  }
  if (rows) x = draw_add(x, rows[row].offset);
  if (d.step > 0) x = draw_mul(rint(x / d.step), d.step);
  if (rows && rows[row].neg_inf > 0 && draw_unit(seed ^ kStreamInf, i) < rows[row].neg_inf) x = -INFINITY;
  return x;
}

// The factor of block `block` (1 when the draw has no amplitude): log-uniform in [amp_lo,
// amp_hi]. Host only (the harness uploads the factors of a tensor's blocks).
inline double draw_amplitude(const RealDraw& d, std::uint64_t seed, std::uint64_t block) {
  if (!(d.amp_hi > 0)) return 1.0;
  const double u = draw_unit(seed ^ kStreamAmplitude, block);
  return std::exp(std::log(d.amp_lo) + (std::log(d.amp_hi) - std::log(d.amp_lo)) * u);
}

// Each row's factors (empty when the draw has none). Host only: the harness uploads them.
inline std::vector<RowDraw> draw_rows(const RealDraw& d, std::uint64_t seed, std::size_t rows) {
  std::vector<RowDraw> out;
  if (!d.per_row()) return out;
  out.resize(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    if (d.row_scale_hi > 0) {
      const double u = draw_unit(seed ^ kStreamRowScale, r);
      out[r].scale = std::exp(std::log(d.row_scale_lo) + (std::log(d.row_scale_hi) - std::log(d.row_scale_lo)) * u);
    }
    out[r].offset = d.row_offset_lo + (d.row_offset_hi - d.row_offset_lo) * draw_unit(seed ^ kStreamRowOffset, r);
    if (d.neg_inf_hi > 0)
      out[r].neg_inf = d.neg_inf_lo + (d.neg_inf_hi - d.neg_inf_lo) * draw_unit(seed ^ kStreamRowInf, r);
  }
  return out;
}

// Which columns are the outliers: n_outliers distinct columns of [0, cols), the same in every
// row (an activation's massive channels sit at fixed positions).
inline void choose_outlier_columns(RealDraw& d, std::uint64_t seed) {
  const int n = d.n_outliers < kMaxOutlierColumns ? d.n_outliers : kMaxOutlierColumns;
  d.n_outliers = static_cast<long long>(n) <= d.cols ? n : static_cast<int>(d.cols);
  for (int k = 0; k < d.n_outliers; ++k) {
    long long c = static_cast<long long>(draw_mix(seed ^ kStreamOutlierCols ^ draw_mix(static_cast<std::uint64_t>(k))) %
                                         static_cast<std::uint64_t>(d.cols));
    for (bool taken = true; taken;) {  // the next free column
      taken = false;
      for (int j = 0; j < k; ++j) taken = taken || d.outlier_cols[j] == c;
      if (taken) c = (c + 1) % d.cols;
    }
    d.outlier_cols[k] = c;
  }
}

// OCP e4m3fn, round to nearest even, saturating to +-448 (ABI.md "Number formats"): what the
// harness stores for an fp8 input, on the device and on the host alike.
KFLEET_HD inline std::uint8_t draw_fp8_e4m3(float x) {
  const std::uint8_t sign = x < 0 ? 0x80 : 0;
  const float a = x < 0 ? -x : x;
  if (!(a < 448.0f)) return sign | 0x7E;
  if (a < 0.015625f) return sign | static_cast<std::uint8_t>(static_cast<int>(rintf(a * 512.0f)));
  int e = 0;
  const float mant = frexpf(a, &e);  // a = mant * 2^e, mant in [0.5, 1): 1.m * 2^(e - 1)
  int m = static_cast<int>(rintf((mant * 2.0f - 1.0f) * 8.0f));
  e -= 1;
  if (m == 8) {
    m = 0;
    ++e;
  }
  int code = ((e + 7) << 3) | m;
  if (code > 0x7E) code = 0x7E;
  return sign | static_cast<std::uint8_t>(code);
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

// Quantises fp8 block b of a tensor (blocks of `m`, as its scale tensor holds them): the
// block's largest magnitude sets its scale (amax / 448; 1 when the block is all zeros), then
// each element is stored as its e4m3 code. value_at(i) is element i's real value, store(i, code)
// keeps a code. Returns the scale. The harness runs it on the device, the CPU side on the host.
template <class ValueAt, class Store>
KFLEET_HD inline float fp8_quantise_block(std::size_t b, const BlockMap& m, ValueAt value_at, Store store) {
  long long bc[6] = {};
  const std::size_t volume = block_origin(b, m, bc);
  double amax = 0;
  for (std::size_t j = 0; j < volume; ++j) {
    std::size_t i = 0;
    if (!block_element(bc, j, m, &i)) continue;
    const double x = value_at(i);
    amax = fmax(amax, fabs(x));
  }
  const float scale = amax > 0 ? static_cast<float>(amax / 448.0) : 1.0f;
  for (std::size_t j = 0; j < volume; ++j) {
    std::size_t i = 0;
    if (!block_element(bc, j, m, &i)) continue;
    store(i, draw_fp8_e4m3(static_cast<float>(value_at(i) / scale)));
  }
  return scale;
}

// An integer tensor's values (host only; the harness uploads them): `int` draws in [lo, hi]
// per element (each row, the last dimension, sorted and/or of distinct values when asked), or
// `group_ends` (n - 1 draws in [0, total], sorted, then total). "" or why the draw is impossible.
inline std::string draw_int_values(bool group_ends, std::int64_t lo, std::int64_t hi, bool sorted,
                                   bool unique, std::int64_t total, std::size_t n, std::size_t row,
                                   std::uint64_t seed, std::vector<std::int64_t>* out) {
  std::vector<std::int64_t>& v = *out;
  v.assign(n, 0);
  if (group_ends) {
    for (std::size_t j = 0; j + 1 < n; ++j) v[j] = draw_int(seed, j, 0, total);
    if (n > 0) {
      std::sort(v.begin(), v.end() - 1);
      v[n - 1] = total;
    }
    return "";
  }
  if (row == 0) row = 1;
  if (unique && static_cast<double>(hi - lo) + 1 < static_cast<double>(row))
    return std::to_string(row) + " distinct values per row from [" + std::to_string(lo) + ", " +
           std::to_string(hi) + "] do not exist";
  for (std::size_t r0 = 0; r0 < n; r0 += row) {
    std::set<std::int64_t> used;
    for (std::size_t j = 0; j < row && r0 + j < n; ++j) {
      std::int64_t x = draw_int(seed, r0 + j, lo, hi);
      while (unique && used.count(x)) x = x == hi ? lo : x + 1;  // the next free value
      used.insert(x);
      v[r0 + j] = x;
    }
    if (sorted)
      std::sort(v.begin() + static_cast<std::ptrdiff_t>(r0),
                v.begin() + static_cast<std::ptrdiff_t>(std::min(n, r0 + row)));
  }
  return "";
}

// The stream of one tensor of one case at one seed: every (problem, case, seed, slot) its own.
inline std::uint64_t input_stream(const std::string& problem, const std::string& case_name,
                                  std::uint64_t seed, int slot) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : problem + "/" + case_name) h = (h ^ c) * 0x100000001b3ULL;
  return draw_mix(h ^ draw_mix(seed * 0x100000001b3ULL + static_cast<std::uint64_t>(slot) + 1));
}

}  // namespace kfleet::harness
