#include "problem_spec.hpp"
#include "words.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>

namespace kfleet::harness {
namespace {

bool to_i64(const std::string& s, std::int64_t* v) {
  if (s.empty() || !(s[0] == '-' || (s[0] >= '0' && s[0] <= '9'))) return false;
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(s.c_str(), &end, 10);
  if (errno || end != s.c_str() + s.size()) return false;
  *v = x;
  return true;
}

bool to_f64(const std::string& s, double* v) {
  if (s.empty() || s[0] == ' ') return false;
  char* end = nullptr;
  errno = 0;
  *v = std::strtod(s.c_str(), &end);
  return !errno && end == s.c_str() + s.size() && std::isfinite(*v);
}

bool to_dtype(const std::string& s, kfleet_dtype* t) {
  if (s == "fp16") *t = KFLEET_FP16;
  else if (s == "bf16") *t = KFLEET_BF16;
  else if (s == "fp8_e4m3") *t = KFLEET_FP8_E4M3;
  else if (s == "fp32") *t = KFLEET_FP32;
  else if (s == "int32") *t = KFLEET_INT32;
  else if (s == "int64") *t = KFLEET_INT64;
  else return false;
  return true;
}

// key=value fields after the record's fixed words; every key must be known to the record.
bool fields(const std::vector<std::string>& w, std::size_t from, const std::vector<std::string>& known,
            std::map<std::string, std::string>* out, std::string* err) {
  for (std::size_t i = from; i < w.size(); ++i) {
    const auto eq = w[i].find('=');
    if (eq == std::string::npos || eq == 0) {
      *err = "expected key=value, got '" + w[i] + "'";
      return false;
    }
    const std::string key = w[i].substr(0, eq);
    bool ok = false;
    for (const auto& k : known) ok = ok || k == key;
    if (!ok) {
      *err = "unknown field '" + key + "'";
      return false;
    }
    if (out->count(key)) {
      *err = "field '" + key + "' given twice";
      return false;
    }
    (*out)[key] = w[i].substr(eq + 1);
  }
  return true;
}

bool to_pair(const std::string& v, double* lo, double* hi) {
  const auto comma = v.find(',');
  return comma != std::string::npos && to_f64(v.substr(0, comma), lo) && to_f64(v.substr(comma + 1), hi);
}

// `w` is TENSOR DIST key=value...: the distribution of a tensor of dtype `t` into *i ("" or
// what is wrong). A case's init may also carry amplitude=LO,HI (a tensor's has its own line).
std::string read_init(const std::vector<std::string>& w, kfleet_dtype t, bool case_init, SpecInit* out) {
  SpecInit& i = *out;
  i.dist = w[1];
  std::vector<std::string> known, need;
  if (i.dist == "normal") need = {"mean", "std"};
  else if (i.dist == "uniform") need = {"min", "max"};
  else if (i.dist == "int") need = {"min", "max", "sorted", "unique"};
  else if (i.dist != "group_ends" && i.dist != "scale") return "unknown distribution '" + i.dist + "'";
  known = need;
  if (i.dist == "normal" || i.dist == "uniform") {
    for (const char* k : {"row_scale", "row_offset", "neg_inf", "outliers", "at", "step"}) known.push_back(k);
    if (case_init) known.push_back("amplitude");
  }
  std::map<std::string, std::string> f;
  std::string err;
  if (!fields(w, 2, known, &f, &err)) return err;
  for (const auto& k : need)
    if (!f.count(k)) return "init " + i.dist + " needs " + k + "=";
  for (const auto& [k, v] : f) {
    double x = 0, lo = 0, hi = 0;
    if (k == "sorted" || k == "unique") {
      if (v != "0" && v != "1") return k + " must be 0 or 1";
      (k == "sorted" ? i.sorted : i.unique) = v == "1";
    } else if (k == "outliers") {
      const auto comma = v.find(',');
      std::int64_t n = 0;
      if (comma == std::string::npos || !to_i64(v.substr(0, comma), &n) || !to_pair(v.substr(comma + 1), &lo, &hi) ||
          n < 1 || n > 16 || !(lo >= 0) || !(hi >= lo))
        return "outliers=" + v + " is not N,LO,HI (1 <= N <= 16, 0 <= LO <= HI)";
      i.outliers = static_cast<int>(n);
      i.outlier_lo = lo;
      i.outlier_hi = hi;
    } else if (k == "at") {
      std::stringstream cs(v);
      std::string part;
      while (std::getline(cs, part, ',')) {
        std::int64_t col = 0;
        if (!to_i64(part, &col) || col < 0) return "at=" + v + " is not a list of columns";
        i.outlier_at.push_back(col);
      }
    } else if (k == "row_scale" || k == "row_offset" || k == "neg_inf" || k == "amplitude") {
      if (!to_pair(v, &lo, &hi) || !(lo <= hi)) return k + "=" + v + " is not LO,HI with LO <= HI";
      if ((k == "row_scale" || k == "amplitude") && !(lo > 0)) return k + " needs 0 < LO";
      if (k == "neg_inf" && !(lo >= 0 && hi <= 1)) return "neg_inf needs 0 <= LO <= HI <= 1";
      if (k == "neg_inf" && t != KFLEET_FP16 && t != KFLEET_BF16 && t != KFLEET_FP32) return "neg_inf of a tensor that holds no -inf";
      (k == "row_scale" ? i.row_scale_lo : k == "row_offset" ? i.row_offset_lo : k == "neg_inf" ? i.neg_inf_lo : i.amp_lo) = lo;
      (k == "row_scale" ? i.row_scale_hi : k == "row_offset" ? i.row_offset_hi : k == "neg_inf" ? i.neg_inf_hi : i.amp_hi) = hi;
    } else {
      if (!to_f64(v, &x)) return k + "=" + v + " is not a finite number";
      if (k == "step" && !(x > 0)) return "step must be > 0";
      (k == "mean" ? i.mean : k == "std" ? i.std : k == "min" ? i.min : k == "max" ? i.max : i.step) = x;
    }
  }
  if (!i.outlier_at.empty() && static_cast<std::size_t>(i.outliers) != i.outlier_at.size())
    return "at= lists " + std::to_string(i.outlier_at.size()) + " columns for outliers=" + std::to_string(i.outliers);
  if (i.dist == "normal" && !(i.std >= 0)) return "std must be >= 0";
  if ((i.dist == "uniform" || i.dist == "int") && !(i.min <= i.max)) return "min must be <= max";
  if (i.dist == "int" && (t != KFLEET_INT32 && t != KFLEET_INT64)) return "int init of a non-integer tensor";
  if (i.dist == "int" && (i.min != std::floor(i.min) || i.max != std::floor(i.max) ||
                          std::fabs(i.min) > 9e15 || std::fabs(i.max) > 9e15))
    return "int bounds must be integers";
  if (i.dist == "group_ends" && t != KFLEET_INT32 && t != KFLEET_INT64) return "group_ends of a non-integer tensor";
  if (i.dist == "scale" && t != KFLEET_FP32) return "a scale tensor must be fp32";
  if ((i.dist == "normal" || i.dist == "uniform") && (t == KFLEET_INT32 || t == KFLEET_INT64))
    return i.dist + " init of an integer tensor";
  return "";
}

}  // namespace

std::size_t SpecCase::elements(std::size_t slot) const {
  std::size_t n = 1;
  for (auto d : shapes.at(slot)) n *= static_cast<std::size_t>(d);
  return n;
}

const SpecCase* ProblemSpec::find_case(const std::string& name) const {
  for (const auto& c : cases)
    if (c.name == name) return &c;
  return nullptr;
}

int ProblemSpec::slot(const std::string& name) const {
  for (std::size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].name == name) return static_cast<int>(i);
  return -1;
}

