// The HIP device-code reader on hand-made inputs: a minimal ELF with a metadata note, offload
// bundles, and what a stranger's build could hand it instead (truncations, lies about sizes,
// deep nesting). What clang really emits is checked by the kernels_hip_kernargs test.
#include <elf.h>

#include <cstring>

#include <gtest/gtest.h>

#include "amdgpu_code_object.hpp"

using namespace kfleet::harness;

namespace {

void put(std::string& s, const void* p, std::size_t n) { s.append(static_cast<const char*>(p), n); }
template <class T>
void put(std::string& s, T v) { put(s, &v, sizeof v); }

// MessagePack, just what the tests write.
std::string mstr(const std::string& v) { return std::string(1, char(0xa0 | v.size())) + v; }
std::string mint(std::uint8_t v) { return std::string(1, char(0xcc)) + char(v); }
std::string mmap(std::size_t n) { return std::string(1, char(0x80 | n)); }
std::string marr(std::size_t n) { return std::string(1, char(0x90 | n)); }
std::string arg(std::uint8_t off, std::uint8_t size, const std::string& kind) {
  return mmap(3) + mstr(".offset") + mint(off) + mstr(".size") + mint(size) + mstr(".value_kind") + mstr(kind);
}

std::string note(std::uint32_t type, const std::string& name, const std::string& desc) {
  std::string n;
  put(n, std::uint32_t(name.size() + 1));
  put(n, std::uint32_t(desc.size()));
  put(n, type);
  n += name;
  n.push_back('\0');
  while (n.size() % 4) n.push_back('\0');
  n += desc;
  while (n.size() % 4) n.push_back('\0');
  return n;
}

// A 64-bit ELF whose only sections are .shstrtab and one named `section` holding `contents`.
std::string elf_with(const std::string& section, const std::string& contents) {
  const std::string names = std::string("\0.shstrtab\0", 11) + section + '\0';
  std::string body = names + contents;
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = 3;
  eh.e_shstrndx = 1;
  eh.e_shoff = sizeof eh + body.size();
  Elf64_Shdr null{}, strtab{}, sec{};
  strtab.sh_name = 1;
  strtab.sh_type = SHT_STRTAB;
  strtab.sh_offset = sizeof eh;
  strtab.sh_size = names.size();
  sec.sh_name = 11;
  sec.sh_type = SHT_NOTE;
  sec.sh_offset = sizeof eh + names.size();
  sec.sh_size = contents.size();
  std::string out;
  put(out, eh);
  out += body;
  put(out, null);
  put(out, strtab);
  put(out, sec);
  return out;
}

std::string code_object(const std::string& metadata) {
  return elf_with(".note", note(32, "AMDGPU", metadata));
}

std::string bundle(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string head = "__CLANG_OFFLOAD_BUNDLE__";
  put(head, std::uint64_t(entries.size()));
  std::size_t table = head.size();
  for (const auto& e : entries) table += 24 + e.first.size();
  std::string data;
  for (const auto& e : entries) {
    put(head, std::uint64_t(table + data.size()));
    put(head, std::uint64_t(e.second.size()));
    put(head, std::uint64_t(e.first.size()));
    head += e.first;
    data += e.second;
  }
  return head + data;
}

const std::string kTwoKernels =
    mmap(1) + mstr("amdhsa.kernels") + marr(2) +
    mmap(2) + mstr(".name") + mstr("_Z5scale4Argsi") + mstr(".args") + marr(3) +
        arg(0, 32, "by_value") + arg(32, 4, "by_value") + arg(40, 4, "hidden_block_count_x") +
    mmap(1) + mstr(".name") + mstr("_Z4noopv");

}  // namespace

TEST(AmdgpuCodeObject, ExplicitArgumentsByKernelNameHiddenOnesLeftOut) {
  std::map<std::string, std::vector<ParamSlot>> k;
  ASSERT_EQ(amdgpu_kernel_args(code_object(kTwoKernels), &k), "");
  ASSERT_EQ(k.size(), 2u);
  ASSERT_EQ(k["_Z5scale4Argsi"].size(), 2u);
  EXPECT_EQ(k["_Z5scale4Argsi"][0].offset, 0u);
  EXPECT_EQ(k["_Z5scale4Argsi"][0].size, 32u);
  EXPECT_EQ(k["_Z5scale4Argsi"][1].offset, 32u);
  EXPECT_EQ(k["_Z5scale4Argsi"][1].size, 4u);
  EXPECT_TRUE(k["_Z4noopv"].empty());
}

