// The measuring side of replay mode (ABI.md, "Recorded replay"): loads the job's device code
// only (the fatbin nvcc put in each of the job's objects, the very build the recorder ran; on
// HIP, replay_hip.cu: the code objects clang bundled in them),
// checks the launch list the recorder wrote as it would check anything from the job, and
// rebuilds it as a graph that every launch of this process runs. The job's host code is never
// loaded here. One measurer for CUDA and HIP (ABI.md, "HIP"): what the runtimes do differently
// (loading the device code, launching one kernel) is each runtime's own, the rest is shared.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "../cpu/device_code.hpp"
#include "replay_mode.hpp"

namespace kfleet::harness {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_setup("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

namespace {

const std::vector<LaunchList>& launch_lists(const Options& o) {
  static std::vector<LaunchList>* lists = [&] {
    auto* l = new std::vector<LaunchList>;
    std::ifstream in(o.replay_path, std::ios::binary);
    if (!in) fail_setup("cannot read the launch list " + o.replay_path);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string err = parse_launch_lists(ss.str(), l);
    if (!err.empty()) fail_replay(o.replay_path + ": " + err);
    return l;
  }();
  return *lists;
}

bool same_buffers(const std::vector<FixedBuffer>& a, const std::vector<FixedBuffer>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].va != b[i].va || a[i].bytes != b[i].bytes || a[i].name != b[i].name) return false;
  return true;
}

}  // namespace

const LaunchList& checked_recording(const Options& o, Problem& p, const std::string& what,
                                    const std::function<bool(std::uint64_t)>& is_device_address,
                                    GraphPlan* plan) {
  const LaunchList* found = nullptr;
  for (const auto& l : launch_lists(o))
    if (l.what == what) found = &l;
  if (!found) fail_replay("the launch list has no recording for " + what);
  const LaunchList& l = *found;
  // The list came from a process that ran the job's code: check it as such.
  if (l.args != p.args_bytes())
    fail_replay("the recording for " + what + " was made for other args than this case's");
  if (!same_buffers(l.buffers, fixed_buffers()))
    fail_replay("the recording for " + what + " was made with buffers at other addresses");
  const std::string bad = check_addresses(l, fixed_arena_base(), fixed_arena_end(), is_device_address);
  if (!bad.empty()) fail_replay("the recording for " + what + " is refused: " + bad);
  const std::string cyc = plan_graph(l, plan);
  if (!cyc.empty()) fail_replay("the recording for " + what + " is refused: " + cyc);
  return l;
}

// ---- What the runtimes do differently ----

#if defined(KFLEET_CUDA)

using ReplayKernel = cudaKernel_t;
// The graph is made for every recording: a chain is issued op by op, and an empty one (nothing
// recorded) runs the graph.
constexpr bool kGraphForEveryRecording = true;

