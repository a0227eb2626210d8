#include "launch_list.hpp"
#include "words.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

namespace kfleet::harness {
namespace {

constexpr const char* kMagic = "kfleet-launch-list 1";

std::string hex64(std::uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

// A number is the whole word: strtoull stops at a NUL byte, which a word may hold.
bool to_u64(const std::string& s, std::uint64_t* v) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long x = std::strtoull(s.c_str(), &end, 0);
  if (errno || end != s.c_str() + s.size() || s[0] < '0' || s[0] > '9') return false;
  *v = x;
  return true;
}

template <typename T>
bool to_uint(const std::string& s, T* v) {
  std::uint64_t x = 0;
  if (!to_u64(s, &x) || x > static_cast<std::uint64_t>(static_cast<T>(-1))) return false;
  *v = static_cast<T>(x);
  return true;
}

bool to_int(const std::string& s, std::int32_t* v) {
  char* end = nullptr;
  errno = 0;
  const long x = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || errno || end != s.c_str() + s.size() || x < INT32_MIN || x > INT32_MAX) return false;
  if (s[0] != '-' && (s[0] < '0' || s[0] > '9')) return false;  // no leading space or '+'
  *v = static_cast<std::int32_t>(x);
  return true;
}

// The rest of `line` after its first `n` words (names with spaces).
std::string rest_after(const std::string& line, std::size_t n) {
  std::size_t pos = 0;
  for (std::size_t i = 0; i < n; ++i) {
    pos = line.find_first_not_of(' ', pos);
    pos = line.find(' ', pos);
    if (pos == std::string::npos) return "";
  }
  return line.substr(line.find_first_not_of(' ', pos) == std::string::npos
                         ? line.size() : line.find_first_not_of(' ', pos));
}

std::string slots_text(const std::vector<ParamSlot>& slots) {
  if (slots.empty()) return "-";
  std::string s;
  for (const auto& p : slots)
    s += (s.empty() ? "" : ",") + std::to_string(p.offset) + ":" + std::to_string(p.size);
  return s;
}

bool parse_slots(const std::string& text, std::vector<ParamSlot>* out) {
  out->clear();
  if (text == "-") return true;
  std::istringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    const auto colon = part.find(':');
    ParamSlot p;
    if (colon == std::string::npos || !to_uint(part.substr(0, colon), &p.offset) ||
        !to_uint(part.substr(colon + 1), &p.size))
      return false;
    out->push_back(p);
  }
  return true;
}

std::string node_text(const LaunchNode& n) {
  std::ostringstream o;
  switch (n.kind) {
    case LaunchNode::Kind::kernel: {
      const KernelNode& k = n.kernel;
      o << "kernel " << k.function;
      for (auto v : k.grid) o << ' ' << v;
      for (auto v : k.block) o << ' ' << v;
      for (auto v : k.cluster) o << ' ' << v;
      o << ' ' << k.shared_bytes << ' ' << k.max_dynamic_shared << ' ' << k.non_portable_cluster
        << ' ' << slots_text(k.slots) << ' ' << (k.params.empty() ? "-" : to_hex(k.params));
      break;
    }
    case LaunchNode::Kind::memset: {
      const MemsetNode& m = n.memset;
      o << "memset " << hex64(m.dst) << ' ' << m.pitch << ' ' << m.width << ' ' << m.height << ' '
        << m.value << ' ' << m.element_size;
      break;
    }
    case LaunchNode::Kind::memcpy:
      o << "memcpy " << hex64(n.memcpy.dst) << ' ' << hex64(n.memcpy.src) << ' ' << n.memcpy.bytes;
      break;
    case LaunchNode::Kind::empty:
      o << "empty";
      break;
  }
  return o.str();
}

bool params_cover_slots(const KernelNode& k) {
  for (const auto& s : k.slots)
    if (std::uint64_t(s.offset) + s.size > k.params.size()) return false;
  return true;
}

}  // namespace

