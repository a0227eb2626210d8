#pragma once
// What the files of replay mode share (record.cu and replay.cu, written once for both runtimes;
// record_hip.cu and replay_hip.cu, what only HIP needs): the graph API of either runtime under
// gpu* names, mapped as kfleet_harness/gpu_runtime.hpp maps the rest (two calls whose arguments
// differ are functions here), and the helpers more than one of those files calls.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness.hpp"

#if defined(KFLEET_HIP)
#define gpuGraph_t hipGraph_t
#define gpuGraphNode_t hipGraphNode_t
#define gpuGraphExec_t hipGraphExec_t
#define gpuGraphNodeType hipGraphNodeType
#define gpuGraphNodeTypeKernel hipGraphNodeTypeKernel
#define gpuGraphNodeTypeMemset hipGraphNodeTypeMemset
#define gpuGraphNodeTypeEmpty hipGraphNodeTypeEmpty
#define gpuKernelNodeParams hipKernelNodeParams
#define gpuMemsetParams hipMemsetParams
#define gpuMemcpy3DParms hipMemcpy3DParms
#define gpuMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define gpuStreamBeginCapture hipStreamBeginCapture
#define gpuStreamCaptureModeGlobal hipStreamCaptureModeGlobal
#define gpuStreamEndCapture hipStreamEndCapture
#define gpuGraphCreate hipGraphCreate
#define gpuGraphDestroy hipGraphDestroy
#define gpuGraphGetNodes hipGraphGetNodes
#define gpuGraphNodeGetType hipGraphNodeGetType
#define gpuGraphKernelNodeGetParams hipGraphKernelNodeGetParams
#define gpuGraphMemsetNodeGetParams hipGraphMemsetNodeGetParams
#define gpuGraphAddKernelNode hipGraphAddKernelNode
#define gpuGraphAddMemcpyNode1D hipGraphAddMemcpyNode1D
#define gpuGraphAddEmptyNode hipGraphAddEmptyNode
#define gpuGraphLaunch hipGraphLaunch
#define gpuGraphExecDestroy hipGraphExecDestroy
#else
#define gpuGraph_t cudaGraph_t
#define gpuGraphNode_t cudaGraphNode_t
#define gpuGraphExec_t cudaGraphExec_t
#define gpuGraphNodeType cudaGraphNodeType
#define gpuGraphNodeTypeKernel cudaGraphNodeTypeKernel
#define gpuGraphNodeTypeMemset cudaGraphNodeTypeMemset
#define gpuGraphNodeTypeEmpty cudaGraphNodeTypeEmpty
#define gpuKernelNodeParams cudaKernelNodeParams
#define gpuMemsetParams cudaMemsetParams
#define gpuMemcpy3DParms cudaMemcpy3DParms
#define gpuMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define gpuStreamBeginCapture cudaStreamBeginCapture
#define gpuStreamCaptureModeGlobal cudaStreamCaptureModeGlobal
#define gpuStreamEndCapture cudaStreamEndCapture
#define gpuGraphCreate cudaGraphCreate
#define gpuGraphDestroy cudaGraphDestroy
#define gpuGraphGetNodes cudaGraphGetNodes
#define gpuGraphNodeGetType cudaGraphNodeGetType
#define gpuGraphKernelNodeGetParams cudaGraphKernelNodeGetParams
#define gpuGraphMemsetNodeGetParams cudaGraphMemsetNodeGetParams
#define gpuGraphAddKernelNode cudaGraphAddKernelNode
#define gpuGraphAddMemcpyNode1D cudaGraphAddMemcpyNode1D
#define gpuGraphAddEmptyNode cudaGraphAddEmptyNode
#define gpuGraphLaunch cudaGraphLaunch
#define gpuGraphExecDestroy cudaGraphExecDestroy
#endif

