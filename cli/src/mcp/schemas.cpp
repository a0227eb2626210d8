#include "schemas.hpp"

namespace kfleet::cli::mcp::schema {

namespace {

const char* kFiles = R"js({"type": "array", "description": "source files, each replacing the parent's file of the same path",
  "items": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"], "additionalProperties": false}})js";

const char* kChange = R"js({"type": ["object", "null"], "description": "what the change was, as kfleetd computed it from the two jobs",
  "properties": {
    "parent_job_id": {"type": "integer"}, "parent_name": {"type": "string"}, "summary": {"type": "string"},
    "files": {"type": "array", "items": {"type": "object", "properties": {
      "path": {"type": "string"}, "status": {"enum": ["replaced", "added", "removed"]},
      "added_lines": {"type": "integer"}, "removed_lines": {"type": "integer"},
      "diff": {"type": "string", "description": "unified diff against the parent's file"}}}},
    "defines": {"type": "object"}, "flags": {"type": "object"}, "other": {"type": "array"}}})js";

// A problem's kernel against kfleet's PyTorch references (a verdict's `versus`).
const char* kVersus = R"js({"type": "array", "description": "a problem's kernel against kfleet's PyTorch references of the problem (eager, torch.compile), timed on the same agent by the same replay on the timed case",
  "items": {"type": "object", "properties": {
    "baseline": {"enum": ["eager", "compile"]},
    "speedup": {"type": "number", "description": "median(reference) / median(kernel): above 1 the kernel is faster; absent when the reference could not be timed"},
    "ci_low": {"type": "number"}, "ci_high": {"type": "number", "description": "with ci_low: the bootstrap 95% interval of the speedup"},
    "reference_us": {"type": "number"}, "case": {"type": "string"},
    "key": {"type": "object", "description": "what the reference's timing is cached by: problem, version, case, gpu_class, torch, triton, driver, measurer, reference, options"},
    "cached": {"type": "boolean"}, "note": {"type": "string", "description": "why there is no speedup (the fleet's note, not the kernel's failure)"},
    "simulated": {"type": "boolean"}}}})js";

const char* kFastP = R"js({"type": ["object", "null"], "description": "fast_p: the share of kernels correct and more than p times faster than kfleet's PyTorch reference (p = 1, 1.5; each reference); every kernel counts in the denominator (kernels, of)",
  "properties": {"kernels": {"type": "integer"}, "of": {"type": "string"}, "simulated": {"type": "boolean"},
    "baselines": {"type": "array", "items": {"type": "object", "properties": {
      "baseline": {"type": "string"}, "label": {"type": "string"}, "timed": {"type": "integer"},
      "p": {"type": "array", "items": {"type": "object", "properties": {
        "p": {"type": "number"}, "fast": {"type": "integer"}, "share": {"type": "number"}}}}}}}}})js";

nlohmann::json parse(const char* text) { return nlohmann::json::parse(text); }

}  // namespace

nlohmann::json submit_input() {
  auto s = parse(R"js({
  "type": "object",
  "properties": {
    "campaign": {"type": "string", "minLength": 1, "description": "the campaign (the job YAML's campaign:)"},
    "parent_job": {"type": "integer", "minimum": 1, "description": "the job to build on; default: the campaign's current best"},
    "change": {"type": "object", "description": "ONE change to the parent (seed 001); give this or job",
      "properties": {
        "files": null,
        "defines_set": {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]},
                        "description": "defines to add or change: {NAME: value}"},
        "defines_removed": {"type": "array", "items": {"type": "string"}},
        "flags_added": {"type": "array", "items": {"type": "string"}},
        "flags_removed": {"type": "array", "items": {"type": "string"}}},
      "additionalProperties": false},
    "job": {"type": "object", "description": "a whole job instead of a change: its YAML (campaign: and parent: set) and its source files",
      "properties": {"yaml": {"type": "string"}, "files": null},
      "required": ["yaml"], "additionalProperties": false},
    "name": {"type": "string", "description": "the child's name; default CAMPAIGN/from-PARENT-<hash of the change>"},
    "force": {"type": "boolean", "default": false, "description": "run it even though the same change was already tried"},
    "allow_non_best": {"type": "boolean", "default": false, "description": "build on a parent that is not the current best, on purpose"}
  },
  "required": ["campaign"],
  "additionalProperties": false
})js");
  s["properties"]["change"]["properties"]["files"] = parse(kFiles);
  s["properties"]["job"]["properties"]["files"] = parse(kFiles);
  return s;
}

