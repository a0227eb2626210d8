// The recorder on HIP (ABI.md, "Recorded replay" and "HIP"): record.cu's design through HIP's
// calls. The launch function runs under hipStreamBeginCapture (global mode) on the fixed-address
// buffers (protect.cu: hipMemAddressReserve, hipMemCreate, hipMemMap), twice per args; each
// kernel node is read with hipGraphKernelNodeGetParams and named with hipKernelNameRefByPtr (the
// mangled name hipModuleGetFunction finds in the code object). HIP has no
// cudaFuncGetParamInfo and a kernel node gives only pointers to its arguments, so the argument
// layout comes from the code object metadata of this very binary (cpu/amdgpu_code_object.hpp).
// Compiled and unit-tested here; not yet run on an AMD GPU (ABI.md says what that leaves).
#include "harness.hpp"

#if defined(KFLEET_HIP)
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "../cpu/amdgpu_code_object.hpp"

namespace kfleet::harness {
namespace {

// Exit status 4, as record.cu: the kernel's launch cannot be recorded; the reason names it.
[[noreturn]] void refuse(const std::string& what, const std::string& why) {
  JsonLine("error").str("phase", "record").str("recording", what)
      .str("message", "replay mode refused the launch (" + what + "): " + why).print();
  std::exit(4);
}

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

std::string device_arch() {
  int dev = 0;
  KFLEET_GPU_CHECK(hipGetDevice(&dev));
  hipDeviceProp_t prop{};
  KFLEET_GPU_CHECK(hipGetDeviceProperties(&prop, dev));
  return prop.gcnArchName;
}

bool same_layout(const std::vector<ParamSlot>& a, const std::vector<ParamSlot>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].offset != b[i].offset || a[i].size != b[i].size) return false;
  return true;
}

