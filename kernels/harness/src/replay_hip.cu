// The measuring side of replay mode on HIP (ABI.md, "Recorded replay" and "HIP"): replay.cu's
// design through HIP's calls. The job's device code is the code objects clang bundled into the
// job's objects (section .hip_fatbin, the bundle entry for this device's target), loaded with
// hipModuleLoadData; kernels are found by the mangled name the recorder wrote
// (hipModuleGetFunction). A chain is issued operation by operation (hipModuleLaunchKernel,
// hipMemsetAsync, hipMemcpyAsync), as the launch function did; a graph with branches is rebuilt
// as a HIP graph. The checks on the recording are replay.cu's (checked_recording). Compiled
// here; not yet run on an AMD GPU (ABI.md says what that leaves).
#include "harness.hpp"

#if defined(KFLEET_HIP)
#include <elf.h>

#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <sstream>

#include "../cpu/amdgpu_code_object.hpp"

namespace kfleet::harness {

// One recorded operation, ready to issue on a stream.
struct ReplayOp {
  const LaunchNode* node = nullptr;
  hipFunction_t function{};
  std::vector<std::uint8_t> params;
  std::vector<void*> ptrs;  // into params, one per parameter slot
};

class ReplayGraph {
 public:
  // `exec` null: the recording is a chain, issued op by op.
  ReplayGraph(hipGraphExec_t exec, int status, std::vector<ReplayOp> chain)
      : exec_(exec), status_(status), chain_(std::move(chain)) {}
  ~ReplayGraph() {
    if (exec_) (void)hipGraphExecDestroy(exec_);
  }
  int launch(gpuStream_t stream) {
    if (status_ != KFLEET_OK) return status_;
    if (exec_) {
      KFLEET_GPU_CHECK(hipGraphLaunch(exec_, stream));
      return KFLEET_OK;
    }
    for (auto& op : chain_) issue(op, stream);
    return KFLEET_OK;
  }

 private:
  static void issue(ReplayOp& op, gpuStream_t stream) {
    const LaunchNode& n = *op.node;
    switch (n.kind) {
      case LaunchNode::Kind::kernel: {
        const KernelNode& k = n.kernel;
        KFLEET_GPU_CHECK(hipModuleLaunchKernel(op.function, k.grid[0], k.grid[1], k.grid[2],
                                               k.block[0], k.block[1], k.block[2], k.shared_bytes,
                                               stream, op.ptrs.empty() ? nullptr : op.ptrs.data(),
                                               nullptr));
        break;
      }
      case LaunchNode::Kind::memset:
        KFLEET_GPU_CHECK(hipMemsetAsync(reinterpret_cast<void*>(n.memset.dst),
                                        static_cast<int>(n.memset.value), n.memset.width, stream));
        break;
      case LaunchNode::Kind::memcpy:
        KFLEET_GPU_CHECK(hipMemcpyAsync(reinterpret_cast<void*>(n.memcpy.dst),
                                        reinterpret_cast<const void*>(n.memcpy.src), n.memcpy.bytes,
                                        hipMemcpyDeviceToDevice, stream));
        break;
      case LaunchNode::Kind::empty:
        break;
    }
  }

