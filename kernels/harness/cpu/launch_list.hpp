#pragma once
// The launch list (ABI.md, "Recorded replay"): what the recorder saw the job's launch function
// enqueue under stream capture, as data only, and what the measuring process rebuilds a graph
// from. Plain C++ so that its format, its refusals and the graph plan are tested without a GPU.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace kfleet::harness {

// A buffer the harness mapped at a fixed virtual address (the same in recorder and measurer).
struct FixedBuffer {
  std::string name;        // "input Q", "output", "workspace"
  std::uint64_t va = 0, bytes = 0;
  bool contains(std::uint64_t lo, std::uint64_t len) const {
    return lo >= va && len <= bytes && lo - va <= bytes - len;
  }
};

struct ParamSlot {
  std::uint32_t offset = 0, size = 0;  // cuFuncGetParamInfo's view of the parameter buffer
};

struct KernelNode {
  std::string function;  // the name in the job's device code (cuFuncGetName: mangled)
  std::uint32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1}, cluster[3] = {0, 0, 0};
  std::uint32_t shared_bytes = 0;        // dynamic shared memory of the launch
  std::int32_t max_dynamic_shared = -1;  // the function's attribute the launch function set
  std::int32_t non_portable_cluster = -1;
  std::vector<ParamSlot> slots;
  std::vector<std::uint8_t> params;  // the parameter buffer, slots laid out at their offsets
};

struct MemsetNode {
  std::uint64_t dst = 0, pitch = 0, width = 0, height = 1;  // width in elements
  std::uint32_t value = 0, element_size = 1;
  std::uint64_t bytes() const { return height > 1 ? pitch * (height - 1) + width * element_size
                                                  : width * element_size; }
};

struct MemcpyNode {
  std::uint64_t dst = 0, src = 0, bytes = 0;  // device to device, one dimension
};

struct LaunchNode {
  enum class Kind { kernel, memset, memcpy, empty } kind = Kind::empty;
  KernelNode kernel;
  MemsetNode memset;
  MemcpyNode memcpy;
};

// An edge of the captured graph. `port` 0 is an ordinary dependency; else the edge is CUDA's
// programmatic dependency (programmatic dependent launch) from that outgoing port of the upstream
// kernel: 1 programmatic (the downstream kernel may begin once every upstream block has
// triggered it or ended), 2 launch completion (once every upstream block has begun). Libraries
// launch with it (the attribute becomes such an edge under capture); replaying it as an ordinary
// edge would add the launch gap it hides. Only between kernels.
struct LaunchEdge {
  std::uint32_t from = 0, to = 0;
  std::uint8_t port = 0;
  LaunchEdge() = default;
  LaunchEdge(std::uint32_t f, std::uint32_t t, std::uint8_t p = 0) : from(f), to(t), port(p) {}
  friend bool operator<(const LaunchEdge& a, const LaunchEdge& b) {
    return a.from != b.from ? a.from < b.from : a.to != b.to ? a.to < b.to : a.port < b.port;
  }
  friend bool operator==(const LaunchEdge& a, const LaunchEdge& b) {
    return a.from == b.from && a.to == b.to && a.port == b.port;
  }
};
inline constexpr std::uint8_t kEdgePortProgrammatic = 1, kEdgePortLaunchCompletion = 2;

struct LaunchList {
  int status = 0;                        // what the launch function returned
  std::string what;                      // "correctness seed 3" | "benchmark": which args
  std::vector<std::uint8_t> args;        // the ABI args struct the launch function was given
  std::vector<FixedBuffer> buffers;
  std::vector<LaunchNode> nodes;
  std::vector<LaunchEdge> edges;         // from -> to (node indices)
};

// Text form, one record a line (ABI.md gives the grammar). Several lists go in one file.
std::string serialize(const std::vector<LaunchList>& lists);
// "" on success, else "launch list line N: <what is wrong>".
std::string parse_launch_lists(const std::string& text, std::vector<LaunchList>* out);

// "" when `a` and `b` enqueue the same work, else the first difference, in words.
std::string launch_list_difference(const LaunchList& a, const LaunchList& b);

// The refusal for an address a node uses: "" when every address lies in the harness's buffers.
// Kernel parameters are scanned word by word (8-byte aligned words of slots of 8 bytes or
// more): a value inside [arena_lo, arena_hi) but outside every buffer, or one that
// `is_device_address` knows as device memory outside the buffers, is refused. Memset and
// memcpy ranges must lie wholly inside one buffer.
std::string check_addresses(const LaunchList& l, std::uint64_t arena_lo, std::uint64_t arena_hi,
                            const std::function<bool(std::uint64_t)>& is_device_address);

// A launch's LDS on an AMD GPU: the kernel's static bytes (its code object's) plus the dynamic
// bytes the launch asks for, against what a workgroup has (`limit`, the device's). "" when it
// fits, else the measuring process's refusal naming the amounts: ROCm has run such a launch,
// which then reads memory it does not own.
std::string lds_over_limit(const std::string& kernel, std::int64_t static_bytes,
                           std::int64_t dynamic_bytes, std::int64_t limit, const std::string& arch);

// The order the measurer adds nodes in and each node's dependencies, or an error for edges that
// name missing nodes, repeat, form a cycle, or are programmatic but not from a kernel to a kernel.
struct GraphPlan {
  std::vector<std::uint32_t> order;
  std::vector<std::vector<std::uint32_t>> deps;  // by node index: the ordinary edges
  std::vector<LaunchEdge> programmatic;          // added once every node is there
};
std::string plan_graph(const LaunchList& l, GraphPlan* out);
// True when the plan is one chain (each operation waits for the one before): the measurer then
// issues the operations one by one on the launch's stream, as the launch function did, instead
// of launching a graph (a graph launch changes a short kernel's span: ABI.md).
bool is_chain(const GraphPlan& plan);

std::string to_hex(const std::vector<std::uint8_t>& bytes);
bool from_hex(const std::string& text, std::vector<std::uint8_t>* out);

}  // namespace kfleet::harness