nlohmann::json submit_output() {
  auto s = parse(R"js({
  "type": "object",
  "properties": {
    "job_id": {"type": "integer"}, "name": {"type": "string"}, "campaign": {"type": "string"},
    "parent_job_id": {"type": ["integer", "null"]}, "state": {"type": "string"},
    "change_summary": {"type": "string"}, "change": null,
    "duplicate_of": {"type": ["integer", "null"]}, "dashboard_url": {"type": "string"}
  },
  "required": ["job_id", "name", "state", "change_summary"]
})js");
  s["properties"]["change"] = parse(kChange);
  return s;
}

nlohmann::json job_input(bool with_timeout) {
  auto s = parse(R"js({
  "type": "object",
  "properties": {"job_id": {"type": "integer", "minimum": 1}},
  "required": ["job_id"], "additionalProperties": false
})js");
  if (with_timeout)
    s["properties"]["timeout_s"] = {{"type", "number"}, {"minimum", 1}, {"maximum", 3600},
                                    {"default", 600},
                                    {"description", "give up waiting after this long (the job goes on)"}};
  return s;
}

nlohmann::json verdict_output() {
  auto s = parse(R"js({
  "type": "object",
  "properties": {
    "job_id": {"type": "integer"}, "name": {"type": "string"}, "campaign": {"type": "string"},
    "state": {"type": "string"}, "state_reason": {"type": "string"},
    "finished": {"type": "boolean", "description": "false: no verdict yet (wait again)"},
    "parent_job_id": {"type": ["integer", "null"]}, "change_summary": {"type": "string"}, "change": null,
    "verdict": {"type": ["object", "null"], "properties": {
      "outcome": {"type": "string"}, "gate": {"type": "string"}, "perf": {"type": "string"},
      "reason": {"type": "string"}, "median_us": {"type": "number"}, "baseline_us": {"type": "number"},
      "delta_pct": {"type": "number"}, "ci_low_pct": {"type": "number"}, "ci_high_pct": {"type": "number"},
      "metrics": {"type": "object", "properties": {
        "kernels": {"type": "object", "description": "a Python kernel's launch (triton, torch): each kernel it ran and where its device code came from, as the recorder reported it", "properties": {
          "kernels": {"type": "array", "items": {"type": "object", "properties": {
            "function": {"type": "string"},
            "origin": {"type": "string", "enum": ["job", "library"], "description": "job: the job's own code (compiled in the run or shipped); library: a library's kernel (torch, cuBLAS, cuDNN...)"},
            "file": {"type": "string", "description": "the library file the kernel was loaded from"},
            "package": {"type": "string", "description": "the library's package and version"},
            "how": {"type": "string", "description": "for the job's code: how it came to be (a Triton cubin, compiled in the run)"}}}},
          "more": {"type": "integer", "description": "kernels past the first 256, not listed"},
          "simulated": {"type": "boolean"}}}}}}},
    "run_ids": {"type": "array", "items": {"type": "integer"}},
    "gates": {"type": "object", "properties": {
      "resources": {"type": ["object", "null"], "properties": {
        "ok": {"type": ["boolean", "null"]}, "kernels": {"type": "array"}, "violations": {"type": "array"}}},
      "correctness": {"type": ["object", "null"], "properties": {
        "ok": {"type": ["boolean", "null"]}, "passed": {"type": "integer"}, "checked": {"type": "integer"},
        "cases": {"type": "array", "items": {"type": "object"}}}},
      "benchmark": {"type": ["object", "null"], "properties": {
        "ok": {"type": ["boolean", "null"]}, "case": {"type": "string"}, "median_us": {"type": ["number", "null"]},
        "samples": {"type": ["integer", "null"]}, "ci_low_pct": {"type": ["number", "null"]},
        "ci_high_pct": {"type": ["number", "null"]}, "noise_pct": {"type": ["number", "null"]},
        "timing_mode": {"type": "string"}, "baseline_us": {"type": ["number", "null"]},
        "delta_pct": {"type": ["number", "null"]}, "perf": {"type": "string"}, "versus": null}}},
      "required": ["resources", "correctness", "benchmark"]},
    "marks": {"type": "object", "properties": {
      "simulated": {"type": "boolean", "description": "made by the simulated GPU backend, not hardware"},
      "self_reported": {"type": "boolean", "description": "the numbers come from the job's own scripts (family custom)"},
      "in_process": {"type": ["boolean", "null"], "description": "timed in the process that ran the job's code; null when the agent does not say"}},
      "required": ["simulated", "self_reported", "in_process"]},
    "dashboard_url": {"type": "string"}
  },
  "required": ["job_id", "name", "state", "finished", "verdict", "gates", "marks"]
})js");
  s["properties"]["change"] = parse(kChange);
  s["properties"]["verdict"]["properties"]["versus"] = parse(kVersus);
  s["properties"]["gates"]["properties"]["benchmark"]["properties"]["versus"] = parse(kVersus);
  return s;
}