TEST(AmdgpuCodeObject, TheBundlePicksTheDevicesArchIgnoringFeatures) {
  const std::string co = code_object(kTwoKernels);
  const std::string b = bundle({{"host-x86_64-unknown-linux--", ""},
                                {"hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-", "other"},
                                {"hipv4-amdgcn-amd-amdhsa--gfx1151", co}});
  std::string got;
  ASSERT_EQ(bundle_code_object(b, "gfx1151", &got), "");
  EXPECT_EQ(got, co);
  ASSERT_EQ(bundle_code_object(b, "gfx90a:sramecc+:xnack-", &got), "");
  EXPECT_EQ(got, "other");
  EXPECT_EQ(bundle_code_object(b, "gfx942", &got),
            "no code object for gfx942 in the offload bundle (it has: gfx90a:sramecc+:xnack-, gfx1151)");
  // The section a host object carries it in.
  std::string section;
  ASSERT_EQ(elf_section(elf_with(".hip_fatbin", b), ".hip_fatbin", &section), "");
  EXPECT_EQ(section, b);
  EXPECT_EQ(elf_section(elf_with(".hip_fatbin", b), ".nv_fatbin", &section), "no section .nv_fatbin");
  // A linked binary's section: one bundle per translation unit, padded apart.
  const std::string second = bundle({{"hipv4-amdgcn-amd-amdhsa--gfx1151", "second"}});
  std::vector<std::string> all;
  ASSERT_EQ(fatbin_code_objects(b + std::string(100, '\0') + second, "gfx1151", &all), "");
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0], co);
  EXPECT_EQ(all[1], "second");
  all.clear();
  EXPECT_EQ(fatbin_code_objects(b + second, "gfx90a", &all),
            "no code object for gfx90a in the offload bundle (it has: gfx1151)");
  EXPECT_EQ(fatbin_code_objects("padding only", "gfx1151", &all), "no clang offload bundle in the section");
}

TEST(AmdgpuCodeObject, MalformedInputIsAnErrorNeverACrash) {
  std::map<std::string, std::vector<ParamSlot>> k;
  std::string out;
  EXPECT_EQ(amdgpu_kernel_args("not an elf", &k), "the code object's metadata: not an ELF file");
  EXPECT_EQ(bundle_code_object("CCOB....", "gfx1151", &out),
            "a compressed offload bundle (clang --offload-compress): build without it");
  EXPECT_EQ(bundle_code_object("__CLANG_OFFLOAD_BUNDLE__", "gfx1151", &out), "a truncated offload bundle");
  // A bundle that claims more entries than it has bytes, or an entry outside itself.
  std::string lying = "__CLANG_OFFLOAD_BUNDLE__";
  put(lying, std::uint64_t(1) << 60);
  EXPECT_EQ(bundle_code_object(lying, "gfx1151", &out), "an offload bundle with more entries than bytes");
  std::string outside = bundle({{"hipv4-amdgcn-amd-amdhsa--gfx1151", "x"}});
  outside[24 + 8] = char(0xff);  // the entry's offset
  EXPECT_NE(bundle_code_object(outside, "gfx1151", &out).find("outside the bundle"), std::string::npos);
  // Every prefix of a valid code object is refused with a reason or read whole.
  const std::string co = code_object(kTwoKernels);
  for (std::size_t n = 0; n < co.size(); ++n) {
    k.clear();
    EXPECT_NE(amdgpu_kernel_args(co.substr(0, n), &k), "") << n;
  }
  // Metadata that lies: an array longer than the data, nesting past the bound, a missing name.
  EXPECT_EQ(amdgpu_kernel_args(code_object(mmap(1) + mstr("amdhsa.kernels") + std::string("\xdd\xff\xff\xff\xff", 5)), &k),
            "the code object's metadata: an array longer than the data");
  EXPECT_EQ(amdgpu_kernel_args(code_object(std::string(100, char(0x91))), &k),
            "the code object's metadata: nested deeper than 32 levels");
  EXPECT_EQ(amdgpu_kernel_args(code_object(mmap(1) + mstr("amdhsa.kernels") + marr(1) + mmap(0)), &k),
            "a kernel without a .name in the metadata");
  EXPECT_EQ(amdgpu_kernel_args(elf_with(".note", note(1, "GNU", "abcd")), &k),
            "the code object has no AMDGPU metadata note (code object v3 or later is needed)");
}