std::string ProblemSpec::case_names() const {
  std::string s;
  for (const auto& c : cases) s += (s.empty() ? "" : ", ") + c.name;
  return s;
}

std::string parse_problem_spec(const std::string& text, ProblemSpec* out) {
  *out = ProblemSpec{};
  ProblemSpec& s = *out;
  std::istringstream in(text);
  std::string line;
  std::size_t n = 0;
  bool header = false, problem = false, dims = false, ended = false;
  auto at = [&](const std::string& what) { return "problem spec line " + std::to_string(n) + ": " + what; };
  auto output_named = [&](const std::string& name) -> SpecOutput* {
    for (auto& o : s.outputs)
      if (o.name == name) return &o;
    return nullptr;
  };
  std::map<std::string, std::vector<std::pair<int, SpecInit>>> case_inits;  // case -> overrides
  auto case_named = [&](const std::string& name) -> SpecCase* {
    for (auto& c : s.cases)
      if (c.name == name) return &c;
    return nullptr;
  };
  while (std::getline(in, line)) {
    ++n;
    if (ended) return at("text after 'end'");
    if (!header) {
      if (line != kProblemSpecMagic)
        return at("the first line must be '" + std::string(kProblemSpecMagic) + "', got '" + line.substr(0, 60) + "'");
      header = true;
      continue;
    }
    if (line.empty()) continue;
    if (line.find_first_of("\t\r") != std::string::npos) return at("a tab or carriage return (words are separated by spaces)");
    const auto w = space_words(line);
    const std::string& kind = w[0];
    std::string err;
    std::map<std::string, std::string> f;
    auto need = [&](std::size_t count) { return w.size() >= count; };
    auto tensor_of = [&](const std::string& name, int* slot) {
      *slot = s.slot(name);
      if (*slot < 0) err = "no tensor '" + name + "'";
      return *slot >= 0;
    };
    if (kind != "problem" && kind != "end" && !problem) return at("'" + kind + "' before the 'problem' line");
    if (kind == "problem") {
      std::int64_t v = 0;
      if (problem) return at("a second 'problem' line");
      if (w.size() != 3 || !to_i64(w[2], &v) || v < 0 || v > 0xFFFFFFFFll) return at("expected 'problem NAME VERSION'");
      if (w[1].size() >= KFLEET_PROBLEM_NAME_BYTES) return at("problem name '" + w[1] + "' is over 31 characters");
      s.problem = w[1];
      s.version = static_cast<std::uint32_t>(v);
      problem = true;
    } else if (kind == "dims") {
      if (dims) return at("a second 'dims' line");
      s.dims.assign(w.begin() + 1, w.end());
      if (s.dims.size() > KFLEET_PROBLEM_MAX_DIMS) return at("more than 16 dims");
      dims = true;
    } else if (kind == "scalar") {
      if (w.size() != 3) return at("expected 'scalar NAME DTYPE'");
      if (w[2] != "fp32" && w[2] != "fp64" && w[2] != "int32" && w[2] != "int64")
        return at("unknown scalar dtype '" + w[2] + "'");
      if (s.scalars.size() >= KFLEET_PROBLEM_MAX_SCALARS) return at("more than 8 scalars");
      s.scalars.push_back({w[1], w[2]});
    } else if (kind == "tensor") {
      SpecTensor t;
      if (w.size() != 4) return at("expected 'tensor NAME ROLE DTYPE'");
      if (!s.cases.empty() || !s.outputs.empty()) return at("'tensor' after an output or a case");
      if (s.slot(w[1]) >= 0) return at("tensor '" + w[1] + "' given twice");
      t.name = w[1];
      if (w[2] == "input") t.role = KFLEET_TENSOR_INPUT;
      else if (w[2] == "output") t.role = KFLEET_TENSOR_OUTPUT;
      else if (w[2] == "inout") t.role = KFLEET_TENSOR_INOUT;
      else return at("unknown role '" + w[2] + "' (input, output, inout)");
      if (!to_dtype(w[3], &t.dtype)) return at("unknown dtype '" + w[3] + "'");
      if (s.tensors.size() >= KFLEET_PROBLEM_MAX_TENSORS) return at("more than 12 tensors");
      s.tensors.push_back(std::move(t));
    } else if (kind == "init") {
      int slot = -1;
      if (!need(3)) return at("expected 'init TENSOR DIST key=value...'");
      if (!tensor_of(w[1], &slot)) return at(err);
      SpecTensor& t = s.tensors[static_cast<std::size_t>(slot)];
      if (t.role == KFLEET_TENSOR_OUTPUT) return at("init of output '" + w[1] + "'");
      if (!t.init.dist.empty()) return at("a second init of '" + w[1] + "'");
      const std::vector<std::string> rest(w.begin() + 1, w.end());  // TENSOR DIST key=value...
      if (!(err = read_init(rest, t.dtype, false, &t.init)).empty()) return at(err);
    } else if (kind == "case_init") {
      int slot = -1;
      if (!need(4)) return at("expected 'case_init CASE TENSOR DIST key=value...'");
      SpecCase* c = case_named(w[1]);
      if (!c) return at("no case '" + w[1] + "' (a 'case' line comes first)");
      if (!tensor_of(w[2], &slot)) return at(err);
      const SpecTensor& t = s.tensors[static_cast<std::size_t>(slot)];
      if (t.role == KFLEET_TENSOR_OUTPUT) return at("case_init of output '" + w[2] + "'");
      if (t.init.dist.empty() || t.init.dist == "scale") return at("case_init of '" + w[2] + "', which has no init of its own or is a scale tensor");
      auto& mine = case_inits[c->name];
      for (const auto& [other, unused] : mine)
        if (other == slot) return at("a second case_init of '" + w[2] + "' in '" + c->name + "'");
      SpecInit i;
      const std::vector<std::string> rest(w.begin() + 2, w.end());  // TENSOR DIST key=value...
      if (!(err = read_init(rest, t.dtype, true, &i)).empty()) return at(err);
      if (i.dist == "scale") return at("a case cannot draw a scale tensor");
      mine.push_back({slot, i});
    } else if (kind == "scaled_by") {
      int slot = -1;
      if (w.size() != 3 && w.size() != 4) return at("expected 'scaled_by TENSOR tensor=S block=B,..' or 'scaled_by TENSOR scalar=S'");
      if (!tensor_of(w[1], &slot)) return at(err);
      SpecTensor& t = s.tensors[static_cast<std::size_t>(slot)];
      if (t.dtype != KFLEET_FP8_E4M3) return at("scaled_by of a tensor that is not fp8_e4m3");
      if (!fields(w, 2, {"tensor", "block", "scalar"}, &f, &err)) return at(err);
      if (f.count("scalar")) {
        if (f.size() != 1) return at("scalar= excludes tensor= and block=");
        for (std::size_t k = 0; k < s.scalars.size(); ++k)
          if (s.scalars[k].name == f["scalar"]) t.init.scale_scalar = static_cast<int>(k);
        if (t.init.scale_scalar < 0) return at("no scalar '" + f["scalar"] + "'");
      } else {
        if (!f.count("tensor") || !f.count("block")) return at("scaled_by needs tensor= and block=");
        int st = -1;
        if (!tensor_of(f["tensor"], &st)) return at(err);
        if (s.tensors[static_cast<std::size_t>(st)].dtype != KFLEET_FP32) return at("scale tensor '" + f["tensor"] + "' is not fp32");
        t.init.scale_tensor = st;
        std::stringstream bs(f["block"]);
        std::string part;
        while (std::getline(bs, part, ',')) {
          std::int64_t b = 0;
          if (!to_i64(part, &b) || b < 1) return at("block entries must be positive integers");
          t.init.block.push_back(b);
        }
        if (t.init.block.empty()) return at("empty block");
      }
    } else if (kind == "amplitude") {
      int slot = -1;
      double lo = 0, hi = 0;
      if (w.size() != 4 || !to_f64(w[2], &lo) || !to_f64(w[3], &hi)) return at("expected 'amplitude TENSOR LO HI'");
      if (!tensor_of(w[1], &slot)) return at(err);
      if (!(lo > 0) || !(hi >= lo)) return at("amplitude needs 0 < LO <= HI");
      s.tensors[static_cast<std::size_t>(slot)].init.amp_lo = lo;
      s.tensors[static_cast<std::size_t>(slot)].init.amp_hi = hi;
    } else if (kind == "output") {
      int slot = -1;
      if (w.size() != 3) return at("expected 'output NAME SLOT'");
      if (output_named(w[1])) return at("output '" + w[1] + "' given twice");
      if (!tensor_of(w[2], &slot)) return at(err);
      const int role = s.tensors[static_cast<std::size_t>(slot)].role;
      if (role == KFLEET_TENSOR_INPUT) return at("output '" + w[1] + "' in input slot '" + w[2] + "' (role input)");
      for (const auto& o : s.outputs)
        if (o.slot == slot) return at("two outputs in slot '" + w[2] + "'");
      SpecOutput o;
      o.name = w[1];
      o.slot = slot;
      s.outputs.push_back(std::move(o));
    } else if (kind == "check") {
      if (!need(3)) return at("expected 'check OUTPUT KIND key=value...'");
      SpecOutput* o = output_named(w[1]);
      if (!o) return at("no output '" + w[1] + "'");
      if (!o->check.kind.empty()) return at("a second check of '" + w[1] + "'");
      SpecCheck& c = o->check;
      c.kind = w[2];
      if (c.kind == "tolerance") {
        if (!fields(w, 3, {"atol", "rtol", "max_abs", "rel_l2"}, &f, &err)) return at(err);
        for (const auto& [k, v] : f) {
          double x = 0;
          if (!to_f64(v, &x)) return at(k + "=" + v + " is not a finite number");
          (k == "atol" ? c.atol : k == "rtol" ? c.rtol : k == "max_abs" ? c.max_abs : c.rel_l2) = x;
        }
        if (c.atol < 0 && c.rtol >= 0) return at("rtol without atol");
        if (c.atol >= 0 && c.rtol < 0) c.rtol = 0;
        if (c.atol < 0 && c.max_abs < 0 && c.rel_l2 < 0) return at("a tolerance check with no bound");
      } else if (c.kind == "exact") {
        if (w.size() != 3) return at("exact takes no fields");
      } else if (c.kind == "topk") {
        if (!fields(w, 3, {"of", "largest"}, &f, &err)) return at(err);
        if (!f.count("of") || !f.count("largest")) return at("topk needs of= and largest=");
        if (!tensor_of(f["of"], &c.of)) return at(err);
        if (f["largest"] != "0" && f["largest"] != "1") return at("largest must be 0 or 1");
        c.largest = f["largest"] == "1";
        const kfleet_dtype d = s.tensors[static_cast<std::size_t>(o->slot)].dtype;
        if (d != KFLEET_INT32 && d != KFLEET_INT64) return at("a topk check of a non-integer output");
      } else {
        return at("unknown check '" + c.kind + "' (tolerance, exact, topk)");
      }
    } else if (kind == "lazy") {
      if (w.size() != 3 && w.size() != 4) return at("expected 'lazy OUTPUT KIND [INPUT]'");
      SpecOutput* o = output_named(w[1]);
      if (!o) return at("no output '" + w[1] + "'");
      SpecLazy l;
      l.kind = w[2];
      if (l.kind == "copy") {
        if (w.size() != 4) return at("lazy copy needs the input copied");
        if (!tensor_of(w[3], &l.input)) return at(err);
        if (s.tensors[static_cast<std::size_t>(l.input)].role == KFLEET_TENSOR_OUTPUT) return at("lazy copy of an output");
      } else if (l.kind != "zeros" && l.kind != "mean" && l.kind != "iota") {
        return at("unknown lazy output '" + l.kind + "' (zeros, mean, copy, iota)");
      } else if (w.size() != 3) {
        return at("lazy " + l.kind + " takes no input");
      }
      o->lazy.push_back(l);
    } else if (kind == "case") {
      if (w.size() != 2) return at("expected 'case NAME'");
      if (case_named(w[1])) return at("case '" + w[1] + "' given twice");
      SpecCase c;
      c.name = w[1];
      c.shapes.resize(s.tensors.size());
      c.totals.assign(s.tensors.size(), -1);
      c.flops = -1;
      s.cases.push_back(std::move(c));
    } else if (kind == "case_dims" || kind == "case_scalars" || kind == "case_shape" ||
               kind == "case_total" || kind == "case_cost") {
      if (!need(2)) return at("expected '" + kind + " CASE ...'");
      SpecCase* c = case_named(w[1]);
      if (!c) return at("no case '" + w[1] + "' (a 'case' line comes first)");
      if (kind == "case_dims") {
        if (w.size() - 2 != s.dims.size()) return at(std::to_string(w.size() - 2) + " dims for " + std::to_string(s.dims.size()));
        if (!c->dims.empty()) return at("a second case_dims of '" + c->name + "'");
        for (std::size_t i = 2; i < w.size(); ++i) {
          std::int64_t v = 0;
          if (!to_i64(w[i], &v) || v < 1) return at("dim " + s.dims[i - 2] + " = '" + w[i] + "' is not a positive integer");
          c->dims.push_back(v);
        }
      } else if (kind == "case_scalars") {
        if (w.size() - 2 != s.scalars.size()) return at(std::to_string(w.size() - 2) + " scalars for " + std::to_string(s.scalars.size()));
        if (!c->scalars.empty()) return at("a second case_scalars of '" + c->name + "'");
        for (std::size_t i = 2; i < w.size(); ++i) {
          double v = NAN;
          if (w[i] != "-" && !to_f64(w[i], &v)) return at("scalar " + s.scalars[i - 2].name + " = '" + w[i] + "' is not a number or '-'");
          c->scalars.push_back(v);
        }
      } else if (kind == "case_shape") {
        int slot = -1;
        if (!need(3)) return at("expected 'case_shape CASE TENSOR D...'");
        if (!tensor_of(w[2], &slot)) return at(err);
        auto& shape = c->shapes[static_cast<std::size_t>(slot)];
        if (!shape.empty()) return at("a second case_shape of '" + w[2] + "' in '" + c->name + "'");
        if (w.size() - 3 < 1 || w.size() - 3 > KFLEET_PROBLEM_MAX_RANK) return at("a shape of rank 1 to 6");
        double total = 1;
        for (std::size_t i = 3; i < w.size(); ++i) {
          std::int64_t v = 0;
          if (!to_i64(w[i], &v) || v < 1) return at("extent '" + w[i] + "' is not a positive integer");
          total *= static_cast<double>(v);
          shape.push_back(v);
        }
        if (total > 0x1p40) return at("tensor '" + w[2] + "' has over 2^40 elements");
      } else if (kind == "case_total") {
        int slot = -1;
        std::int64_t v = 0;
        if (w.size() != 4 || !to_i64(w[3], &v) || v < 0) return at("expected 'case_total CASE TENSOR N'");
        if (!tensor_of(w[2], &slot)) return at(err);
        c->totals[static_cast<std::size_t>(slot)] = v;
      } else {
        double flops = 0, bytes = 0;
        std::int64_t ws = 0;
        if (w.size() != 5 || !to_f64(w[2], &flops) || !to_f64(w[3], &bytes) || !to_i64(w[4], &ws) ||
            flops < 0 || bytes < 0 || ws < 0)
          return at("expected 'case_cost CASE FLOPS BYTES WORKSPACE_BYTES'");
        c->flops = flops;
        c->bytes = bytes;
        c->workspace = static_cast<std::uint64_t>(ws);
      }
    } else if (kind == "end") {
      if (w.size() != 1) return at("'end' takes nothing");
      ended = true;
    } else {
      return at("unknown record '" + kind + "'");
    }
  }
  n = 0;
  if (!header) return at("empty text (no '" + std::string(kProblemSpecMagic) + "' line)");
  if (!ended) return at("no 'end' line: the spec was cut short");
  if (!dims) return at("no 'dims' line");
  if (s.cases.empty()) return at("no case");
  for (const auto& t : s.tensors) {
    if (t.role != KFLEET_TENSOR_OUTPUT && t.init.dist.empty()) return at("input '" + t.name + "' has no init");
    if (t.dtype == KFLEET_FP8_E4M3 && t.init.scale_tensor < 0 && t.init.scale_scalar < 0)
      return at("fp8 input '" + t.name + "' has no scaled_by");
    if (t.init.amp_hi > 0 && t.init.scale_tensor < 0) return at("amplitude of '" + t.name + "' without block scales");
    if (t.init.scale_tensor >= 0 &&
        s.tensors[static_cast<std::size_t>(t.init.scale_tensor)].init.dist != "scale")
      return at("scale tensor of '" + t.name + "' does not have init scale");
    if (t.role == KFLEET_TENSOR_OUTPUT || t.role == KFLEET_TENSOR_INOUT) {
      bool found = false;
      for (const auto& o : s.outputs) found = found || s.tensors[static_cast<std::size_t>(o.slot)].name == t.name;
      if (!found) return at("slot '" + t.name + "' (role output/inout) has no output line");
    }
  }
  for (const auto& o : s.outputs) {
    if (o.check.kind.empty()) return at("output '" + o.name + "' has no check");
    if (o.lazy.empty()) return at("output '" + o.name + "' has no lazy output (the gate-strength test needs one)");
  }
  for (auto& c : s.cases) {
    c.inits.clear();
    for (const auto& t : s.tensors) c.inits.push_back(t.init);
    for (const auto& [slot, i] : case_inits[c.name]) {
      SpecInit& to = c.inits[static_cast<std::size_t>(slot)];
      const SpecInit keep = to;  // the tensor's scales stay the tensor's
      to = i;
      to.scale_tensor = keep.scale_tensor;
      to.scale_scalar = keep.scale_scalar;
      to.block = keep.block;
      if (to.amp_hi > 0 && to.scale_tensor < 0) return at("case '" + c.name + "': amplitude of '" + s.tensors[static_cast<std::size_t>(slot)].name + "' without block scales");
    }
  }
  for (const auto& c : s.cases) {
    if (c.dims.size() != s.dims.size()) return at("case '" + c.name + "' has no case_dims");
    if (c.scalars.size() != s.scalars.size()) return at("case '" + c.name + "' has no case_scalars");
    if (c.flops < 0) return at("case '" + c.name + "' has no case_cost");
    for (std::size_t i = 0; i < s.tensors.size(); ++i) {
      if (c.shapes[i].empty()) return at("case '" + c.name + "' has no shape for '" + s.tensors[i].name + "'");
      if (c.inits[i].dist == "group_ends" && c.totals[i] < 0)
        return at("case '" + c.name + "' has no case_total for '" + s.tensors[i].name + "'");
      if (c.inits[i].outliers > 0 && c.inits[i].outliers > c.shapes[i].back())
        return at("case '" + c.name + "': " + std::to_string(c.inits[i].outliers) + " outlier columns in rows of " +
                  std::to_string(c.shapes[i].back()) + " of '" + s.tensors[i].name + "'");
      for (auto col : c.inits[i].outlier_at)
        if (col >= c.shapes[i].back())
          return at("case '" + c.name + "': outlier column " + std::to_string(col) + " of '" + s.tensors[i].name + "' is past its rows");
      const SpecInit& in = s.tensors[i].init;
      if (in.scale_tensor >= 0) {
        const auto& shape = c.shapes[i];
        if (in.block.size() != shape.size()) return at("block of '" + s.tensors[i].name + "' has another rank than its shape");
        std::size_t blocks = 1;
        for (std::size_t d = 0; d < shape.size(); ++d)
          blocks *= static_cast<std::size_t>((shape[d] + in.block[d] - 1) / in.block[d]);
        if (blocks != c.elements(static_cast<std::size_t>(in.scale_tensor)))
          return at("case '" + c.name + "': scale tensor of '" + s.tensors[i].name + "' holds " +
                    std::to_string(c.elements(static_cast<std::size_t>(in.scale_tensor))) + " scales for " +
                    std::to_string(blocks) + " blocks");
      }
    }
    for (const auto& o : s.outputs) {
      const std::size_t slot = static_cast<std::size_t>(o.slot);
      for (const auto& l : o.lazy)
        if (l.kind == "copy" && c.elements(static_cast<std::size_t>(l.input)) != c.elements(slot))
          return at("case '" + c.name + "': lazy copy of '" + s.tensors[static_cast<std::size_t>(l.input)].name +
                    "' has another size than output '" + o.name + "'");
      if (o.check.kind == "topk") {
        const auto& of = c.shapes[static_cast<std::size_t>(o.check.of)];
        const auto& sh = c.shapes[slot];
        if (of.back() < sh.back() || c.elements(static_cast<std::size_t>(o.check.of)) / static_cast<std::size_t>(of.back()) !=
                                         c.elements(slot) / static_cast<std::size_t>(sh.back()))
          return at("case '" + c.name + "': topk output '" + o.name + "' does not match the rows of '" +
                    s.tensors[static_cast<std::size_t>(o.check.of)].name + "'");
      }
    }
  }
  return "";
}

