#include "amdgpu_code_object.hpp"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <string_view>

namespace kfleet::harness {
namespace {

// Reads a T at `off` when it lies wholly inside `s`.
template <class T>
bool read_at(std::string_view s, std::uint64_t off, T* out) {
  if (off > s.size() || s.size() - off < sizeof(T)) return false;
  std::memcpy(out, s.data() + off, sizeof(T));
  return true;
}

bool slice(std::string_view s, std::uint64_t off, std::uint64_t len, std::string* out) {
  if (off > s.size() || len > s.size() - off) return false;
  *out = std::string(s.substr(off, len));
  return true;
}

std::string target_arch(const std::string& id) { return id.substr(0, id.find(':')); }

// ---- A MessagePack reader for the metadata: just what the note uses, bounded ----

struct Msg {
  enum class Kind { nil, boolean, integer, floating, string, binary, array, map } kind = Kind::nil;
  std::int64_t i = 0;
  std::string s;
  std::vector<Msg> items;                          // array
  // map: keys[k] -> values[k]. Two vectors of the type being defined, which C++17 allows for
  // std::vector; a vector of pair<Msg, Msg> needs Msg complete (clang rejects it in C++20).
  std::vector<Msg> keys, values;
  const Msg* get(const std::string& key) const {
    for (std::size_t k = 0; k < keys.size(); ++k)
      if (keys[k].kind == Kind::string && keys[k].s == key) return &values[k];
    return nullptr;
  }
};

class MsgReader {
 public:
  explicit MsgReader(const std::string& b) : b_(b) {}
  // "" on success, else why not.
  std::string read(Msg* out, int depth = 0) {
    if (depth > 32) return "nested deeper than 32 levels";
    std::uint8_t t = 0;
    if (!byte(&t)) return "truncated";
    if (t <= 0x7f) return integer(out, t);
    if (t >= 0xe0) return integer(out, static_cast<std::int8_t>(t));
    if ((t & 0xf0) == 0x80) return map(out, t & 0x0f, depth);
    if ((t & 0xf0) == 0x90) return array(out, t & 0x0f, depth);
    if ((t & 0xe0) == 0xa0) return str(out, t & 0x1f, Msg::Kind::string);
    std::uint64_t n = 0;
    switch (t) {
      case 0xc0: out->kind = Msg::Kind::nil; return "";
      case 0xc2: case 0xc3: out->kind = Msg::Kind::boolean; out->i = t == 0xc3; return "";
      case 0xc4: case 0xc5: case 0xc6:
        if (!be(1u << (t - 0xc4), &n)) return "truncated";
        return str(out, n, Msg::Kind::binary);
      case 0xca: case 0xcb:
        out->kind = Msg::Kind::floating;
        return skip(t == 0xca ? 4 : 8) ? "" : "truncated";
      case 0xcc: case 0xcd: case 0xce: case 0xcf:
        if (!be(1u << (t - 0xcc), &n)) return "truncated";
        return integer(out, static_cast<std::int64_t>(n));
      case 0xd0: case 0xd1: case 0xd2: case 0xd3: {
        const unsigned w = 1u << (t - 0xd0);
        if (!be(w, &n)) return "truncated";
        const std::uint64_t sign = std::uint64_t(1) << (8 * w - 1);
        const std::int64_t v = w == 8 ? static_cast<std::int64_t>(n)
                                      : static_cast<std::int64_t>(n ^ sign) - static_cast<std::int64_t>(sign);
        return integer(out, v);
      }
      case 0xd9: case 0xda: case 0xdb:
        if (!be(1u << (t - 0xd9), &n)) return "truncated";
        return str(out, n, Msg::Kind::string);
      case 0xdc: case 0xdd:
        if (!be(t == 0xdc ? 2 : 4, &n)) return "truncated";
        return array(out, n, depth);
      case 0xde: case 0xdf:
        if (!be(t == 0xde ? 2 : 4, &n)) return "truncated";
        return map(out, n, depth);
      default: return "a MessagePack type the metadata does not use (0x" + hex(t) + ")";
    }
  }