namespace {

// The fatbin nvcc embeds in a host object (section .nv_fatbin, no relocations), or the file
// itself when it is a cubin or a fatbin already (cpu/device_code.cpp: bytes of the job's build).
std::string device_code_of(const std::string& path) {
  std::string code;
  const std::string why = device_code_in_file(read_file(path), &code);
  if (!why.empty()) fail_replay(path + ": " + why);
  return code;
}

struct DeviceCode {
  std::vector<cudaLibrary_t> libraries;
  std::vector<std::string> paths;
  std::map<std::string, cudaKernel_t> kernels;
  std::map<std::string, int> max_dynamic_shared;  // what each kernel's attribute is, once asked
};

DeviceCode& device_code(const Options& o) {
  static DeviceCode* code = [&] {
    auto* c = new DeviceCode;  // never freed: the runtime unloads libraries at exit
    std::stringstream in(o.device_code);
    std::string path;
    while (std::getline(in, path, ',')) {
      if (path.empty()) continue;
      const std::string bytes = device_code_of(path);
      cudaLibrary_t lib{};
      const cudaError_t e = cudaLibraryLoadData(&lib, bytes.data(), nullptr, nullptr, 0, nullptr,
                                                nullptr, 0);
      if (e != cudaSuccess)
        fail_setup("cannot load the device code of " + path + ": " + cudaGetErrorString(e));
      c->libraries.push_back(lib);
      c->paths.push_back(path);
    }
    if (c->libraries.empty()) fail_setup("replay mode needs --device-code: the job's objects");
    return c;
  }();
  return *code;
}

// What the launch function set on a kernel in the recorder (a kernel's other attributes are in
// its code), settled before the kernel's first launch that needs it. The recorder reads the
// attribute whether or not anyone set it (48 KiB less the static shared memory, untouched), so it
// is set only where it is more than this fresh load allows (which is all a launch needs): an
// attribute set to its own default is still a setting the driver keeps. A launch without dynamic
// shared memory needs none; its kernel is neither asked nor set, left as the library left it.
void settle_max_dynamic_shared(DeviceCode& code, cudaKernel_t kernel, const KernelNode& k, int dev) {
  if (k.shared_bytes <= 0 || k.max_dynamic_shared <= 0) return;
  if (auto it = code.max_dynamic_shared.find(k.function);
      it != code.max_dynamic_shared.end() && it->second >= k.max_dynamic_shared)
    return;
  cudaFuncAttributes fa{};  // a cudaKernel_t goes where a function's address does
  KFLEET_GPU_CHECK(cudaFuncGetAttributes(&fa, reinterpret_cast<const void*>(kernel)));
  if (k.max_dynamic_shared > fa.maxDynamicSharedSizeBytes)
    KFLEET_GPU_CHECK(cudaKernelSetAttributeForDevice(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, k.max_dynamic_shared, dev));
  code.max_dynamic_shared[k.function] = std::max(k.max_dynamic_shared, fa.maxDynamicSharedSizeBytes);
}

cudaKernel_t find_kernel(const Options& o, const KernelNode& k) {
  DeviceCode& code = device_code(o);
  int dev = 0;
  KFLEET_GPU_CHECK(cudaGetDevice(&dev));
  if (auto it = code.kernels.find(k.function); it != code.kernels.end()) {
    settle_max_dynamic_shared(code, it->second, k, dev);
    return it->second;
  }
  for (auto lib : code.libraries) {
    cudaKernel_t kernel{};
    if (cudaLibraryGetKernel(&kernel, lib, k.function.c_str()) == cudaSuccess) {
      settle_max_dynamic_shared(code, kernel, k, dev);
      if (k.non_portable_cluster > 0)
        KFLEET_GPU_CHECK(cudaKernelSetAttributeForDevice(
            kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1, dev));
      code.kernels[k.function] = kernel;
      return kernel;
    }
    cudaGetLastError();
  }
  fail_replay("the launch list names kernel " + k.function + ", which is not in the job's device "
             "code: replay runs only kernels compiled from the job's sources");
}

// One recorded kernel issued on `stream`, in its cluster shape.
void launch_kernel(const KernelNode& k, cudaKernel_t kernel, void** args, gpuStream_t stream) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(k.grid[0], k.grid[1], k.grid[2]);
  cfg.blockDim = dim3(k.block[0], k.block[1], k.block[2]);
  cfg.dynamicSmemBytes = k.shared_bytes;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  if (k.cluster[0] > 0) {
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = k.cluster[0];
    attr[0].val.clusterDim.y = k.cluster[1];
    attr[0].val.clusterDim.z = k.cluster[2];
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  KFLEET_GPU_CHECK(cudaLaunchKernelExC(&cfg, reinterpret_cast<const void*>(kernel), args));
}

// A kernel node's cluster shape, as recorded.
void set_cluster(cudaGraphNode_t node, const KernelNode& k) {
  if (k.cluster[0] > 0) {
    cudaLaunchAttributeValue v{};
    v.clusterDim.x = k.cluster[0], v.clusterDim.y = k.cluster[1], v.clusterDim.z = k.cluster[2];
    KFLEET_GPU_CHECK(cudaGraphKernelNodeSetAttribute(node, cudaLaunchAttributeClusterDimension, &v));
  }
}

// A programmatic dependency between two kernel nodes, as it was captured (LaunchEdge::port): the
// downstream kernel may begin before the upstream one ends, as when the library launched it.
void add_programmatic_edge(cudaGraph_t g, cudaGraphNode_t from, cudaGraphNode_t to, std::uint8_t port) {
  cudaGraphEdgeData d{};
  d.from_port = port;
  d.type = cudaGraphDependencyTypeProgrammatic;
  KFLEET_GPU_CHECK(cudaGraphAddDependencies(g, &from, &to, &d, 1));
}

}  // namespace

