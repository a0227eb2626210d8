// The kfleet executable: the real terminal, environment and clock around run_cli().
#include <unistd.h>

#include <iostream>

#include "kfleet/cli/app.hpp"

int main(int argc, char** argv) {
  kfleet::cli::CliIo io{std::cout, std::cerr, kfleet::cli::process_env(),
                        kfleet::cli::disk_reader(), std::make_shared<kfleet::SystemClock>(),
                        ::isatty(STDOUT_FILENO) == 1};
  return kfleet::cli::run_cli(argc, argv, io);
}
