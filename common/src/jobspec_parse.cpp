// parse_job_spec: YAML text -> JobSpec, collecting every issue with its file:line:column.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string_view>
#include <sstream>
#include <utility>
#include <vector>

#include "kfleet/common/bundle.hpp"
#include "kfleet/common/compile_flags.hpp"
#include "jobspec_python.hpp"
#include "spec_keys.hpp"
#include "spec_sections.hpp"
#include "yaml-cpp/eventhandler.h"
#include "yaml-cpp/parser.h"

namespace kfleet {
namespace spec {
namespace {

// Job, campaign and parent names appear in URLs, logs and file names; keep them plain.
void check_name(Issues& is, const YAML::Node& n, const std::string& path, const YAML::Mark& at,
                const std::string& s) {
  if (s.empty() || s.size() > 200) {
    is.add(mark_of(n, at), path, "must be 1 to 200 characters long");
    return;
  }
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.' || c == '/' || c == ':' || c == '+';
    if (!ok) {
      is.add(mark_of(n, at), path,
             "'" + s + "' has the character '" + std::string(1, c) +
                 "'; use letters, digits and - _ . / : + only");
      return;
    }
  }
}

void parse_target(Issues& is, const YAML::Node& n, const YAML::Mark& at, TargetSpec& t) {
  MapReader m(is, n, "target", "target", at);
  if (!m.is_map()) return;
  if (m.require("gpu", "a GPU class such as L4, H100 or an arch such as sm_89, gfx1151")) {
    if (auto s = read_string(is, m.get("gpu"), m.path("gpu"), m.mark())) {
      if (s->empty()) is.add(mark_of(m.get("gpu"), m.mark()), m.path("gpu"), "must not be empty");
      t.gpu = *s;
    }
  }
  if (m.has("regions")) {
    if (auto v = read_string_list(is, m.get("regions"), m.path("regions"), m.mark())) t.regions = *v;
  }
}

void parse_steps(Issues& is, const YAML::Node& n, const std::string& path, const YAML::Mark& at,
                 CustomSteps& s) {
  MapReader m(is, n, path, "kernel.steps", at);
  if (!m.is_map()) return;
  m.require("test", "the command that checks correctness; exit status 0 passes");
  m.require("bench", "the command that prints the metric lines as JSON");
  const std::pair<const char*, std::string*> fields[] = {
      {"build", &s.build}, {"test", &s.test}, {"bench", &s.bench}, {"profile", &s.profile}};
  for (const auto& [key, slot] : fields) {
    if (m.has(key)) {
      if (auto v = read_string(is, m.get(key), m.path(key), m.mark())) *slot = *v;
    }
  }
}

// kernel.problem: NAME@VERSION. attention and scaled_mm are the families of the same name.
void parse_problem_ref(Issues& is, const MapReader& m, KernelSpec& k) {
  auto s = read_string(is, m.get("problem"), m.path("problem"), m.mark());
  if (!s) return;
  const auto at = s->find('@');
  const std::string name = s->substr(0, at);
  const std::string version = at == std::string::npos ? "" : s->substr(at + 1);
  bool ok = at != std::string::npos && !name.empty() && !version.empty() && version.size() <= 6 &&
            std::all_of(version.begin(), version.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
            version.front() != '0' && name.size() <= 31;
  for (char c : name)
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_');
  if (!ok) {
    is.add(mark_of(m.get("problem"), m.mark()), m.path("problem"),
           "'" + *s + "' is not NAME@VERSION (a problem of the library and its version, e.g. "
           "rmsnorm@2; `kfleet problems` lists them)");
    // Still a problem's job: its cases are not asked for shapes on top of this error.
    k.problem = *s;
    return;
  }
  k.problem = name;
  k.problem_version = std::stoi(version);
  if (name == "attention" || name == "scaled_mm") k.family = name;
}

void parse_kernel(Issues& is, const YAML::Node& n, const YAML::Mark& at, KernelSpec& k) {
  MapReader m(is, n, "kernel", "kernel", at);
  if (!m.is_map()) return;
  if (m.has("problem")) parse_problem_ref(is, m, k);
  if (m.has("family")) {
    if (auto s = read_enum(is, m.get("family"), m.path("family"), m.mark(), families())) {
      // problem: attention@2 is family attention; a generic problem has no family.
      if (!k.problem.empty() && *s != k.family) {
        is.add(mark_of(m.get("family"), m.mark()), m.path("family"),
               "family: " + *s + " disagrees with problem: " + problem_ref(k) + " (" +
                   (k.family.empty() ? "a problem of the library with its own ABI, no family"
                                     : "which is family " + k.family) +
                   "); drop family");
      } else {
        k.family = *s;
      }
    }
  } else if (!m.has("problem")) {
    m.require("family", "attention, scaled_mm or custom (or problem: NAME@VERSION, e.g. rmsnorm@2)");
  }
  if (m.require("language", "cuda, hip, triton or torch")) {
    if (auto s = read_enum(is, m.get("language"), m.path("language"), m.mark(), languages())) {
      k.language = *s;
    }
  }
  const bool custom = k.family == "custom";
  if (m.has("sources")) {
    const YAML::Node src = m.get("sources");
    if (auto v = read_string_list(is, src, m.path("sources"), m.mark())) {
      for (std::size_t i = 0; i < v->size(); ++i) {
        auto p = normalize_source_entry((*v)[i]);
        if (p) {
          k.sources.push_back(*p);
        } else {
          is.add(mark_of(src[i], m.mark()), item(m.path("sources"), i), p.error().message);
        }
      }
      if (v->empty() && !custom) {
        is.add(mark_of(src, m.mark()), m.path("sources"), "must name at least one source file");
      }
    }
  } else if ((!k.family.empty() && !custom) || is_generic_problem(k)) {
    m.require("sources", "the kernel's files, relative to the job file's folder, or lib:PATH in kernels/");
  }
  // The entry, define names and values and the flags reach the compiler's command line, which
  // nvcc runs through a shell: compile_flags.hpp says what they may hold, and why.
  if (m.has("entry")) {
    if (auto s = read_string(is, m.get("entry"), m.path("entry"), m.mark())) {
      if (auto bad = entry_problem(*s)) is.add(mark_of(m.get("entry"), m.mark()), m.path("entry"), *bad);
      k.entry = *s;
    }
  }
  if (m.has("defines")) {
    const YAML::Node d = m.get("defines");
    if (!d.IsMap()) {
      is.add(mark_of(d, m.mark()), m.path("defines"), "must be a map of NAME: value, not " + describe(d));
    } else {
      for (auto it = d.begin(); it != d.end(); ++it) {
        const std::string name = it->first.Scalar();
        const std::string path = child(m.path("defines"), shown_safely(name));
        bool dup = false;
        for (const auto& [have, _] : k.defines) dup = dup || have == name;
        if (auto bad = define_name_problem(name)) {
          is.add(mark_of(it->first, m.mark()), path, *bad);
        } else if (dup) {
          is.add(mark_of(it->first, m.mark()), path, "define '" + name + "' appears twice; keep one");
        } else if (it->second.IsNull()) {
          k.defines.emplace_back(name, "");  // NAME: with no value -> plain -DNAME
        } else if (auto v = read_string(is, it->second, path, m.mark())) {
          if (auto bad_value = define_value_problem(*v))
            is.add(mark_of(it->second, m.mark()), path, *bad_value);
          k.defines.emplace_back(name, *v);
        }
      }
    }
  }
  if (m.has("flags")) {
    if (auto v = read_string_list(is, m.get("flags"), m.path("flags"), m.mark())) {
      k.flags = *v;
      if (auto bad = compile_flags_problem(k.flags)) {
        is.add(mark_of(m.get("flags")[bad->index], m.mark()), item(m.path("flags"), bad->index),
               bad->message);
      }
    }
  }
  if (m.has("params")) {
    const YAML::Node p = m.get("params");
    if (!p.IsMap()) {
      is.add(mark_of(p, m.mark()), m.path("params"), "must be a map, not " + describe(p));
    } else {
      k.params = to_json_value(p);
    }
  }
  if (m.has("steps")) {
    if (!custom && (!k.family.empty() || is_generic_problem(k))) {
      is.add(mark_of(m.get("steps"), m.mark()), m.path("steps"),
             "steps apply only to family: custom; the " +
                 (k.family.empty() ? problem_ref(k) : k.family) + " harness builds and runs " +
                 "the kernel itself");
    }
    k.steps.emplace();
    parse_steps(is, m.get("steps"), m.path("steps"), m.mark(), *k.steps);
  } else if (custom) {
    m.require("steps", "family custom runs your own build/test/bench commands");
  }
}

void parse_benchmark(Issues& is, const YAML::Node& n, const YAML::Mark& at, BenchmarkSpec& b) {
  MapReader m(is, n, "benchmark", "benchmark", at);
  if (!m.is_map()) return;
  if (m.has("min_samples")) {
    if (auto v = read_int(is, m.get("min_samples"), m.path("min_samples"), m.mark(), 1, 1000000)) {
      b.min_samples = static_cast<int>(*v);
    }
  }
  if (m.has("max_noise_pct")) {
    if (auto v = read_number(is, m.get("max_noise_pct"), m.path("max_noise_pct"), m.mark(), 0, false, 100)) {
      b.max_noise_pct = *v;
    }
  }
  if (m.has("max_time_s")) {
    if (auto v = read_number(is, m.get("max_time_s"), m.path("max_time_s"), m.mark(), 0, false, 86400)) {
      b.max_time_s = *v;
    }
  }
  if (m.has("l2_flush")) {
    if (auto v = read_bool(is, m.get("l2_flush"), m.path("l2_flush"), m.mark())) b.l2_flush = *v;
  }
  if (m.has("warmup_max_s")) {
    if (auto v = read_number(is, m.get("warmup_max_s"), m.path("warmup_max_s"), m.mark(), 0, true, 3600)) {
      b.warmup_max_s = *v;
    }
  }
  if (m.has("max_rounds")) {
    if (auto v = read_int(is, m.get("max_rounds"), m.path("max_rounds"), m.mark(), 1, 10000)) {
      b.max_rounds = static_cast<int>(*v);
    }
  }
  if (m.has("min_rounds")) {
    if (auto v = read_int(is, m.get("min_rounds"), m.path("min_rounds"), m.mark(), 3, 10000)) {
      b.min_rounds = static_cast<int>(*v);
      if (b.min_rounds > b.max_rounds)
        is.add(m.mark(), m.path("min_rounds"),
               "min_rounds " + std::to_string(b.min_rounds) + " is above max_rounds " +
                   std::to_string(b.max_rounds) + ": the rounds before the first decision fit in the cap");
    }
  }
  if (m.has("interleave")) {
    if (auto v = read_bool(is, m.get("interleave"), m.path("interleave"), m.mark())) b.interleave = *v;
  }
  if (m.has("host_exclusive")) {
    if (auto v = read_bool(is, m.get("host_exclusive"), m.path("host_exclusive"), m.mark()))
      b.host_exclusive = *v;
  }
  if (m.has("processes")) {
    if (auto v = read_int(is, m.get("processes"), m.path("processes"), m.mark(), 1, 16)) {
      b.processes = static_cast<int>(*v);
    }
  }
}

void parse_profile(Issues& is, const YAML::Node& n, const YAML::Mark& at,
                   const std::string& language, ProfileSpec& p) {
  MapReader m(is, n, "profile", "profile", at);
  if (!m.is_map()) return;
  if (m.require("tool", "ncu for cuda, rocprofv3 for hip")) {
    if (auto s = read_enum(is, m.get("tool"), m.path("tool"), m.mark(), profile_tools())) {
      p.tool = *s;
      const bool mismatch = (p.tool == "ncu" && language == "hip") ||
                            (p.tool == "rocprofv3" && language == "cuda");
      if (mismatch) {
        is.add(mark_of(m.get("tool"), m.mark()), m.path("tool"),
               p.tool + " cannot profile " + language + " kernels; use " +
                   (language == "hip" ? "rocprofv3" : "ncu"));
      }
    }
  }
  if (m.has("metrics")) {
    if (auto v = read_string_list(is, m.get("metrics"), m.path("metrics"), m.mark())) p.metrics = *v;
  }
  if (m.has("when")) {
    if (auto s = read_enum(is, m.get("when"), m.path("when"), m.mark(), profile_whens())) p.when = *s;
  }
}

void parse_simulate(Issues& is, const YAML::Node& n, const YAML::Mark& at, SimulationSpec& s) {
  MapReader m(is, n, "simulate", "simulate", at);
  if (!m.is_map()) return;
  if (m.has("time_us")) {
    if (auto v = read_number(is, m.get("time_us"), m.path("time_us"), m.mark(), 0, false, 1e9)) s.time_us = *v;
  }
  if (m.has("noise_pct")) {
    if (auto v = read_number(is, m.get("noise_pct"), m.path("noise_pct"), m.mark(), 0, true, 100)) s.noise_pct = *v;
  }
  if (m.has("slower_pct")) {
    const YAML::Node sp = m.get("slower_pct");
    if (!sp.IsMap()) {
      is.add(mark_of(sp, m.mark()), m.path("slower_pct"),
             "must be a map of GPU class: percent, e.g. {L4: 5.0}, not " + describe(sp));
    } else {
      for (auto it = sp.begin(); it != sp.end(); ++it) {
        const std::string gpu = it->first.Scalar();
        if (auto v = read_number(is, it->second, child(m.path("slower_pct"), gpu), m.mark(), -100, false, 1e6)) {
          s.slower_pct[gpu] = *v;
        }
      }
    }
  }
  for (const char* k : {"eager_us", "compile_us"}) {
    if (!m.has(k)) continue;
    if (auto v = read_number(is, m.get(k), m.path(k), m.mark(), 0, false, 1e9))
      (std::string(k) == "eager_us" ? s.eager_us : s.compile_us) = *v;
  }
  if (m.has("fail_stage")) {
    if (auto v = read_enum(is, m.get("fail_stage"), m.path("fail_stage"), m.mark(), fail_stages())) {
      s.fail_stage = *v;
    }
  }
  if (m.has("fail_reason")) {
    if (auto v = read_string(is, m.get("fail_reason"), m.path("fail_reason"), m.mark())) s.fail_reason = *v;
  }
  if (m.has("stage_ms")) {
    if (auto v = read_int(is, m.get("stage_ms"), m.path("stage_ms"), m.mark(), 0, 600000)) {
      s.stage_ms = static_cast<int>(*v);
    }
  }
}

void parse_document(Issues& is, const YAML::Node& root, const ProblemLibrary* library, JobSpec& spec) {
  const YAML::Mark top;  // line -1: issues about the whole document carry line 0
  if (!root.IsDefined() || root.IsNull()) {
    is.add(top, "(document)", "the job file is empty; it needs at least name, target and kernel");
    return;
  }
  MapReader m(is, root, "", "", top);
  if (!m.is_map()) return;
  for (const char* key : {"name", "campaign", "parent"}) {
    if (!m.has(key)) continue;
    if (auto s = read_string(is, m.get(key), m.path(key), m.mark())) {
      check_name(is, m.get(key), m.path(key), m.mark(), *s);
      std::string& slot = key == std::string("name") ? spec.name
                          : key == std::string("campaign") ? spec.campaign
                                                           : spec.parent;
      slot = *s;
    }
  }
  m.require("name", "a unique job name such as fa-s512-v3/iter1");
  if (m.has("priority")) {
    if (auto v = read_int(is, m.get("priority"), m.path("priority"), m.mark(), -1000, 1000)) {
      spec.priority = static_cast<int>(*v);
    }
  }
  if (m.require("target", "where to run, e.g. {gpu: L4}")) parse_target(is, m.get("target"), m.mark(), spec.target);
  if (m.require("kernel", "the family, language and sources of the kernel")) {
    parse_kernel(is, m.get("kernel"), m.mark(), spec.kernel);
  }
  if (m.has("gates")) {
    parse_gates(is, m.get("gates"), m.mark(), m.has("parent"),
                is_generic_problem(spec.kernel) ? problem_ref(spec.kernel) : "",
                !spec.kernel.problem.empty() && !is_generic_problem(spec.kernel) ? problem_ref(spec.kernel) : "",
                spec.gates);
  }
  if (is_generic_problem(spec.kernel) && !spec.gates.correctness) {
    // The problem's checks are the point of naming it: its correctness gate always runs.
    is.add(mark_of(m.has("gates") ? m.get("gates") : root, top), "gates.correctness",
           "a job on problem " + problem_ref(spec.kernel) +
               " needs gates.correctness with the problem's cases to run, e.g. "
               "{cases: [{name: small, seeds: [0, 1]}]}");
  }
  if (m.has("benchmark")) {
    parse_benchmark(is, m.get("benchmark"), m.mark(), spec.benchmark);
    // Interleaving runs the reference's own build, so the reference must be a job, not a number.
    using K = CompareTo::Kind;
    const auto kind = spec.gates.performance ? spec.gates.performance->compare_to.kind : K::none;
    if (spec.benchmark.interleave && kind != K::parent && kind != K::job && kind != K::baseline) {
      is.add(mark_of(m.get("benchmark"), m.mark()), "benchmark.interleave",
             "interleave needs gates.performance.compare_to parent, job or baseline: "
             "a fixed value or external reference has no kernel to run beside yours");
    }
  }
  if (m.has("profile")) {
    spec.profile.emplace();
    parse_profile(is, m.get("profile"), m.mark(), spec.kernel.language, *spec.profile);
  }
  if (m.has("simulate")) {
    spec.simulate.emplace();
    parse_simulate(is, m.get("simulate"), m.mark(), *spec.simulate);
  }
  if (m.has("max_attempts")) {
    if (auto v = read_int(is, m.get("max_attempts"), m.path("max_attempts"), m.mark(), 1, 20)) {
      spec.max_attempts = static_cast<int>(*v);
    }
  }
  if (m.has("timeout_s")) {
    if (auto v = read_int(is, m.get("timeout_s"), m.path("timeout_s"), m.mark(), 1, 86400)) {
      spec.timeout_s = static_cast<int>(*v);
    }
  }
  check_kernel_language(is, root, spec);  // Python kernels: jobspec_python.cpp
  if (library && spec.kernel.problem_version > 0) check_problem_job(is, root, *library, spec);
}

}  // namespace
}  // namespace spec

namespace {

// Where `text` stops being UTF-8 (well-formed per Unicode table 3-7: no overlong forms, no
// surrogates, nothing past U+10FFFF), or npos. A job travels and is stored as JSON, which
// holds only UTF-8 text.
std::size_t first_invalid_utf8(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned c = p[i];
    if (c < 0x80) { ++i; continue; }
    std::size_t len = 0;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) { len = 3; lo = 0xA0; }
    else if (c == 0xED) { len = 3; hi = 0x9F; }
    else if (c >= 0xE1 && c <= 0xEF) len = 3;
    else if (c == 0xF0) { len = 4; lo = 0x90; }
    else if (c == 0xF4) { len = 4; hi = 0x8F; }
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else return i;
    if (i + len > n) return i;
    if (p[i + 1] < lo || p[i + 1] > hi) return i;
    for (std::size_t k = 2; k < len; ++k)
      if (p[i + k] < 0x80 || p[i + k] > 0xBF) return i;
    i += len;
  }
  return std::string_view::npos;
}

}  // namespace

