#pragma once
// A problem of the library (kernels/problems/<name>/problem.yaml; docs/problems.md): named
// tensors with shape expressions over named dimensions, input distributions, scalars, cases,
// roofline formulas, the check of each output and the do-nothing outputs that check must
// reject. Parsed with the job parser's error style: every issue names file:line:column: field.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kfleet/common/jobspec.hpp"  // SpecIssue
#include "kfleet/common/result.hpp"

namespace kfleet {

// An integer expression over named dimensions: literals, names, + - * / % (floor division),
// parentheses, cdiv(a, b), min(a, b), max(a, b). Parsed once; evaluated per case.
class DimExpr {
 public:
  struct Node;
  DimExpr() = default;
  // nullopt with *error set ("unknown name 'Q'", "expected ')' at 7") when text does not parse
  // or names something outside `names`.
  static std::optional<DimExpr> parse(const std::string& text, const std::vector<std::string>& names,
                                      std::string* error);
  // The value, or an error (division by zero, overflow, a name without a value).
  Result<std::int64_t> eval(const std::map<std::string, std::int64_t>& dims) const;
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;
};

// How an input's values are drawn (per case and seed). Real values are drawn first, then
// rounded to the tensor's dtype (fp8 through its scale), so references see what kernels see.
struct ProblemInit {
  std::string dist;  // normal | uniform | int | group_ends | scale
  double mean = 0, std = 1;           // normal
  double min = -1, max = 1;           // uniform; int (bounds, inclusive)
  bool sorted = false, unique = false;  // int: each row (last dimension) sorted / distinct
  std::optional<DimExpr> total;        // group_ends: the last end (the ends sum to it)
  // fp8 with block scales: each block's values multiplied by a log-uniform factor in
  // [lo, hi], so that a kernel ignoring the scales is wrong.
  std::optional<std::pair<double, double>> block_amplitude;
  // The shapes of real data at its edge (normal and uniform; docs/problems.md, "Inputs as real
  // models make them"), along each row (the last dimension):
  std::optional<std::pair<double, double>> row_scale;   // each row times a log-uniform factor
  std::optional<std::pair<double, double>> row_offset;  // each row plus a uniform offset
  std::optional<std::pair<double, double>> neg_inf;     // a uniform fraction of each row is -inf
  struct Outliers {
    int columns = 0;                // how many columns (the same in every row)
    std::vector<std::int64_t> at;   // which ones (columns: [5, 37]); empty: drawn per tensor
    double min = 0, max = 0;        // their values: +-uniform(min, max)
  };
  std::optional<Outliers> outliers;  // massive channels
  double step = 0;                   // > 0: values rounded to a multiple of it (repeats, ties)
};

// An fp8 tensor's dequantisation: per block of `block` elements (one entry per dimension) by a
// scale tensor, or per tensor by a scalar. The quantiser writes the scale (amax / 448).
struct ProblemScaledBy {
  std::string tensor;               // a fp32 input whose `init` is {dist: scale}
  std::vector<std::int64_t> block;  // block edge per dimension of the scaled tensor
  std::string scalar;               // or: a per-tensor scale scalar
};

// What an output must satisfy against the reference (the reference computed in fp64 from the
// very inputs the kernel got, compared with the output decoded from its dtype).
struct ProblemCheck {
  std::string kind;  // tolerance | exact | topk
  double atol = -1, rtol = -1, max_abs = -1, rel_l2 = -1;  // tolerance (negative: not checked)
  // A case's own widening of allclose for the scaled_mm family: + dot_rtol * sum_k |a b| of
  // each output (its sum of products' own magnitude, what a dot product's rounding is stated
  // against). Set in a case's check only.
  double dot_rtol = -1;
  std::string of;      // topk: the input whose rows are searched
  bool largest = true;  // topk: largest (true) or smallest values
};

// A do-nothing output: what a lazy or broken kernel would write; the check must reject it.
struct ProblemLazy {
  std::string kind;   // zeros | copy | mean | iota
  std::string input;  // copy: the input copied (same shape)
  std::string to_string() const { return kind == "copy" ? "copy of " + input : kind; }
};

struct ProblemTensor {
  std::string name;
  std::string dtype;   // bf16 | fp16 | fp32 | fp8_e4m3 | int32 | int64
  std::string layout = "row_major";
  std::vector<DimExpr> shape;
  std::string doc;
  // inputs
  ProblemInit init;
  std::optional<ProblemScaledBy> scaled_by;
  // outputs
  std::string in_place_of;  // the input this output overwrites ("" for its own buffer)
  ProblemCheck check;
  std::vector<ProblemLazy> lazy;
  int line = 0, column = 0;
};

struct ProblemScalar {
  std::string name;
  std::string dtype;  // fp32 | fp64 | int32 | int64
  std::optional<double> value;  // absent for a scale the quantiser sets
  std::string doc;
};

struct ProblemCase {
  std::string name;
  std::map<std::string, std::int64_t> dims;
  std::map<std::string, double> scalars;  // overrides of the scalars' values
  // Every job of the problem runs a required case (a job may add cases, never drop this one).
  bool required = false;
  std::string doc;  // where the case's shapes and distributions come from
  std::map<std::string, ProblemInit> init;  // input name -> how it is drawn in this case
  // Output name -> the tolerance bounds this case sets in place of the output's own (negative:
  // the output's). An fp8 GEMM's error grows with K, so its largest case may need a wider atol.
  std::map<std::string, ProblemCheck> check;
  int line = 0;
};

struct ProblemFile {  // a file of the library: "naive.cu" (the problem's folder) or lib:PATH
  std::string path;
  int line = 0, column = 0;
  std::string field;
};

struct ProblemKernel {
  std::string name;                    // "naive"
  ProblemFile source;
  std::vector<std::string> languages;  // cuda | hip
};

struct ProblemDef {
  std::string name;
  int version = 0;
  std::string summary;
  std::string abi = "generic";  // generic (kfleet_problem_args) | attention | scaled_mm
  std::vector<std::string> dims;
  std::vector<ProblemScalar> scalars;
  std::vector<ProblemTensor> inputs, outputs;
  std::optional<DimExpr> workspace, flops, bytes;  // workspace in bytes; roofline
  std::vector<ProblemCase> cases;
  std::map<std::string, ProblemFile> reference;  // cpu | cuda | hip -> file
  std::vector<ProblemKernel> kernels;
  std::string file;  // where it was read from