 private:
  static std::string hex(std::uint8_t t) {
    const char* d = "0123456789abcdef";
    return {d[t >> 4], d[t & 15]};
  }
  bool byte(std::uint8_t* v) {
    if (pos_ >= b_.size()) return false;
    *v = static_cast<std::uint8_t>(b_[pos_++]);
    return true;
  }
  bool be(unsigned width, std::uint64_t* v) {
    *v = 0;
    for (unsigned k = 0; k < width; ++k) {
      std::uint8_t c = 0;
      if (!byte(&c)) return false;
      *v = (*v << 8) | c;
    }
    return true;
  }
  bool skip(std::uint64_t n) {
    if (n > b_.size() - pos_) return false;
    pos_ += n;
    return true;
  }
  std::string integer(Msg* out, std::int64_t v) {
    out->kind = Msg::Kind::integer;
    out->i = v;
    return "";
  }
  std::string str(Msg* out, std::uint64_t n, Msg::Kind kind) {
    if (n > b_.size() - pos_) return "truncated";
    out->kind = kind;
    out->s = b_.substr(pos_, n);
    pos_ += n;
    return "";
  }
  // Every element takes at least one byte: a count past what is left is refused before any
  // allocation.
  std::string array(Msg* out, std::uint64_t n, int depth) {
    if (n > b_.size() - pos_) return "an array longer than the data";
    out->kind = Msg::Kind::array;
    out->items.resize(n);
    for (auto& item : out->items)
      if (std::string e = read(&item, depth + 1); !e.empty()) return e;
    return "";
  }
  std::string map(Msg* out, std::uint64_t n, int depth) {
    if (n > (b_.size() - pos_) / 2) return "a map longer than the data";
    out->kind = Msg::Kind::map;
    out->keys.resize(n);
    out->values.resize(n);
    for (std::uint64_t k = 0; k < n; ++k) {
      if (std::string e = read(&out->keys[k], depth + 1); !e.empty()) return e;
      if (std::string e = read(&out->values[k], depth + 1); !e.empty()) return e;
    }
    return "";
  }

