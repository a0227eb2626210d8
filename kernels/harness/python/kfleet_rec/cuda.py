"""The CUDA driver through ctypes: the fixed-address buffers, the captured graph read back, and
the check that a kernel's device code loads the way kfleet-measure will load it.

Only libcuda is used (no CUDA Python package): cuMemAddressReserve / cuMemCreate / cuMemMap at
the addresses the plan gives (which kfleet-measure chose with protect.cu's code), and for each
node of the graph torch captured: cuGraphNodeGetType, cuGraphKernelNodeGetParams_v2,
cuFuncGetName, cuFuncGetParamInfo, cuFuncGetAttribute, cuGraphKernelNodeGetAttribute,
cuGraphMemsetNodeGetParams, cuGraphMemcpyNodeGetParams, cuGraphGetEdges_v2. Needs a GPU: the
GPU proof (scripts/gpu-python-proof.sh) exercises it; CI tests what it produces through
recording.py.
"""
import ctypes as C
from .launch_list import edge_port

CU_GRAPH_NODE_TYPES = {
    0: "kernel", 1: "memcpy", 2: "memset", 3: "host", 4: "graph", 5: "empty", 6: "wait_event",
    7: "event_record", 8: "ext_semaphore", 9: "ext_semaphore", 10: "mem_alloc", 11: "mem_free",
    12: "batch_mem_op", 13: "conditional",
}
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
# What a kernel's code fixes (CUfunction_attribute): its threads, static shared, constant and
# local memory, registers, PTX and binary versions. Two codes of one name that agree on all of
# them may still differ; two that differ on any are different code.
CODE_ATTRIBUTES = (("max threads", 0), ("static shared bytes", 1), ("constant bytes", 2),
                   ("local bytes", 3), ("registers", 4), ("PTX version", 5), ("binary version", 6))
CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14
CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4
CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2
CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_UNIFIED = 2, 4
CU_MEM_ALLOCATION_TYPE_PINNED = 1
CU_MEM_LOCATION_TYPE_DEVICE = 1
CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3
CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0


class KernelNodeParams(C.Structure):  # CUDA_KERNEL_NODE_PARAMS_v2
    _fields_ = [("func", C.c_void_p), ("gridDimX", C.c_uint), ("gridDimY", C.c_uint),
                ("gridDimZ", C.c_uint), ("blockDimX", C.c_uint), ("blockDimY", C.c_uint),
                ("blockDimZ", C.c_uint), ("sharedMemBytes", C.c_uint),
                ("kernelParams", C.POINTER(C.c_void_p)), ("extra", C.POINTER(C.c_void_p)),
                ("kern", C.c_void_p), ("ctx", C.c_void_p)]


class GraphEdgeData(C.Structure):  # CUgraphEdgeData: a programmatic dependency's ports and type
    _fields_ = [("from_port", C.c_ubyte), ("to_port", C.c_ubyte), ("type", C.c_ubyte),
                ("reserved", C.c_ubyte * 5)]


class MemsetNodeParams(C.Structure):  # CUDA_MEMSET_NODE_PARAMS
    _fields_ = [("dst", C.c_uint64), ("pitch", C.c_size_t), ("value", C.c_uint),
                ("elementSize", C.c_uint), ("width", C.c_size_t), ("height", C.c_size_t)]


class Memcpy3D(C.Structure):  # CUDA_MEMCPY3D
    _fields_ = [("srcXInBytes", C.c_size_t), ("srcY", C.c_size_t), ("srcZ", C.c_size_t),
                ("srcLOD", C.c_size_t), ("srcMemoryType", C.c_int), ("srcHost", C.c_void_p),
                ("srcDevice", C.c_uint64), ("srcArray", C.c_void_p), ("reserved0", C.c_void_p),
                ("srcPitch", C.c_size_t), ("srcHeight", C.c_size_t),
                ("dstXInBytes", C.c_size_t), ("dstY", C.c_size_t), ("dstZ", C.c_size_t),
                ("dstLOD", C.c_size_t), ("dstMemoryType", C.c_int), ("dstHost", C.c_void_p),
                ("dstDevice", C.c_uint64), ("dstArray", C.c_void_p), ("reserved1", C.c_void_p),
                ("dstPitch", C.c_size_t), ("dstHeight", C.c_size_t),
                ("WidthInBytes", C.c_size_t), ("Height", C.c_size_t), ("Depth", C.c_size_t)]