  const ProblemTensor* input(const std::string& n) const;
  const ProblemTensor* output(const std::string& n) const;
  const ProblemCase* find_case(const std::string& n) const;
  int dim_index(const std::string& n) const;  // -1 when absent

  // The tensors in the generic ABI's slot order (kfleet_problem_args.tensors): the inputs, in
  // order (an input overwritten in place is one slot, role inout), then the outputs that have
  // their own buffer, in order.
  struct Slot {
    const ProblemTensor* tensor;
    std::string role;  // input | output | inout
  };
  std::vector<Slot> abi_slots() const;
  // The case's dimensions, or an error naming a missing one.
  Result<std::vector<std::int64_t>> shape_of(const ProblemTensor& t, const ProblemCase& c) const;
  double scalar_value(const ProblemScalar& s, const ProblemCase& c) const;  // NaN: no value
  // How input `t` is drawn in case `c`: the case's own init, else the input's.
  const ProblemInit& init_of(const ProblemTensor& t, const ProblemCase& c) const;
  // What output `t` must satisfy in case `c`: its check, with the case's bounds in place.
  ProblemCheck check_of(const ProblemTensor& t, const ProblemCase& c) const;
  std::vector<std::string> required_cases() const;  // the names of the required cases, in order
};

struct ProblemParse {
  std::optional<ProblemDef> def;
  std::vector<SpecIssue> issues;
  bool ok() const { return def.has_value() && issues.empty(); }
  std::string error_text() const;  // one issue per line
};

// `file` is what issues name. Checks everything that needs no file system.
ProblemParse parse_problem(const std::string& yaml_text, const std::string& file);

// The library: every <root>/<name>/problem.yaml, in name order, each parsed, its folder name
// equal to its `problem`, and every file it names present (a source under `lib:` is found in
// root's parent, kernels/). Issues of all of them together.
struct ProblemLibrary {
  std::string root;
  std::vector<ProblemDef> problems;
  std::vector<SpecIssue> issues;
  const ProblemDef* find(const std::string& name) const;
};
ProblemLibrary load_problem_library(const std::string& root);
// The path a ProblemFile names, for a problem read from `problem_dir` in library `root`.
std::string problem_file_path(const std::string& root, const std::string& problem_dir,
                              const ProblemFile& f);

// Required cases (ProblemCase::required): every job of the problem runs them. The ones the job's
// correctness gate leaves out (none when it has every one), in the problem's order, and the
// error that names them ("" when none is missing). kfleet submit, kfleetd and the agent all say it.
std::vector<std::string> missing_required_cases(const ProblemDef& def, const JobSpec& job);
std::string missing_required_message(const ProblemDef& def, const std::vector<std::string>& missing);

// Where the library is: $KFLEET_PROBLEMS_DIR, else `fallback` (the build's source tree).
std::string problem_library_dir(const char* env_value, const std::string& fallback);

namespace problem_vocab {
const std::vector<std::string>& dtypes();         // tensor dtypes
const std::vector<std::string>& scalar_dtypes();  // fp32 | fp64 | int32 | int64
const std::vector<std::string>& dists();          // init.dist
const std::vector<std::string>& check_kinds();    // tolerance | exact | topk
const std::vector<std::string>& lazy_kinds();     // zeros | copy | mean | iota
const std::vector<std::string>& abis();           // generic | attention | scaled_mm
const std::vector<std::string>& languages();      // cuda | hip
const std::vector<std::string>& layouts();        // row_major
struct Level {
  std::string level;
  std::vector<std::string> keys;
};
const std::vector<Level>& key_tables();  // every object level of problem.yaml
}  // namespace problem_vocab

}  // namespace kfleet