  const std::string& b_;
  std::uint64_t pos_ = 0;
};

constexpr std::uint32_t kNtAmdgpuMetadata = 32;  // NT_AMDGPU_METADATA (code object v3 and later)

}  // namespace

std::string elf_section(const std::string& elf, const std::string& name, std::string* contents) {
  Elf64_Ehdr eh{};
  if (!read_at(elf, 0, &eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
    return "not an ELF file";
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
    return "not a 64-bit little-endian ELF file";
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shstrndx >= eh.e_shnum)
    return "an ELF file without a usable section table";
  auto section = [&](std::uint64_t i, Elf64_Shdr* sh) {
    return read_at(elf, eh.e_shoff + i * sizeof(Elf64_Shdr), sh);
  };
  Elf64_Shdr names{};
  if (!section(eh.e_shstrndx, &names)) return "a truncated section table";
  for (std::uint64_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh{};
    if (!section(i, &sh)) return "a truncated section table";
    if (sh.sh_name >= names.sh_size) continue;
    const std::uint64_t at = names.sh_offset + sh.sh_name;
    if (at >= elf.size()) continue;
    const std::size_t room = elf.size() - at;
    if (strnlen(elf.data() + at, room) != name.size() || elf.compare(at, name.size(), name) != 0)
      continue;
    if (sh.sh_type == SHT_NOBITS) return "section " + name + " has no contents in the file";
    if (!slice(elf, sh.sh_offset, sh.sh_size, contents)) return "section " + name + " is truncated";
    return "";
  }
  return "no section " + name;
}

namespace {

const std::string kBundleMagic = "__CLANG_OFFLOAD_BUNDLE__";

struct BundleEntry {
  std::string id, target;  // "hipv4-amdgcn-amd-amdhsa--gfx1151", "gfx1151"
  std::uint64_t offset = 0, size = 0;
};

// The entries of the bundle at the start of `b`, each checked to lie inside `b`.
std::string bundle_entries(std::string_view b, std::vector<BundleEntry>* out) {
  if (b.compare(0, kBundleMagic.size(), kBundleMagic) != 0) {
    if (b.compare(0, 4, "CCOB") == 0)
      return "a compressed offload bundle (clang --offload-compress): build without it";
    return "not a clang offload bundle";
  }
  std::uint64_t count = 0, pos = kBundleMagic.size();
  if (!read_at(b, pos, &count)) return "a truncated offload bundle";
  pos += 8;
  if (count > b.size() / 24) return "an offload bundle with more entries than bytes";
  for (std::uint64_t i = 0; i < count; ++i) {
    BundleEntry e;
    std::uint64_t id_len = 0;
    if (!read_at(b, pos, &e.offset) || !read_at(b, pos + 8, &e.size) ||
        !read_at(b, pos + 16, &id_len) || !slice(b, pos + 24, id_len, &e.id))
      return "a truncated offload bundle entry";
    pos += 24 + id_len;
    if (e.offset > b.size() || e.size > b.size() - e.offset)
      return "entry " + e.id + " lies outside the bundle";
    // "hipv4-amdgcn-amd-amdhsa--gfx1151", "hip-amdgcn-amd-amdhsa-gfx90a:xnack-"
    const std::size_t dash = e.id.rfind('-', e.id.find(':'));
    e.target = dash == std::string::npos ? e.id : e.id.substr(dash + 1);
    out->push_back(std::move(e));
  }
  return "";
}

}  // namespace

namespace {

// The code object for `arch` among a parsed bundle's entries.
std::string code_object_in(std::string_view bundle, const std::vector<BundleEntry>& entries,
                           const std::string& arch, std::string* code_object) {
  std::string seen;
  for (const auto& e : entries) {
    if (e.id.find("amdgcn") == std::string::npos) continue;  // the host's (empty) entry
    seen += (seen.empty() ? "" : ", ") + e.target;
    if (target_arch(e.target) != target_arch(arch)) continue;
    if (e.size == 0) return "entry " + e.id + " is empty";
    *code_object = std::string(bundle.substr(e.offset, e.size));
    return "";
  }
  return "no code object for " + target_arch(arch) + " in the offload bundle (it has: " +
         (seen.empty() ? std::string("none") : seen) + ")";
}

}  // namespace

std::string bundle_code_object(const std::string& bundle, const std::string& arch,
                               std::string* code_object) {
  std::vector<BundleEntry> entries;
  if (std::string e = bundle_entries(bundle, &entries); !e.empty()) return e;
  return code_object_in(bundle, entries, arch, code_object);
}

std::string fatbin_code_objects(const std::string& section, const std::string& arch,
                                std::vector<std::string>* code_objects) {
  std::size_t at = section.find(kBundleMagic);
  if (at == std::string::npos) return "no clang offload bundle in the section";
  while (at != std::string::npos) {
    // A view, not a copy: a section of many small bundles costs its length once, not once per
    // bundle.
    const std::string_view bundle = std::string_view(section).substr(at);
    std::vector<BundleEntry> entries;
    std::string co;
    if (std::string e = bundle_entries(bundle, &entries); !e.empty()) return e;
    if (std::string e = code_object_in(bundle, entries, arch, &co); !e.empty()) return e;
    code_objects->push_back(std::move(co));
    // The next bundle starts after this one's last entry (its code objects are never searched
    // for the magic).
    std::uint64_t end = kBundleMagic.size() + 8;
    for (const auto& e : entries) end = std::max<std::uint64_t>(end, e.offset + e.size);
    at = section.find(kBundleMagic, at + end);
  }
  return "";
}

std::string amdgpu_kernel_args(const std::string& code_object,
                               std::map<std::string, std::vector<ParamSlot>>* kernels) {
  std::string notes;
  if (std::string e = elf_section(code_object, ".note", &notes); !e.empty())
    return "the code object's metadata: " + e;
  std::uint64_t pos = 0;
  while (pos + 12 <= notes.size()) {
    std::uint32_t namesz = 0, descsz = 0, type = 0;
    read_at(notes, pos, &namesz);
    read_at(notes, pos + 4, &descsz);
    read_at(notes, pos + 8, &type);
    const std::uint64_t name_at = pos + 12, desc_at = name_at + ((namesz + 3ull) & ~3ull);
    std::string name, desc;
    if (!slice(notes, name_at, namesz, &name) || !slice(notes, desc_at, descsz, &desc))
      return "a truncated note in the code object";
    pos = desc_at + ((descsz + 3ull) & ~3ull);
    if (type != kNtAmdgpuMetadata || name.compare(0, 6, "AMDGPU") != 0) continue;
    Msg root;
    MsgReader reader(desc);
    if (std::string e = reader.read(&root); !e.empty()) return "the code object's metadata: " + e;
    const Msg* list = root.get("amdhsa.kernels");
    if (!list || list->kind != Msg::Kind::array) return "the code object's metadata has no amdhsa.kernels";
    for (const Msg& k : list->items) {
      const Msg* kname = k.get(".name");
      if (!kname || kname->kind != Msg::Kind::string) return "a kernel without a .name in the metadata";
      std::vector<ParamSlot> slots;
      if (const Msg* args = k.get(".args"); args && args->kind == Msg::Kind::array) {
        for (const Msg& a : args->items) {
          const Msg* off = a.get(".offset");
          const Msg* size = a.get(".size");
          const Msg* kind = a.get(".value_kind");
          if (!off || !size || !kind || off->kind != Msg::Kind::integer ||
              size->kind != Msg::Kind::integer || kind->kind != Msg::Kind::string)
            return "kernel " + kname->s + ": an argument without .offset, .size and .value_kind";
          if (off->i < 0 || size->i < 0 || off->i > (1 << 20) || size->i > (1 << 20))
            return "kernel " + kname->s + ": an argument outside any kernarg segment";
          if (kind->s.compare(0, 7, "hidden_") == 0) continue;
          slots.push_back({static_cast<std::uint32_t>(off->i), static_cast<std::uint32_t>(size->i)});
        }
      }
      (*kernels)[kname->s] = std::move(slots);
    }
    return "";
  }
  return "the code object has no AMDGPU metadata note (code object v3 or later is needed)";
}

}  // namespace kfleet::harness
