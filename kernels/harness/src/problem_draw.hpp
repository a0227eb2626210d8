// A library problem's inputs drawn on the device, decoded for its reference and compared, and
// the host side of the same work: block maps, fp8 tensor scales, integer draws, a buffer read
// back on the harness's stream (PROBLEM-ABI.md, "Problems of the library"). generic_problem.cu
// calls them. Each launch_* runs on `stream` and checks the launch; none synchronises.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../cpu/problem_inputs.hpp"
#include "../cpu/problem_spec.hpp"
#include "harness.hpp"

namespace kfleet::harness::problem_draw {

// A normal or uniform draw into a float tensor (fp8 with one scale: inv_scale = 1 / scale);
// `rows` are the draw's per-row factors (null when it has none).
void launch_fill_real(gpuStream_t stream, void* out, kfleet_dtype t, std::size_t n, const RealDraw& d,
                      std::uint64_t seed, float inv_scale, const RowDraw* rows);

// fp8 with block scales: each block's amax / 448 (times its amplitude) written to `scales`, then
// each element encoded with it (fp8_quantise_block, which the CPU side runs too).
void launch_fill_fp8_blocks(gpuStream_t stream, std::uint8_t* out, float* scales, std::size_t blocks,
                            const RealDraw& d, std::uint64_t seed, const BlockMap& m, const float* amplitudes,
                            const RowDraw* rows);

// The values the reference reads: fp8 times its scale (block or tensor), integers as values.
void launch_decode_slot(gpuStream_t stream, const void* in, kfleet_dtype t, std::size_t n, const float* block_scales,
                        const BlockMap& m, float scalar_scale, float* out);

// Adds to *diff the number of bytes at which a and b differ.
void launch_count_bytes_differing(gpuStream_t stream, const std::uint8_t* a, const std::uint8_t* b, std::size_t n,
                                  unsigned long long* diff);

BlockMap block_map(const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& block);

// The fp8 scale of a tensor scaled by one scalar: the distribution's bound / 448, fixed for the
// tensor whatever the seed (values past it saturate), so that fresh inputs keep the args that
// were recorded.
double tensor_fp8_scale(const SpecInit& in);

// Integer inputs (int, group_ends), drawn on the host with the same counter-based draws as the
// CPU side's (draw_int_values).
std::vector<std::uint8_t> host_ints(const SpecTensor& t, const SpecInit& init, const SpecCase& c, std::size_t slot,
                                    std::uint64_t stream);

// A buffer's bytes, copied on the harness's stream: between timed runs (re-checks) only the
// harness stream may show activity (PROTOCOL.md, "What a sample is"), never the legacy stream
// DeviceBuffer::download uses.
std::vector<std::uint8_t> download_on_harness_stream(const DeviceBuffer& b);

}  // namespace kfleet::harness::problem_draw
