// A case's inputs from a definition's distributions, drawn as the harness draws them on the GPU
// (kernels/harness/cpu/problem_inputs.hpp): real values in fp64, then rounded to the tensor's
// dtype (fp8 through per-block or per-tensor scales, amax / 448), so the references and CI's
// emulations compute on exactly the values a kernel reads.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <set>

#include <tuple>

#include "numeric.hpp"
#include "problem_cpu.hpp"
#include "problem_inputs.hpp"
#include "problem_spec.hpp"

namespace kfleet::problems {
namespace {

using harness::bf16_decode;
using harness::bf16_encode;
using harness::fp16_decode;
using harness::fp16_encode;
using harness::fp8_e4m3_decode;
using harness::fp8_e4m3_encode;

std::size_t dtype_bytes(const std::string& d) {
  if (d == "fp8_e4m3") return 1;
  if (d == "bf16" || d == "fp16") return 2;
  if (d == "int64") return 8;
  return 4;
}

std::size_t count(const std::vector<std::int64_t>& shape) {
  std::size_t n = 1;
  for (auto v : shape) n *= static_cast<std::size_t>(v);
  return n;
}

// Encodes x (already a value the dtype holds exactly, except fp8: x is the code) into bytes.
void put(Tensor& t, std::size_t i, double x) {
  const std::size_t w = dtype_bytes(t.dtype);
  std::uint8_t* p = &t.bytes[i * w];
  if (t.dtype == "fp8_e4m3") { *p = static_cast<std::uint8_t>(x); return; }
  if (t.dtype == "bf16" || t.dtype == "fp16") {
    const std::uint16_t h = t.dtype == "bf16" ? bf16_encode(static_cast<float>(x)) : fp16_encode(static_cast<float>(x));
    std::memcpy(p, &h, 2);
  } else if (t.dtype == "fp32") {
    const float f = static_cast<float>(x);
    std::memcpy(p, &f, 4);
  } else if (t.dtype == "int32") {
    const auto v = static_cast<std::int32_t>(x);
    std::memcpy(p, &v, 4);
  } else {
    const auto v = static_cast<std::int64_t>(x);
    std::memcpy(p, &v, 8);
  }
}

Tensor blank(const std::string& dtype, std::vector<std::int64_t> shape) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.real.assign(count(t.shape), 0.0);
  t.bytes.assign(t.real.size() * dtype_bytes(dtype), 0);
  return t;
}

// The block index of element i of a tensor of `shape`, for blocks of `block`.
std::size_t block_of(std::size_t i, const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& block) {
  std::size_t b = 0, stride = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    const auto coord = static_cast<std::int64_t>(i % static_cast<std::size_t>(shape[d]));
    i /= static_cast<std::size_t>(shape[d]);
    const auto nb = static_cast<std::size_t>((shape[d] + block[d] - 1) / block[d]);
    b += static_cast<std::size_t>(coord / block[d]) * stride;
    stride *= nb;
  }
  return b;
}

// Quantises real values x to fp8 with one scale per group (groups[i] is x[i]'s group).
void quantise(Tensor& t, const std::vector<double>& x, const std::vector<std::size_t>& group,
              std::vector<float>& scales) {
  std::vector<double> amax(scales.size(), 0.0);
  for (std::size_t i = 0; i < x.size(); ++i) amax[group[i]] = std::max(amax[group[i]], std::abs(x[i]));
  for (std::size_t g = 0; g < scales.size(); ++g)
    scales[g] = static_cast<float>(amax[g] > 0 ? amax[g] / harness::kFp8E4m3Max : 1.0);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float s = scales[group[i]];
    const std::uint8_t code = fp8_e4m3_encode(x[i] / s);
    put(t, i, code);
    t.real[i] = fp8_e4m3_decode(code) * static_cast<double>(s);
  }
}

}  // namespace

double round_to(const std::string& dtype, double x) {
  if (dtype == "bf16") return bf16_decode(bf16_encode(static_cast<float>(x)));
  if (dtype == "fp16") return fp16_decode(fp16_encode(static_cast<float>(x)));
  if (dtype == "fp32") return static_cast<float>(x);
  if (dtype == "int32" || dtype == "int64") return std::nearbyint(x);
  return x;
}

Tensor rounded(const Tensor& t) {
  Tensor r = blank(t.dtype, t.shape);
  for (std::size_t i = 0; i < t.real.size(); ++i) {
    r.real[i] = round_to(t.dtype, t.real[i]);
    if (t.dtype != "fp8_e4m3") put(r, i, r.real[i]);
  }
  return r;
}

namespace {

// problem.yaml's init as the harness's spec holds it (kernels/harness/cpu/problem_spec.hpp):
// the CPU side then draws through the very functions the harness uses.
harness::SpecInit spec_init(const ProblemInit& i) {
  harness::SpecInit s;
  s.dist = i.dist;
  s.mean = i.mean;
  s.std = i.std;
  s.min = i.min;
  s.max = i.max;
  s.sorted = i.sorted;
  s.unique = i.unique;
  if (i.block_amplitude) std::tie(s.amp_lo, s.amp_hi) = *i.block_amplitude;
  if (i.row_scale) std::tie(s.row_scale_lo, s.row_scale_hi) = *i.row_scale;
  if (i.row_offset) std::tie(s.row_offset_lo, s.row_offset_hi) = *i.row_offset;
  if (i.neg_inf) std::tie(s.neg_inf_lo, s.neg_inf_hi) = *i.neg_inf;
  if (i.outliers) {
    s.outliers = i.outliers->columns;
    s.outlier_at = i.outliers->at;
    s.outlier_lo = i.outliers->min;
    s.outlier_hi = i.outliers->max;
  }
  s.step = i.step;
  return s;
}

}  // namespace

