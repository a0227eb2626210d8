// The job's object files as kfleet-measure reads them (kernels/harness/cpu/device_code.cpp):
// the measuring process takes the device code out of the very objects the job's sandboxed
// build produced (section .nv_fatbin of an ELF host object, or a cubin or fatbin whole) before
// the CUDA driver sees it. The driver's own parsing (cudaLibraryLoadData) needs a GPU and is not
// exercised here; everything kfleet reads before it is.
#include <cstddef>
#include <cstdint>
#include <string>

#include "device_code.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using kfleet::fuzz::check;
  const std::string file(reinterpret_cast<const char*>(data), size);
  std::string code;
  const std::string why = kfleet::harness::device_code_in_file(file, &code);
  if (!why.empty()) {
    check(code.empty(), "a refused file still handed out device code");
    return 0;
  }
  // What goes to the driver is the file or a piece of it, never bytes from elsewhere.
  check(code.size() <= file.size(), "device code longer than the file it came from");
  check(code.empty() || file.find(code) != std::string::npos, "device code that is not in the file");
  return 0;
}