#else  // HIP: the job's device code is loaded as modules (replay_hip.cu: find_kernel)

using ReplayKernel = hipFunction_t;
// The graph is made only for a recording that is not issued op by op.
constexpr bool kGraphForEveryRecording = false;

namespace {

// One recorded kernel issued on `stream`, as a module's function.
void launch_kernel(const KernelNode& k, hipFunction_t function, void** args, gpuStream_t stream) {
  KFLEET_GPU_CHECK(hipModuleLaunchKernel(function, k.grid[0], k.grid[1], k.grid[2], k.block[0],
                                         k.block[1], k.block[2], k.shared_bytes, stream, args,
                                         nullptr));
}

void set_cluster(hipGraphNode_t, const KernelNode&) {}  // there are no clusters on HIP

void add_programmatic_edge(hipGraph_t, hipGraphNode_t, hipGraphNode_t, std::uint8_t) {
  fail_replay("the launch list has a programmatic dependency, which HIP's graphs do not have");
}

}  // namespace

#endif

// ---- Replay, on either runtime ----

// A recorded memset, as a kernel of the harness's (as a copy is, below): a memset node goes to a
// copy engine, and a graph launched on an idle GPU waits for the switch between it and the kernels
// around it. A torch topk (two memsets among 17 kernels) replayed in 131 us with memset nodes and
// 117.6 us with this kernel on an H200; torch's own graph of it ran in 116 us queued behind other
// work. Elements of 1, 2 or 4 bytes, `height` rows `pitch` bytes apart.
__global__ void harness_memset_kernel(unsigned char* dst, std::uint64_t pitch, std::uint64_t width,
                                      std::uint64_t height, std::uint32_t value,
                                      std::uint32_t element_size) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  const std::uint64_t tid = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (height == 1 && (reinterpret_cast<std::uintptr_t>(dst) & 15u) == 0) {
    // One row from a 16-byte boundary: 16 bytes a thread, the tail a byte at a time (the
    // pattern's bytes repeat every 4, as every element begins at a multiple of its size).
    const std::uint32_t w = element_size == 1 ? (value & 0xffu) * 0x01010101u
                            : element_size == 2 ? (value & 0xffffu) * 0x00010001u
                                                : value;
    const std::uint64_t bytes = width * element_size, n16 = bytes / 16;
    const uint4 pattern = make_uint4(w, w, w, w);
    for (std::uint64_t j = tid; j < n16; j += stride) reinterpret_cast<uint4*>(dst)[j] = pattern;
    for (std::uint64_t j = n16 * 16 + tid; j < bytes; j += stride)
      dst[j] = static_cast<unsigned char>(w >> (8 * (j % 4)));
    return;
  }
  const std::uint64_t n = width * height;
  for (std::uint64_t i = tid; i < n; i += stride) {
    unsigned char* p = dst + (i / width) * pitch + (i % width) * element_size;
    if (element_size == 4) *reinterpret_cast<std::uint32_t*>(p) = value;
    else if (element_size == 2) *reinterpret_cast<std::uint16_t*>(p) = static_cast<std::uint16_t>(value);
    else *p = static_cast<unsigned char>(value);
  }
}

namespace {

unsigned memset_blocks(const MemsetNode& m) {
  const std::uint64_t per_block = 256ull * 16;
  return static_cast<unsigned>(std::min<std::uint64_t>(8192, m.bytes() / per_block + 1));
}

void launch_memset(const MemsetNode& m, gpuStream_t stream) {
  harness_memset_kernel<<<memset_blocks(m), 256, 0, stream>>>(
      reinterpret_cast<unsigned char*>(m.dst), m.height > 1 ? m.pitch : 0, m.width,
      m.height > 1 ? m.height : 1, m.value, m.element_size);
  KFLEET_GPU_CHECK(gpuGetLastError());
}

}  // namespace