Result<Tensors> blank_outputs(const ProblemDef& def, const std::map<std::string, std::int64_t>& dims) {
  ProblemCase c;
  c.dims = dims;
  Tensors out;
  for (const auto& o : def.outputs) {
    auto shape = def.shape_of(o, c);
    if (!shape) return shape.error();
    out[o.name] = blank(o.dtype, *shape);
  }
  return out;
}

Result<CaseData> make_case(const ProblemDef& def, const ProblemCase& c, std::uint64_t seed) {
  CaseData data;
  data.def = &def;
  data.problem = def.name;
  data.case_name = c.name;
  data.dims = c.dims;
  for (const auto& s : def.scalars) data.scalars[s.name] = def.scalar_value(s, c);
  auto outputs = blank_outputs(def, c.dims);
  if (!outputs) return outputs.error();
  data.outputs = std::move(*outputs);
  for (std::size_t ti = 0; ti < def.inputs.size(); ++ti) {
    const ProblemTensor& in = def.inputs[ti];
    auto shape = def.shape_of(in, c);
    if (!shape) return shape.error();
    Tensor t = blank(in.dtype, *shape);
    const ProblemInit& init = def.init_of(in, c);
    if (init.dist == "scale") {  // written by the fp8 tensor it scales (below or above)
      if (!data.inputs.count(in.name)) data.inputs[in.name] = std::move(t);
      continue;
    }
    // The harness's stream of this slot (inputs come first in slot order) in the correctness
    // stage: salt "case", as GenericProblem draws it.
    const std::uint64_t stream = harness::input_stream(def.name, "case/" + c.name, seed, static_cast<int>(ti));
    const std::size_t n = t.elements();
    const std::size_t row = shape->empty() ? 1 : static_cast<std::size_t>(shape->back());
    const harness::SpecInit si = spec_init(init);
    if (init.dist == "int" || init.dist == "group_ends") {
      std::int64_t total = 0;
      if (init.dist == "group_ends") {
        auto v = init.total->eval(c.dims);
        if (!v) return v.error();
        total = *v;
      }
      std::vector<std::int64_t> v;
      const std::string err = harness::draw_int_values(
          init.dist == "group_ends", static_cast<std::int64_t>(init.min), static_cast<std::int64_t>(init.max),
          init.sorted, init.unique, total, n, row, stream, &v);
      if (!err.empty()) return make_error(Errc::invalid_argument, "input " + in.name + ": " + err);
      for (std::size_t i = 0; i < n; ++i) {
        t.real[i] = static_cast<double>(v[i]);
        put(t, i, t.real[i]);
      }
      data.inputs[in.name] = std::move(t);
      continue;
    }
    const harness::RealDraw d = harness::spec_real_draw(si, static_cast<long long>(row), stream);
    const std::vector<harness::RowDraw> rows = harness::draw_rows(d, stream, row ? n / row : 0);
    const harness::RowDraw* r = rows.empty() ? nullptr : rows.data();
    if (in.dtype == "fp8_e4m3" && in.scaled_by && !in.scaled_by->tensor.empty()) {
      // Block scales, exactly as the harness's fill_fp8_blocks makes them.
      const ProblemTensor* st = def.input(in.scaled_by->tensor);
      auto sshape = def.shape_of(*st, c);
      if (!sshape) return sshape.error();
      if (!data.inputs.count(st->name)) data.inputs[st->name] = blank("fp32", *sshape);
      Tensor& scales = data.inputs[st->name];
      harness::BlockMap m;
      m.rank = static_cast<int>(shape->size());
      for (std::size_t k = 0; k < shape->size(); ++k) {
        m.shape[k] = (*shape)[k];
        m.block[k] = in.scaled_by->block[k];
      }
      for (std::size_t b = 0; b < scales.elements(); ++b) {
        const double amp = static_cast<float>(harness::draw_amplitude(d, stream, b));  // as the harness uploads it
        const float scale = harness::fp8_quantise_block(
            b, m, [&](std::size_t i) { return harness::draw_value(d, stream, i, r) * amp; },
            [&](std::size_t i, std::uint8_t code) { put(t, i, code); });
        scales.real[b] = scale;
        put(scales, b, scale);
      }
      for (std::size_t i = 0; i < n; ++i)
        t.real[i] = fp8_e4m3_decode(t.bytes[i]) * scales.real[block_of(i, *shape, in.scaled_by->block)];
    } else if (in.dtype == "fp8_e4m3") {
      // One scale for the tensor (the families' fp8: amax / 448 of the whole tensor).
      std::vector<double> x(n);
      for (std::size_t i = 0; i < n; ++i) x[i] = harness::draw_value(d, stream, i, r);
      std::vector<float> scales(1);
      quantise(t, x, std::vector<std::size_t>(n, 0), scales);
      data.scalars[in.scaled_by->scalar] = scales[0];
    } else {
      for (std::size_t i = 0; i < n; ++i) {
        t.real[i] = round_to(in.dtype, harness::draw_value(d, stream, i, r));
        put(t, i, t.real[i]);
      }
    }
    data.inputs[in.name] = std::move(t);
  }
  return data;
}

}  // namespace kfleet::problems
