#include "python_plan.hpp"

#include <cstring>

#include <set>

#include "inputs.hpp"
#include "json_line.hpp"
#include "kfleet_harness/abi.h"
#include "problem_spec.hpp"

namespace kfleet::harness {
namespace {

// The family ABI's dtypes (abi.h) and the problem ABI's (problem_abi.h) share these codes.
static_assert(KFLEET_FP16 == 0 && KFLEET_BF16 == 1 && KFLEET_FP8_E4M3 == 2 && KFLEET_FP32 == 3 &&
              KFLEET_INT32 == 4 && KFLEET_INT64 == 5);

// The dtype's name (inputs.hpp), or nullptr for a value that is none of them.
const char* dtype_name(int t) {
  return t >= KFLEET_FP16 && t <= KFLEET_INT64 ? harness::dtype_name(static_cast<kfleet_dtype>(t)) : nullptr;
}

std::uint64_t dtype_bytes(int t) {
  return t == KFLEET_FP8_E4M3 ? 1 : (t == KFLEET_FP32 || t == KFLEET_INT32) ? 4 : t == KFLEET_INT64 ? 8 : 2;
}

std::string u64(std::uint64_t v) { return std::to_string(v); }

class Fields {
 public:
  // A tensor over the buffer at `ptr`; a null pointer is an absent optional tensor.
  bool tensor(const char* name, const void* ptr, int dtype, std::vector<std::uint64_t> shape,
              const char* role = nullptr) {
    const char* dn = dtype < 0 ? "u8" : dtype_name(dtype);
    if (!dn) {
      error = std::string("tensor ") + name + " has dtype " + std::to_string(dtype) + ", which the plan cannot name";
      return false;
    }
    std::uint64_t n = dtype < 0 ? 1 : dtype_bytes(dtype);
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
      n *= shape[i];
      s += (i ? "," : "") + u64(shape[i]);
    }
    const auto va = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(ptr));
    tensors_ += std::string(tensors_.empty() ? "" : ",") + "{\"name\":" + JsonLine::quote(name) +
                ",\"va\":" + u64(va) + ",\"bytes\":" + u64(ptr ? n : 0) + ",\"dtype\":" +
                JsonLine::quote(dn) + ",\"shape\":" + s + "]" +
                (role ? std::string(",\"role\":") + JsonLine::quote(role) : std::string()) + "}";
    return true;
  }
  void value(const char* name, const std::string& json) {
    values_ += std::string(values_.empty() ? "" : ",") + JsonLine::quote(name) + ":" + json;
  }
  void integer(const char* name, long long v) { value(name, std::to_string(v)); }
  void number(const char* name, float v) { value(name, JsonLine::number(v)); }  // %.9g: exact
  bool dtype(const char* name, int t) {
    if (!dtype_name(t)) {
      error = std::string(name) + " " + std::to_string(t) + " is not a dtype the plan can name";
      return false;
    }
    value(name, JsonLine::quote(dtype_name(t)));
    return true;
  }
  std::string json() const { return "{\"tensors\":[" + tensors_ + "],\"values\":{" + values_ + "}}"; }
  std::string error;

 private:
  std::string tensors_, values_;
};

template <typename T>
bool read_args(const std::vector<std::uint8_t>& bytes, T* out, const char* family, std::string* error) {
  if (bytes.size() != sizeof(T)) {
    *error = std::string("the ") + family + " args are " + std::to_string(bytes.size()) +
             " bytes, not " + std::to_string(sizeof(T));
    return false;
  }
  std::memcpy(out, bytes.data(), sizeof(T));
  return true;
}

std::uint64_t dim(int v) { return v < 0 ? 0 : static_cast<std::uint64_t>(v); }

}  // namespace

std::string args_fields_json(const std::string& family, const std::vector<std::uint8_t>& args,
                             std::string* error) {
  Fields f;
  bool ok = true;
  if (family == "attention") {
    kfleet_attention_args a{};
    if (!read_args(args, &a, "attention", error)) return "";
    const std::vector<std::uint64_t> bhsd = {dim(a.batch), dim(a.heads), dim(a.seq_len), dim(a.head_dim)};
    ok = f.tensor("q", a.q, a.q_dtype, bhsd) && f.tensor("k", a.k, a.kv_dtype, bhsd) &&
         f.tensor("v", a.v, a.kv_dtype, bhsd) && f.tensor("o", a.o, a.out_dtype, bhsd) &&
         f.tensor("workspace", a.workspace, -1, {a.workspace_bytes});
    f.integer("abi_version", a.abi_version);
    f.integer("batch", a.batch);
    f.integer("heads", a.heads);
    f.integer("seq_len", a.seq_len);
    f.integer("head_dim", a.head_dim);
    f.value("causal", a.causal ? "true" : "false");
    ok = ok && f.dtype("q_dtype", a.q_dtype) && f.dtype("kv_dtype", a.kv_dtype) &&
         f.dtype("out_dtype", a.out_dtype);
    f.number("q_scale", a.q_scale);
    f.number("k_scale", a.k_scale);
    f.number("v_scale", a.v_scale);
    f.number("softmax_scale", a.softmax_scale);
    f.integer("workspace_bytes", static_cast<long long>(a.workspace_bytes));
  } else if (family == "scaled_mm") {
    kfleet_scaled_mm_args a{};
    if (!read_args(args, &a, "scaled_mm", error)) return "";
    const bool nk = a.b_layout == KFLEET_B_NK;
    ok = f.tensor("a", a.a, a.a_dtype, {dim(a.m), dim(a.k)}) &&
         f.tensor("b", a.b, a.b_dtype, nk ? std::vector<std::uint64_t>{dim(a.n), dim(a.k)}
                                          : std::vector<std::uint64_t>{dim(a.k), dim(a.n)}) &&
         f.tensor("bias", a.bias, a.out_dtype, {dim(a.n)}) &&
         f.tensor("d", a.d, a.out_dtype, {dim(a.m), dim(a.n)}) &&
         f.tensor("workspace", a.workspace, -1, {a.workspace_bytes});
    f.integer("abi_version", a.abi_version);
    f.integer("m", a.m);
    f.integer("n", a.n);
    f.integer("k", a.k);
    f.value("b_layout", nk ? "\"nk\"" : "\"kn\"");
    ok = ok && f.dtype("a_dtype", a.a_dtype) && f.dtype("b_dtype", a.b_dtype) &&
         f.dtype("out_dtype", a.out_dtype);
    f.number("a_scale", a.a_scale);
    f.number("b_scale", a.b_scale);
    f.integer("workspace_bytes", static_cast<long long>(a.workspace_bytes));
  } else {
    *error = "family " + family + " has no Python launch ABI";
    return "";
  }
  if (!ok) {
    *error = f.error;
    return "";
  }
  return f.json();
}

