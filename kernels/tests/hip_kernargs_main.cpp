// Prints each kernel's explicit arguments as the HIP recorder would lay them out, from a host
// object or executable (its .hip_fatbin offload bundle) or a bare code object:
//   kfleet-hip-kernargs FILE ARCH   ->   one line a kernel: "<name> <offset>+<size> ..."
// For the compile test that holds the reader to what clang really emits (hip_kernargs.cmake).
#include <fstream>
#include <iostream>
#include <sstream>

#include "amdgpu_code_object.hpp"

int main(int argc, char** argv) {
  const char* usage =
      "usage: kfleet-hip-kernargs FILE ARCH\n"
      "Prints each kernel's explicit arguments (offset+size in its kernarg segment) from FILE: a\n"
      "host object or executable built by clang for HIP (its .hip_fatbin), an offload bundle or a\n"
      "code object; ARCH picks the bundle entry (gfx1151, gfx90a:xnack-, ...).\n";
  if (argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::cout << usage;
    return 0;
  }
  if (argc != 3) {
    std::cerr << usage;
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::cerr << "cannot read " << argv[1] << "\n";
    return 2;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string file = ss.str();
  std::string section;
  std::vector<std::string> code_objects = {file};
  if (kfleet::harness::elf_section(file, ".hip_fatbin", &section).empty()) {
    code_objects.clear();
    if (std::string e = kfleet::harness::fatbin_code_objects(section, argv[2], &code_objects); !e.empty()) {
      std::cerr << e << "\n";
      return 1;
    }
  }
  std::map<std::string, std::vector<kfleet::harness::ParamSlot>> kernels;
  for (const auto& co : code_objects) {
    if (std::string e = kfleet::harness::amdgpu_kernel_args(co, &kernels); !e.empty()) {
      std::cerr << e << "\n";
      return 1;
    }
  }
  for (const auto& [name, slots] : kernels) {
    std::cout << name;
    for (const auto& s : slots) std::cout << " " << s.offset << "+" << s.size;
    std::cout << "\n";
  }
  return 0;
}
