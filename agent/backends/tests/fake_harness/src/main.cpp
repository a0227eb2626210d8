// A stand-in harness (host code only, so it runs without a GPU) that speaks PROTOCOL.md's
// command line and JSON lines. The job's kernel object is linked in; the shape's S picks the
// behaviour: S=13 crashes, S=7 fails a check, S=99 hangs, S=5 is refused by the recorder, S=17
// aborts in the recorder (a launch function that starts threads until the sandbox's process
// limit refuses one), S=19 leaves its launch list as a link to a host file, otherwise it passes. Replay mode as the real harness has it: with --record
// it writes a launch list and exits; with --replay it is the measuring process (linked without the job, so the
// job's entry is a null weak symbol), writes its lines to --result-fd and prints a forged bench
// line on stdout that the agent must not believe.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <thread>
#include <vector>

#include "kfleet_harness/kernel.hpp"

extern "C" __attribute__((weak)) int fake_launch(float*, int);

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  std::string shape, name = "?", record, replay, device_code;
  int result_fd = -1;
  for (int i = 2; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--shape")) shape = argv[i + 1];
    if (!std::strcmp(argv[i], "--case")) name = argv[i + 1];
    if (!std::strcmp(argv[i], "--record")) record = argv[i + 1];
    if (!std::strcmp(argv[i], "--replay")) replay = argv[i + 1];
    if (!std::strcmp(argv[i], "--device-code")) device_code = argv[i + 1];
    if (!std::strcmp(argv[i], "--result-fd")) result_fd = std::atoi(argv[i + 1]);
  }
  if (!record.empty()) {
    if (shape.find("S=5") != std::string::npos) {
      std::printf("{\"type\":\"error\",\"phase\":\"record\",\"message\":\"replay mode refused "
                  "the launch (%s): the launch enqueued a host function node\"}\n", mode.c_str());
      return 4;
    }
    if (shape.find("S=17") != std::string::npos) {
      // std::thread throws once a thread is refused; nothing catches it: std::terminate, SIGABRT.
      std::vector<std::thread> held;
      for (int i = 0; i < 4096; ++i) held.emplace_back([] { pause(); });
      std::_Exit(0);  // no limit: not what the test expects, and it says so
    }
    if (shape.find("S=19") != std::string::npos) {
      // Leaves its launch list as a link to a host file the agent would read for it.
      unlink(record.c_str());
      return symlink("/etc/hostname", record.c_str()) == 0 && fake_launch ? 0 : 8;
    }
    std::ofstream(record) << "kfleet-launch-list 1\n";
    std::printf("{\"type\":\"recorded\",\"lists\":1}\n");
    return fake_launch ? 0 : 5;  // the recorder is the binary with the job in it
  }
  if (!replay.empty()) {
    std::ifstream in(replay);
    // The job's objects (a CUDA job) or the images a Python recorder wrote.
    const bool code = device_code.find(".o") != std::string::npos ||
                      device_code.find(".cubin") != std::string::npos;
    if (!in || !code || fake_launch) return 6;
  }
  if (result_fd >= 0) {
    // What a job's code would try: a forged result on stdout. Only the pipe counts.
    std::printf("{\"type\":\"bench\",\"case\":\"%s\",\"n\":5,\"median_us\":1,\"samples_us\":[1,1,1,1,1],"
                "\"suspect\":false,\"recheck\":{\"pass\":true}}\n", name.c_str());
    std::fflush(stdout);
    if (dup2(result_fd, 1) < 0) return 7;
  }
  std::printf("{\"type\":\"device\",\"runtime\":\"fake\",\"name\":\"Fake GPU\",\"arch\":\"sm_89\"}\n");
  std::fflush(stdout);
  if (shape.find("S=13") != std::string::npos) std::raise(SIGSEGV);
  if (shape.find("S=99") != std::string::npos) for (;;) pause();
  bool bad = shape.find("S=7") != std::string::npos;
  if (mode == "correctness") {
    // A family harness checks its GPU reference against its fp64 CPU reference on a small case.
    std::printf("{\"type\":\"reference_check\",\"problem\":\"attention\",\"case\":\"%s\",\"seed\":0,"
                "\"pass\":true,\"reason\":\"\",\"against\":\"fp64 CPU reference\",\"outputs\":{\"out\":"
                "{\"check\":\"rel_l2\",\"pass\":true,\"max_abs\":1e-06,\"rel_l2\":2e-07}},\"time_ms\":3}\n",
                name.c_str());
    for (int seed = 0; seed < 2; ++seed) {
      std::printf("{\"type\":\"correctness\",\"case\":\"%s\",\"seed\":%d,\"pass\":%s,\"reason\":\"%s\","
                  "\"max_abs\":%g}\n", name.c_str(), seed, bad ? "false" : "true",
                  bad ? "max_abs 0.21 > 0.06" : "", bad ? 0.21 : 0.0004);
    }
    return bad ? 1 : 0;
  }
  if (mode == "benchmark") {
    // kfleet's PyTorch references as the fake recorder names their device code: eager at
    // 150 µs, torch.compile at 80 µs; every other kernel at 100 µs.
    if (device_code.find("eeeeeeeeeeeeeeee.cubin") != std::string::npos) {
      std::printf("{\"type\":\"bench\",\"case\":\"%s\",\"n\":5,\"median_us\":150,\"samples_us\":[149,150,150,151,150],"
                  "\"suspect\":false,\"recheck\":{\"pass\":true}}\n", name.c_str());
      return 0;
    }
    if (device_code.find("cccccccccccccccc.cubin") != std::string::npos) {
      std::printf("{\"type\":\"bench\",\"case\":\"%s\",\"n\":5,\"median_us\":80,\"samples_us\":[79,80,80,81,80],"
                  "\"suspect\":false,\"recheck\":{\"pass\":true}}\n", name.c_str());
      return 0;
    }
    std::printf("{\"type\":\"bench\",\"case\":\"%s\",\"n\":5,\"median_us\":%d,\"samples_us\":[99,100,100,101,100],"
                "\"suspect\":false,\"recheck\":{\"pass\":true}}\n", name.c_str(), 100 + (fake_launch ? fake_launch(nullptr, 0) : 0));
    return 0;
  }
  return 2;
}