class LaunchAttrValue(C.Union):  # CUlaunchAttributeValue (64 bytes)
    _fields_ = [("pad", C.c_char * 64), ("clusterDim", C.c_uint * 3)]


class MemLocation(C.Structure):
    _fields_ = [("type", C.c_int), ("id", C.c_int)]


class AllocFlags(C.Structure):
    _fields_ = [("compressionType", C.c_ubyte), ("gpuDirectRDMACapable", C.c_ubyte),
                ("usage", C.c_ushort), ("reserved", C.c_ubyte * 4)]


class MemAllocationProp(C.Structure):
    _fields_ = [("type", C.c_int), ("requestedHandleTypes", C.c_int), ("location", MemLocation),
                ("win32HandleMetaData", C.c_void_p), ("allocFlags", AllocFlags)]


class MemAccessDesc(C.Structure):
    _fields_ = [("location", MemLocation), ("flags", C.c_int)]


class DriverError(Exception):
    pass


class Driver:
    def __init__(self, path="libcuda.so.1"):
        self.lib = C.CDLL(path)
        self._libraries = {}  # image path -> CUlibrary (kept loaded: the pre-check's cache)

    def call(self, name, *args):
        fn = getattr(self.lib, name)
        r = fn(*args)
        if r != 0:
            msg = C.c_char_p()
            self.lib.cuGetErrorString(r, C.byref(msg))
            raise DriverError(f"{name}: {msg.value.decode() if msg.value else r}")

    def has(self, name):
        return hasattr(self.lib, name)

    # ---- the fixed-address buffers ----
    def granularity(self, device):
        prop = MemAllocationProp(type=CU_MEM_ALLOCATION_TYPE_PINNED,
                                 location=MemLocation(CU_MEM_LOCATION_TYPE_DEVICE, device))
        g = C.c_size_t()
        self.call("cuMemGetAllocationGranularity", C.byref(g), C.byref(prop),
                  CU_MEM_ALLOC_GRANULARITY_MINIMUM)
        return g.value

    def reserve(self, lo, hi):
        got = C.c_uint64()
        self.call("cuMemAddressReserve", C.byref(got), C.c_size_t(hi - lo), C.c_size_t(0),
                  C.c_uint64(lo), C.c_ulonglong(0))
        if got.value != lo:
            self.call("cuMemAddressFree", C.c_uint64(got.value), C.c_size_t(hi - lo))
            raise DriverError(f"could not reserve the replay arena at 0x{lo:x} (got 0x{got.value:x})")

    def map(self, va, nbytes, device):
        """Backs [va, va + nbytes rounded up to the granularity) with new device memory."""
        g = self.granularity(device)
        size = (nbytes + g - 1) // g * g
        prop = MemAllocationProp(type=CU_MEM_ALLOCATION_TYPE_PINNED,
                                 location=MemLocation(CU_MEM_LOCATION_TYPE_DEVICE, device))
        h = C.c_ulonglong()
        self.call("cuMemCreate", C.byref(h), C.c_size_t(size), C.byref(prop), C.c_ulonglong(0))
        self.call("cuMemMap", C.c_uint64(va), C.c_size_t(size), C.c_size_t(0), h, C.c_ulonglong(0))
        desc = MemAccessDesc(MemLocation(CU_MEM_LOCATION_TYPE_DEVICE, device),
                             CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
        self.call("cuMemSetAccess", C.c_uint64(va), C.c_size_t(size), C.byref(desc), C.c_size_t(1))
        self.call("cuMemsetD8_v2", C.c_uint64(va), C.c_ubyte(0), C.c_size_t(size))
        return (va, size, h)

    def unmap(self, m):
        va, size, h = m
        self.call("cuMemUnmap", C.c_uint64(va), C.c_size_t(size))
        self.call("cuMemRelease", h)

    def is_device_address(self, v):
        if v < 4096:
            return False
        t = C.c_uint()
        r = self.lib.cuPointerGetAttribute(C.byref(t), CU_POINTER_ATTRIBUTE_MEMORY_TYPE, C.c_uint64(v))
        return r == 0 and t.value in (CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_UNIFIED)

    def module_of(self, func):
        """The CUmodule a CUfunction belongs to (cuFuncGetModule), or None."""
        if not func or not self.has("cuFuncGetModule"):
            return None
        mod = C.c_void_p()
        if self.lib.cuFuncGetModule(C.byref(mod), C.c_void_p(func)) != 0:
            return None
        return mod.value

    # ---- device code, loaded as kfleet-measure loads it ----
    def image_defines(self, path, name):
        """True when the image file loads (cuLibraryLoadData, as cudaLibraryLoadData in
        kfleet-measure) and defines kernel `name` (cuLibraryGetKernel)."""
        lib = self._libraries.get(path)
        if lib is None:
            with open(path, "rb") as f:
                data = f.read()
            buf = C.create_string_buffer(data, len(data))
            handle = C.c_void_p()
            r = self.lib.cuLibraryLoadData(C.byref(handle), buf, None, None, 0, None, None, 0)
            lib = handle.value if r == 0 else 0
            self._libraries[path] = lib
        if not lib:
            return False
        k = C.c_void_p()
        return self.lib.cuLibraryGetKernel(C.byref(k), C.c_void_p(lib), name.encode()) == 0

    def code_differs(self, path, name, func):
        """How kernel `name` of the image file differs from the function `func` the launch ran,
        by what each one's code fixes (CODE_ATTRIBUTES): "" when they agree or cannot be asked."""
        if not func or not self.image_defines(path, name) or not self.has("cuKernelGetAttribute"):
            return ""
        k, dev = C.c_void_p(), C.c_int()
        if (self.lib.cuLibraryGetKernel(C.byref(k), C.c_void_p(self._libraries[path]), name.encode()) != 0 or
                self.lib.cuCtxGetDevice(C.byref(dev)) != 0):
            return ""
        differ = []
        for what, attr in CODE_ATTRIBUTES:
            a, b = C.c_int(), C.c_int()
            if (self.lib.cuKernelGetAttribute(C.byref(a), attr, k, dev) != 0 or
                    self.lib.cuFuncGetAttribute(C.byref(b), attr, C.c_void_p(func)) != 0):
                return ""
            if a.value != b.value:
                differ.append(f"{what} {a.value} in the image, {b.value} as launched")
        return ", ".join(differ)

    # ---- the captured graph ----
    def _kernel(self, node, resolve):
        p = KernelNodeParams()
        self.call("cuGraphKernelNodeGetParams_v2", C.c_void_p(node), C.byref(p))
        func = p.func
        if not func and p.kern:  # a node made from a CUkernel: its function in this context
            f = C.c_void_p()
            if self.lib.cuKernelGetFunction(C.byref(f), C.c_void_p(p.kern)) == 0:
                func = f.value
        out = {"type": "kernel", "grid": [p.gridDimX, p.gridDimY, p.gridDimZ],
               "block": [p.blockDimX, p.blockDimY, p.blockDimZ], "cluster": [0, 0, 0],
               "shared_bytes": p.sharedMemBytes, "max_dynamic_shared": -1,
               "non_portable_cluster": -1, "extra": bool(p.extra), "slots": [], "params": "",
               "function": None, "image": None, "image_note": ""}
        name = C.c_char_p()
        if not func or self.lib.cuFuncGetName(C.byref(name), C.c_void_p(func)) != 0 or not name.value:
            return out
        out["function"] = name.value.decode("ascii", "replace")
        v = LaunchAttrValue()
        if self.lib.cuGraphKernelNodeGetAttribute(C.c_void_p(node), CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
                                                  C.byref(v)) == 0:
            out["cluster"] = list(v.clusterDim)
        a = C.c_int()
        if self.lib.cuFuncGetAttribute(C.byref(a), CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                       C.c_void_p(func)) == 0:
            out["max_dynamic_shared"] = a.value
        if self.lib.cuFuncGetAttribute(C.byref(a), CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                                       C.c_void_p(func)) == 0:
            out["non_portable_cluster"] = a.value
        slots, end, i = [], 0, 0
        while True:
            off, size = C.c_size_t(), C.c_size_t()
            if self.lib.cuFuncGetParamInfo(C.c_void_p(func), C.c_size_t(i), C.byref(off), C.byref(size)) != 0:
                break
            slots.append([off.value, size.value])
            end = max(end, off.value + size.value)
            i += 1
        params = bytearray(end)
        if slots and not p.kernelParams:
            # Parameters given as one buffer through `extra` (CU_LAUNCH_PARAM_BUFFER_POINTER and
            # _SIZE, as cuBLAS launches some kernels): the same bytes at the offsets
            # cuFuncGetParamInfo gives, which replay passes slot by slot.
            buf = self._extra_buffer(p.extra)
            if buf is None or len(buf) < end:
                out["extra"] = True
            else:
                params[:] = buf[:end]
                out["extra"] = False
        elif slots:
            for j, (o, s) in enumerate(slots):
                params[o:o + s] = C.string_at(p.kernelParams[j], s)
        out["slots"], out["params"] = slots, bytes(params).hex()
        found = resolve(func, out["function"])
        out["image"], out["image_note"] = found[0], found[1]
        if len(found) > 2 and found[2]:
            out["origin"] = found[2]  # where the recorder saw its device code come from
        return out

    @staticmethod
    def _extra_buffer(extra):
        """The parameter buffer an `extra` array names, or None (another key, no size)."""
        if not extra:
            return None
        buf = size = None
        for i in range(0, 16, 2):
            key = extra[i] or 0
            if key == 0:  # CU_LAUNCH_PARAM_END
                break
            val = extra[i + 1]
            if key == 1 and val:  # CU_LAUNCH_PARAM_BUFFER_POINTER
                buf = val
            elif key == 2 and val:  # CU_LAUNCH_PARAM_BUFFER_SIZE (a size_t*)
                size = C.cast(val, C.POINTER(C.c_size_t)).contents.value
            else:
                return None
        if buf is None or size is None or size > 1 << 16:
            return None
        return C.string_at(buf, size)

    def read_graph(self, graph, resolve):
        """The capture description recording.py reads (its docstring). `resolve(func, name)`
        returns (image path or None, note)."""
        n = C.c_size_t(0)
        self.call("cuGraphGetNodes", C.c_void_p(graph), None, C.byref(n))
        nodes = (C.c_void_p * max(n.value, 1))()
        if n.value:
            self.call("cuGraphGetNodes", C.c_void_p(graph), nodes, C.byref(n))
        handles = [nodes[i] for i in range(n.value)]
        out = []
        for h in handles:
            t = C.c_int()
            self.call("cuGraphNodeGetType", C.c_void_p(h), C.byref(t))
            kind = CU_GRAPH_NODE_TYPES.get(t.value, "other")
            if kind == "kernel":
                out.append(self._kernel(h, resolve))
            elif kind == "memset":
                m = MemsetNodeParams()
                self.call("cuGraphMemsetNodeGetParams", C.c_void_p(h), C.byref(m))
                out.append({"type": "memset", "dst": m.dst, "pitch": m.pitch, "width": m.width,
                            "height": m.height, "value": m.value, "element_size": m.elementSize})
            elif kind == "memcpy":
                c = Memcpy3D()
                self.call("cuGraphMemcpyNodeGetParams", C.c_void_p(h), C.byref(c))
                # A copy to or from host memory stays "flat": its host address then fails the
                # address check, which names it (record.cu does the same).
                flat = not c.srcArray and not c.dstArray and c.Height <= 1 and c.Depth <= 1
                src = (c.srcDevice or (c.srcHost or 0)) + c.srcXInBytes
                dst = (c.dstDevice or (c.dstHost or 0)) + c.dstXInBytes
                out.append({"type": "memcpy", "dst": dst, "src": src, "bytes": c.WidthInBytes,
                            "flat": flat})
            else:
                out.append({"type": kind})
        e = C.c_size_t(0)
        edges = []
        data = None
        if self.has("cuGraphGetEdges_v2"):
            self.call("cuGraphGetEdges_v2", C.c_void_p(graph), None, None, None, C.byref(e))
            fr, to = (C.c_void_p * max(e.value, 1))(), (C.c_void_p * max(e.value, 1))()
            data = (GraphEdgeData * max(e.value, 1))()
            if e.value:
                self.call("cuGraphGetEdges_v2", C.c_void_p(graph), fr, to, data, C.byref(e))
        else:
            self.call("cuGraphGetEdges", C.c_void_p(graph), None, None, C.byref(e))
            fr, to = (C.c_void_p * max(e.value, 1))(), (C.c_void_p * max(e.value, 1))()
            if e.value:
                self.call("cuGraphGetEdges", C.c_void_p(graph), fr, to, C.byref(e))
        index = {h: i for i, h in enumerate(handles)}
        for i in range(e.value):
            if fr[i] not in index or to[i] not in index:
                edges.append([len(handles), len(handles)])  # refused by recording.py
            else:
                port = 0 if data is None else edge_port(data[i].type, data[i].from_port, data[i].to_port)
                edges.append([index[fr[i]], index[to[i]], port])
        return {"error": None, "nodes": out, "edges": edges}