// Every kernel's explicit argument layout in the device code linked into this binary, for this
// device's target: the job's kernels and the harness's own, one code object per translation
// unit. A name two of them give different layouts (kernels of one name in anonymous namespaces
// of two files: clang adds no per-file hash to `.name` on HIP) maps to nothing: such a kernel
// is refused when it is recorded, never replayed with the wrong layout.
const std::map<std::string, std::optional<std::vector<ParamSlot>>>& own_kernel_args() {
  static const auto* layouts = [] {
    auto* all = new std::map<std::string, std::optional<std::vector<ParamSlot>>>;  // process life
    std::ifstream in("/proc/self/exe", std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string exe = ss.str(), arch = device_arch();
    std::string section;
    std::vector<std::string> code_objects;
    std::string e = elf_section(exe, ".hip_fatbin", &section);
    if (e.empty()) e = fatbin_code_objects(section, arch, &code_objects);
    for (const auto& co : code_objects) {
      std::map<std::string, std::vector<ParamSlot>> one;
      if (e.empty()) e = amdgpu_kernel_args(co, &one);
      for (auto& [name, slots] : one) {
        const auto it = all->find(name);
        if (it == all->end()) (*all)[name] = std::move(slots);
        else if (it->second && !same_layout(*it->second, slots)) it->second.reset();
      }
    }
    if (!e.empty())
      fail_setup("the recorder cannot read the kernel argument layout of its own device code (" +
                 arch + "): " + e);
    return all;
  }();
  return *layouts;
}

LaunchNode kernel_node(hipGraphNode_t node, hipStream_t stream, const std::string& what) {
  hipKernelNodeParams kp{};
  if (hipGraphKernelNodeGetParams(node, &kp) != hipSuccess)
    refuse(what, "a kernel node whose parameters the runtime does not give back");
  LaunchNode out;
  out.kind = LaunchNode::Kind::kernel;
  KernelNode& k = out.kernel;
  const char* name = hipKernelNameRefByPtr(kp.func, stream);
  if (!name || !*name)
    refuse(what, "a kernel whose name the runtime does not know (launched through a module the "
                 "launch function loaded itself?): only kernels compiled from the job's sources "
                 "can be replayed");
  k.function = name;
  k.grid[0] = kp.gridDim.x, k.grid[1] = kp.gridDim.y, k.grid[2] = kp.gridDim.z;
  k.block[0] = kp.blockDim.x, k.block[1] = kp.blockDim.y, k.block[2] = kp.blockDim.z;
  k.shared_bytes = kp.sharedMemBytes;
  hipFuncAttributes fa{};
  if (hipFuncGetAttributes(&fa, kp.func) == hipSuccess) k.max_dynamic_shared = fa.maxDynamicSharedSizeBytes;
  (void)hipGetLastError();
  if (kp.extra) refuse(what, "kernel " + k.function + " was given its parameters through 'extra'");
  const auto& layouts = own_kernel_args();
  const auto it = layouts.find(k.function);
  if (it == layouts.end())
    refuse(what, "kernel " + k.function + " is not in this binary's device code for " +
                     device_arch() + ": only kernels compiled from the job's sources can be replayed");
  if (!it->second)
    refuse(what, "kernel " + k.function + " is defined with different arguments in two of the "
                 "binary's files (an anonymous namespace in each?): give the kernels distinct "
                 "names so that each can be found by its own");
  k.slots = *it->second;
  if (!k.slots.empty() && !kp.kernelParams)
    refuse(what, "kernel " + k.function + " has arguments but its node gives none back");
  std::uint32_t end = 0;
  for (const auto& slot : k.slots) end = std::max<std::uint32_t>(end, slot.offset + slot.size);
  k.params.assign(end, 0);
  for (std::size_t i = 0; i < k.slots.size(); ++i)
    std::memcpy(&k.params[k.slots[i].offset], kp.kernelParams[i], k.slots[i].size);
  return out;
}

LaunchList capture_once(Problem& p, const std::string& what) {
  hipStream_t s{};
  KFLEET_GPU_CHECK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
  KFLEET_GPU_CHECK(hipDeviceSynchronize());
  KFLEET_GPU_CHECK(hipStreamBeginCapture(s, hipStreamCaptureModeGlobal));
  set_phase("kernel");
  const int status = p.launch_entry(s);
  hipGraph_t g = nullptr;
  const hipError_t end = hipStreamEndCapture(s, &g);
  const hipError_t last = hipGetLastError();
  set_phase("setup");
  if (end != hipSuccess || last != hipSuccess || !g) {
    const hipError_t e = end != hipSuccess ? end : last;
    refuse(what, std::string("the launch could not be captured (") + hipGetErrorName(e) + ": " +
                     hipGetErrorString(e) + "): a synchronous call during the launch "
                     "(hipMalloc, hipMemcpy, a synchronize, reading device data on the host), "
                     "work on the null stream, or a side stream not joined back into `stream` "
                     "before the launch returned");
  }
  LaunchList l;
  l.what = what;
  l.status = status;
  l.args = p.args_bytes();
  l.buffers = fixed_buffers();
  std::size_t n = 0;
  KFLEET_GPU_CHECK(hipGraphGetNodes(g, nullptr, &n));
  std::vector<hipGraphNode_t> nodes(n);
  if (n) KFLEET_GPU_CHECK(hipGraphGetNodes(g, nodes.data(), &n));
  for (auto node : nodes) {
    hipGraphNodeType t{};
    KFLEET_GPU_CHECK(hipGraphNodeGetType(node, &t));
    if (t == hipGraphNodeTypeKernel) {
      l.nodes.push_back(kernel_node(node, s, what));
    } else if (t == hipGraphNodeTypeMemset) {
      hipMemsetParams mp{};
      KFLEET_GPU_CHECK(hipGraphMemsetNodeGetParams(node, &mp));
      LaunchNode ln;
      ln.kind = LaunchNode::Kind::memset;
      ln.memset = {reinterpret_cast<std::uint64_t>(mp.dst), mp.pitch, mp.width, mp.height,
                   mp.value, mp.elementSize};
      l.nodes.push_back(ln);
    } else if (t == hipGraphNodeTypeMemcpy || t == hipGraphNodeTypeMemcpy1D) {
      hipMemcpy3DParms cp{};
      if (hipGraphMemcpyNodeGetParams(node, &cp) != hipSuccess)
        refuse(what, "a copy node whose parameters the runtime does not give back (HIP has no "
                     "hipGraphMemcpyNodeGetParams1D): replay on HIP runs only kernels and memsets "
                     "of such launches");
      if (cp.srcArray || cp.dstArray || cp.extent.height > 1 || cp.extent.depth > 1)
        refuse(what, "a memcpy with arrays or more than one dimension (only flat device-to-device "
                     "copies inside the harness's buffers can be replayed)");
      LaunchNode ln;
      ln.kind = LaunchNode::Kind::memcpy;
      ln.memcpy = {reinterpret_cast<std::uint64_t>(cp.dstPtr.ptr) + cp.dstPos.x,
                   reinterpret_cast<std::uint64_t>(cp.srcPtr.ptr) + cp.srcPos.x, cp.extent.width};
      l.nodes.push_back(ln);
    } else if (t == hipGraphNodeTypeEmpty) {
      l.nodes.push_back(LaunchNode{});
    } else {
      refuse(what, std::string("the launch enqueued ") + node_type_name(t) +
                       ": replay runs only kernels, memsets and device copies");
    }
  }
  std::size_t ne = 0;
  KFLEET_GPU_CHECK(hipGraphGetEdges(g, nullptr, nullptr, &ne));
  std::vector<hipGraphNode_t> from(ne), to(ne);
  if (ne) KFLEET_GPU_CHECK(hipGraphGetEdges(g, from.data(), to.data(), &ne));
  auto index = [&](hipGraphNode_t x) {
    for (std::size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i] == x) return static_cast<std::uint32_t>(i);
    refuse(what, "an edge to a node outside the captured graph");
  };
  for (std::size_t i = 0; i < ne; ++i) l.edges.emplace_back(index(from[i]), index(to[i]));
  KFLEET_GPU_CHECK(hipGraphDestroy(g));
  KFLEET_GPU_CHECK(hipStreamDestroy(s));
  return l;
}

bool is_device_address(std::uint64_t v) {
  if (v < 4096) return false;
  hipPointerAttribute_t a{};
  const hipError_t e = hipPointerGetAttributes(&a, reinterpret_cast<const void*>(v));
  (void)hipGetLastError();
  return e == hipSuccess && (a.memoryType == hipMemoryTypeDevice || a.isManaged);
}

}  // namespace

LaunchList record_hip(Problem& p, const std::string& what) {
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

}  // namespace kfleet::harness

#endif  // KFLEET_HIP