std::string to_hex(const std::vector<std::uint8_t>& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  s.reserve(bytes.size() * 2);
  for (auto b : bytes) {
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

bool from_hex(const std::string& text, std::vector<std::uint8_t>* out) {
  out->clear();
  if (text == "-") return true;
  if (text.size() % 2) return false;
  auto nibble = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < text.size(); i += 2) {
    const int hi = nibble(text[i]), lo = nibble(text[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<std::uint8_t>(hi << 4 | lo));
  }
  return true;
}

// " programmatic" | " launch-completion" | "" (an ordinary edge), after "edge FROM TO".
static std::string edge_port_word(std::uint8_t port) {
  return port == kEdgePortProgrammatic ? " programmatic" : port == kEdgePortLaunchCompletion ? " launch-completion" : "";
}

std::string serialize(const std::vector<LaunchList>& lists) {
  std::ostringstream o;
  o << kMagic << "\n";
  for (const auto& l : lists) {
    o << "list " << l.what << "\n";
    o << "status " << l.status << "\n";
    o << "args " << (l.args.empty() ? "-" : to_hex(l.args)) << "\n";
    for (const auto& b : l.buffers) o << "buffer " << hex64(b.va) << ' ' << b.bytes << ' ' << b.name << "\n";
    for (const auto& n : l.nodes) o << node_text(n) << "\n";
    for (const auto& e : l.edges) o << "edge " << e.from << ' ' << e.to << edge_port_word(e.port) << "\n";
    o << "end\n";
  }
  return o.str();
}

std::string parse_launch_lists(const std::string& text, std::vector<LaunchList>* out) {
  out->clear();
  std::istringstream in(text);
  std::string line;
  std::size_t n = 0;
  LaunchList cur;
  bool open = false;
  auto fail = [&](const std::string& what) {
    out->clear();
    return "launch list line " + std::to_string(n) + ": " + what;
  };
  while (std::getline(in, line)) {
    ++n;
    if (n == 1) {
      if (line != kMagic)
        return fail("expected '" + std::string(kMagic) + "' (a file the recorder wrote), got '" +
                    line.substr(0, 40) + "'");
      continue;
    }
    const auto w = space_words(line);
    if (w.empty()) continue;
    const std::string& kind = w[0];
    if (kind == "list") {
      if (open) return fail("'list' before the previous list's 'end'");
      cur = LaunchList{};
      cur.what = rest_after(line, 1);
      open = true;
      continue;
    }
    if (!open) return fail("'" + kind + "' outside a list (each list starts with 'list')");
    if (kind == "end") {
      if (w.size() != 1) return fail("'end' takes nothing");
      for (const auto& e : cur.edges)
        if (e.from >= cur.nodes.size() || e.to >= cur.nodes.size())
          return fail("edge " + std::to_string(e.from) + " -> " + std::to_string(e.to) +
                      " names a node the list does not have (" + std::to_string(cur.nodes.size()) +
                      " nodes)");
      out->push_back(std::move(cur));
      open = false;
    } else if (kind == "status") {
      if (w.size() != 2 || !to_int(w[1], &cur.status)) return fail("'status' wants one integer");
    } else if (kind == "args") {
      if (w.size() != 2 || !from_hex(w[1], &cur.args)) return fail("'args' wants hex bytes");
    } else if (kind == "buffer") {
      FixedBuffer b;
      if (w.size() < 4 || !to_u64(w[1], &b.va) || !to_u64(w[2], &b.bytes))
        return fail("'buffer' wants VA BYTES NAME");
      b.name = rest_after(line, 3);
      cur.buffers.push_back(b);
    } else if (kind == "kernel") {
      LaunchNode node;
      node.kind = LaunchNode::Kind::kernel;
      KernelNode& k = node.kernel;
      if (w.size() != 16) return fail("'kernel' wants 15 fields, got " + std::to_string(w.size() - 1));
      k.function = w[1];
      bool ok = true;
      for (int i = 0; i < 3; ++i)
        ok = ok && to_uint(w[2 + i], &k.grid[i]) && to_uint(w[5 + i], &k.block[i]) &&
             to_uint(w[8 + i], &k.cluster[i]);
      ok = ok && to_uint(w[11], &k.shared_bytes) && to_int(w[12], &k.max_dynamic_shared) &&
           to_int(w[13], &k.non_portable_cluster);
      if (!ok) return fail("kernel " + k.function + ": a dimension or size is not a number");
      if (!parse_slots(w[14], &k.slots)) return fail("kernel " + k.function + ": bad parameter slots '" + w[14] + "'");
      if (!from_hex(w[15], &k.params)) return fail("kernel " + k.function + ": parameters are not hex");
      if (!params_cover_slots(k))
        return fail("kernel " + k.function + ": a parameter slot lies past the parameter bytes");
      cur.nodes.push_back(std::move(node));
    } else if (kind == "memset") {
      LaunchNode node;
      node.kind = LaunchNode::Kind::memset;
      MemsetNode& m = node.memset;
      if (w.size() != 7 || !to_u64(w[1], &m.dst) || !to_u64(w[2], &m.pitch) ||
          !to_u64(w[3], &m.width) || !to_u64(w[4], &m.height) || !to_uint(w[5], &m.value) ||
          !to_uint(w[6], &m.element_size))
        return fail("'memset' wants DST PITCH WIDTH HEIGHT VALUE ELEMENT_SIZE");
      if (m.element_size != 1 && m.element_size != 2 && m.element_size != 4)
        return fail("memset element size must be 1, 2 or 4");
      cur.nodes.push_back(node);
    } else if (kind == "memcpy") {
      LaunchNode node;
      node.kind = LaunchNode::Kind::memcpy;
      if (w.size() != 4 || !to_u64(w[1], &node.memcpy.dst) || !to_u64(w[2], &node.memcpy.src) ||
          !to_u64(w[3], &node.memcpy.bytes))
        return fail("'memcpy' wants DST SRC BYTES");
      cur.nodes.push_back(node);
    } else if (kind == "empty") {
      cur.nodes.push_back(LaunchNode{});
    } else if (kind == "edge") {
      std::uint32_t from = 0, to = 0;
      std::uint8_t port = 0;
      if (w.size() == 4 && w[3] == "programmatic") port = kEdgePortProgrammatic;
      else if (w.size() == 4 && w[3] == "launch-completion") port = kEdgePortLaunchCompletion;
      if ((w.size() != 3 && !port) || !to_uint(w[1], &from) || !to_uint(w[2], &to))
        return fail("'edge' wants FROM TO node indices, then 'programmatic' or 'launch-completion' or nothing");
      cur.edges.emplace_back(from, to, port);
    } else {
      return fail("unknown record '" + kind + "'");
    }
  }
  if (n == 0) return fail("empty file: the recorder wrote nothing");
  if (open) return fail("the last list has no 'end' (a truncated file)");
  return "";
}

std::string launch_list_difference(const LaunchList& a, const LaunchList& b) {
  if (a.status != b.status)
    return "the launch function returned " + std::to_string(a.status) + " then " + std::to_string(b.status);
  if (a.nodes.size() != b.nodes.size())
    return std::to_string(a.nodes.size()) + " operations the first time, " +
           std::to_string(b.nodes.size()) + " the second";
  for (std::size_t i = 0; i < a.nodes.size(); ++i) {
    const std::string x = node_text(a.nodes[i]), y = node_text(b.nodes[i]);
    if (x != y) return "operation " + std::to_string(i) + " was '" + x.substr(0, 120) + "' then '" + y.substr(0, 120) + "'";
  }
  auto ea = a.edges, eb = b.edges;
  std::sort(ea.begin(), ea.end());
  std::sort(eb.begin(), eb.end());
  if (ea != eb) return "the dependencies between operations differ";
  return "";
}

std::string lds_over_limit(const std::string& kernel, std::int64_t static_bytes,
                           std::int64_t dynamic_bytes, std::int64_t limit, const std::string& arch) {
  if (limit <= 0 || static_bytes + dynamic_bytes <= limit) return "";
  return "kernel " + kernel + " asks for " + std::to_string(static_bytes + dynamic_bytes) + " bytes of LDS (" +
         std::to_string(static_bytes) + " static + " + std::to_string(dynamic_bytes) +
         " dynamic, at its launch): a workgroup on " + (arch.empty() ? std::string("this GPU") : arch) +
         " has " + std::to_string(limit) + "; the launch is refused, since it would read memory it does not own";
}

std::string check_addresses(const LaunchList& l, std::uint64_t arena_lo, std::uint64_t arena_hi,
                            const std::function<bool(std::uint64_t)>& is_device_address) {
  auto inside = [&](std::uint64_t lo, std::uint64_t len) {
    for (const auto& b : l.buffers)
      if (b.contains(lo, len)) return true;
    return false;
  };
  for (std::size_t i = 0; i < l.nodes.size(); ++i) {
    const LaunchNode& n = l.nodes[i];
    const std::string where = "operation " + std::to_string(i);
    if (n.kind == LaunchNode::Kind::kernel) {
      const KernelNode& k = n.kernel;
      for (std::size_t s = 0; s < k.slots.size(); ++s) {
        const ParamSlot& slot = k.slots[s];
        if (slot.size < 8) continue;
        for (std::uint32_t off = slot.offset; off + 8 <= slot.offset + slot.size; off += 8) {
          if (off % 8) continue;
          std::uint64_t v = 0;
          std::memcpy(&v, &k.params[off], 8);
          if (inside(v, 0)) continue;
          const std::string what = "kernel " + k.function + " (" + where + "), parameter " +
                                   std::to_string(s) + " byte " + std::to_string(off - slot.offset) +
                                   ", holds " + hex64(v);
          if (v >= arena_lo && v < arena_hi)
            return what + ": an address in the harness's reserved range but outside its buffers";
          if (is_device_address && is_device_address(v))
            return what + ": device memory the harness did not give the launch (only args' "
                          "tensors and workspace may be used; allocate scratch from workspace)";
        }
      }
    } else if (n.kind == LaunchNode::Kind::memset) {
      // The span computed without wrapping: a pitch or width near 2^64 must not fold a huge
      // memset into a few bytes that happen to lie inside a buffer.
      const MemsetNode& m = n.memset;
      std::uint64_t row = 0, rows = 0, span = 0;
      if (__builtin_mul_overflow(m.width, std::uint64_t(m.element_size), &row) ||
          (m.height > 1 && (__builtin_mul_overflow(m.pitch, m.height - 1, &rows) ||
                            __builtin_add_overflow(rows, row, &span))))
        return "memset (" + where + ") at " + hex64(m.dst) + " covers more bytes than an "
               "address can hold (pitch " + std::to_string(m.pitch) + ", width " +
               std::to_string(m.width) + ", height " + std::to_string(m.height) + ")";
      if (!inside(n.memset.dst, n.memset.bytes()))
        return "memset (" + where + ") writes " + hex64(n.memset.dst) + " +" +
               std::to_string(n.memset.bytes()) + ": outside the harness's buffers";
    } else if (n.kind == LaunchNode::Kind::memcpy) {
      if (!inside(n.memcpy.dst, n.memcpy.bytes) || !inside(n.memcpy.src, n.memcpy.bytes))
        return "memcpy (" + where + ") between " + hex64(n.memcpy.src) + " and " +
               hex64(n.memcpy.dst) + ": outside the harness's buffers (host memory or the "
               "launch's own allocations cannot be replayed)";
    }
  }
  return "";
}

std::string plan_graph(const LaunchList& l, GraphPlan* out) {
  const std::size_t n = l.nodes.size();
  out->order.clear();
  out->deps.assign(n, {});
  std::vector<std::vector<std::uint32_t>> next(n);
  std::vector<std::size_t> indegree(n, 0);
  out->programmatic.clear();
  std::set<std::pair<std::uint32_t, std::uint32_t>> seen;
  for (const auto& e : l.edges) {
    const std::uint32_t from = e.from, to = e.to;
    if (from >= n || to >= n)
      return "edge " + std::to_string(from) + " -> " + std::to_string(to) + " names a missing node";
    if (from == to) return "node " + std::to_string(from) + " depends on itself";
    if (!seen.insert({from, to}).second)
      return "edge " + std::to_string(from) + " -> " + std::to_string(to) + " is listed twice";
    if (e.port) {
      if (l.nodes[from].kind != LaunchNode::Kind::kernel || l.nodes[to].kind != LaunchNode::Kind::kernel)
        return "edge " + std::to_string(from) + " -> " + std::to_string(to) +
               " is programmatic but not from a kernel to a kernel";
      out->programmatic.push_back(e);
    } else {
      out->deps[to].push_back(from);
    }
    next[from].push_back(to);
    ++indegree[to];
  }
  std::vector<std::uint32_t> ready;
  for (std::uint32_t i = 0; i < n; ++i)
    if (!indegree[i]) ready.push_back(i);
  for (std::size_t r = 0; r < ready.size(); ++r) {
    const std::uint32_t i = ready[r];
    out->order.push_back(i);
    for (auto j : next[i])
      if (--indegree[j] == 0) ready.push_back(j);
  }
  if (out->order.size() != n) return "the dependencies form a cycle";
  return "";
}

bool is_chain(const GraphPlan& plan) {
  if (!plan.programmatic.empty()) return false;
  for (std::size_t i = 0; i < plan.order.size(); ++i) {
    const auto& deps = plan.deps[plan.order[i]];
    if (i == 0 ? !deps.empty() : deps.size() != 1 || deps[0] != plan.order[i - 1]) return false;
  }
  return true;
}

}  // namespace kfleet::harness