  hipGraphExec_t exec_ = nullptr;
  int status_ = KFLEET_OK;
  std::vector<ReplayOp> chain_;
};

namespace {

std::string device_arch() {
  int dev = 0;
  KFLEET_GPU_CHECK(hipGetDevice(&dev));
  hipDeviceProp_t prop{};
  KFLEET_GPU_CHECK(hipGetDeviceProperties(&prop, dev));
  return prop.gcnArchName;
}

// The code objects for `arch` in one of the job's files: a host object or executable (its
// .hip_fatbin), a bare offload bundle, or a code object.
std::vector<std::string> code_objects_of(const std::string& path, const std::string& arch) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_setup("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string file = ss.str();
  std::vector<std::string> out;
  std::string e;
  Elf64_Ehdr eh{};
  const bool elf = file.size() >= sizeof eh && std::memcmp(file.data(), ELFMAG, SELFMAG) == 0;
  if (elf) std::memcpy(&eh, file.data(), sizeof eh);
  if (elf && eh.e_machine == EM_AMDGPU) {
    out.push_back(file);
  } else if (elf) {
    std::string section;
    e = elf_section(file, ".hip_fatbin", &section);
    if (e.empty()) e = fatbin_code_objects(section, arch, &out);
  } else {
    out.emplace_back();
    e = bundle_code_object(file, arch, &out.back());
  }
  if (!e.empty()) fail_replay(path + ": " + e + " (was it compiled by clang or hipcc for " + arch + "?)");
  return out;
}

struct DeviceCode {
  std::deque<std::string> images;  // what each module was loaded from, kept for its life
  std::vector<hipModule_t> modules;
  std::map<std::string, hipFunction_t> kernels;
};

DeviceCode& device_code(const Options& o) {
  static DeviceCode* code = [&] {
    auto* c = new DeviceCode;  // never freed: the runtime unloads modules at exit
    const std::string arch = device_arch();
    std::stringstream in(o.device_code);
    std::string path;
    while (std::getline(in, path, ',')) {
      if (path.empty()) continue;
      for (auto& image : code_objects_of(path, arch)) {
        c->images.push_back(std::move(image));
        hipModule_t m{};
        const hipError_t e = hipModuleLoadData(&m, c->images.back().data());
        if (e != hipSuccess)
          fail_setup("cannot load the device code of " + path + ": " + hipGetErrorString(e));
        c->modules.push_back(m);
      }
    }
    if (c->modules.empty()) fail_setup("replay mode needs --device-code: the job's objects");
    return c;
  }();
  return *code;
}

hipFunction_t find_kernel(const Options& o, const KernelNode& k) {
  DeviceCode& code = device_code(o);
  if (auto it = code.kernels.find(k.function); it != code.kernels.end()) return it->second;
  // Dynamic shared memory needs no opt-in on AMD GPUs up to the device's limit, so the
  // attribute the launch function set is not applied here (and HIP has no setter for a
  // module's function).
  hipFunction_t found{};
  int modules_with_it = 0;
  for (auto m : code.modules) {
    hipFunction_t f{};
    if (hipModuleGetFunction(&f, m, k.function.c_str()) == hipSuccess) {
      found = f;
      ++modules_with_it;
    }
    (void)hipGetLastError();
  }
  // One name in two of the job's files (anonymous namespaces: clang adds no per-file hash on
  // HIP) could be either kernel: neither is run.
  if (modules_with_it > 1)
    fail_replay("the launch list names kernel " + k.function + ", which " +
                std::to_string(modules_with_it) + " of the job's files define: give the kernels "
                "distinct names so that each can be found by its own");
  if (modules_with_it == 0)
    fail_replay("the launch list names kernel " + k.function + ", which is not in the job's device "
               "code: replay runs only kernels compiled from the job's sources");
  code.kernels[k.function] = found;
  return found;
}

bool is_device_address(std::uint64_t v) {
  if (v < 4096) return false;
  hipPointerAttribute_t a{};
  const hipError_t e = hipPointerGetAttributes(&a, reinterpret_cast<const void*>(v));
  (void)hipGetLastError();
  return e == hipSuccess && (a.memoryType == hipMemoryTypeDevice || a.isManaged);
}

// A recording with branches, as a HIP graph. A kernel node names a module's function, which
// HIP's graph API takes as its `func` (as it does when capturing hipModuleLaunchKernel).
hipGraphExec_t build_graph(const Options& o, const LaunchList& l, const GraphPlan& plan,
                           std::vector<std::vector<std::uint8_t>>* params) {
  hipGraph_t g{};
  KFLEET_GPU_CHECK(hipGraphCreate(&g, 0));
  std::vector<hipGraphNode_t> made(l.nodes.size(), nullptr);
  params->assign(l.nodes.size(), {});
  for (const std::uint32_t i : plan.order) {
    std::vector<hipGraphNode_t> deps;
    for (auto d : plan.deps[i]) deps.push_back(made[d]);
    const LaunchNode& n = l.nodes[i];
    hipGraphNode_t node{};
    switch (n.kind) {
      case LaunchNode::Kind::kernel: {
        const KernelNode& k = n.kernel;
        (*params)[i] = k.params;
        std::vector<void*> ptrs;
        for (const auto& s : k.slots) ptrs.push_back((*params)[i].data() + s.offset);
        hipKernelNodeParams kp{};
        kp.func = reinterpret_cast<void*>(find_kernel(o, k));
        kp.gridDim = dim3(k.grid[0], k.grid[1], k.grid[2]);
        kp.blockDim = dim3(k.block[0], k.block[1], k.block[2]);
        kp.sharedMemBytes = k.shared_bytes;
        kp.kernelParams = ptrs.empty() ? nullptr : ptrs.data();
        KFLEET_GPU_CHECK(hipGraphAddKernelNode(&node, g, deps.data(), deps.size(), &kp));
        break;
      }
      case LaunchNode::Kind::memset: {
        hipMemsetParams mp{};
        mp.dst = reinterpret_cast<void*>(n.memset.dst);
        mp.pitch = n.memset.pitch;
        mp.value = n.memset.value;
        mp.elementSize = n.memset.element_size;
        mp.width = n.memset.width;
        mp.height = n.memset.height;
        KFLEET_GPU_CHECK(hipGraphAddMemsetNode(&node, g, deps.data(), deps.size(), &mp));
        break;
      }
      case LaunchNode::Kind::memcpy:
        KFLEET_GPU_CHECK(hipGraphAddMemcpyNode1D(
            &node, g, deps.data(), deps.size(), reinterpret_cast<void*>(n.memcpy.dst),
            reinterpret_cast<const void*>(n.memcpy.src), n.memcpy.bytes, hipMemcpyDeviceToDevice));
        break;
      case LaunchNode::Kind::empty:
        KFLEET_GPU_CHECK(hipGraphAddEmptyNode(&node, g, deps.data(), deps.size()));
        break;
    }
    made[i] = node;
  }
  hipGraphExec_t exec{};
  KFLEET_GPU_CHECK(hipGraphInstantiate(&exec, g, nullptr, nullptr, 0));
  KFLEET_GPU_CHECK(hipGraphDestroy(g));
  return exec;
}

}  // namespace

void attach_replay(const Options& o, Problem& p, const std::string& what) {
  GraphPlan plan;
  const LaunchList& l = checked_recording(o, p, what, is_device_address, &plan);
  // A chain of kernels and byte memsets is issued on the stream as the launch function did; a
  // graph with branches (side streams joined back), or wide or 2D memsets, runs as a graph.
  bool streamable = is_chain(plan);
  for (const auto& n : l.nodes)
    if (n.kind == LaunchNode::Kind::memset && (n.memset.element_size != 1 || n.memset.height > 1))
      streamable = false;
  if (!streamable) {
    std::vector<std::vector<std::uint8_t>> params;  // copied by the graph when nodes are added
    p.replay = std::make_shared<ReplayGraph>(build_graph(o, l, plan, &params), l.status,
                                             std::vector<ReplayOp>{});
    return;
  }
  std::vector<ReplayOp> chain;
  for (const std::uint32_t i : plan.order) {
    ReplayOp op;
    op.node = &l.nodes[i];
    if (l.nodes[i].kind == LaunchNode::Kind::kernel) {
      op.function = find_kernel(o, l.nodes[i].kernel);
      op.params = l.nodes[i].kernel.params;
    }
    chain.push_back(std::move(op));
  }
  for (auto& op : chain)  // pointers into params once the vector no longer moves
    if (op.node->kind == LaunchNode::Kind::kernel)
      for (const auto& slot : op.node->kernel.slots) op.ptrs.push_back(op.params.data() + slot.offset);
  p.replay = std::make_shared<ReplayGraph>(nullptr, l.status, std::move(chain));
}

int replay_launch(ReplayGraph& r, gpuStream_t stream) { return r.launch(stream); }

}  // namespace kfleet::harness

#endif  // KFLEET_HIP
