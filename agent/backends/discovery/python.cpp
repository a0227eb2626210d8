#include "discovery/python.hpp"

#include <cstdlib>
#include <sstream>

#include "common/subprocess.hpp"

namespace kfleet::backends {
namespace {

constexpr const char* kProbeTag = "KFLEET_PYTHON_PROBE ";

std::string str(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

}  // namespace

const std::string& python_probe_program() {
  static const std::string p =
      "import json, sys\n"
      "r = {'python': sys.executable, 'python_version': sys.version.split()[0]}\n"
      "try:\n"
      "    import torch\n"
      "    r['torch'] = str(torch.__version__)\n"
      "    r['torch_cuda'] = str(torch.version.cuda or '')\n"
      "    import inspect\n"
      "    try:\n"
      "        r['keep_graph'] = 'keep_graph' in inspect.signature(torch.cuda.CUDAGraph).parameters\n"
      "    except (TypeError, ValueError):\n"
      "        r['keep_graph'] = False\n"
      "except Exception as e:\n"
      "    r['torch_error'] = type(e).__name__ + ': ' + str(e)\n"
      "try:\n"
      "    import triton\n"
      "    r['triton'] = str(triton.__version__)\n"
      "except Exception as e:\n"
      "    r['triton_error'] = type(e).__name__ + ': ' + str(e)\n"
      "import os, shutil, site, sysconfig\n"
      "paths = [sys.prefix, sys.base_prefix, sysconfig.get_paths().get('include', '')]\n"
      "try:\n"
      "    paths += site.getsitepackages()\n"
      "except Exception:\n"
      "    pass\n"
      "for m in ('torch', 'triton'):\n"
      "    mod = sys.modules.get(m)\n"
      "    if mod is not None and getattr(mod, '__file__', None):\n"
      "        paths.append(os.path.dirname(os.path.dirname(os.path.realpath(mod.__file__))))\n"
      "r['paths'] = sorted(set(p for p in paths if p and os.path.isdir(p)))\n"
      "r['cc'] = shutil.which('cc') or shutil.which('gcc') or ''\n"
      "try:\n"
      "    from torch.utils.cpp_extension import CUDA_HOME\n"
      "    r['cuda_home'] = CUDA_HOME or ''\n"
      "except Exception:\n"
      "    r['cuda_home'] = ''\n"
      "print('KFLEET_PYTHON_PROBE ' + json.dumps(r), flush=True)\n";
  return p;
}

nlohmann::json PythonRuntime::to_json() const {
  nlohmann::json j = {{"python", python},       {"python_version", python_version},
                      {"torch", torch_version}, {"torch_cuda", torch_cuda},
                      {"triton", triton_version}, {"keep_graph", keep_graph},
                      {"languages", languages}, {"cc", cc},
                      {"cuda_home", cuda_home}};
  if (!missing.empty()) j["missing"] = missing;
  return j;
}

Result<PythonRuntime> parse_python_probe(const std::string& python, const std::string& output) {
  std::istringstream in(output);
  std::string line;
  nlohmann::json j;
  bool found = false;
  while (std::getline(in, line)) {
    if (line.rfind(kProbeTag, 0) != 0) continue;
    j = nlohmann::json::parse(line.substr(std::string(kProbeTag).size()), nullptr, false);
    found = j.is_object();
  }
  if (!found)
    return make_error(Errc::invalid_argument,
                      python + " did not print the probe line (is it a Python 3 interpreter?)");
  PythonRuntime r;
  r.python = str(j, "python").empty() ? python : str(j, "python");
  r.python_version = str(j, "python_version");
  r.torch_version = str(j, "torch");
  r.torch_cuda = str(j, "torch_cuda");
  r.triton_version = str(j, "triton");
  if (j.contains("paths") && j["paths"].is_array())
    for (const auto& p : j["paths"])
      if (p.is_string() && !p.get<std::string>().empty() && p.get<std::string>()[0] == '/')
        r.paths.push_back(p.get<std::string>());
  r.cc = str(j, "cc");
  r.cuda_home = str(j, "cuda_home");
  r.keep_graph = j.contains("keep_graph") && j["keep_graph"].is_boolean() && j["keep_graph"].get<bool>();
  if (r.torch_version.empty()) {
    r.missing.push_back("torch: " + (str(j, "torch_error").empty() ? "not importable" : str(j, "torch_error")));
  } else if (r.torch_cuda.empty()) {
    r.missing.push_back("torch " + r.torch_version + " was built without CUDA");
  }
  if (r.triton_version.empty())
    r.missing.push_back("triton: " + (str(j, "triton_error").empty() ? "not importable" : str(j, "triton_error")));
  if (!r.torch_version.empty() && !r.torch_cuda.empty()) {
    r.languages.push_back("torch");
    if (!r.triton_version.empty()) r.languages.push_back("triton");
  }
  return r;
}

Result<PythonRuntime> discover_python(const std::string& python_in, double timeout_s) {
  std::string python = python_in;
  if (python.empty()) {
    const char* env = std::getenv("KFLEET_PYTHON");
    python = env && *env ? env : "python3";
  }
  SubprocessSpec sp;
  sp.argv = {python, "-I", "-B", "-c", python_probe_program()};
  sp.trust = ProcessTrust::agent_tool;
  sp.timeout_s = timeout_s;
  auto res = run_subprocess(sp);
  if (!res) return make_error(Errc::unavailable, "cannot run " + python + ": " + res.error().message);
  if (!res->ok())
    return make_error(Errc::unavailable, python + " " + res->describe() +
                                             (res->err.empty() ? "" : ": " + tail_lines(res->err, 1)));
  return parse_python_probe(python, res->out);
}

}  // namespace kfleet::backends