// One recorded operation, ready to issue on a stream (a chain).
struct ReplayOp {
  const LaunchNode* node = nullptr;
  ReplayKernel kernel{};
  std::vector<std::uint8_t> params;
  std::vector<void*> ptrs;  // into params, one per parameter slot
};

class ReplayGraph {
 public:
  // `exec` null: there is no graph, the recording is a chain issued op by op. With a graph,
  // a chain is still issued op by op when there is one.
  ReplayGraph(gpuGraphExec_t exec, int status, std::vector<ReplayOp> chain)
      : exec_(exec), status_(status), chain_(std::move(chain)) {}
  ~ReplayGraph() {
    if (exec_) (void)gpuGraphExecDestroy(exec_);
  }
  bool is_graph() const { return exec_ && chain_.empty(); }
  int launch(gpuStream_t stream) {
    if (status_ != KFLEET_OK) return status_;
    if (exec_ && chain_.empty()) {
      KFLEET_GPU_CHECK(gpuGraphLaunch(exec_, stream));
      return KFLEET_OK;
    }
    for (auto& op : chain_) issue(op, stream);
    return KFLEET_OK;
  }

 private:
  static void issue(ReplayOp& op, gpuStream_t stream) {
    const LaunchNode& n = *op.node;
    switch (n.kind) {
      case LaunchNode::Kind::kernel:
        launch_kernel(n.kernel, op.kernel, op.ptrs.empty() ? nullptr : op.ptrs.data(), stream);
        break;
      case LaunchNode::Kind::memset:
        launch_memset(n.memset, stream);
        break;
      case LaunchNode::Kind::memcpy:
        KFLEET_GPU_CHECK(gpuMemcpyAsync(reinterpret_cast<void*>(n.memcpy.dst),
                                        reinterpret_cast<const void*>(n.memcpy.src),
                                        n.memcpy.bytes, gpuMemcpyDeviceToDevice, stream));
        break;
      case LaunchNode::Kind::empty:
        break;
    }
  }

  gpuGraphExec_t exec_ = nullptr;
  int status_ = KFLEET_OK;
  std::vector<ReplayOp> chain_;
};

namespace {

// A recorded device-to-device copy, as a kernel of the harness's: where torch's captured graph
// ran `args.o.copy_(result)` the driver ran a copy kernel (memcpy128 in its trace), and the same
// copy added to a graph by hand ran on a copy engine, leaving the GPU idle about 10 us between it
// and the kernels around it (a torch attention on an H200). 16 bytes a thread where both ends
// allow it.
__global__ void harness_copy_kernel(unsigned char* dst, const unsigned char* src, std::uint64_t bytes) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  const std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  std::uint64_t done = 0;
  if (((reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src)) & 15u) == 0) {
    const std::uint64_t n16 = bytes / 16;
    for (std::uint64_t j = i; j < n16; j += stride)
      reinterpret_cast<uint4*>(dst)[j] = reinterpret_cast<const uint4*>(src)[j];
    done = n16 * 16;
  }
  for (std::uint64_t j = done + i; j < bytes; j += stride) dst[j] = src[j];
}

// --replay-kernels builtin: what stands in for each of the job's kernels (a diagnostic).
__global__ void harness_idle_kernel() {}

// The empty kernel allowed the dynamic shared memory a node asks, once per size above 48 KiB.
void allow_idle_shared(int bytes) {
  static int allowed = 48 << 10;
  if (bytes <= allowed) return;
  KFLEET_GPU_CHECK(gpuFuncSetAttribute(reinterpret_cast<const void*>(harness_idle_kernel),
                                       gpuFuncAttributeMaxDynamicSharedMemorySize, bytes));
  allowed = bytes;
}