std::string problem_fields_json(const ProblemSpec& spec, const SpecCase& c,
                                const std::vector<std::uint8_t>& args, std::string* error) {
  kfleet_problem_args a{};
  if (!read_args(args, &a, "problem", error)) return "";
  if (a.num_tensors != static_cast<int>(spec.tensors.size()) ||
      a.num_dims != static_cast<int>(spec.dims.size()) ||
      a.num_scalars != static_cast<int>(spec.scalars.size()) || c.shapes.size() != spec.tensors.size()) {
    *error = "the args of problem " + spec.problem + " do not match its spec";
    return "";
  }
  // Every field is an attribute of one args object in Python: no two may share a name.
  std::set<std::string> names = {"workspace", "problem", "problem_version", "workspace_bytes",
                                 "abi_version"};
  auto unique = [&](const std::string& n) {
    if (names.insert(n).second) return true;
    *error = "problem " + spec.problem + " names two of its fields '" + n + "' (tensors, dims and "
             "scalars share one namespace in Python)";
    return false;
  };
  Fields f;
  for (std::size_t i = 0; i < spec.tensors.size(); ++i) {
    const kfleet_tensor& t = a.tensors[i];
    std::vector<std::uint64_t> shape;
    for (const auto d : c.shapes[i]) shape.push_back(d < 0 ? 0 : static_cast<std::uint64_t>(d));
    const char* role = t.role == KFLEET_TENSOR_OUTPUT ? "output" : t.role == KFLEET_TENSOR_INOUT ? "inout" : "input";
    if (!unique(spec.tensors[i].name) || !f.tensor(spec.tensors[i].name.c_str(), t.data, t.dtype, shape, role)) {
      if (error->empty()) *error = f.error;
      return "";
    }
  }
  if (!f.tensor("workspace", a.workspace, -1, {a.workspace_bytes})) {
    *error = f.error;
    return "";
  }
  for (std::size_t i = 0; i < spec.dims.size(); ++i) {
    if (!unique(spec.dims[i])) return "";
    f.integer(spec.dims[i].c_str(), static_cast<long long>(a.dims[i]));
  }
  for (std::size_t i = 0; i < spec.scalars.size(); ++i) {
    if (!unique(spec.scalars[i].name)) return "";
    const std::string& dt = spec.scalars[i].dtype;
    if (dt == "int32" || dt == "int64") f.integer(spec.scalars[i].name.c_str(), static_cast<long long>(a.scalars[i].i64));
    else f.value(spec.scalars[i].name.c_str(), JsonLine::number(a.scalars[i].f64));
  }
  f.value("problem", JsonLine::quote(spec.problem));
  f.integer("problem_version", a.problem_version);
  f.integer("workspace_bytes", static_cast<long long>(a.workspace_bytes));
  f.integer("abi_version", a.abi_version);
  return f.json();
}

std::string plan_json(const std::string& family, std::uint64_t arena_lo, std::uint64_t arena_hi,
                      const std::vector<PlanRecording>& recordings, std::string* error) {
  std::string recs;
  for (const auto& r : recordings) {
    const std::string fields = r.fields.empty() ? args_fields_json(family, r.args, error) : r.fields;
    if (fields.empty()) return "";
    std::string bufs;
    for (const auto& b : r.buffers)
      bufs += std::string(bufs.empty() ? "" : ",") + "{\"name\":" + JsonLine::quote(b.name) +
              ",\"va\":" + u64(b.va) + ",\"bytes\":" + u64(b.bytes) + "}";
    recs += std::string(recs.empty() ? "" : ",") + "{\"what\":" + JsonLine::quote(r.what) +
            ",\"args\":" + JsonLine::quote(to_hex(r.args)) + ",\"buffers\":[" + bufs +
            "],\"fields\":" + fields + "}";
  }
  return "{\"type\":\"plan\",\"version\":1,\"family\":" + JsonLine::quote(family) + ",\"arena\":[" +
         u64(arena_lo) + "," + u64(arena_hi) + "],\"recordings\":[" + recs + "]}";
}

}  // namespace kfleet::harness
