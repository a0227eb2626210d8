"""CUPTI's kernel activity as kfleet-measure collects it, from Python through ctypes: only the
concurrent-kernel, memcpy and memset kinds, each record's start and end as CUPTI gives them, no
profiler of torch's in between (inprocess_python_kernel.py --cupti-raw). It answers whether a
difference between replay and torch.profiler's in-process timing lies in what is timed or in
how the tracer was set up: torch.profiler (kineto) enables more kinds and options than the
measuring process does.

  t = RawCupti(lib)            # loads libcupti by path; hw_trace=True asks for CUPTI's
                               # hardware event tracing: after cuInit, before the CUDA context
  t.enable()                   # the activity kinds, as kfleet-measure's tracer enables them
                               # (extra_kinds=("runtime", ...): EXTRA_KINDS's as well)
  t0 = t.now(); ...; t1 = t.now()
  t.flush(); t.records         # [(start_ns, end_ns, kind)] of the device work so far
  t.configs                    # each kernel's config as its records say, counted (the fields
                               # and first-seen order of kfleet-measure --kernel-configs)
"""
import ctypes

KERNEL, MEMCPY, MEMSET = 10, 1, 2  # CUPTI_ACTIVITY_KIND_{CONCURRENT_KERNEL, MEMCPY, MEMSET}
# The further kinds torch.profiler's CUPTI (kineto) enables for a CUDA trace, by name
# (cupti_activity.h): asked with `extra_kinds`, they tell whether enabling them moves a kernel's
# reading. Their records are not kept.
EXTRA_KINDS = {"driver": 4, "runtime": 5, "overhead": 17, "cuda_event": 36,
               "synchronization": 38, "external_correlation": 39}
_BUF = 8 << 20


def kernel_config(addr):
    """A kernel record's config at the offsets kfleet-measure reads (activity.cu, KernelConfig:
    CUpti_ActivityKernel 5 to 10): what the driver ran the kernel with."""
    def u(off, t=ctypes.c_uint32):
        return t.from_address(addr + off).value
    name = ctypes.c_char_p.from_address(addr + 104).value
    return {"name": name.decode("utf-8", "replace") if name else "",
            "grid": [u(52 + 4 * i, ctypes.c_int32) for i in range(3)],
            "block": [u(64 + 4 * i, ctypes.c_int32) for i in range(3)],
            "regs": u(6, ctypes.c_uint16),
            "shared_static": u(76, ctypes.c_int32), "shared_dynamic": u(80, ctypes.c_int32),
            "shared_executed": u(140),
            "carveout_requested": u(138, ctypes.c_uint8) if u(137, ctypes.c_uint8) else -1,
            "local_per_thread": u(84)}


class RawCupti:
    def __init__(self, lib, hw_trace=False, extra_kinds=()):
        self.extra_kinds = [EXTRA_KINDS[k] for k in extra_kinds]  # KeyError names an unknown one
        self.lib = ctypes.CDLL(lib)
        self.records = []
        self.configs = []
        self._bufs = {}
        self.hw_trace = None
        if hw_trace:  # with the driver initialised and no CUDA context yet (the caller's duty)
            ctypes.CDLL("libcuda.so.1").cuInit(0)
            fn = getattr(self.lib, "cuptiActivityEnableHWTrace", None)
            self.hw_trace = "missing" if fn is None else int(fn(ctypes.c_uint8(1)))
        req_t = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
                                 ctypes.POINTER(ctypes.c_size_t))
        done_t = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p,
                                  ctypes.c_size_t, ctypes.c_size_t)

        def requested(buf, size, max_records):
            b = (ctypes.c_uint64 * (_BUF // 8))()  # 8-byte aligned, kept alive until completed
            self._bufs[ctypes.addressof(b)] = b
            buf[0] = ctypes.addressof(b)
            size[0] = _BUF
            max_records[0] = 0

        def completed(_ctx, _stream, buf, _size, valid):
            rec = ctypes.c_void_p()
            while self.lib.cuptiActivityGetNextRecord(ctypes.c_void_p(buf), ctypes.c_size_t(valid),
                                                      ctypes.byref(rec)) == 0:
                kind = ctypes.c_uint32.from_address(rec.value).value
                if kind in (KERNEL, MEMCPY, MEMSET):
                    start = ctypes.c_uint64.from_address(rec.value + 16).value
                    end = ctypes.c_uint64.from_address(rec.value + 24).value
                    self.records.append((start, end, kind))
                if kind == KERNEL:
                    self._count(kernel_config(rec.value))
            self._bufs.pop(buf, None)

        self._cbs = (req_t(requested), done_t(completed))  # referenced while CUPTI may call them
        r = self.lib.cuptiActivityRegisterCallbacks(*self._cbs)
        if r != 0:
            raise RuntimeError(f"cuptiActivityRegisterCallbacks failed ({r})")

    def _count(self, c):
        for k in self.configs:
            if all(k[f] == c[f] for f in c):
                k["count"] += 1
                return
        self.configs.append(dict(c, count=1))

    def enable(self):
        for kind in (KERNEL, MEMCPY, MEMSET, *self.extra_kinds):
            r = self.lib.cuptiActivityEnable(ctypes.c_int(kind))
            if r != 0:
                raise RuntimeError(f"cuptiActivityEnable({kind}) failed ({r})")

    def now(self):
        t = ctypes.c_uint64()
        self.lib.cuptiGetTimestamp(ctypes.byref(t))
        return t.value

    def flush(self):
        """Every completed record into self.records (start_ns, end_ns, kind)."""
        self.lib.cuptiActivityFlushAll(ctypes.c_uint32(1))
