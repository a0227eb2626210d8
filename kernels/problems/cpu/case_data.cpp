// A case's inputs from a definition's distributions. Real values are drawn in fp64, then
// rounded to the tensor's dtype (fp8 through per-block or per-tensor scales, amax / 448), so
// the references compute on exactly the values a kernel reads.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <set>

#include "numeric.hpp"
#include "problem_cpu.hpp"

namespace kfleet::problems {
namespace {

using harness::bf16_decode;
using harness::bf16_encode;
using harness::fp16_decode;
using harness::fp16_encode;
using harness::fp8_e4m3_decode;
using harness::fp8_e4m3_encode;

struct Rng {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double normal() {  // Box-Muller
    const double u1 = 1.0 - uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  std::int64_t integer(std::int64_t lo, std::int64_t hi) {  // [lo, hi]
    const auto span = static_cast<std::uint64_t>(hi - lo) + 1;
    return lo + static_cast<std::int64_t>(span == 0 ? next() : next() % span);
  }
};

std::uint64_t fnv1a(const std::string& s, std::uint64_t h = 0xcbf29ce484222325ULL) {
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

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

Tensor output_tensor(const CaseData& data, const std::string& name) {
  const ProblemTensor* o = data.def->output(name);
  if (!o) std::abort();  // a reference asked for an output its definition does not have
  ProblemCase c;
  c.dims = data.dims;
  auto shape = data.def->shape_of(*o, c);
  if (!shape) std::abort();  // the parser evaluated every case's shapes
  return blank(o->dtype, *shape);
}

Result<CaseData> make_case(const ProblemDef& def, const ProblemCase& c, std::uint64_t seed) {
  CaseData data;
  data.def = &def;
  data.case_name = c.name;
  data.dims = c.dims;
  for (const auto& s : def.scalars) data.scalars[s.name] = def.scalar_value(s, c);
  for (std::size_t ti = 0; ti < def.inputs.size(); ++ti) {
    const ProblemTensor& in = def.inputs[ti];
    auto shape = def.shape_of(in, c);
    if (!shape) return shape.error();
    Tensor t = blank(in.dtype, *shape);
    if (in.init.dist == "scale") {  // written by the fp8 tensor it scales (below or above)
      if (!data.inputs.count(in.name)) data.inputs[in.name] = std::move(t);
      continue;
    }
    Rng rng{fnv1a(def.name + "/" + c.name + "/" + in.name) ^ (seed * 0x100000001b3ULL)};
    rng.next();
    const ProblemInit& init = in.init;
    const std::size_t n = t.elements();
    const std::size_t row = shape->empty() ? 1 : static_cast<std::size_t>(shape->back());
    std::vector<double> x(n);
    if (init.dist == "normal") {
      for (auto& v : x) v = init.mean + init.std * rng.normal();
    } else if (init.dist == "uniform") {
      for (auto& v : x) v = init.min + (init.max - init.min) * rng.uniform();
    } else if (init.dist == "int") {
      const auto lo = static_cast<std::int64_t>(init.min), hi = static_cast<std::int64_t>(init.max);
      for (std::size_t r0 = 0; r0 < n; r0 += row) {
        std::set<std::int64_t> used;
        for (std::size_t j = 0; j < row; ++j) {
          std::int64_t v = rng.integer(lo, hi);
          while (init.unique && used.count(v)) v = v == hi ? lo : v + 1;  // next free value
          used.insert(v);
          x[r0 + j] = static_cast<double>(v);
        }
        if (init.sorted) std::sort(x.begin() + static_cast<std::ptrdiff_t>(r0), x.begin() + static_cast<std::ptrdiff_t>(r0 + row));
      }
    } else if (init.dist == "group_ends") {
      auto total = init.total->eval(c.dims);
      if (!total) return total.error();
      for (std::size_t j = 0; j + 1 < n; ++j) x[j] = static_cast<double>(rng.integer(0, *total));
      std::sort(x.begin(), x.end() - 1);
      x[n - 1] = static_cast<double>(*total);
    }
    if (init.block_amplitude && in.scaled_by) {
      const auto [lo, hi] = *init.block_amplitude;
      std::map<std::size_t, double> factor;
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t b = block_of(i, *shape, in.scaled_by->block);
        if (!factor.count(b)) factor[b] = std::exp(std::log(lo) + (std::log(hi) - std::log(lo)) * rng.uniform());
        x[i] *= factor[b];
      }
    }
    if (in.dtype == "fp8_e4m3") {
      const auto& sb = *in.scaled_by;
      std::vector<std::size_t> group(n, 0);
      std::vector<float> scales(1);
      Tensor* scale_tensor = nullptr;
      if (!sb.tensor.empty()) {
        const ProblemTensor* st = def.input(sb.tensor);
        auto sshape = def.shape_of(*st, c);
        if (!sshape) return sshape.error();
        if (!data.inputs.count(sb.tensor)) data.inputs[sb.tensor] = blank("fp32", *sshape);
        scale_tensor = &data.inputs[sb.tensor];
        scales.assign(scale_tensor->elements(), 1.0f);
        for (std::size_t i = 0; i < n; ++i) group[i] = block_of(i, *shape, sb.block);
      }
      quantise(t, x, group, scales);
      if (scale_tensor) {
        for (std::size_t g = 0; g < scales.size(); ++g) {
          scale_tensor->real[g] = scales[g];
          put(*scale_tensor, g, scales[g]);
        }
      } else {
        data.scalars[sb.scalar] = scales[0];
      }
    } else {
      for (std::size_t i = 0; i < n; ++i) {
        t.real[i] = round_to(in.dtype, x[i]);
        put(t, i, t.real[i]);
      }
    }
    data.inputs[in.name] = std::move(t);
  }
  return data;
}

}  // namespace kfleet::problems
