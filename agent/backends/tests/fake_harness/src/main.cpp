// A stand-in harness (host code only, so it runs without a GPU) that speaks PROTOCOL.md's
// command line and JSON lines. The job's kernel object is linked in; the shape's S picks the
// behaviour: S=13 crashes, S=7 fails a check, S=99 hangs, otherwise it passes.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>

#include "kfleet_harness/kernel.hpp"

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  std::string shape, name = "?";
  for (int i = 2; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--shape")) shape = argv[i + 1];
    if (!std::strcmp(argv[i], "--case")) name = argv[i + 1];
  }
  std::printf("{\"type\":\"device\",\"runtime\":\"fake\",\"name\":\"Fake GPU\",\"arch\":\"sm_89\"}\n");
  std::fflush(stdout);
  if (shape.find("S=13") != std::string::npos) std::raise(SIGSEGV);
  if (shape.find("S=99") != std::string::npos) for (;;) pause();
  bool bad = shape.find("S=7") != std::string::npos;
  if (mode == "correctness") {
    for (int seed = 0; seed < 2; ++seed) {
      std::printf("{\"type\":\"correctness\",\"case\":\"%s\",\"seed\":%d,\"pass\":%s,\"reason\":\"%s\","
                  "\"max_abs\":%g}\n", name.c_str(), seed, bad ? "false" : "true",
                  bad ? "max_abs 0.21 > 0.06" : "", bad ? 0.21 : 0.0004);
    }
    return bad ? 1 : 0;
  }
  if (mode == "benchmark") {
    std::printf("{\"type\":\"bench\",\"case\":\"%s\",\"n\":5,\"median_us\":%d,\"samples_us\":[99,100,100,101,100],"
                "\"suspect\":false,\"recheck\":{\"pass\":true}}\n", name.c_str(), 100 + fake_launch(nullptr, 0));
    return 0;
  }
  return 2;
}
