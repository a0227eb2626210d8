#include "problems_view.hpp"

#include <cctype>
#include <optional>
#include <cstdio>
#include <sstream>

#include "kfleet/cli/views.hpp"
#include "kfleet/common/install_layout.hpp"

namespace kfleet::cli {
namespace {

std::string shape_text(const ProblemTensor& t) {
  std::string s = "[";
  for (std::size_t i = 0; i < t.shape.size(); ++i) s += (i ? ", " : "") + t.shape[i].text();
  return s + "]";
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string pair_text(const std::pair<double, double>& p) { return "[" + num(p.first) + ", " + num(p.second) + "]"; }

std::string draw_text(const ProblemInit& i) {
  std::string s;
  if (i.dist == "normal") s = "normal(mean " + num(i.mean) + ", std " + num(i.std) + ")";
  else if (i.dist == "uniform") s = "uniform[" + num(i.min) + ", " + num(i.max) + ")";
  else if (i.dist == "int") s = "integers in [" + num(i.min) + ", " + num(i.max) + "]" + (i.unique ? ", unique" : "") + (i.sorted ? ", sorted" : "");
  else if (i.dist == "group_ends") s = "group ends: sorted, last = " + i.total->text();
  else if (i.dist == "scale") s = "fp8 scales, set by quantisation (amax / 448)";
  if (i.row_scale) s += ", each row x log-uniform" + pair_text(*i.row_scale);
  if (i.row_offset) s += ", each row + uniform" + pair_text(*i.row_offset);
  if (i.outliers) {
    std::string at;
    for (auto c : i.outliers->at) at += (at.empty() ? "" : ", ") + std::to_string(c);
    s += ", " + std::to_string(i.outliers->columns) + " outlier columns" + (at.empty() ? "" : " (" + at + ")") +
         " at +-[" + num(i.outliers->min) + ", " + num(i.outliers->max) + "]";
  }
  if (i.step > 0) s += ", in steps of " + num(i.step);
  if (i.neg_inf) s += ", a fraction " + pair_text(*i.neg_inf) + " of each row -inf";
  if (i.block_amplitude) s += ", each block x log-uniform[" + num(i.block_amplitude->first) + ", " + num(i.block_amplitude->second) + "]";
  return s;
}

std::string init_text(const ProblemTensor& t) {
  std::string s = draw_text(t.init);
  if (t.scaled_by) {
    if (!t.scaled_by->scalar.empty()) s += "; fp8 e4m3, real = code * " + t.scaled_by->scalar;
    else {
      std::string b;
      for (auto v : t.scaled_by->block) b += (b.empty() ? "" : "x") + std::to_string(v);
      s += "; fp8 e4m3, real = code * " + t.scaled_by->tensor + " of its " + b + " block";
    }
  }
  return s;
}

std::string bounds_text(const ProblemCheck& c) {
  std::string s = c.kind;
  if (c.kind == "tolerance") {
    if (c.atol >= 0) s += " |x - ref| <= " + num(c.atol) + " + " + num(c.rtol) + " * |ref|";
    if (c.atol >= 0 && c.dot_rtol >= 0) s += " + " + num(c.dot_rtol) + " * sum |terms|";
    if (c.max_abs >= 0) s += " max_abs <= " + num(c.max_abs);
    if (c.rel_l2 >= 0) s += " rel_l2 <= " + num(c.rel_l2);
  } else if (c.kind == "topk") {
    s += ": the k " + std::string(c.largest ? "largest" : "smallest") + " of each row of " + c.of +
         ", in order; tied values in any index order";
  } else {
    s += ": equal to the reference";
  }
  return s;
}

std::string check_text(const ProblemTensor& o) {
  const std::string s = bounds_text(o.check);
  std::string lazy;
  for (const auto& l : o.lazy) lazy += (lazy.empty() ? "" : ", ") + l.to_string();
  return s + "; must reject: " + lazy;
}

std::string upper(const std::string& s) {
  std::string u;
  for (char c : s) u += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return u;
}

std::string case_line(const ProblemDef& d, const ProblemCase& c) {
  std::string s;
  for (const auto& n : d.dims) s += (s.empty() ? "" : " ") + n + "=" + std::to_string(c.dims.at(n));
  for (const auto& [k, v] : c.scalars) s += " " + k + "=" + num(v);
  return s;
}

}  // namespace

std::string render_problem_list(const ProblemLibrary& lib) {
  if (lib.problems.empty()) return "no problems in " + lib.root + "\n";
  TextTable t({"NAME", "VERSION", "ABI", "CASES", "SUMMARY"});
  for (const auto& p : lib.problems)
    t.add_row({p.name, std::to_string(p.version), p.abi, std::to_string(p.cases.size()), p.summary});
  return t.render();
}

std::string render_problem_contract(const ProblemDef& d) {
  std::ostringstream o;
  o << d.name << " v" << d.version << (d.summary.empty() ? "" : ": " + d.summary) << "\n";
  o << "defined in " << d.file << "\n\n";
  if (d.abi == "generic") {
    o << "ABI: kfleet_problem_args (kfleet_harness/problem_abi.h; kernels/harness/PROBLEM-ABI.md)\n"
      << "  extern \"C\" int kfleet_problem_launch(const kfleet_problem_args* args, gpuStream_t stream);\n\n";
  } else {
    o << "ABI: the harness family " << d.abi << " (kfleet_" << d.abi << "_args, kfleet_" << d.abi
      << "_launch; kernels/harness/ABI.md); the slots below describe its fields\n\n";
  }
  o << "dims (args->dims[i]):\n";
  for (std::size_t i = 0; i < d.dims.size(); ++i) o << "  " << i << "  " << d.dims[i] << "\n";
  if (!d.scalars.empty()) {
    o << "scalars (args->scalars[i]):\n";
    TextTable t({"", "NAME", "DTYPE", "VALUE", "NOTE"});
    for (std::size_t i = 0; i < d.scalars.size(); ++i) {
      const auto& s = d.scalars[i];
      t.add_row({std::to_string(i), s.name, s.dtype, s.value ? num(*s.value) : "set by quantisation", s.doc});
    }
    std::istringstream rows(t.render());
    for (std::string line; std::getline(rows, line);) o << "  " << line << "\n";
  }
  o << "tensors (args->tensors[i], row-major):\n";
  TextTable t({"", "NAME", "ROLE", "DTYPE", "SHAPE", "VALUES / CHECK"});
  const auto slots = d.abi_slots();
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const auto& s = slots[i];
    std::string what;
    if (s.role != "output") what = init_text(*s.tensor);
    for (const auto& out : d.outputs) {
      if (out.name == s.tensor->name || out.in_place_of == s.tensor->name)
        what += (what.empty() ? "" : " -> ") + std::string("check ") + check_text(out);
    }
    t.add_row({std::to_string(i), s.tensor->name, s.role, s.tensor->dtype, shape_text(*s.tensor), what});
  }
  std::istringstream rows(t.render());
  for (std::string line; std::getline(rows, line);) o << "  " << line << "\n";
  for (const auto* list : {&d.inputs, &d.outputs}) {
    for (const auto& t2 : *list)
      if (!t2.doc.empty()) o << "  " << t2.name << ": " << t2.doc << "\n";
  }
  o << "workspace: " << (d.workspace ? d.workspace->text() : "0") << " bytes\n";
  o << "flops: " << d.flops->text() << "\nbytes: " << d.bytes->text() << "\n";
  o << "cases:\n";
  for (const auto& c : d.cases) {
    auto f = d.flops->eval(c.dims);
    auto b = d.bytes->eval(c.dims);
    o << "  " << c.name << (c.required ? " (required)" : "") << ": " << case_line(d, c) << "  ("
      << (f ? std::to_string(*f) : "?") << " flops, " << (b ? std::to_string(*b) : "?") << " bytes)\n";
    for (const auto& [name, init] : c.init) o << "    " << name << ": " << draw_text(init) << "\n";
    for (const auto& [name, chk] : c.check)
      if (const ProblemTensor* out = d.output(name)) o << "    " << name << " checked: " << bounds_text(d.check_of(*out, c)) << "\n";
    if (!c.doc.empty()) o << "    " << c.doc << "\n";
  }
  const auto required = d.required_cases();
  if (!required.empty()) {
    std::string names;
    for (const auto& r : required) names += (names.empty() ? "" : ", ") + r;
    o << "every job runs the required case" << (required.size() == 1 ? " " : "s ") << names
      << " (a job may add cases and seeds, not drop one)\n";
  }
  o << "reference:";
  for (const auto& [k, f] : d.reference) o << " " << k << " " << f.path << ";";
  o << "\n";
  for (const auto& k : d.kernels) {
    std::string langs;
    for (const auto& l : k.languages) langs += (langs.empty() ? "" : ", ") + l;
    o << "kernel " << k.name << ": " << k.source.path << " (" << langs << ")\n";
  }
  return o.str();
}

std::string render_problem_starter(const ProblemDef& d) {
  std::ostringstream o;
  o << "// Starter for problem " << d.name << " v" << d.version << " (" << d.file << ").\n"
    << "// Compiles as CUDA and as HIP; see kernels/harness/ABI.md.\n"
    << "#include <string.h>\n\n#include \"kfleet_harness/kernel.hpp\"\n\n";
  if (d.abi != "generic") {
    o << "extern \"C\" int kfleet_" << d.abi << "_launch(const kfleet_" << d.abi
      << "_args* args, gpuStream_t stream) {\n"
      << "  (void)stream;\n"
      << "  if (args->abi_version != KFLEET_ABI_VERSION) return KFLEET_UNSUPPORTED;\n"
      << "  return KFLEET_UNSUPPORTED;  // enqueue the kernel on stream, then return KFLEET_OK\n}\n";
    return o.str();
  }
  const auto slots = d.abi_slots();
  o << "namespace {\n\n// args->tensors[...]\nenum {";
  for (std::size_t i = 0; i < slots.size(); ++i) o << " " << upper(slots[i].tensor->name) << " = " << i << ",";
  o << " NUM_TENSORS = " << slots.size() << " };\n// args->dims[...]\nenum {";
  for (std::size_t i = 0; i < d.dims.size(); ++i) o << (i ? ", " : " ") << "DIM_" << upper(d.dims[i]) << " = " << i;
  o << " };\n";
  if (!d.scalars.empty()) {
    o << "// args->scalars[...] (.f64 / .i64)\nenum {";
    for (std::size_t i = 0; i < d.scalars.size(); ++i) o << (i ? ", " : " ") << "SCALAR_" << upper(d.scalars[i].name) << " = " << i;
    o << " };\n";
  }
  o << "\n__global__ void " << d.name << "_kernel(kfleet_problem_args a) {\n";
  for (const auto& s : slots) {
    o << "  // " << s.tensor->name << ": " << s.tensor->dtype << " " << shape_text(*s.tensor) << ", " << s.role
      << (s.role == "inout" ? " (read it, then overwrite it)" : s.role == "output" ? " (write every element)" : "") << "\n";
  }
  o << "  (void)a;\n}\n\n}  // namespace\n\n"
    << "extern \"C\" int kfleet_problem_launch(const kfleet_problem_args* args, gpuStream_t stream) {\n"
    << "  if (args->abi_version != KFLEET_PROBLEM_ABI_VERSION || args->num_tensors != NUM_TENSORS ||\n"
    << "      strncmp(args->problem, \"" << d.name << "\", KFLEET_PROBLEM_NAME_BYTES) != 0)\n"
    << "    return KFLEET_UNSUPPORTED;\n"
    << "  " << d.name << "_kernel<<<1, 256, 0, stream>>>(*args);  // choose the grid from args->dims\n"
    << "  return KFLEET_OK;\n}\n";
  return o.str();
}

}  // namespace kfleet::cli

