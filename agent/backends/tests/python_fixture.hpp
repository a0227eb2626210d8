#pragma once
// A Python kernel through the CudaBackend without a GPU or torch: a fake interpreter that answers
// discover_python's probe and, as the recorder (kfleet_record.py's command line), writes a
// launch list and a device-code image; the stand-in measuring process replays them.
//
// It also records kfleet's PyTorch references (a source named reference_torch.py, language
// torch, the family's entry, --torch-compile for the compile one): the eager one's device code
// is eeeeeeeeeeeeeeee.cubin (replayed at 150 µs), the compile one's cccccccccccccccc.cubin (80
// µs). A reference that can see the job's bundle or runs in the job's run folder is refused, so
// a test that passes shows it ran without them. Its source's text picks a failure:
// SETUP_FAIL (exit 3 before any reference code ran: the fleet's setup), COMPILE_REFUSED (the
// compile reference's recording refused, exit 4), COMPILE_HANGS (its recording never ends: the
// agent's reference timeout ends it), EAGER_DECLINES (the eager reference returns
// kfleet.UNSUPPORTED and launches nothing: a list of status 1, no device code).
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "cuda_fixture.hpp"

namespace cuda_test {

struct PythonFixture : Fixture {
  fs::path bundle = root / "bundle";
  fs::path python = root / "py" / "python3";
  // `triton`: whether the probe finds triton (without it: torch only). `problems_dir`: the
  // agent's problem library ("" = the source tree's).
  explicit PythonFixture(bool triton = true, const std::string& problems_dir = "",
                         int reference_timeout_s = 1800) {
    fs::create_directories(bundle);
    fs::create_directories(python.parent_path());
    std::ofstream(bundle / "attn.py") << "def kfleet_attention_launch(args, stream):\n    return 0\n";
    std::ofstream(python)
        << "#!/bin/sh\n"
        << "if [ \"$1\" = -I ]; then\n"
        << "  echo 'KFLEET_PYTHON_PROBE {\"python\": \"" << python.string() << "\", \"python_version\": "
        << "\"3.12.3\", \"torch\": \"2.9.0\", \"torch_cuda\": \"12.8\", \"keep_graph\": true, "
        << (triton ? "\"triton\": \"3.5.0\", " : "\"triton_error\": \"No module named triton\", ")
        << "\"cc\": \"/usr/bin/cc\", \"cuda_home\": \"/usr/local/cuda\"}'\n"
        << "  exit 0\n"
        << "fi\n"
        << "while [ $# -gt 0 ]; do\n"
        << "  case \"$1\" in\n"
        << "    --measure) m=$2; shift;; --device-code-dir) d=$2; shift;; --record) l=$2; shift;;\n"
        << "    --shape) shape=$2; shift;; --source) src=$2; shift;; --language) lang=$2; shift;;\n"
        << "    --entry) entry=$2; shift;; --torch-compile) tc=$2; shift;;\n"
        << "  esac; shift\n"
        << "done\n"
        // kfleet's PyTorch reference: none of the job's files, its own folder, its own call.
        << "case \"$src\" in\n"
        << "  */reference_torch.py)\n"
        << "    [ -e \"" << (bundle / "attn.py").string() << "\" ] && { echo '{\"type\":\"error\","
           "\"phase\":\"record\",\"message\":\"the reference could read the job bundle\"}'; exit 4; }\n"
        << "    case \"$PWD\" in " << (root / "work").string() << "*) echo '{\"type\":\"error\","
           "\"phase\":\"record\",\"message\":\"the reference ran in the job run folder\"}'; exit 4;; esac\n"
        << "    [ -x \"$m\" ] && [ \"$lang\" = torch ] && [ \"$entry\" = kfleet_attention_launch ] && "
           "touch \"$HOME/h\" \"$TMPDIR/t\" || { echo '{\"type\":\"error\",\"phase\":\"setup\","
           "\"message\":\"not called as a reference\"}'; exit 3; }\n"
        << "    grep -q SETUP_FAIL \"$src\" && { echo '{\"type\":\"error\",\"phase\":\"setup\",\"message\":"
           "\"torch sees no CUDA device\"}'; exit 3; }\n"
        // What the agent set for inductor and for the stacks before its time limit, said back.
        << "    echo \"{\\\"type\\\":\\\"reference_env\\\",\\\"compile_threads\\\":\\\"$TORCHINDUCTOR_COMPILE_THREADS\\\","
           "\\\"stacks_after_s\\\":\\\"$KFLEET_STACKS_AFTER_S\\\"}\"\n"
        << "    if [ -n \"$tc\" ]; then\n"
        << "      [ \"$tc\" = max-autotune-no-cudagraphs ] || exit 2\n"
        << "      grep -q COMPILE_REFUSED \"$src\" && { echo '{\"type\":\"error\",\"phase\":\"record\","
           "\"message\":\"replay mode refused the launch (benchmark): kernel cudnn_x (operation 1) has "
           "no device code the recorder can give the measuring process\"}'; exit 4; }\n"
        << "      grep -q COMPILE_HANGS \"$src\" && exec sleep 600\n"
        << "      echo c > \"$d/cccccccccccccccc.cubin\"\n"
        << "    elif grep -q EAGER_DECLINES \"$src\"; then\n"
        << "      printf 'kfleet-launch-list 1\\nlist benchmark\\nstatus 1\\nargs 00\\nend\\n' > \"$l\"\n"
        << "      echo '{\"type\":\"recorded\",\"lists\":1,\"by\":\"reference\"}'; exit 0\n"
        << "    else\n"
        << "      echo e > \"$d/eeeeeeeeeeeeeeee.cubin\"\n"
        << "    fi\n"
        << "    echo 'kfleet-launch-list 1' > \"$l\"\n"
        << "    echo '{\"type\":\"recorded\",\"lists\":1,\"by\":\"reference\"}'; exit 0;;\n"
        << "esac\n"
        // What the agent must give it: the measuring process (for the plan), its launch module,
        // CC and CUDA_HOME, and a HOME and TMPDIR it can write.
        << "[ -x \"$m\" ] && [ -r \"$src\" ] && [ \"$lang\" = triton ] || { echo '{\"type\":\"error\","
           "\"phase\":\"setup\",\"message\":\"no plan\"}'; exit 3; }\n"
        << "[ -n \"$CC\" ] && [ -n \"$CUDA_HOME\" ] && touch \"$HOME/h\" \"$TMPDIR/t\" || { echo "
           "'{\"type\":\"error\",\"phase\":\"setup\",\"message\":\"environment\"}'; exit 3; }\n"
        << "case \"$shape\" in\n"
        << "  *S=5) echo '{\"type\":\"error\",\"phase\":\"record\",\"message\":\"replay mode refused the "
           "launch (correctness): kernel at::x (operation 1) has no device code the recorder can give "
           "the measuring process\"}'; exit 4;;\n"
        << "  *S=21) ln -s /etc/hostname \"$d/0123456789abcdef.cubin\";;\n"
        << "  *S=22) echo x > \"$d/0123456789abcdef.cubin\"; ln \"$d/0123456789abcdef.cubin\" \"$d/aaaaaaaaaaaaaaaa.cubin\";;\n"
        << "  *S=23) ;;\n"
        // Exit 3, the recorder's setup status: before the job's code (the fleet's), and after
        // the recorder announced it (then the job's code may have printed it: the kernel's).
        << "  *S=31) echo '{\"type\":\"error\",\"phase\":\"setup\",\"message\":\"torch sees no CUDA "
           "device\"}'; exit 3;;\n"
        << "  *S=32) echo '{\"type\":\"job_code\",\"source\":\"attn.py\"}'; echo '{\"type\":\"error\","
           "\"phase\":\"setup\",\"message\":\"torch sees no CUDA device\"}'; exit 3;;\n"
        << "  *) echo cubin > \"$d/0123456789abcdef.cubin\";;\n"
        << "esac\n"
        << "echo 'kfleet-launch-list 1' > \"$l\"\n"
        << "echo '{\"type\":\"recorded\",\"lists\":1,\"by\":\"python\",\"kernels\":[{\"function\":"
           "\"attn_fwd\",\"image\":\"0123456789abcdef.cubin\",\"origin\":\"job\",\"how\":\"Triton cubin\"},"
           "{\"function\":\"fill_kernel\",\"origin\":\"library\",\"file\":\"libtorch_cuda.so\","
           "\"package\":\"torch 2.11.0\"}]}'\n";
    ::chmod(python.c_str(), 0755);
    CudaBackendOptions o;
    o.harness_dir = kTests + "/fake_harness";
    o.gpu_class = "L4";
    o.arch = "sm_89";
    o.cache_dir = (root / "cache").string();
    o.require_exclusive = false;
    o.sandbox = test_sandbox();
    o.python = python.string();
    o.problems_dir = problems_dir;
    o.reference_timeout_s = reference_timeout_s;
    backend = make_cuda_backend(o);
  }
  static JobSpec py_job(std::int64_t s_dim) {
    JobSpec s = job(s_dim);
    s.kernel.language = "triton";
    s.kernel.sources = {"attn.py"};
    s.kernel.entry = "";
    s.gates.resources.reset();
    return s;
  }
  StageContext py_ctx(const JobSpec& s) {
    return StageContext{s, bundle.string(), (root / "work").string(), GpuInfo{}, Comparison{}, sink, stop};
  }
  int recordings_by(const std::string& who) const {
    int n = 0;
    for (const auto& [type, data] : sink.events)
      n += type == event_type::log_line &&
           data.value("text", "").find("\"by\":\"" + who + "\"") != std::string::npos;
    return n;
  }
  int python_recordings() const { return recordings_by("python"); }
};

}  // namespace cuda_test