namespace kfleet::harness {

// A graph's edges, and with `ports` each one's LaunchEdge::port: 0 an ordinary dependency, 1 or
// 2 CUDA's programmatic dependency from that port of the upstream kernel (what a launch with
// programmatic stream serialization becomes under capture), 255 an edge of a kind replay does
// not know. HIP's edges are all ordinary.
inline gpuError_t gpuGraphGetEdges(gpuGraph_t g, gpuGraphNode_t* from, gpuGraphNode_t* to,
                                   std::uint8_t* ports, std::size_t* count) {
#if defined(KFLEET_HIP)
  const gpuError_t e = hipGraphGetEdges(g, from, to, count);
  if (e == hipSuccess && from && ports)
    for (std::size_t i = 0; i < *count; ++i) ports[i] = 0;
  return e;
#else
  std::vector<cudaGraphEdgeData> data(from ? *count : 0);
  const gpuError_t e = cudaGraphGetEdges(g, from, to, from ? data.data() : nullptr, count);
  if (e == cudaSuccess && from && ports)
    for (std::size_t i = 0; i < *count; ++i) {
      const cudaGraphEdgeData& d = data[i];
      const bool ordinary = d.type == cudaGraphDependencyTypeDefault && !d.from_port && !d.to_port;
      const bool programmatic = d.type == cudaGraphDependencyTypeProgrammatic && !d.to_port &&
                                (d.from_port == cudaGraphKernelNodePortProgrammatic ||
                                 d.from_port == cudaGraphKernelNodePortLaunchCompletion);
      ports[i] = ordinary ? 0 : programmatic ? d.from_port : 255;
    }
  return e;
#endif
}

// A graph made executable (HIP's call also takes an error node and a log, unused here).
inline gpuError_t gpuGraphInstantiate(gpuGraphExec_t* exec, gpuGraph_t g) {
#if defined(KFLEET_HIP)
  return hipGraphInstantiate(exec, g, nullptr, nullptr, 0);
#else
  return cudaGraphInstantiate(exec, g, 0);
#endif
}

// The harness's empty kernel captured as a graph of one node (replay.cu): calibrate_cross_check's
// launch where the replay is a graph, and a --replay-bare-trigger.
gpuGraphExec_t make_noop_graph();

// Whether `v` is device memory (managed memory included): the addresses of a recording that
// lie outside the harness's buffers must not be (check_addresses).
inline bool is_device_address(std::uint64_t v) {
  if (v < 4096) return false;
#if defined(KFLEET_HIP)
  hipPointerAttribute_t a{};
  const hipError_t e = hipPointerGetAttributes(&a, reinterpret_cast<const void*>(v));
  (void)hipGetLastError();
  return e == hipSuccess && (a.memoryType == hipMemoryTypeDevice || a.isManaged);
#else
  cudaPointerAttributes a{};
  const cudaError_t e = cudaPointerGetAttributes(&a, reinterpret_cast<const void*>(v));
  cudaGetLastError();
  return e == cudaSuccess && (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged);
#endif
}

// The whole of a file the options name (replay.cu), or fail_setup saying it cannot be read.
std::string read_file(const std::string& path);

#if defined(KFLEET_HIP)
// The current device's target (gcnArchName): which code objects of a bundle are its.
inline std::string device_arch() {
  int dev = 0;
  KFLEET_GPU_CHECK(hipGetDevice(&dev));
  hipDeviceProp_t prop{};
  KFLEET_GPU_CHECK(hipGetDeviceProperties(&prop, dev));
  return prop.gcnArchName;
}

// Every kernel's explicit argument layout in the device code linked into this binary, for this
// device's target, by the kernel's mangled name; nullopt for a name two translation units give
// different layouts (record_hip.cu).
const std::map<std::string, std::optional<std::vector<ParamSlot>>>& own_kernel_args();

// The function of the job's device code that a recorded kernel node names (replay_hip.cu).
hipFunction_t find_kernel(const Options& o, const KernelNode& k);
#endif

}  // namespace kfleet::harness
