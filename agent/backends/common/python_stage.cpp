#include "common/python_stage.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace kfleet::backends {
namespace fs = std::filesystem;

std::vector<std::string> python_recorder_argv(const PythonRecorderCall& c,
                                              const std::vector<std::string>& stage_args) {
  // -s: no user site-packages. The run's HOME is a folder of the run, which an earlier stage's
  // job code could write: a usercustomize.py there would run before the recorder's own code.
  // The agent's probe (discover_python, -I) found torch and triton without it too.
  std::vector<std::string> argv = {c.python, "-B", "-s",
                                   (fs::path(c.harness_dir) / "python" / "kfleet_record.py").string(),
                                   "--measure", c.measurer, "--source", c.source, "--language",
                                   c.language};
  if (!c.entry.empty()) argv.insert(argv.end(), {"--entry", c.entry});
  if (!c.torch_compile.empty()) argv.insert(argv.end(), {"--torch-compile", c.torch_compile});
  argv.insert(argv.end(), {"--device-code-dir", c.device_code_dir, "--cache-dir", c.cache_dir});
  argv.insert(argv.end(), stage_args.begin(), stage_args.end());
  argv.insert(argv.end(), {"--record", c.record});
  return argv;
}

std::string python_recorder_setup_failure(int exit_code, const std::vector<nlohmann::json>& said) {
  if (exit_code != 3) return "";
  for (const auto& m : said) {
    if (!m.is_object() || !m.contains("type") || !m["type"].is_string()) continue;
    const std::string type = m["type"].get<std::string>();
    if (type == "job_code") return "";  // the job's code ran: what follows is its own
    if (type != "error") continue;
    const bool setup = m.contains("phase") && m["phase"] == "setup";
    if (!setup) return "";
    std::string why = m.contains("message") && m["message"].is_string()
                          ? m["message"].get<std::string>()
                          : std::string();
    return why.empty() ? "the recorder could not start (exit 3)" : why;
  }
  return "";
}

std::vector<std::string> python_recorder_read_paths(const PythonRuntime& py,
                                                    const std::string& harness_dir) {
  std::vector<std::string> out = py.paths;
  out.push_back((fs::path(harness_dir) / "python").string());
  if (!py.python.empty()) out.push_back(fs::path(py.python).parent_path().string());
  if (!py.cc.empty()) out.push_back(fs::path(py.cc).parent_path().string());
  if (!py.cuda_home.empty()) out.push_back(py.cuda_home);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string python_recorder_path_env(const PythonRuntime& py, const std::string& cuda_home) {
  std::string path = cuda_home + "/bin";
  const std::string own = py.python.empty() ? "" : fs::path(py.python).parent_path().string();
  if (!own.empty() && own != "/usr/bin" && own != "/bin") path += ":" + own;
  return path + ":/usr/bin:/bin";
}

unsigned recorder_compile_workers(std::uint64_t memory_bytes) { return memory_bytes == 0 ? 0 : 1; }

Result<std::string> python_device_code(const std::string& dir) {
  constexpr std::size_t kMaxFiles = 256;
  constexpr std::uintmax_t kMaxBytes = 2ull << 30;
  std::error_code ec;
  std::vector<std::string> files;
  std::uintmax_t total = 0;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    const std::string name = p.filename().string();
    const auto st = fs::symlink_status(p, ec);
    const bool hex16 = name.size() > 17 && std::all_of(name.begin(), name.begin() + 16, [](char ch) {
      return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
    });
    const std::string ext = name.size() > 16 ? name.substr(16) : "";
    if (!fs::is_regular_file(st) || !hex16 || (ext != ".cubin" && ext != ".fatbin"))
      return make_error(Errc::invalid_argument,
                        "the recorder's device-code folder holds '" + name + "', which is not a "
                        "device-code image it writes (<16 hex digits>.cubin or .fatbin, a plain file)");
    total += fs::file_size(p, ec);
    files.push_back(p.string());
    if (files.size() > kMaxFiles || total > kMaxBytes)
      return make_error(Errc::invalid_argument, "the recorder wrote more device code than replay "
                                                "takes (256 files, 2 GiB)");
  }
  if (ec) return make_error(Errc::invalid_argument, "cannot list the recorder's device code in " + dir + ": " + ec.message());
  if (files.empty())
    return make_error(Errc::invalid_argument, "the recorder wrote no device code: the launch ran no kernel");
  std::sort(files.begin(), files.end());
  std::string joined;
  for (const auto& f : files) joined += (joined.empty() ? "" : ",") + f;
  return joined;
}

std::string python_launches_declined(const std::string& list_path) {
  std::ifstream in(list_path);
  std::size_t lists = 0, declined = 0, bytes = 0;
  for (std::string line; std::getline(in, line) && bytes < (4u << 20);) {
    bytes += line.size() + 1;
    if (line.rfind("status ", 0) != 0) continue;
    ++lists;
    if (line != "status 0") ++declined;
  }
  if (lists == 0 || declined != lists) return "";
  return "the launch declined the case (it returned kfleet.UNSUPPORTED) and launched no kernel: "
         "there is nothing to replay or time";
}

}  // namespace kfleet::backends
