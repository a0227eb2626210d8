// The device side of a library problem's inputs (problem_draw.hpp): its draws, the decode its
// reference reads, and the byte comparison of the inputs' re-check.
#include "problem_draw.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "../cpu/numeric.hpp"
#include "device_codec.hpp"
#include "problem_reference.hpp"  // ref_blocks

namespace kfleet::harness::problem_draw {

namespace {

__device__ void store(void* out, kfleet_dtype t, size_t i, double x, float inv_scale) {
  if (t == KFLEET_FP32) static_cast<float*>(out)[i] = (float)x;
  else if (t == KFLEET_BF16) static_cast<uint16_t*>(out)[i] = kfleet_float_to_bf16_bits((float)x);
  else if (t == KFLEET_FP16) static_cast<uint16_t*>(out)[i] = kfleet_float_to_half_bits((float)x);
  else if (t == KFLEET_FP8_E4M3) static_cast<uint8_t*>(out)[i] = fp8_e4m3_encode_dev((float)x * inv_scale);
}

// The kernels of the launchers below (problem_draw.hpp says what each does).
__global__ void fill_real(void* out, kfleet_dtype t, size_t n, RealDraw d, std::uint64_t seed,
                          float inv_scale, const RowDraw* rows) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    store(out, t, i, draw_value(d, seed, i, rows), inv_scale);
}

// One thread per block of scales.
__global__ void fill_fp8_blocks(uint8_t* out, float* scales, size_t blocks, RealDraw d,
                                std::uint64_t seed, BlockMap m, const float* amplitudes, const RowDraw* rows) {
  for (size_t b = (size_t)blockIdx.x * blockDim.x + threadIdx.x; b < blocks; b += (size_t)gridDim.x * blockDim.x) {
    const double amp = amplitudes ? amplitudes[b] : 1.0;
    scales[b] = fp8_quantise_block(
        b, m, [&](size_t i) { return draw_value(d, seed, i, rows) * amp; },
        [&](size_t i, uint8_t code) { out[i] = code; });
  }
}

__global__ void decode_slot(const void* in, kfleet_dtype t, size_t n, const float* block_scales,
                            BlockMap m, float scalar_scale, float* out) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float x = 0;
    if (t == KFLEET_FP8_E4M3)
      x = kfleet_fp8_e4m3_to_float(static_cast<const uint8_t*>(in)[i]) *
          (block_scales ? block_scales[block_index(i, m)] : scalar_scale);
    else if (t == KFLEET_BF16) x = kfleet_bf16_bits_to_float(static_cast<const uint16_t*>(in)[i]);
    else if (t == KFLEET_FP16) x = kfleet_half_bits_to_float(static_cast<const uint16_t*>(in)[i]);
    else if (t == KFLEET_FP32) x = static_cast<const float*>(in)[i];
    else if (t == KFLEET_INT32) x = (float)static_cast<const int32_t*>(in)[i];
    else if (t == KFLEET_INT64) x = (float)static_cast<const int64_t*>(in)[i];
    out[i] = x;
  }
}

__global__ void count_bytes_differing(const std::uint8_t* a, const std::uint8_t* b, size_t n,
                                      unsigned long long* diff) {
  unsigned long long local = 0;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    local += a[i] != b[i];
  if (local) atomicAdd(diff, local);
}

}  // namespace

void launch_fill_real(gpuStream_t stream, void* out, kfleet_dtype t, std::size_t n, const RealDraw& d,
                      std::uint64_t seed, float inv_scale, const RowDraw* rows) {
  fill_real<<<1024, 256, 0, stream>>>(out, t, n, d, seed, inv_scale, rows);
  KFLEET_GPU_CHECK(gpuGetLastError());
}

void launch_fill_fp8_blocks(gpuStream_t stream, std::uint8_t* out, float* scales, std::size_t blocks,
                            const RealDraw& d, std::uint64_t seed, const BlockMap& m, const float* amplitudes,
                            const RowDraw* rows) {
  fill_fp8_blocks<<<ref_blocks(static_cast<std::int64_t>(blocks), 128), 128, 0, stream>>>(out, scales, blocks, d, seed,
                                                                                          m, amplitudes, rows);
  KFLEET_GPU_CHECK(gpuGetLastError());
}

void launch_decode_slot(gpuStream_t stream, const void* in, kfleet_dtype t, std::size_t n, const float* block_scales,
                        const BlockMap& m, float scalar_scale, float* out) {
  decode_slot<<<1024, 256, 0, stream>>>(in, t, n, block_scales, m, scalar_scale, out);
  KFLEET_GPU_CHECK(gpuGetLastError());
}

void launch_count_bytes_differing(gpuStream_t stream, const std::uint8_t* a, const std::uint8_t* b, std::size_t n,
                                  unsigned long long* diff) {
  count_bytes_differing<<<1024, 256, 0, stream>>>(a, b, n, diff);
  KFLEET_GPU_CHECK(gpuGetLastError());
}

BlockMap block_map(const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& block) {
  BlockMap m;
  m.rank = static_cast<int>(shape.size());
  for (std::size_t d = 0; d < shape.size() && d < KFLEET_PROBLEM_MAX_RANK; ++d) {
    m.shape[d] = shape[d];
    m.block[d] = d < block.size() ? block[d] : shape[d];
  }
  return m;
}

double tensor_fp8_scale(const SpecInit& in) {
  const double bound = in.dist == "normal" ? std::fabs(in.mean) + 6 * in.std
                                           : std::max(std::fabs(in.min), std::fabs(in.max));
  return bound > 0 ? bound / kFp8E4m3Max : 1.0;
}

std::vector<std::uint8_t> host_ints(const SpecTensor& t, const SpecInit& init, const SpecCase& c,
                                    std::size_t slot, std::uint64_t stream) {
  const std::size_t n = c.elements(slot);
  std::vector<std::int64_t> v;
  const std::string err = draw_int_values(init.dist == "group_ends", static_cast<std::int64_t>(init.min),
                                          static_cast<std::int64_t>(init.max), init.sorted, init.unique,
                                          c.totals[slot], n, static_cast<std::size_t>(c.shapes[slot].back()), stream, &v);
  if (!err.empty()) fail_setup("input " + t.name + ": " + err);
  const std::size_t w = t.dtype == KFLEET_INT64 ? 8 : 4;
  std::vector<std::uint8_t> bytes(n * w);
  for (std::size_t i = 0; i < n; ++i) {
    if (w == 8) {
      std::memcpy(&bytes[8 * i], &v[i], 8);
    } else {
      const auto x = static_cast<std::int32_t>(v[i]);
      std::memcpy(&bytes[4 * i], &x, 4);
    }
  }
  return bytes;
}

std::vector<std::uint8_t> download_on_harness_stream(const DeviceBuffer& b) {
  std::vector<std::uint8_t> out(b.bytes());
  if (!out.empty()) {
    KFLEET_GPU_CHECK(gpuMemcpyAsync(out.data(), b.get(), out.size(), gpuMemcpyDeviceToHost, harness_stream()));
    KFLEET_GPU_CHECK(gpuStreamSynchronize(harness_stream()));
  }
  return out;
}

}  // namespace kfleet::harness::problem_draw