namespace kfleet::cli {

std::string problems_dir(const EnvLookup& env, const std::string& dir) {
  if (!dir.empty()) return dir;
  const auto e = env ? env("KFLEET_PROBLEMS_DIR") : std::optional<std::string>();
  return problem_library_dir(e ? e->c_str() : nullptr, installed_data("kernels/problems").string());
}

nlohmann::json problem_summary_json(const ProblemDef& p) {
  nlohmann::json cases = nlohmann::json::array();
  for (const auto& c : p.cases) cases.push_back(c.name);
  return {{"name", p.name}, {"version", p.version}, {"abi", p.abi},
          {"summary", p.summary}, {"cases", cases}, {"file", p.file}};
}

nlohmann::json problem_contract_json(const ProblemDef& p) {
  nlohmann::json j = problem_summary_json(p);
  j["ref"] = p.name + "@" + std::to_string(p.version);
  nlohmann::json dims = nlohmann::json::array();
  for (std::size_t i = 0; i < p.dims.size(); ++i) dims.push_back({{"index", i}, {"name", p.dims[i]}});
  j["dims"] = dims;
  nlohmann::json scalars = nlohmann::json::array();
  for (std::size_t i = 0; i < p.scalars.size(); ++i) {
    const auto& s = p.scalars[i];
    nlohmann::json sj = {{"index", i}, {"name", s.name}, {"dtype", s.dtype}};
    if (s.value) sj["value"] = *s.value;
    scalars.push_back(sj);
  }
  j["scalars"] = scalars;
  nlohmann::json slots = nlohmann::json::array();
  const auto abi = p.abi_slots();
  for (std::size_t i = 0; i < abi.size(); ++i) {
    const auto& t = *abi[i].tensor;
    slots.push_back({{"index", i}, {"name", t.name}, {"role", abi[i].role}, {"dtype", t.dtype},
                     {"shape", shape_text(t)}});
  }
  j["slots"] = slots;
  nlohmann::json inputs = nlohmann::json::array();
  for (const auto& t : p.inputs) inputs.push_back({{"name", t.name}, {"init", init_text(t)}});
  j["inputs"] = inputs;
  nlohmann::json outputs = nlohmann::json::array();
  for (const auto& o : p.outputs) {
    nlohmann::json lazy = nlohmann::json::array();
    for (const auto& l : o.lazy) lazy.push_back(l.to_string());
    nlohmann::json oj = {{"name", o.name}, {"check", check_text(o)}, {"must_reject", lazy}};
    if (!o.in_place_of.empty()) oj["in_place_of"] = o.in_place_of;
    outputs.push_back(oj);
  }
  j["outputs"] = outputs;
  nlohmann::json cases = nlohmann::json::array();
  for (const auto& c : p.cases) {
    nlohmann::json cj = {{"name", c.name}, {"dims", c.dims}, {"required", c.required}};
    if (!c.doc.empty()) cj["doc"] = c.doc;
    if (!c.init.empty()) {
      nlohmann::json init = nlohmann::json::object();
      for (const auto& [name, i] : c.init) init[name] = draw_text(i);
      cj["init"] = init;
    }
    if (!c.check.empty()) {
      nlohmann::json check = nlohmann::json::object();
      for (const auto& [name, chk] : c.check)
        if (const ProblemTensor* out = p.output(name)) check[name] = bounds_text(p.check_of(*out, c));
      cj["check"] = check;
    }
    cases.push_back(cj);
  }
  j["cases"] = cases;
  j["required_cases"] = p.required_cases();
  if (p.flops) j["flops"] = p.flops->text();
  if (p.bytes) j["bytes"] = p.bytes->text();
  if (p.abi == "generic") {
    j["entry"] = "kfleet_problem_launch";
    std::string required;
    for (const auto& r : p.required_cases()) required += ", {name: " + r + ", seeds: [0]}";
    j["job"] = "kernel: {problem: " + j["ref"].get<std::string>() +
               ", language: cuda, sources: [my_kernel.cu]}; gates.correctness.cases name the "
               "problem's cases ({name: " + (p.cases.empty() ? std::string("small") : p.cases.front().name) +
               ", seeds: [0, 1]}" + required + "; every required case is in every job); no shape, dtype or tolerance";
  } else {
    j["entry"] = "kfleet_" + p.abi + "_launch";
    j["job"] = "kernel: {problem: " + j["ref"].get<std::string>() + ", ...}: the " + p.abi +
               " family (docs/job-files.md); its cases give shapes";
  }
  return j;
}

}  // namespace kfleet::cli
