#include "device_code.hpp"

#include <elf.h>

#include <cstdint>
#include <cstring>

namespace kfleet::harness {
namespace {

// [offset, offset + size) lies inside a file of `total` bytes, computed without wrapping.
bool within(std::uint64_t offset, std::uint64_t size, std::uint64_t total) {
  return offset <= total && size <= total - offset;
}

}  // namespace

std::string device_code_in_file(const std::string& file, std::string* code) {
  code->clear();
  if (file.size() < sizeof(Elf64_Ehdr) || std::memcmp(file.data(), ELFMAG, SELFMAG) != 0) {
    *code = file;  // a bare fatbin: the runtime checks its magic
    return "";
  }
  Elf64_Ehdr eh;
  std::memcpy(&eh, file.data(), sizeof eh);
  if (eh.e_machine == 190 /* EM_CUDA */) {
    *code = file;
    return "";
  }
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shoff == 0 || eh.e_shentsize != sizeof(Elf64_Shdr) ||
      !within(eh.e_shoff, std::uint64_t(eh.e_shnum) * sizeof(Elf64_Shdr), file.size()) ||
      eh.e_shstrndx >= eh.e_shnum)
    return "not an object file this harness can read";
  auto section = [&](std::size_t i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, file.data() + eh.e_shoff + i * sizeof(Elf64_Shdr), sizeof sh);
    return sh;
  };
  const Elf64_Shdr names = section(eh.e_shstrndx);
  static constexpr char kWanted[] = ".nv_fatbin";  // compared with its NUL
  for (std::size_t i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr sh = section(i);
    // The name, NUL included, must lie inside both the names section and the file.
    if (sh.sh_name > names.sh_size || !within(names.sh_offset, names.sh_size, file.size()) ||
        names.sh_size - sh.sh_name < sizeof kWanted)
      continue;
    if (std::memcmp(file.data() + names.sh_offset + sh.sh_name, kWanted, sizeof kWanted) != 0) continue;
    if (!within(sh.sh_offset, sh.sh_size, file.size())) return "a truncated .nv_fatbin";
    *code = file.substr(sh.sh_offset, sh.sh_size);
    return "";
  }
  return "no device code (.nv_fatbin): was it compiled by nvcc?";
}

}  // namespace kfleet::harness
