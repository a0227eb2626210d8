// A stand-in for kfleet-agent: writes its argv, one per line, to <work-dir>/argv.txt and then
// waits for a signal. With KFLEET_FAKE_AGENT_IGNORE_TERM set it ignores SIGTERM, to exercise
// the SIGKILL after the grace period.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

int main(int argc, char** argv) {
  if (std::getenv("KFLEET_FAKE_AGENT_IGNORE_TERM")) ::signal(SIGTERM, SIG_IGN);
  std::string dir = ".";
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--work-dir") dir = argv[i + 1];
  {
    std::ofstream out(dir + "/argv.tmp");
    for (int i = 0; i < argc; ++i) out << argv[i] << "\n";
  }
  // Rename so a reader never sees a half-written file.
  std::rename((dir + "/argv.tmp").c_str(), (dir + "/argv.txt").c_str());
  std::printf("fake agent %d started\n", static_cast<int>(::getpid()));
  std::fflush(stdout);
  for (;;) ::pause();
}
