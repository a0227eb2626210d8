#pragma once
// The whole `kfleet` command line as a function, so tests run it in-process against a fake
// server and main() stays a few lines.
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

#include "kfleet/cli/config.hpp"
#include "kfleet/common/clock.hpp"

namespace kfleet::cli {

struct CliIo {
  std::ostream& out;
  std::ostream& err;
  EnvLookup env;
  FileReader read_file;
  ClockPtr clock;
  bool stdout_is_tty = false;  // colour only on a terminal (and never with --no-color/NO_COLOR)
  // How long --follow/--wait back off between reconnects and polls; tests shorten it.
  int backoff_initial_ms = 500;
  int backoff_max_ms = 5000;
};

// Parses argv and runs one command; returns the process exit status (exit_code.hpp).
int run_cli(int argc, const char* const* argv, CliIo& io);

// The real environment and file system, for main().
EnvLookup process_env();
FileReader disk_reader();

}  // namespace kfleet::cli