namespace {

// The job's JSON form (the wire and store form) is read back by this same parser, and YAML takes
// a flow-map key of at most 1024 characters; a control character is six once escaped (\u001f).
// Keys are names (defines, shape dimensions, GPU classes, params), so they are held to a name's
// length and characters, and a job that could not be read back is refused here, not later.
constexpr std::size_t kMaxKeyBytes = 256;

std::string key_the_json_form_cannot_carry(const nlohmann::json& root) {
  std::vector<std::pair<const nlohmann::json*, std::string>> todo{{&root, ""}};
  while (!todo.empty()) {
    auto [j, path] = todo.back();
    todo.pop_back();
    if (j->is_array()) {
      for (std::size_t i = 0; i < j->size(); ++i) todo.emplace_back(&(*j)[i], path + "[" + std::to_string(i) + "]");
      continue;
    }
    if (!j->is_object()) continue;
    for (auto it = j->begin(); it != j->end(); ++it) {
      const std::string& k = it.key();
      const bool control = std::any_of(k.begin(), k.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
      });
      if (control || k.size() > kMaxKeyBytes) {
        std::string shown = k.substr(0, 40) + (k.size() > 40 ? "..." : "");
        for (char& c : shown)
          if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
        return "the key '" + shown + "' under " + (path.empty() ? std::string("the top") : path) +
               " is " + (control ? "written with control characters" : std::to_string(k.size()) + " bytes long") +
               ": keys are names; keep them under " + std::to_string(kMaxKeyBytes) +
               " bytes, without control characters";
      }
      todo.emplace_back(&it.value(), path.empty() ? k : path + "." + k);
    }
  }
  return "";
}