// The recording as a graph, instantiated. A kernel node's `func` is the job's kernel as this
// process loaded it (on HIP a module's function, which HIP's graph API takes as it does when
// capturing hipModuleLaunchKernel), or with --replay-kernels builtin the harness's empty kernel.
gpuGraphExec_t build_graph(const Options& o, const LaunchList& l, const GraphPlan& plan) {
  gpuGraph_t g{};
  KFLEET_GPU_CHECK(gpuGraphCreate(&g, 0));
  std::vector<gpuGraphNode_t> made(l.nodes.size(), nullptr);
  std::vector<std::vector<std::uint8_t>> params(l.nodes.size());  // copied as nodes are added
  std::vector<std::array<std::uint64_t, 3>> copy_args(l.nodes.size());  // a copy's dst, src, bytes
  std::vector<std::array<std::uint64_t, 4>> memset_args(l.nodes.size());  // dst, pitch, width, height
  std::vector<std::array<std::uint32_t, 2>> memset_values(l.nodes.size());  // value, element size
  for (const std::uint32_t i : plan.order) {
    std::vector<gpuGraphNode_t> deps;
    for (auto d : plan.deps[i]) deps.push_back(made[d]);
    const LaunchNode& n = l.nodes[i];
    gpuGraphNode_t node{};
    switch (n.kind) {
      case LaunchNode::Kind::kernel: {
        const KernelNode& k = n.kernel;
        params[i] = k.params;
        std::vector<void*> ptrs;
        for (const auto& s : k.slots) ptrs.push_back(params[i].data() + s.offset);
        gpuKernelNodeParams kp{};
        if (!o.replay_builtin_unloaded) kp.func = reinterpret_cast<void*>(find_kernel(o, k));
        kp.gridDim = dim3(k.grid[0], k.grid[1], k.grid[2]);
        kp.blockDim = dim3(k.block[0], k.block[1], k.block[2]);
        kp.sharedMemBytes = k.shared_bytes;
        kp.kernelParams = ptrs.empty() ? nullptr : ptrs.data();
        if (o.replay_builtin_kernels) {
          allow_idle_shared(static_cast<int>(k.shared_bytes));
          kp.func = reinterpret_cast<void*>(harness_idle_kernel);
          kp.kernelParams = nullptr;
        }
        KFLEET_GPU_CHECK(gpuGraphAddKernelNode(&node, g, deps.data(), deps.size(), &kp));
        set_cluster(node, k);
        break;
      }
      case LaunchNode::Kind::memset: {
        const MemsetNode& m = n.memset;
        memset_args[i] = {m.dst, m.height > 1 ? m.pitch : 0, m.width, m.height > 1 ? m.height : 1};
        memset_values[i] = {m.value, m.element_size};
        std::uint64_t* a = memset_args[i].data();
        std::uint32_t* v = memset_values[i].data();
        void* ptrs[6] = {&a[0], &a[1], &a[2], &a[3], &v[0], &v[1]};
        gpuKernelNodeParams kp{};
        kp.func = reinterpret_cast<void*>(harness_memset_kernel);
        kp.gridDim = dim3(memset_blocks(m));
        kp.blockDim = dim3(256);
        kp.kernelParams = ptrs;
        KFLEET_GPU_CHECK(gpuGraphAddKernelNode(&node, g, deps.data(), deps.size(), &kp));
        break;
      }
      case LaunchNode::Kind::memcpy: {
        copy_args[i] = {n.memcpy.dst, n.memcpy.src, n.memcpy.bytes};
        std::uint64_t* a = copy_args[i].data();
        void* ptrs[3] = {&a[0], &a[1], &a[2]};
        const std::uint64_t per_block = 256ull * 16;
        gpuKernelNodeParams kp{};
        kp.func = reinterpret_cast<void*>(harness_copy_kernel);
        kp.gridDim = dim3(static_cast<unsigned>(std::min<std::uint64_t>(8192, (n.memcpy.bytes + per_block - 1) / per_block + 1)));
        kp.blockDim = dim3(256);
        kp.kernelParams = ptrs;
        KFLEET_GPU_CHECK(gpuGraphAddKernelNode(&node, g, deps.data(), deps.size(), &kp));
        break;
      }
      case LaunchNode::Kind::empty:
        KFLEET_GPU_CHECK(gpuGraphAddEmptyNode(&node, g, deps.data(), deps.size()));
        break;
    }
    made[i] = node;
  }
  for (const auto& e : plan.programmatic) add_programmatic_edge(g, made[e.from], made[e.to], e.port);
#if defined(KFLEET_CUDA)
  if (!o.replay_dot.empty())  // a diagnostic (PROTOCOL.md): every node with its launch attributes
    KFLEET_GPU_CHECK(cudaGraphDebugDotPrint(g, o.replay_dot.c_str(), cudaGraphDebugDotFlagsVerbose));
#endif
  gpuGraphExec_t exec{};
  KFLEET_GPU_CHECK(gpuGraphInstantiate(&exec, g));
  KFLEET_GPU_CHECK(gpuGraphDestroy(g));
  return exec;
}

