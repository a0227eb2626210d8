// `kfleet submit`: validate locally, pack the sources, send, then optionally follow or wait.
#include <filesystem>
#include <memory>
#include <ostream>

#include "commands.hpp"
#include "json_fields.hpp"
#include "kfleet/cli/exit_code.hpp"
#include "kfleet/cli/submit_request.hpp"
#include "kfleet/common/jobspec.hpp"
#include "problems_view.hpp"

namespace kfleet::cli {

namespace {

struct SubmitOptions {
  std::vector<std::string> files;
  bool follow = false, wait = false, force = false;
  std::optional<int> priority;
  std::string kernel_lib;  // resolves lib: sources; default $KFLEET_KERNEL_LIB, then the clone's kernels/
};

struct Prepared {
  std::string file;
  nlohmann::json body;
};

// Everything that can be checked without kfleetd; prints every problem and returns nullopt.
std::optional<Prepared> prepare(Session& s, const SubmitOptions& o, const std::string& file) {
  auto text = s.io().read_file(file);
  if (!text) {
    s.io().err << "kfleet: cannot read " << file << ": check the path\n";
    return std::nullopt;
  }
  std::string yaml = *text;
  if (o.priority) {
    auto rewritten = with_priority(yaml, *o.priority);
    if (!rewritten) {
      s.io().err << file << ": " << rewritten.error().message << "\n";
      return std::nullopt;
    }
    yaml = *rewritten;
  }
  SpecParse parsed = parse_job_spec(yaml, file);
  if (parsed.ok() && !parsed.spec->kernel.problem.empty()) {
    // A problem job is checked against the library here too (kfleetd checks it against its own):
    // a case name that is not the problem's is a file:line:col error before anything is sent.
    const ProblemLibrary lib = load_problem_library(problems_dir(s.io().env, ""));
    if (!lib.problems.empty()) parsed = parse_job_spec(yaml, file, &lib);
  }
  if (!parsed.ok()) {
    for (const auto& issue : parsed.issues) s.io().err << issue.to_string() << "\n";
    if (parsed.issues.empty()) s.io().err << file << ": not a valid job\n";
    return std::nullopt;
  }
  std::filesystem::path dir = std::filesystem::path(file).parent_path();
  auto bundle = pack_job_bundle(dir.empty() ? "." : dir.string(), parsed.spec->kernel.sources,
                                o.kernel_lib);
  if (!bundle) {
    s.io().err << file << ": kernel.sources: " << bundle.error().message << "\n";
    return std::nullopt;
  }
  const std::string source_name = std::filesystem::path(file).filename().string();
  return Prepared{file, submit_body(yaml, source_name, *bundle, o.force)};
}

}  // namespace

Command add_submit_command(CLI::App& app) {
  auto o = std::make_shared<SubmitOptions>();
  auto* sub = app.add_subcommand("submit", "validate job YAMLs, send them with their sources");
  sub->add_option("files", o->files, "job YAML files")->required()->check(CLI::ExistingFile);
  auto* follow = sub->add_flag("--follow", o->follow, "stream progress stage by stage until the verdict");
  sub->add_flag("--wait", o->wait, "wait quietly for the verdict (exit status says it)")->excludes(follow);
  sub->add_flag("--force", o->force, "run even if an identical job already ran");
  sub->add_option("--priority", o->priority, "override the job's priority (higher runs first)");
  sub->add_option("--kernel-lib", o->kernel_lib,
                  "the kernel library that lib:PATH sources name (default: $KFLEET_KERNEL_LIB, "
                  "else the kernels/ folder of the clone the job file is in)");
  sub->footer(R"(Each file is checked locally first: problems print as file:line:col: field: message
and nothing is sent (exit 2). kernel.sources entries are read beside the YAML; an entry
lib:PATH is read from the kernel library instead (e.g. lib:suite/fa_s512.cu), and both kinds
must stay inside their folder.

Examples:
  kfleet submit jobs/fa-s512-iter1.yaml
  kfleet submit jobs/fa-s512-iter1.yaml --follow
  kfleet submit jobs/*.yaml --wait --priority 5   # CI: exit 0 only if every job passed)");

  return {sub, [o](Session& s) {
    std::vector<Prepared> prepared;
    bool invalid = false;
    for (const auto& f : o->files) {
      auto p = prepare(s, *o, f);
      if (p) prepared.push_back(std::move(*p));
      else invalid = true;
    }
    if (invalid) return static_cast<int>(exit_usage);  // nothing sent unless all are valid

    std::vector<std::pair<std::int64_t, std::string>> jobs;  // id, GPU
    int worst = exit_passed;
    for (const auto& p : prepared) {
      auto reply = s.post("/api/v1/jobs", p.body);
      if (!reply) {
        worst = worst_exit(worst, s.fail(reply.error(), p.file));
        continue;
      }
      const auto& job = obj_field(reply->body, "job");
      if (s.json()) s.io().out << reply->body.dump(2) << "\n";
      if (auto dup = int_field(reply->body, "duplicate_of")) {
        if (!s.json()) s.io().out << p.file << ": " << duplicate_line(job, *dup) << "\n";
        jobs.emplace_back(*dup, str_field(job, "gpu"));
        continue;
      }
      const auto id = int_field(job, "id").value_or(0);
      if (!s.json())
        s.io().out << submitted_line(job) << "\n  " << dashboard_url(s.server_in_use(), id) << "\n";
      jobs.emplace_back(id, str_field(job, "gpu"));
    }
    if (!o->follow && !o->wait) return worst;
    for (const auto& [id, gpu] : jobs) {
      const std::string prefix = jobs.size() > 1 ? "job " + std::to_string(id) + ": " : "";
      const int code = o->follow ? follow_job(s, id, gpu, prefix) : wait_job(s, id, prefix);
      worst = worst_exit(worst, code);
    }
    return worst;
  }};
}

}  // namespace kfleet::cli