// Where the text first uses an alias (*name), if it does. An alias is a pointer: a few lines of
// them nest into millions of values once a free-form part of the job (params) is expanded, and
// a job file never needs one.
class FirstAlias : public YAML::EventHandler {
 public:
  std::optional<YAML::Mark> at;
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override {
    if (!at) at = m;
  }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

std::optional<YAML::Mark> first_alias(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  FirstAlias found;
  // The first document only: it is the one YAML::Load builds (and yaml-cpp's event parser can
  // report empty documents forever on some malformed text, so it is never looped over).
  try {
    parser.HandleNextDocument(found);
  } catch (const YAML::Exception&) {
    // A syntax error: YAML::Load reports it, with its place.
  }
  return found.at;
}

}  // namespace

SpecParse parse_job_spec(const std::string& yaml_text, const std::string& file) {
  return parse_job_spec(yaml_text, file, nullptr);
}

SpecParse parse_job_spec(const std::string& yaml_text, const std::string& file,
                         const ProblemLibrary* library) {
  spec::Issues is;
  is.file = file;
  SpecParse out;
  if (const std::size_t bad = first_invalid_utf8(yaml_text); bad != std::string_view::npos) {
    const std::string_view before(yaml_text.data(), bad);
    const std::size_t nl = before.rfind('\n');
    YAML::Mark at;
    at.pos = static_cast<int>(bad);
    at.line = static_cast<int>(std::count(before.begin(), before.end(), '\n'));
    at.column = static_cast<int>(nl == std::string_view::npos ? bad : bad - nl - 1);
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(yaml_text[bad]));
    is.add(at, "(encoding)", std::string("the job file is not UTF-8 text (byte ") + byte +
                                 "); save it as UTF-8");
    out.issues = std::move(is.list);
    return out;
  }
  if (const auto alias = first_alias(yaml_text)) {
    is.add(*alias, "(alias)", "job files do not use YAML aliases (*name): write the value out");
    out.issues = std::move(is.list);
    return out;
  }
  const auto loaded = spec::load_document(is, yaml_text);
  if (!loaded) {
    out.issues = std::move(is.list);
    return out;
  }
  const YAML::Node& root = *loaded;
  JobSpec job;
  try {
    spec::parse_document(is, root, library, job);
  } catch (const YAML::Exception& e) {
    is.add(e.mark, "(document)", "cannot read the document: " + e.msg);
  }
  // Escapes ("\\ud800" in a double-quoted scalar) can still make text that is not UTF-8.
  if (is.list.empty()) {
    try {
      (void)to_json(job).dump();
    } catch (const nlohmann::json::exception&) {
      is.list.push_back(SpecIssue{file, 0, 0, "(encoding)",
                                  "an escape in a quoted string makes text that is not UTF-8 "
                                  "(a lone surrogate such as \\ud800?); write the character itself"});
    }
  }
  if (is.list.empty()) {
    if (std::string why = key_the_json_form_cannot_carry(to_json(job)); !why.empty())
      is.list.push_back(SpecIssue{file, 0, 0, "(key)", why});
  }
  out.issues = std::move(is.list);
  if (out.issues.empty()) out.spec = std::move(job);
  return out;
}

SpecParse parse_job_spec_file(const std::string& path) { return parse_job_spec_file(path, nullptr); }

SpecParse parse_job_spec_file(const std::string& path, const ProblemLibrary* library) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    SpecParse out;
    out.issues.push_back(SpecIssue{path, 0, 0, "(file)", "cannot open the job file for reading"});
    return out;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse_job_spec(text.str(), path, library);
}

bool is_generic_problem(const KernelSpec& k) { return !k.problem.empty() && k.family.empty(); }

std::string problem_ref(const KernelSpec& k) {
  return k.problem.empty() ? "" : k.problem + "@" + std::to_string(k.problem_version);
}

}  // namespace kfleet