std::string parse_init_text(const std::string& text, kfleet_dtype t, SpecInit* out) {
  std::vector<std::string> w = {"-"};
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, '/')) w.push_back(part);
  if (w.size() < 2 || (w[1] != "normal" && w[1] != "uniform"))
    return "'" + text + "' is not normal/... or uniform/... (a family's inputs are real-valued)";
  return read_init(w, t, false, out);
}

RealDraw spec_real_draw(const SpecInit& i, long long cols, std::uint64_t stream) {
  RealDraw d;
  d.normal = i.dist == "normal";
  d.a = d.normal ? i.mean : i.min;
  d.b = d.normal ? i.std : i.max;
  d.amp_lo = i.amp_lo;
  d.amp_hi = i.amp_hi;
  d.cols = cols > 0 ? cols : 1;
  d.row_scale_lo = i.row_scale_lo;
  d.row_scale_hi = i.row_scale_hi;
  d.row_offset_lo = i.row_offset_lo;
  d.row_offset_hi = i.row_offset_hi;
  d.neg_inf_lo = i.neg_inf_lo;
  d.neg_inf_hi = i.neg_inf_hi;
  d.step = i.step;
  d.n_outliers = i.outliers;
  d.outlier_lo = i.outlier_lo;
  d.outlier_hi = i.outlier_hi;
  if (i.outlier_at.empty()) {
    choose_outlier_columns(d, stream);
  } else {
    for (std::size_t k = 0; k < i.outlier_at.size() && k < static_cast<std::size_t>(kMaxOutlierColumns); ++k)
      d.outlier_cols[k] = i.outlier_at[k];
  }
  return d;
}

