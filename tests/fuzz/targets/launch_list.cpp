// The replay launch list (kernels/harness/ABI.md, "Recorded replay"): the recorder runs the
// job's host code and writes the list; kfleet-measure reads it, so every byte of it is the
// job's. This feeds the file to the same code kfleet-measure runs on it before it touches a
// GPU: parse_launch_lists, the address check (check_addresses), the graph plan (plan_graph,
// is_chain), and launch_list_difference (the recorder's two-captures comparison).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_check.hpp"
#include "launch_list.hpp"

namespace {

using namespace kfleet::harness;

// The measurer's arena: 0x600000000000 and up (ABI.md); its end is the harness's choice.
constexpr std::uint64_t kArenaLo = 0x600000000000ull, kArenaHi = 0x600000000000ull + (1ull << 40);

// [lo, lo + len) computed without wrapping lies inside one of the list's buffers.
bool really_inside(const LaunchList& l, std::uint64_t lo, unsigned __int128 len) {
  for (const auto& b : l.buffers)
    if (lo >= b.va && static_cast<unsigned __int128>(lo) + len <=
                          static_cast<unsigned __int128>(b.va) + b.bytes)
      return true;
  return false;
}

unsigned __int128 memset_bytes(const MemsetNode& m) {
  const unsigned __int128 row = static_cast<unsigned __int128>(m.width) * m.element_size;
  return m.height > 1 ? static_cast<unsigned __int128>(m.pitch) * (m.height - 1) + row : row;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using kfleet::fuzz::check;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<LaunchList> lists;
  const std::string err = parse_launch_lists(text, &lists);
  if (!err.empty()) {
    check(err.rfind("launch list line ", 0) == 0, "a refusal that does not say the line: " + err);
    check(lists.empty(), "a refused file left lists behind");
    return 0;
  }
  // What the measurer reads is what the recorder meant: the text form is a fixed point.
  const std::string again = serialize(lists);
  std::vector<LaunchList> back;
  const std::string err2 = parse_launch_lists(again, &back);
  check(err2.empty(), "an accepted list does not parse once written again: " + err2);
  check(serialize(back) == again, "an accepted list changes when written and read again");
  check(back.size() == lists.size(), "a different number of lists after a round trip");

  for (std::size_t i = 0; i < lists.size(); ++i) {
    const LaunchList& l = lists[i];
    check(launch_list_difference(l, back[i]).empty(), "a list differs from its own round trip");
    if (i > 0) (void)launch_list_difference(lists[i - 1], l);

    // Accepted addresses: every memset and memcpy range, computed without wrapping, lies in a
    // buffer (the measurer then hands exactly that range to the GPU).
    // A stand-in for cudaPointerGetAttributes: some addresses outside the arena are "device".
    const std::string bad = check_addresses(l, kArenaLo, kArenaHi,
                                            [](std::uint64_t v) { return (v >> 47) == 1; });
    if (bad.empty()) {
      for (const auto& n : l.nodes) {
        if (n.kind == LaunchNode::Kind::memset)
          check(really_inside(l, n.memset.dst, memset_bytes(n.memset)),
                "an accepted memset writes outside every buffer");
        if (n.kind == LaunchNode::Kind::memcpy)
          check(really_inside(l, n.memcpy.dst, n.memcpy.bytes) &&
                    really_inside(l, n.memcpy.src, n.memcpy.bytes),
                "an accepted memcpy reaches outside every buffer");
      }
    }
    GraphPlan plan;
    if (plan_graph(l, &plan).empty()) {
      check(plan.order.size() == l.nodes.size(), "a plan that leaves nodes out");
      std::vector<std::size_t> position(l.nodes.size(), l.nodes.size());
      for (std::size_t p = 0; p < plan.order.size(); ++p) {
        check(plan.order[p] < l.nodes.size() && position[plan.order[p]] == l.nodes.size(),
              "a plan that names a node twice or one that does not exist");
        position[plan.order[p]] = p;
      }
      for (std::size_t j = 0; j < plan.deps.size(); ++j)
        for (auto d : plan.deps[j]) check(position[d] < position[j], "a node planned before its dependency");
      (void)is_chain(plan);
    }
  }
  return 0;
}
