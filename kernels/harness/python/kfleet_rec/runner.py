"""The recorder's GPU half: the job's Python imported, its launch function called on torch
views of the fixed-address buffers, outside capture once (compilation, autotuning) and then
twice under global stream capture per distinct args; each captured graph read back through the
driver (cuda.py) and handed to recording.py. torch and triton are imported here only.
"""
import ctypes as C
import glob
import hashlib
import importlib.util
import json
import os
import sys
import traceback

from . import fatbin, inductor_configs, modules as modlog, scratch as scratchmod
from .cuda import Driver, DriverError
from . import recording
from .recording import Refusal

TORCH_DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp8_e4m3": "float8_e4m3fn",
                "fp32": "float32", "u8": "uint8", "int32": "int32", "int64": "int64"}


class SetupError(Exception):
    """The fleet's side is missing something (torch, a driver entry point): exit 3."""


class Args:
    """The launch's args: tensors (views of the harness's buffers) and values, as attributes."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def __repr__(self):
        return "kfleet args(" + ", ".join(sorted(self.__dict__)) + ")"


def _cai_tensor(torch, va, nbytes, device):
    class _Mem:
        __cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (va, False),
                                    "version": 3, "strides": None}
    return torch.as_tensor(_Mem(), device=f"cuda:{device}")


def make_args(torch, fields, device):
    """fields (the plan's, kernels/harness/cpu/python_plan.cpp): tensors by name with address,
    bytes, dtype and shape; values by name."""
    kw = dict(fields.get("values", {}))
    for t in fields.get("tensors", []):
        if not t.get("va"):
            kw[t["name"]] = None  # an absent optional tensor (scaled_mm without bias)
            continue
        raw = _cai_tensor(torch, int(t["va"]), int(t["bytes"]), device)
        dt = getattr(torch, TORCH_DTYPES[t["dtype"]])
        kw[t["name"]] = raw.view(dt).view(tuple(t["shape"]))
    return Args(**kw)


def load_job(source, entry):
    """Imports the job's source as module `kfleet_job` and returns its launch function."""
    here = os.path.dirname(os.path.abspath(source))
    sys.path.insert(0, here)
    spec = importlib.util.spec_from_file_location("kfleet_job", source)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["kfleet_job"] = mod
    spec.loader.exec_module(mod)  # the job's top level: imports, load_inline, @triton.jit
    fn = getattr(mod, entry, None)
    if not callable(fn):
        raise Refusal("setup", f"{os.path.basename(source)} defines no function {entry}(args, "
                               "stream) (kernel.entry renames it; PYTHON.md)")
    return fn


class Images:
    """Where each captured kernel's device code is: Triton's cubins by function handle (seen as
    Triton loads them), an extension's fatbins (split out of its .so) by name, each checked by
    loading it as kfleet-measure will."""

    def __init__(self, driver, staging, ext_dir, triton_cache, roots=(), modules=None):
        self.driver, self.staging = driver, staging
        self.ext_dir, self.triton_cache = ext_dir, triton_cache
        self.roots = [ext_dir] + list(roots)  # folders whose mapped .so files are the job's
        self.triton = {}      # CUfunction handle -> (name, cubin bytes)
        self.modules = modules  # modules.ModuleLog: every module the process loaded (CUPTI)
        self._ext_files = None
        self._run_cubins = {}  # path -> sha256 of each cubin seen under the run's folders
        os.makedirs(staging, exist_ok=True)

    def _stage(self, data, ext):
        path = os.path.join(self.staging, hashlib.sha256(data).hexdigest()[:16] + ext)
        if not os.path.exists(path):
            with open(path + ".tmp", "wb") as f:
                f.write(data)
            os.replace(path + ".tmp", path)
        return path

    def install_triton_hook(self):
        try:
            from triton.compiler import compiler as tc
        except Exception:
            return False
        ck = getattr(tc, "CompiledKernel", None)
        orig = getattr(ck, "_init_handles", None)
        if orig is None:
            return False
        seen = self.triton

        def _init_handles(self_):
            orig(self_)
            fn = getattr(self_, "function", None)
            asm = getattr(self_, "asm", {}) or {}
            cubin = asm.get("cubin") if hasattr(asm, "get") else None
            if cubin is None:
                cubin = getattr(self_, "kernel", None)
            if fn and isinstance(cubin, (bytes, bytearray)):
                seen[int(fn)] = (self_.name, bytes(cubin))
        ck._init_handles = _init_handles
        return True

    def install_inductor_hook(self):
        """torch.compile's Triton kernels: inductor loads many candidates of one kernel name while
        it autotunes, through its own launcher (StaticallyLaunchedCudaKernel, torch 2.8 and
        later) rather than Triton's, so the cubin of the one a node launches is caught here by
        its function handle, as Triton's are by install_triton_hook."""
        try:
            from torch._inductor.runtime import static_cuda_launcher as scl
        except Exception:  # noqa: BLE001 (an older torch, or none: Triton's hook serves)
            return False
        cls = getattr(scl, "StaticallyLaunchedCudaKernel", None)
        orig = getattr(cls, "load_kernel", None)
        if orig is None:
            return False
        seen = self.triton

        def load_kernel(self_, *a, **kw):
            data = None
            raw = getattr(self_, "cubin_raw", None) or getattr(self_, "cubin", None)
            path = getattr(self_, "cubin_path", None)
            if isinstance(raw, (bytes, bytearray)):
                data = bytes(raw)
            elif path:
                try:
                    with open(path, "rb") as f:
                        data = f.read()
                except OSError:
                    data = None
            r = orig(self_, *a, **kw)
            fn = getattr(self_, "function", None)
            if fn and data:
                seen[int(fn)] = (getattr(self_, "name", ""), data)
            return r
        cls.load_kernel = load_kernel
        return True

    def _extension_files(self):
        """The fatbins of the extensions this run built and loaded: every .so under
        TORCH_EXTENSIONS_DIR (where load_inline and load build by default; torch does not put
        the module in sys.modules) and every .so this process mapped from the run's folders
        (/proc/self/maps), split into their fatbins and staged."""
        if self._ext_files is None:
            roots = [os.path.abspath(r) + os.sep for r in self.roots if r]
            sos = set()
            if self.ext_dir:
                sos.update(glob.glob(os.path.join(self.ext_dir, "**", "*.so"), recursive=True))
            try:
                with open("/proc/self/maps", encoding="ascii", errors="replace") as f:
                    for line in f:
                        path = line.rstrip("\n").split(None, 5)[-1] if line.count(" ") >= 5 else ""
                        if path.endswith(".so") and any(path.startswith(r) for r in roots):
                            sos.add(path)
            except OSError:
                pass
            staged = []
            for so in sorted(sos):
                try:
                    with open(so, "rb") as fh:
                        section = fatbin.nv_fatbin_section(fh.read())
                except OSError:
                    continue
                for fb in fatbin.split_fatbins(section or b""):
                    staged.append(self._stage(fb, ".fatbin"))
            self._ext_files = staged
        return self._ext_files

    def compiled_in_run(self, blob):
        """True when `blob` is the image of a cubin file under the run's folders (Triton's and
        inductor's caches are there): device code the job's run compiled, whatever library
        loaded it (inductor loads its kernels through libtorch_python). Looked at again on each
        call: a later recording may compile more. Only a cubin (ELF) can match: a library's
        fatbin (cuBLAS, aten) is answered without walking the folders."""
        if blob[:4] != b"\x7fELF":
            return False
        want = hashlib.sha256(blob).hexdigest()
        staging = os.path.abspath(self.staging) + os.sep  # the recorder's own copies, not the run's
        for root in [r for r in self.roots + [self.triton_cache] if r]:
            for p in glob.glob(os.path.join(root, "**", "*.cubin"), recursive=True):
                if os.path.abspath(p).startswith(staging):
                    continue
                if p not in self._run_cubins:
                    try:
                        with open(p, "rb") as f:
                            self._run_cubins[p] = hashlib.sha256(f.read()).hexdigest()
                    except OSError:
                        continue
                if self._run_cubins[p] == want:
                    return True
        return False

    def _differs(self, path, name, func):
        """How the image's kernel differs from the code the launch ran ("" when it does not, or
        where the driver cannot say): replay must run the code the job's launch ran, not another
        of the same name (an autotuner loads many)."""
        ask = getattr(self.driver, "code_differs", None)
        return ask(path, name, func) if ask else ""

    def resolve(self, func, name):
        """(image path or None, note, origin) for the kernel `name` of CUfunction `func`."""
        hit = self.triton.get(int(func))
        if hit:
            path = self._stage(hit[1], ".cubin")
            if not self.driver.image_defines(path, name):
                return None, "Triton's cubin for it does not load the way kfleet-measure loads it", None
            differs = self._differs(path, name, func)
            if differs:
                return None, f"Triton's cubin for it is not the code the launch ran ({differs})", None
            return path, "", {"origin": "job", "how": "Triton cubin", "file": "", "package": ""}
        found = [p for p in self._extension_files() if self.driver.image_defines(p, name)]
        if len(found) == 1:
            differs = self._differs(found[0], name, func)
            if differs:
                return None, f"the job's extension fatbin that defines it is not the code the launch ran ({differs})", None
            return found[0], "", {"origin": "job", "how": "extension fatbin", "file": "", "package": ""}
        if len(found) > 1:
            return None, f"{len(found)} of the job's extension fatbins define it", None
        # Any other module the process loaded: a library's (aten, cuBLAS, cuDNN, even one it
        # compiled at run time), inductor's Triton kernels, a cubin the job loaded itself.
        if self.modules is not None:
            mods = self.modules.defining(name)
            if len(mods) > 1:
                # Several modules have a kernel of this name (an autotuner's candidates): the
                # one this function came from, by the module handle its load returned.
                own = self.modules.of_handle(self.driver.module_of(func))
                if own is not None and name in (own["functions"] or {}):
                    mods = [own]
            if len(mods) > 1:
                return None, (f"{len(mods)} loaded modules define a kernel of this name with "
                              "different code"), None
            if len(mods) == 1:
                m = mods[0]
                path = self._stage(m["blob"], ".cubin" if m["blob"][:4] == b"\x7fELF" else ".fatbin")
                if not self.driver.image_defines(path, name):
                    return None, "its module's image does not load the way kfleet-measure loads it", None
                differs = self._differs(path, name, func)
                if differs:
                    # Not the code that ran: the one other module of this name whose code it is
                    # (an autotuner's candidates), or a refusal that says how they differ.
                    ran = [(x, p) for x in self.modules.defining(name) if x is not m
                           for p in [self._stage(x["blob"], ".cubin" if x["blob"][:4] == b"\x7fELF" else ".fatbin")]
                           if self.driver.image_defines(p, name) and not self._differs(p, name, func)]
                    if len(ran) != 1:
                        return None, (f"the module that defines it is not the code the launch ran "
                                      f"({differs}), and {len(ran)} other loaded modules are"), None
                    m, path = ran[0]
                origin = modlog.describe_origin(modlog.loader_of(m["stack"]), self.roots)
                if origin.get("origin") == "library" and self.compiled_in_run(m["blob"]):
                    origin = {"origin": "job", "file": "", "package": "",
                              "how": "compiled in the run, loaded by " + (origin.get("file") or "a library")}
                return path, "", origin
        # A Triton kernel loaded before the hook (from a cache it did not pass through): its
        # cubin in the run's Triton cache, when exactly one there defines the name.
        cubins = sorted(glob.glob(os.path.join(self.triton_cache or "/nonexistent", "**", "*.cubin"),
                                  recursive=True))
        found = [p for p in cubins if self.driver.image_defines(p, name)]
        differs = self._differs(found[0], name, func) if len(found) == 1 else ""
        if differs:
            return None, f"the Triton cache's cubin that defines it is not the code the launch ran ({differs})", None
        if len(found) == 1:
            with open(found[0], "rb") as f:
                return self._stage(f.read(), ".cubin"), "", {"origin": "job", "how": "Triton cubin",
                                                              "file": "", "package": ""}
        why = "no module the process loaded defines it"
        if self.modules is None or self.modules.error:
            why = ("the recorder could not watch module loads (CUPTI: " +
                   (self.modules.error if self.modules is not None else "not subscribed") + ")")
        return None, why, None


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _status(v):
    return 0 if v is None else v


def capture(torch, driver, images, fn, args, stream, scratch=None):
    """One call of the launch under global capture -> the capture description. With `scratch`,
    what torch allocates under capture comes from the harness's python scratch buffer, each
    capture from the same start in a pool of its own, so that two captures of the same launch
    allocate the same addresses."""
    if scratch is None:
        return _capture(torch, driver, images, fn, args, stream, {})
    with scratch.capture_pool() as kwargs:
        return _capture(torch, driver, images, fn, args, stream, kwargs)


def _capture(torch, driver, images, fn, args, stream, pool_kwargs):
    raised = None
    status = None
    try:
        g = torch.cuda.CUDAGraph(keep_graph=True)
    except TypeError:
        g = None
    if g is not None:
        try:
            with torch.cuda.graph(g, stream=stream, capture_error_mode="global", **pool_kwargs):
                try:
                    status = fn(args, stream)
                except Exception as e:  # noqa: BLE001 (the job's exception, named)
                    raised = e
        except Exception as e:  # noqa: BLE001 (capture_end: the capture was invalidated)
            if raised is None:
                return {"error": said(e)}
        if raised is not None:
            return {"error": said(raised), "raised": True}
        handle = g.raw_cuda_graph()
        cap = driver.read_graph(handle, images.resolve)
        g.reset()
    else:  # a torch without keep_graph: capture with the driver directly on torch's stream
        s = C.c_void_p(stream.cuda_stream)
        driver.call("cuStreamBeginCapture_v2", s, 0)  # CU_STREAM_CAPTURE_MODE_GLOBAL
        try:
            with torch.cuda.stream(stream):
                status = fn(args, stream)
        except Exception as e:  # noqa: BLE001
            raised = e
        graph = C.c_void_p()
        r = driver.lib.cuStreamEndCapture(s, C.byref(graph))
        if raised is not None:
            return {"error": said(raised), "raised": True}
        if r != 0 or not graph.value:
            return {"error": f"cuStreamEndCapture returned {r}"}
        cap = driver.read_graph(graph.value, images.resolve)
        driver.call("cuGraphDestroy", graph)
    cap["status"] = _status(status)
    return cap


def record(opts, plan):
    """Per recording of the plan, the two captures (recording.py turns them into lists)."""
    # Every module the process loads, from before torch touches the GPU: a library kernel's
    # device code comes from here (modules.py). Without CUPTI, Triton and extension kernels are
    # still found; a library kernel is then refused, naming why.
    mods = modlog.ModuleLog()
    mods.subscribe()
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        raise SetupError(f"the agent's Python cannot import torch ({e})")
    if opts.language == "triton":
        try:
            import triton  # noqa: F401
        except Exception as e:  # noqa: BLE001
            raise SetupError(f"the agent's Python cannot import triton ({e})")
    if not torch.cuda.is_available():
        raise SetupError("torch sees no CUDA device")
    dev = opts.device
    torch.cuda.set_device(dev)
    torch.zeros(1, device=f"cuda:{dev}")  # the primary context, current on this thread
    try:
        driver = Driver()
    except OSError as e:
        raise SetupError(f"cannot load libcuda.so.1 ({e})")
    for needed in ("cuFuncGetParamInfo", "cuFuncGetName", "cuGraphKernelNodeGetParams_v2",
                   "cuLibraryLoadData", "cuMemAddressReserve"):
        if not driver.has(needed):
            raise SetupError(f"the CUDA driver has no {needed} (a driver for CUDA 12.4 or later is needed)")
    lo, hi = plan["arena"]
    try:
        driver.reserve(lo, hi)
    except DriverError as e:
        raise SetupError(str(e))
    images = Images(driver, os.path.join(opts.cache_dir, "device-code-staging"),
                    os.environ.get("TORCH_EXTENSIONS_DIR"), os.environ.get("TRITON_CACHE_DIR"),
                    roots=[opts.cache_dir, os.path.dirname(os.path.abspath(opts.source))],
                    modules=mods)
    images.install_triton_hook()
    images.install_inductor_hook()
    # torch's allocations during the launch: from the harness's python scratch buffer, the same
    # addresses in every recording (scratch.py); a plan without one leaves torch's own allocator.
    scratch = None
    spans = {scratchmod.scratch_buffer(r["buffers"]) for r in plan["recordings"]}
    if len(spans) > 1:
        raise SetupError("the plan's recordings put the python scratch buffer at different addresses")
    span = next(iter(spans)) if spans else None
    if span:
        try:
            so = scratchmod.build_library(os.path.join(opts.cache_dir, "scratch-allocator"))
            scratch = scratchmod.Scratch(torch, so, span[0], span[1])
        except (scratchmod.ScratchError, OSError, RuntimeError, AttributeError) as e:
            raise SetupError(f"the recorder's allocator for torch: {e}")
    # kfleet (what a kernel imports, PYTHON.md) is the harness's, beside this recorder: imported
    # before the job's code, so a host whose harness lost it (a checkout removed mid-run, as on
    # the H200 on 2026-11-28: "No module named 'kfleet'" rejected a good kernel) is the fleet's
    # setup error, and a kfleet.py in the job's own folder cannot stand in for it.
    try:
        import kfleet  # noqa: F401
    except Exception as e:  # noqa: BLE001
        raise SetupError(f"the recorder cannot import its kfleet module ({type(e).__name__}: {e})")
    # From here on the job's code runs in this process. The agent takes a setup error (exit 3)
    # as the fleet's only when it came before this line (agent/backends/common/python_stage.hpp).
    print(json.dumps({"type": "job_code", "source": os.path.basename(opts.source)},
                     separators=(",", ":")), flush=True)
    fn = load_job(opts.source, opts.entry)
    if getattr(opts, "torch_compile", None):
        # kfleet's torch.compile reference (PYTHON.md): the entry compiled by inductor; its first
        # call below, outside capture, compiles and autotunes.
        fn = torch.compile(fn, mode=opts.torch_compile)
    captures = []
    for rec in plan["recordings"]:
        maps = [driver.map(b.va, b.nbytes, dev) for b in rec["buffers"]]
        args = make_args(torch, rec["fields"], dev)
        stream = torch.cuda.Stream(device=dev)
        # Outside capture once: Triton's JIT, load_inline, an autotuner's benchmarks happen here,
        # on the recorder's buffers; none of it is recorded or timed.
        try:
            with torch.cuda.stream(stream), (scratch.active() if scratch else _nothing()):
                fn(args, stream)
            driver.call("cuCtxSynchronize")  # not torch.cuda.synchronize: the job may patch it
        except Exception as e:  # noqa: BLE001
            traceback.print_exc(file=sys.stderr)  # whole, in the run's log; the refusal quotes it
            short = scratch.exhausted() if scratch else ""
            raise Refusal(rec["what"], "the launch function failed outside capture (its first "
                          f"call, which compiles): {said(e)}" +
                          (f" ({short})" if short else ""))
        # Which config inductor tuned each of its kernels to (a diagnostic: bench/gpu's in-process
        # yardstick pins its own process to them, inductor_configs.py); no verdict reads it.
        if "torch._inductor.runtime.triton_heuristics" in sys.modules:
            try:  # never at the recording's cost
                configs = {"kernels": inductor_configs.tuned()}
            except Exception as e:  # noqa: BLE001
                configs = {"error": f"{type(e).__name__}: {e}"}
            if configs.get("kernels") != {}:
                print(json.dumps(dict({"type": "inductor_configs", "what": rec["what"]}, **configs),
                                 separators=(",", ":")), flush=True)
        if scratch:
            scratch.mark()  # what the uncaptured call keeps (cuBLAS's workspace) stays below
        pair = []
        for _ in range(2):
            cap = capture(torch, driver, images, fn, args, stream, scratch)
            if cap.get("error"):
                # Refused here, before the launch is called again: a capture that failed leaves
                # torch's allocator believing it still runs (capture_end never ran its
                # bookkeeping), and the next allocation, sync or pool teardown in this process
                # aborts it (captures_underway.empty() INTERNAL ASSERT), which would hide why.
                # torch's "CUDA out of memory ... 138 GiB free" under capture is the scratch
                # buffer running out: the refusal says so, with the sizes.
                if scratch and scratch.exhausted():
                    raise Refusal(rec["what"], f"{scratch.exhausted()}; under capture: {cap['error'][:300]}")
                recording.capture_to_list(rec, cap)
            pair.append(cap)
        if scratch and scratch.exhausted():
            raise Refusal(rec["what"], scratch.exhausted())
        captures.append(pair)
        driver.call("cuCtxSynchronize")
        del args
        for m in maps:
            driver.unmap(m)
    return captures, driver.is_device_address


def said(e, limit=700):
    """An exception as a refusal quotes it: its type and text, whole when short. A long one keeps
    its first line and its end: the end of a traceback carried in the text (inductor's compile
    worker sends its subprocess's whole traceback) is the line that names what went wrong."""
    text = str(e).strip()
    if len(text) > limit:
        head = text.splitlines()[0][:160]
        text = head + " [...] " + text[-(limit - len(head) - 7):]
    return f"{type(e).__name__}: {text}"


def format_exception():
    return traceback.format_exc(limit=8)
