// problem.yaml's vocabulary: the keys of each object level and the enum values. The parser
// checks against these, and problem_schema_gtest checks docs/problem-schema.json against them.
#include "kfleet/common/problem.hpp"

namespace kfleet::problem_vocab {

const std::vector<std::string>& dtypes() {
  static const std::vector<std::string> v = {"bf16", "fp16", "fp32", "fp8_e4m3", "int32", "int64"};
  return v;
}
const std::vector<std::string>& scalar_dtypes() {
  static const std::vector<std::string> v = {"fp32", "fp64", "int32", "int64"};
  return v;
}
const std::vector<std::string>& dists() {
  static const std::vector<std::string> v = {"normal", "uniform", "int", "group_ends", "scale"};
  return v;
}
const std::vector<std::string>& check_kinds() {
  static const std::vector<std::string> v = {"tolerance", "exact", "topk"};
  return v;
}
const std::vector<std::string>& lazy_kinds() {
  static const std::vector<std::string> v = {"zeros", "copy", "mean", "iota"};
  return v;
}
const std::vector<std::string>& abis() {
  static const std::vector<std::string> v = {"generic", "attention", "scaled_mm"};
  return v;
}
const std::vector<std::string>& languages() {
  static const std::vector<std::string> v = {"cuda", "hip"};
  return v;
}
const std::vector<std::string>& layouts() {
  static const std::vector<std::string> v = {"row_major"};
  return v;
}

const std::vector<Level>& key_tables() {
  static const std::vector<Level> t = {
      {"", {"problem", "version", "summary", "abi", "dims", "scalars", "inputs", "outputs",
            "workspace", "flops", "bytes", "cases", "reference", "kernels"}},
      {"scalars[]", {"name", "dtype", "value", "doc"}},
      {"inputs[]", {"name", "dtype", "shape", "layout", "init", "scaled_by", "doc"}},
      {"inputs[].init",
       {"dist", "mean", "std", "min", "max", "sorted", "unique", "total", "block_amplitude",
        "row_scale", "row_offset", "neg_inf", "outliers", "step"}},
      {"inputs[].init.outliers", {"columns", "min", "max"}},
      {"inputs[].scaled_by", {"tensor", "block", "scalar"}},
      {"outputs[]", {"name", "dtype", "shape", "layout", "in_place_of", "check", "lazy", "doc"}},
      {"outputs[].check", {"kind", "atol", "rtol", "max_abs", "rel_l2", "of", "largest"}},
      {"outputs[].lazy[]", {"copy"}},
      {"cases[]", {"name", "dims", "scalars", "required", "doc", "init", "check"}},
      {"reference", {"cpu", "cuda", "hip"}},
      {"kernels[]", {"name", "source", "languages"}},
  };
  return t;
}

}  // namespace kfleet::problem_vocab
