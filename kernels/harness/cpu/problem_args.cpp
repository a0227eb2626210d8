#include "problem_args.hpp"

#include <cmath>
#include <cstring>

namespace kfleet::problems {

std::size_t abi_dtype_bytes(kfleet_dtype t) {
  switch (t) {
    case KFLEET_FP8_E4M3: return 1;
    case KFLEET_FP16: case KFLEET_BF16: return 2;
    case KFLEET_FP32: case KFLEET_INT32: return 4;
    case KFLEET_INT64: return 8;
  }
  return 0;
}

std::string build_problem_args(const ArgsSpec& spec, kfleet_problem_args* out) {
  std::memset(out, 0, sizeof *out);  // padding-free by design; reserved and unused entries 0
  if (spec.problem.empty() || spec.problem.size() >= KFLEET_PROBLEM_NAME_BYTES)
    return "the problem's name must have 1 to " + std::to_string(KFLEET_PROBLEM_NAME_BYTES - 1) + " characters";
  if (spec.tensors.size() > KFLEET_PROBLEM_MAX_TENSORS)
    return std::to_string(spec.tensors.size()) + " tensors; the ABI holds " + std::to_string(KFLEET_PROBLEM_MAX_TENSORS);
  if (spec.dims.size() > KFLEET_PROBLEM_MAX_DIMS)
    return std::to_string(spec.dims.size()) + " dims; the ABI holds " + std::to_string(KFLEET_PROBLEM_MAX_DIMS);
  if (spec.scalars.size() > KFLEET_PROBLEM_MAX_SCALARS)
    return std::to_string(spec.scalars.size()) + " scalars; the ABI holds " + std::to_string(KFLEET_PROBLEM_MAX_SCALARS);
  out->abi_version = KFLEET_PROBLEM_ABI_VERSION;
  out->struct_bytes = sizeof(kfleet_problem_args);
  std::memcpy(out->problem, spec.problem.data(), spec.problem.size());
  out->problem_version = spec.version;
  out->num_tensors = static_cast<std::int32_t>(spec.tensors.size());
  out->num_dims = static_cast<std::int32_t>(spec.dims.size());
  out->num_scalars = static_cast<std::int32_t>(spec.scalars.size());
  for (std::size_t i = 0; i < spec.dims.size(); ++i) out->dims[i] = spec.dims[i];
  for (std::size_t i = 0; i < spec.scalars.size(); ++i) {
    const double v = spec.scalars[i].value;
    out->scalars[i].f64 = v;
    out->scalars[i].i64 = std::isfinite(v) && std::fabs(v) < 9.2e18 ? static_cast<std::int64_t>(v) : 0;
  }
  for (std::size_t i = 0; i < spec.tensors.size(); ++i) {
    const ArgsTensor& t = spec.tensors[i];
    kfleet_tensor& k = out->tensors[i];
    if (t.shape.size() > KFLEET_PROBLEM_MAX_RANK)
      return "tensor " + std::to_string(i) + " has rank " + std::to_string(t.shape.size()) + "; the ABI holds " +
             std::to_string(KFLEET_PROBLEM_MAX_RANK);
    if (abi_dtype_bytes(t.dtype) == 0) return "tensor " + std::to_string(i) + " has an unknown dtype code";
    k.data = reinterpret_cast<void*>(static_cast<std::uintptr_t>(t.address));
    k.dtype = t.dtype;
    k.rank = static_cast<std::int32_t>(t.shape.size());
    k.role = t.role;
    std::int64_t stride = 1;
    for (std::size_t d = t.shape.size(); d-- > 0;) {
      k.shape[d] = t.shape[d];
      k.stride[d] = stride;
      stride *= t.shape[d];
    }
    k.bytes = stride * static_cast<std::int64_t>(abi_dtype_bytes(t.dtype));
  }
  out->workspace = reinterpret_cast<void*>(static_cast<std::uintptr_t>(spec.workspace));
  out->workspace_bytes = spec.workspace_bytes;
  return "";
}

}  // namespace kfleet::problems
