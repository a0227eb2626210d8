// The recorder (replay mode, ABI.md "Recorded replay"): runs the job's launch function under
// stream capture on buffers at fixed virtual addresses, twice per distinct args, and writes what
// it enqueued as a launch list. This process holds the job's host code; nothing it says is
// believed: the measuring process re-checks the list it is given before running any of it.
#include <cstdio>
#include <cstring>
#include <fstream>

#include "harness.hpp"

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

#if defined(KFLEET_CUDA)

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

LaunchNode kernel_node(cudaGraphNode_t node, const std::string& what) {
  cudaKernelNodeParams kp{};
  if (cudaGraphKernelNodeGetParams(node, &kp) != cudaSuccess)
    refuse(what, "a kernel node whose parameters the runtime does not give back");
  LaunchNode out;
  out.kind = LaunchNode::Kind::kernel;
  KernelNode& k = out.kernel;
  const char* name = nullptr;
  if (cudaFuncGetName(&name, kp.func) != cudaSuccess || !name)
    refuse(what, "a kernel whose name the runtime does not know (launched through a module the "
                 "launch function loaded itself?): only kernels compiled from the job's sources "
                 "can be replayed");
  k.function = name;
  k.grid[0] = kp.gridDim.x, k.grid[1] = kp.gridDim.y, k.grid[2] = kp.gridDim.z;
  k.block[0] = kp.blockDim.x, k.block[1] = kp.blockDim.y, k.block[2] = kp.blockDim.z;
  k.shared_bytes = kp.sharedMemBytes;
  cudaLaunchAttributeValue v{};
  if (cudaGraphKernelNodeGetAttribute(node, cudaLaunchAttributeClusterDimension, &v) == cudaSuccess) {
    k.cluster[0] = v.clusterDim.x, k.cluster[1] = v.clusterDim.y, k.cluster[2] = v.clusterDim.z;
  }
  cudaFuncAttributes fa{};
  if (cudaFuncGetAttributes(&fa, kp.func) == cudaSuccess) {
    k.max_dynamic_shared = fa.maxDynamicSharedSizeBytes;
    k.non_portable_cluster = fa.nonPortableClusterSizeAllowed;
  }
  if (kp.extra) refuse(what, "kernel " + k.function + " was given its parameters through 'extra'");
  std::uint32_t end = 0;
  for (std::size_t i = 0;; ++i) {
    std::size_t off = 0, size = 0;
    if (cudaFuncGetParamInfo(kp.func, i, &off, &size) != cudaSuccess) break;
    k.slots.push_back({static_cast<std::uint32_t>(off), static_cast<std::uint32_t>(size)});
    end = std::max<std::uint32_t>(end, static_cast<std::uint32_t>(off + size));
  }
  cudaGetLastError();  // the probe past the last parameter leaves an error behind
  k.params.assign(end, 0);
  for (std::size_t i = 0; i < k.slots.size(); ++i)
    std::memcpy(&k.params[k.slots[i].offset], kp.kernelParams[i], k.slots[i].size);
  return out;
}

LaunchList capture_once(Problem& p, const std::string& what) {
  gpuStream_t s{};
  KFLEET_GPU_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  KFLEET_GPU_CHECK(cudaDeviceSynchronize());
  KFLEET_GPU_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  set_phase("kernel");
  const int status = p.launch_entry(s);
  cudaGraph_t g = nullptr;
  const cudaError_t end = cudaStreamEndCapture(s, &g);
  const cudaError_t last = cudaGetLastError();
  set_phase("setup");
  if (end != cudaSuccess || last != cudaSuccess || !g) {
    const cudaError_t e = end != cudaSuccess ? end : last;
    refuse(what, std::string("the launch could not be captured (") + cudaGetErrorName(e) + ": " +
                     cudaGetErrorString(e) + "): a synchronous call during the launch "
                     "(cudaMalloc, cudaMemcpy, a synchronize, reading device data on the host), "
                     "work on the legacy default stream, or a side stream not joined back into "
                     "`stream` before the launch returned");
  }
  LaunchList l;
  l.what = what;
  l.status = status;
  l.args = p.args_bytes();
  l.buffers = fixed_buffers();
  std::size_t n = 0;
  KFLEET_GPU_CHECK(cudaGraphGetNodes(g, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  if (n) KFLEET_GPU_CHECK(cudaGraphGetNodes(g, nodes.data(), &n));
  for (auto node : nodes) {
    cudaGraphNodeType t{};
    KFLEET_GPU_CHECK(cudaGraphNodeGetType(node, &t));
    if (t == cudaGraphNodeTypeKernel) {
      l.nodes.push_back(kernel_node(node, what));
    } else if (t == cudaGraphNodeTypeMemset) {
      cudaMemsetParams mp{};
      KFLEET_GPU_CHECK(cudaGraphMemsetNodeGetParams(node, &mp));
      LaunchNode ln;
      ln.kind = LaunchNode::Kind::memset;
      ln.memset = {reinterpret_cast<std::uint64_t>(mp.dst), mp.pitch, mp.width, mp.height,
                   mp.value, mp.elementSize};
      l.nodes.push_back(ln);
    } else if (t == cudaGraphNodeTypeMemcpy) {
      cudaMemcpy3DParms cp{};
      KFLEET_GPU_CHECK(cudaGraphMemcpyNodeGetParams(node, &cp));
      if (cp.srcArray || cp.dstArray || cp.extent.height > 1 || cp.extent.depth > 1)
        refuse(what, "a memcpy with arrays or more than one dimension (only flat device-to-device "
                     "copies inside the harness's buffers can be replayed)");
      LaunchNode ln;
      ln.kind = LaunchNode::Kind::memcpy;
      ln.memcpy = {reinterpret_cast<std::uint64_t>(cp.dstPtr.ptr) + cp.dstPos.x,
                   reinterpret_cast<std::uint64_t>(cp.srcPtr.ptr) + cp.srcPos.x, cp.extent.width};
      l.nodes.push_back(ln);
    } else if (t == cudaGraphNodeTypeEmpty) {
      l.nodes.push_back(LaunchNode{});
    } else {
      refuse(what, std::string("the launch enqueued ") + node_type_name(t) +
                       ": replay runs only kernels, memsets and device copies");
    }
  }
  std::size_t ne = 0;
  KFLEET_GPU_CHECK(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &ne));
  std::vector<cudaGraphNode_t> from(ne), to(ne);
  if (ne) KFLEET_GPU_CHECK(cudaGraphGetEdges(g, from.data(), to.data(), nullptr, &ne));
  auto index = [&](cudaGraphNode_t x) {
    for (std::size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i] == x) return static_cast<std::uint32_t>(i);
    refuse(what, "an edge to a node outside the captured graph");
  };
  for (std::size_t i = 0; i < ne; ++i) l.edges.emplace_back(index(from[i]), index(to[i]));
  KFLEET_GPU_CHECK(cudaGraphDestroy(g));
  KFLEET_GPU_CHECK(cudaStreamDestroy(s));
  return l;
}

bool is_device_address(std::uint64_t v) {
  if (v < 4096) return false;
  cudaPointerAttributes a{};
  const cudaError_t e = cudaPointerGetAttributes(&a, reinterpret_cast<const void*>(v));
  cudaGetLastError();
  return e == cudaSuccess && (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged);
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

#else  // HIP: record_hip.cu

LaunchList record_one(Problem& p, const std::string& what) { return record_hip(p, what); }

#endif

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
