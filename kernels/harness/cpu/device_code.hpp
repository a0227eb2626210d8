#pragma once
// The job's device code as kfleet-measure finds it (ABI.md, "Recorded replay"): the fatbin nvcc
// embedded in each of the job's host objects (section .nv_fatbin), or the file itself when it
// is a cubin or a bare fatbin. The objects come out of the job's sandboxed build, so their bytes
// are the job's: plain C++ here, bounds-checked, and fuzzed (tests/fuzz, fuzz_device_code).
#include <string>

namespace kfleet::harness {

// Sets `*code` to the device code in `file` (the whole file read into memory) and returns "",
// or returns why there is none: "not an object file this harness can read", "a truncated
// .nv_fatbin", "no device code (.nv_fatbin): was it compiled by nvcc?". The bytes returned are
// then the CUDA driver's to check (cudaLibraryLoadData).
std::string device_code_in_file(const std::string& file, std::string* code);

}  // namespace kfleet::harness
