// kfleet-measure's reading of the job's objects (cpu/device_code.cpp): the .nv_fatbin section of
// a host object, a cubin or a bare fatbin as is, and a clear refusal for anything else, however
// its offsets are forged (they come out of the job's build).
#include "device_code.hpp"

#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace kfleet::harness {
namespace {

// A minimal ELF64 host object: the header, the section names, one data section named `name`
// holding `data`, and three section headers (null, .shstrtab, the data section).
std::string host_object(const std::string& name, const std::string& data) {
  const std::string names = std::string("\0.shstrtab\0", 11) + name + std::string(1, '\0');
  std::string f(sizeof(Elf64_Ehdr), '\0');
  const std::size_t names_at = f.size();
  f += names;
  const std::size_t data_at = f.size();
  f += data;
  while (f.size() % 8) f += '\0';
  const std::size_t sh_at = f.size();
  Elf64_Shdr sh[3]{};
  sh[1].sh_name = 1, sh[1].sh_type = SHT_STRTAB, sh[1].sh_offset = names_at, sh[1].sh_size = names.size();
  sh[2].sh_name = 11, sh[2].sh_type = SHT_PROGBITS, sh[2].sh_offset = data_at, sh[2].sh_size = data.size();
  f.append(reinterpret_cast<const char*>(sh), sizeof sh);
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_machine = EM_X86_64;
  eh.e_shoff = sh_at, eh.e_shentsize = sizeof(Elf64_Shdr), eh.e_shnum = 3, eh.e_shstrndx = 1;
  std::memcpy(f.data(), &eh, sizeof eh);
  return f;
}

template <typename T>
void poke(std::string& f, std::size_t at, T v) { std::memcpy(f.data() + at, &v, sizeof v); }

std::size_t shdr_at(const std::string& f, int i) {
  Elf64_Ehdr eh;
  std::memcpy(&eh, f.data(), sizeof eh);
  return eh.e_shoff + i * sizeof(Elf64_Shdr);
}

TEST(DeviceCode, HostObjectGivesItsFatbinSection) {
  std::string code;
  EXPECT_EQ(device_code_in_file(host_object(".nv_fatbin", "FATBIN-BYTES"), &code), "");
  EXPECT_EQ(code, "FATBIN-BYTES");
}

TEST(DeviceCode, CubinAndBareFatbinAreTakenWhole) {
  std::string cubin = host_object(".text", "x");
  poke<std::uint16_t>(cubin, offsetof(Elf64_Ehdr, e_machine), 190);  // EM_CUDA
  std::string code;
  EXPECT_EQ(device_code_in_file(cubin, &code), "");
  EXPECT_EQ(code, cubin);
  EXPECT_EQ(device_code_in_file("\x50\xed\x55\xba fatbin", &code), "");
  EXPECT_EQ(code, "\x50\xed\x55\xba fatbin");
}

TEST(DeviceCode, ObjectWithoutDeviceCodeSaysSo) {
  std::string code = "stale";
  EXPECT_NE(device_code_in_file(host_object(".nv_fatbinX", "x"), &code).find("no device code"),
            std::string::npos);
  EXPECT_EQ(code, "");
}

// Offsets near 2^64 used to wrap past the bounds checks: a read far outside the file, or
// std::out_of_range from substr() that nothing in kfleet-measure catches.
TEST(DeviceCode, ForgedOffsetsAreRefusedNotFollowed) {
  std::string code;
  std::string f = host_object(".nv_fatbin", "FATBIN");
  poke<std::uint64_t>(f, shdr_at(f, 2) + offsetof(Elf64_Shdr, sh_offset), ~0ull - 2);
  EXPECT_EQ(device_code_in_file(f, &code), "a truncated .nv_fatbin");
  f = host_object(".nv_fatbin", "FATBIN");
  poke<std::uint64_t>(f, shdr_at(f, 2) + offsetof(Elf64_Shdr, sh_size), 1ull << 40);
  EXPECT_EQ(device_code_in_file(f, &code), "a truncated .nv_fatbin");
  f = host_object(".nv_fatbin", "FATBIN");
  poke<std::uint64_t>(f, offsetof(Elf64_Ehdr, e_shoff), ~0ull - 63);
  EXPECT_EQ(device_code_in_file(f, &code), "not an object file this harness can read");
  f = host_object(".nv_fatbin", "FATBIN");
  poke<std::uint64_t>(f, shdr_at(f, 1) + offsetof(Elf64_Shdr, sh_offset), ~0ull - 5);  // names
  EXPECT_NE(device_code_in_file(f, &code).find("no device code"), std::string::npos);
  f = host_object(".nv_fatbin", "FATBIN");
  poke<std::uint32_t>(f, shdr_at(f, 2) + offsetof(Elf64_Shdr, sh_name), 0xfffffff0u);
  EXPECT_NE(device_code_in_file(f, &code).find("no device code"), std::string::npos);
  f = host_object(".nv_fatbin", "FATBIN");
  f.resize(shdr_at(f, 2) + 10);  // the section headers cut off
  EXPECT_EQ(device_code_in_file(f, &code), "not an object file this harness can read");
}

}  // namespace
}  // namespace kfleet::harness