// The recording's operations in plan order, each with the job's kernel and its own copy of
// the parameter bytes, for issuing on a stream.
std::vector<ReplayOp> chain_of(const Options& o, const LaunchList& l, const GraphPlan& plan) {
  std::vector<ReplayOp> chain;
  for (const std::uint32_t i : plan.order) {
    ReplayOp op;
    op.node = &l.nodes[i];
    if (l.nodes[i].kind == LaunchNode::Kind::kernel) {
      op.kernel = find_kernel(o, l.nodes[i].kernel);
      op.params = l.nodes[i].kernel.params;
    }
    chain.push_back(std::move(op));
  }
  for (auto& op : chain)  // pointers into params once the vector no longer moves
    if (op.node->kind == LaunchNode::Kind::kernel)
      for (const auto& slot : op.node->kernel.slots) op.ptrs.push_back(op.params.data() + slot.offset);
  return chain;
}

}  // namespace

void attach_replay(const Options& o, Problem& p, const std::string& what) {
  GraphPlan plan;
  // A named std::function, not a temporary made from the function: GCC 13 warns
  // (-Wdangling-reference, GCC PR 107532) on any reference returned from a call that is given a
  // temporary, though the list lives in launch_lists()'s cache, not in an argument.
  const std::function<bool(std::uint64_t)> device_address = is_device_address;
  const LaunchList& l = checked_recording(o, p, what, device_address, &plan);
  // One operation is issued on the stream as the launch function did; a recording of several
  // runs as the graph it was captured as. Issued op by op, each launch waits on the host: a
  // torch topk of 17 small kernels replayed in 145 us against 116 us for its graph in-process on
  // an H200, and a copy issued on the stream goes to a copy engine, whose switch left the GPU idle
  // 10 us of a 176 us torch attention (args.o.copy_(result)). What is timed is the launch's work on
  // the GPU, not the host's pace of issuing it.
  // --replay-issue stream (a diagnostic, PROTOCOL.md) issues any chain op by op; --replay-issue
  // graph issues even one operation as a graph.
  const bool on_stream = o.replay_issue == "stream", as_graph = o.replay_issue == "graph";
  const bool streamable = is_chain(plan) && !as_graph && (l.nodes.size() <= 1 || on_stream);
  gpuGraphExec_t exec = kGraphForEveryRecording || !streamable ? build_graph(o, l, plan) : nullptr;
  std::vector<ReplayOp> chain;
  if (streamable) chain = chain_of(o, l, plan);
  if (!o.replay_issue.empty())
    std::fprintf(stderr, "replay of %s: %zu operation(s) issued %s\n", what.c_str(), l.nodes.size(),
                 streamable ? "op by op on the stream"
                 : as_graph ? "as a graph (--replay-issue graph)"
                            : "as its graph (not a chain)");
  p.replay = std::make_shared<ReplayGraph>(exec, l.status, std::move(chain));
}

int replay_launch(ReplayGraph& r, gpuStream_t stream) { return r.launch(stream); }
bool replay_is_graph(const ReplayGraph& r) { return r.is_graph(); }

gpuGraphExec_t make_noop_graph() {
  gpuStream_t s{};
  gpuGraph_t g{};
  gpuGraphExec_t e{};
  KFLEET_GPU_CHECK(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
  KFLEET_GPU_CHECK(gpuStreamBeginCapture(s, gpuStreamCaptureModeGlobal));
  launch_harness_noop(s);
  KFLEET_GPU_CHECK(gpuStreamEndCapture(s, &g));
  KFLEET_GPU_CHECK(gpuGraphInstantiate(&e, g));
  KFLEET_GPU_CHECK(gpuGraphDestroy(g));
  KFLEET_GPU_CHECK(gpuStreamDestroy(s));
  return e;
}

int Problem::launch(gpuStream_t stream) {
  return replay ? replay_launch(*replay, stream) : launch_entry(stream);
}

}  // namespace kfleet::harness