std::vector<SpecBuffer> spec_buffers(const ProblemSpec& spec, const SpecCase& c,
                                     std::uint64_t workspace_bytes) {
  std::vector<SpecBuffer> out;
  for (std::size_t i = 0; i < spec.tensors.size(); ++i) {
    const SpecTensor& t = spec.tensors[i];
    const char* role = t.role == KFLEET_TENSOR_INPUT ? "input " : t.role == KFLEET_TENSOR_INOUT ? "inout " : "output ";
    out.push_back({role + t.name, c.elements(i) * problems::abi_dtype_bytes(t.dtype), t.role == KFLEET_TENSOR_INPUT});
  }
  if (workspace_bytes) out.push_back({"workspace", workspace_bytes, false});
  return out;
}

problems::ArgsSpec spec_args(const ProblemSpec& spec, const SpecCase& c,
                             const std::vector<std::uint64_t>& addresses,
                             const std::vector<double>& scalars, std::uint64_t workspace,
                             std::uint64_t workspace_bytes) {
  problems::ArgsSpec a;
  a.problem = spec.problem;
  a.version = spec.version;
  a.dims = c.dims;
  for (double v : scalars) a.scalars.push_back({v});
  for (std::size_t i = 0; i < spec.tensors.size(); ++i) {
    problems::ArgsTensor t;
    t.dtype = spec.tensors[i].dtype;
    t.role = spec.tensors[i].role;
    t.shape = c.shapes[i];
    t.address = i < addresses.size() ? addresses[i] : 0;
    a.tensors.push_back(std::move(t));
  }
  a.workspace = workspace;
  a.workspace_bytes = workspace_bytes;
  return a;
}

}  // namespace kfleet::harness