nlohmann::json campaign_input() {
  return parse(R"js({
  "type": "object",
  "properties": {"name": {"type": "string", "minLength": 1, "description": "the campaign"}},
  "required": ["name"], "additionalProperties": false
})js");
}

nlohmann::json campaign_output() {
  auto s = parse(R"js({
  "type": "object",
  "properties": {
    "name": {"type": "string"}, "jobs": {"type": "integer"},
    "current_best": {"type": ["object", "null"], "description": "the newest kept win, else the passed root"},
    "kept_wins": {"type": "array", "items": {"type": "object"}},
    "rejections": {"type": "array", "items": {"type": "object"}, "description": "with reason: why each was not kept"},
    "pending": {"type": "array", "items": {"type": "object"}},
    "no_repeat": {"type": "array", "items": {"type": "object"},
                  "description": "changes already tried from the current best, with their delta: do not try them again"},
    "log_markdown": {"type": "string", "description": "the same, in seed 002's log shape"},
    "fast_p": null
  },
  "required": ["name", "current_best", "kept_wins", "rejections", "no_repeat", "log_markdown"]
})js");
  s["properties"]["fast_p"] = parse(kFastP);
  return s;
}

nlohmann::json fleet_input() {
  return parse(R"js({"type": "object", "properties": {}, "additionalProperties": false})js");
}

nlohmann::json fleet_output() {
  return parse(R"js({
  "type": "object",
  "properties": {
    "gpu_classes": {"type": "array", "items": {"type": "object", "properties": {
      "gpu_class": {"type": "string"}, "arch": {"type": "string"}, "agents": {"type": "integer"},
      "idle": {"type": "integer"}, "busy": {"type": "integer"}, "lost": {"type": "integer"},
      "simulated": {"type": "boolean"}}}},
    "agents": {"type": "object", "properties": {"total": {"type": "integer"}, "idle": {"type": "integer"},
      "busy": {"type": "integer"}, "lost": {"type": "integer"}, "retired": {"type": "integer"}}},
    "queue": {"type": "object", "properties": {"queued": {"type": "integer"}, "waiting_capacity": {"type": "integer"},
      "running": {"type": "integer"}, "by_gpu": {"type": "object"}}},
    "stockouts": {"type": "array", "items": {"type": "object"}},
    "provisioning_stopped": {"type": ["string", "null"]},
    "summary": {"type": "string"}
  },
  "required": ["gpu_classes", "agents", "queue", "stockouts", "summary"]
})js");
}

nlohmann::json problems_input() {
  return parse(R"js({"type": "object", "properties": {}, "additionalProperties": false})js");
}

nlohmann::json problems_output() {
  return parse(R"js({
  "type": "object",
  "properties": {
    "library": {"type": "string", "description": "the library's folder"},
    "problems": {"type": "array", "items": {"type": "object", "properties": {
      "name": {"type": "string"}, "version": {"type": "integer"}, "abi": {"type": "string"},
      "summary": {"type": "string"}, "cases": {"type": "array", "items": {"type": "string"}}}}},
    "issues": {"type": "array", "items": {"type": "string"}, "description": "definitions that did not load"}
  },
  "required": ["library", "problems"]
})js");
}

nlohmann::json problem_input() {
  return parse(R"js({
  "type": "object",
  "properties": {"name": {"type": "string", "minLength": 1, "description": "a problem of the library, e.g. rmsnorm"}},
  "required": ["name"], "additionalProperties": false
})js");
}

nlohmann::json problem_output() {
  return parse(R"js({
  "type": "object",
  "properties": {
    "name": {"type": "string"}, "version": {"type": "integer"}, "ref": {"type": "string", "description": "what kernel.problem names: NAME@VERSION"},
    "abi": {"type": "string"}, "summary": {"type": "string"}, "entry": {"type": "string"},
    "slots": {"type": "array", "items": {"type": "object"}, "description": "args->tensors[i]: index, name, role, dtype, shape"},
    "dims": {"type": "array", "items": {"type": "object"}}, "scalars": {"type": "array", "items": {"type": "object"}},
    "outputs": {"type": "array", "items": {"type": "object"}, "description": "each output's check and the do-nothing outputs it must reject"},
    "cases": {"type": "array", "items": {"type": "object"}, "description": "each case's name, dims, whether it is required, where its data comes from (doc) and its own draws (init)"},
    "required_cases": {"type": "array", "items": {"type": "string"}, "description": "the cases every job of the problem runs; a job may add cases, not drop one"},
    "job": {"type": "string", "description": "how a job names the problem"},
    "contract": {"type": "string", "description": "the same as `kfleet problems show NAME` prints"},
    "starter": {"type": "string", "description": "a starter kernel that compiles on the ABI"}
  },
  "required": ["name", "version", "ref", "abi", "slots", "cases", "contract", "starter"]
})js");
}

}  // namespace kfleet::cli::mcp::schema
