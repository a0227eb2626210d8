// The recorder (replay mode, ABI.md "Recorded replay"): runs the job's launch function under
// stream capture on buffers at fixed virtual addresses, twice per distinct args, and writes what
// it enqueued as a launch list. This process holds the job's host code; nothing it says is
// believed: the measuring process re-checks the list it is given before running any of it.
// One recorder for CUDA and HIP (ABI.md, "HIP"): what the runtimes do differently is first, each
// runtime's own (on HIP the argument layouts are read from this binary's code objects:
// record_hip.cu), then the recorder.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>

#include "replay_mode.hpp"

namespace kfleet::harness {

std::string recording_name(const std::string& stage, std::uint64_t seed) {
  return stage == "benchmark" ? "benchmark" : "correctness seed " + std::to_string(seed);
}

namespace {

// Exit status 4: the kernel's launch cannot be recorded (PROTOCOL.md); the reason names it.
[[noreturn]] void refuse(const std::string& what, const std::string& why) {
  JsonLine("error").str("phase", "record").str("recording", what)
      .str("message", "replay mode refused the launch (" + what + "): " + why).print();
  std::exit(4);
}

// ---- What the runtimes do differently ----

#if defined(KFLEET_CUDA)

constexpr const char* kDefaultStream = "the legacy default stream";

const char* node_type_name(cudaGraphNodeType t) {
  switch (t) {
    case cudaGraphNodeTypeHost: return "a host function node (cudaLaunchHostFunc or a callback)";
    case cudaGraphNodeTypeGraph: return "a child graph (cudaGraphLaunch inside the launch)";
    case cudaGraphNodeTypeWaitEvent: return "a wait on an event recorded outside the capture";
    case cudaGraphNodeTypeEventRecord: return "an event record the capture cannot join";
    case cudaGraphNodeTypeExtSemaphoreSignal:
    case cudaGraphNodeTypeExtSemaphoreWait: return "an external semaphore";
    case cudaGraphNodeTypeMemAlloc:
    case cudaGraphNodeTypeMemFree: return "a stream-ordered allocation (cudaMallocAsync)";
    default: return "a node type replay does not support";
  }
}

// A captured kernel's name (mangled, as the job's device code has it), or null.
const char* kernel_name(const void* func, gpuStream_t) {
  const char* name = nullptr;
  if (cudaFuncGetName(&name, func) != cudaSuccess) return nullptr;
  return name;
}

// What the launch function set on the kernel's function, and the node's cluster shape.
void kernel_attributes(cudaGraphNode_t node, const void* func, KernelNode& k) {
  cudaLaunchAttributeValue v{};
  if (cudaGraphKernelNodeGetAttribute(node, cudaLaunchAttributeClusterDimension, &v) == cudaSuccess) {
    k.cluster[0] = v.clusterDim.x, k.cluster[1] = v.clusterDim.y, k.cluster[2] = v.clusterDim.z;
  }
  cudaFuncAttributes fa{};
  if (cudaFuncGetAttributes(&fa, func) == cudaSuccess) {
    k.max_dynamic_shared = fa.maxDynamicSharedSizeBytes;
    k.non_portable_cluster = fa.nonPortableClusterSizeAllowed;
  }
}

// Where each of the kernel's arguments lies in its parameter bytes: the runtime says.
std::vector<ParamSlot> kernel_slots(const cudaKernelNodeParams& kp, const KernelNode&,
                                    const std::string&) {
  std::vector<ParamSlot> slots;
  for (std::size_t i = 0;; ++i) {
    std::size_t off = 0, size = 0;
    if (cudaFuncGetParamInfo(kp.func, i, &off, &size) != cudaSuccess) break;
    slots.push_back({static_cast<std::uint32_t>(off), static_cast<std::uint32_t>(size)});
  }
  cudaGetLastError();  // the probe past the last parameter leaves an error behind
  return slots;
}

// A copy node's parameters; nullopt when the node is not a copy.
std::optional<cudaMemcpy3DParms> copy_params(cudaGraphNode_t node, cudaGraphNodeType t,
                                             const std::string&) {
  if (t != cudaGraphNodeTypeMemcpy) return std::nullopt;
  cudaMemcpy3DParms cp{};
  KFLEET_GPU_CHECK(cudaGraphMemcpyNodeGetParams(node, &cp));
  return cp;
}

#else  // HIP: no cudaFuncGetParamInfo; the argument layouts come from record_hip.cu

constexpr const char* kDefaultStream = "the null stream";

const char* node_type_name(hipGraphNodeType t) {
  switch (t) {
    case hipGraphNodeTypeHost: return "a host function node (hipLaunchHostFunc or a callback)";
    case hipGraphNodeTypeGraph: return "a child graph (hipGraphLaunch inside the launch)";
    case hipGraphNodeTypeWaitEvent: return "a wait on an event recorded outside the capture";
    case hipGraphNodeTypeEventRecord: return "an event record the capture cannot join";
    case hipGraphNodeTypeMemcpyFromSymbol:
    case hipGraphNodeTypeMemcpyToSymbol: return "a copy to or from a module symbol";
    default: return "a node type replay does not support";
  }
}

// A captured kernel's name (mangled: what hipModuleGetFunction finds in the code object), or
// null.
const char* kernel_name(const void* func, gpuStream_t stream) {
  const char* name = hipKernelNameRefByPtr(func, stream);
  return name && *name ? name : nullptr;
}

// What the launch function set on the kernel's function (there are no clusters on HIP).
void kernel_attributes(hipGraphNode_t, const void* func, KernelNode& k) {
  hipFuncAttributes fa{};
  if (hipFuncGetAttributes(&fa, func) == hipSuccess) k.max_dynamic_shared = fa.maxDynamicSharedSizeBytes;
  (void)hipGetLastError();
}

// Where each of the kernel's arguments lies in its parameter bytes: this binary's code object
// metadata says (a kernel node gives only pointers to its arguments).
std::vector<ParamSlot> kernel_slots(const hipKernelNodeParams& kp, const KernelNode& k,
                                    const std::string& what) {
  const auto& layouts = own_kernel_args();
  const auto it = layouts.find(k.function);
  if (it == layouts.end())
    refuse(what, "kernel " + k.function + " is not in this binary's device code for " +
                     device_arch() + ": only kernels compiled from the job's sources can be replayed");
  if (!it->second)
    refuse(what, "kernel " + k.function + " is defined with different arguments in two of the "
                 "binary's files (an anonymous namespace in each?): give the kernels distinct "
                 "names so that each can be found by its own");
  if (!it->second->empty() && !kp.kernelParams)
    refuse(what, "kernel " + k.function + " has arguments but its node gives none back");
  return *it->second;
}

// A copy node's parameters; nullopt when the node is not a copy.
std::optional<hipMemcpy3DParms> copy_params(hipGraphNode_t node, hipGraphNodeType t,
                                            const std::string& what) {
  if (t != hipGraphNodeTypeMemcpy && t != hipGraphNodeTypeMemcpy1D) return std::nullopt;
  hipMemcpy3DParms cp{};
  if (hipGraphMemcpyNodeGetParams(node, &cp) != hipSuccess)
    refuse(what, "a copy node whose parameters the runtime does not give back (HIP has no "
                 "hipGraphMemcpyNodeGetParams1D): replay on HIP runs only kernels and memsets "
                 "of such launches");
  return cp;
}

#endif

// ---- The recorder, on either runtime ----

LaunchNode kernel_node(gpuGraphNode_t node, gpuStream_t stream, const std::string& what) {
  gpuKernelNodeParams kp{};
  if (gpuGraphKernelNodeGetParams(node, &kp) != gpuSuccess)
    refuse(what, "a kernel node whose parameters the runtime does not give back");
  LaunchNode out;
  out.kind = LaunchNode::Kind::kernel;
  KernelNode& k = out.kernel;
  const char* name = kernel_name(kp.func, stream);
  if (!name)
    refuse(what, "a kernel whose name the runtime does not know (launched through a module the "
                 "launch function loaded itself?): only kernels compiled from the job's sources "
                 "can be replayed");
  k.function = name;
  k.grid[0] = kp.gridDim.x, k.grid[1] = kp.gridDim.y, k.grid[2] = kp.gridDim.z;
  k.block[0] = kp.blockDim.x, k.block[1] = kp.blockDim.y, k.block[2] = kp.blockDim.z;
  k.shared_bytes = kp.sharedMemBytes;
  kernel_attributes(node, kp.func, k);
  if (kp.extra) refuse(what, "kernel " + k.function + " was given its parameters through 'extra'");
  k.slots = kernel_slots(kp, k, what);
  std::uint32_t end = 0;
  for (const auto& slot : k.slots) end = std::max<std::uint32_t>(end, slot.offset + slot.size);
  k.params.assign(end, 0);
  for (std::size_t i = 0; i < k.slots.size(); ++i)
    std::memcpy(&k.params[k.slots[i].offset], kp.kernelParams[i], k.slots[i].size);
  return out;
}

LaunchList capture_once(Problem& p, const std::string& what) {
  gpuStream_t s{};
  KFLEET_GPU_CHECK(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
  KFLEET_GPU_CHECK(gpuDeviceSynchronize());
  KFLEET_GPU_CHECK(gpuStreamBeginCapture(s, gpuStreamCaptureModeGlobal));
  set_phase("kernel");
  const int status = p.launch_entry(s);
  gpuGraph_t g = nullptr;
  const gpuError_t end = gpuStreamEndCapture(s, &g);
  const gpuError_t last = gpuGetLastError();
  set_phase("setup");
  if (end != gpuSuccess || last != gpuSuccess || !g) {
    const gpuError_t e = end != gpuSuccess ? end : last;
    const std::string runtime = KFLEET_RUNTIME_NAME;
    refuse(what, std::string("the launch could not be captured (") + gpuGetErrorName(e) + ": " +
                     gpuGetErrorString(e) + "): a synchronous call during the launch (" +
                     runtime + "Malloc, " + runtime + "Memcpy, a synchronize, reading device "
                     "data on the host), work on " + kDefaultStream + ", or a side stream not "
                     "joined back into `stream` before the launch returned");
  }
  LaunchList l;
  l.what = what;
  l.status = status;
  l.args = p.args_bytes();
  l.buffers = fixed_buffers();
  std::size_t n = 0;
  KFLEET_GPU_CHECK(gpuGraphGetNodes(g, nullptr, &n));
  std::vector<gpuGraphNode_t> nodes(n);
  if (n) KFLEET_GPU_CHECK(gpuGraphGetNodes(g, nodes.data(), &n));
  for (auto node : nodes) {
    gpuGraphNodeType t{};
    KFLEET_GPU_CHECK(gpuGraphNodeGetType(node, &t));
    if (t == gpuGraphNodeTypeKernel) {
      l.nodes.push_back(kernel_node(node, s, what));
    } else if (t == gpuGraphNodeTypeMemset) {
      gpuMemsetParams mp{};
      KFLEET_GPU_CHECK(gpuGraphMemsetNodeGetParams(node, &mp));
      LaunchNode ln;
      ln.kind = LaunchNode::Kind::memset;
      ln.memset = {reinterpret_cast<std::uint64_t>(mp.dst), mp.pitch, mp.width, mp.height,
                   mp.value, mp.elementSize};
      l.nodes.push_back(ln);
    } else if (const auto cp = copy_params(node, t, what)) {
      if (cp->srcArray || cp->dstArray || cp->extent.height > 1 || cp->extent.depth > 1)
        refuse(what, "a memcpy with arrays or more than one dimension (only flat device-to-device "
                     "copies inside the harness's buffers can be replayed)");
      LaunchNode ln;
      ln.kind = LaunchNode::Kind::memcpy;
      ln.memcpy = {reinterpret_cast<std::uint64_t>(cp->dstPtr.ptr) + cp->dstPos.x,
                   reinterpret_cast<std::uint64_t>(cp->srcPtr.ptr) + cp->srcPos.x,
                   cp->extent.width};
      l.nodes.push_back(ln);
    } else if (t == gpuGraphNodeTypeEmpty) {
      l.nodes.push_back(LaunchNode{});
    } else {
      refuse(what, std::string("the launch enqueued ") + node_type_name(t) +
                       ": replay runs only kernels, memsets and device copies");
    }
  }
  std::size_t ne = 0;
  KFLEET_GPU_CHECK(gpuGraphGetEdges(g, nullptr, nullptr, nullptr, &ne));
  std::vector<gpuGraphNode_t> from(ne), to(ne);
  std::vector<std::uint8_t> ports(ne);
  if (ne) KFLEET_GPU_CHECK(gpuGraphGetEdges(g, from.data(), to.data(), ports.data(), &ne));
  auto index = [&](gpuGraphNode_t x) {
    for (std::size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i] == x) return static_cast<std::uint32_t>(i);
    refuse(what, "an edge to a node outside the captured graph");
  };
  for (std::size_t i = 0; i < ne; ++i) {
    if (ports[i] == 255)
      refuse(what, "a graph edge of a kind replay does not take (only ordinary and programmatic "
                   "dependencies between the launch's operations)");
    l.edges.emplace_back(index(from[i]), index(to[i]), ports[i]);
  }
  KFLEET_GPU_CHECK(gpuGraphDestroy(g));
  KFLEET_GPU_CHECK(gpuStreamDestroy(s));
  return l;
}

LaunchList record_one(Problem& p, const std::string& what) {
  LaunchList a = capture_once(p, what);
  const LaunchList b = capture_once(p, what);
  const std::string diff = launch_list_difference(a, b);
  if (!diff.empty())
    refuse(what, "two recordings of the same args differ (" + diff + "): the launch must enqueue "
                 "the same work every time it is given the same args");
  if (a.nodes.empty() && a.status == KFLEET_OK)
    refuse(what, "the launch returned KFLEET_OK but enqueued nothing into `stream`: work on a "
                 "stream it did not join back into `stream`, or left to a host thread, is not "
                 "part of the launch");
  const std::string bad = check_addresses(a, fixed_arena_base(), fixed_arena_end(), is_device_address);
  if (!bad.empty()) refuse(what, bad);
  return a;
}

}  // namespace

int run_record(const Options& o) {
  std::string why;
  if (!fixed_arena_open(o.va_base, &why)) fail_setup(why);
  std::vector<LaunchList> lists;
  if (o.stage == "correctness") {
    for (const std::uint64_t seed : o.seeds) {
      auto problem = make_problem(o, seed);
      lists.push_back(record_one(*problem, recording_name(o.stage, seed)));
    }
  } else {
    auto problem = make_problem(o, o.seeds.front());
    problem->refresh_inputs(0);  // the benchmark's args: scales of refreshed inputs
    lists.push_back(record_one(*problem, recording_name(o.stage, 0)));
  }
  const std::string tmp = o.record_path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << serialize(lists);
    if (!out.good()) fail_setup("cannot write the launch list to " + tmp);
  }
  if (std::rename(tmp.c_str(), o.record_path.c_str()) != 0)
    fail_setup("cannot move the launch list to " + o.record_path);
  std::size_t ops = 0;
  for (const auto& l : lists) ops += l.nodes.size();
  JsonLine("recorded").integer("lists", (long long)lists.size()).integer("operations", (long long)ops)
      .str("path", o.record_path).print();
  return 0;
}

}  // namespace kfleet::harness
