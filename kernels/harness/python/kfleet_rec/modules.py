"""Every module of device code this process loads, as the driver loads it, with where it came
from: the device code of a library kernel (torch's own aten kernels in libtorch_cuda, cuBLAS and
cuBLASLt, cuDNN including the kernels it compiles at run time, inductor's Triton kernels) for the
measuring process to replay.

CUPTI's resource callback (CUPTI_CBID_RESOURCE_MODULE_LOADED) hands over each loaded module's
image, whatever loaded it: a library's fatbin (the cubin the driver picked for this GPU), a module
NVRTC compiled a moment ago, a Triton cubin. The recorder subscribes before torch touches the GPU,
so every module of the process is seen (with lazy loading a module loads at its first launch, so
the first, uncaptured call of the launch loads them all).

Where a module came from is read off the native call stack inside the callback (backtrace and
dladdr: the first shared object below the driver and CUPTI that is not the interpreter's), then
named by its file and the Python distribution that installed it. That is the recorder's report,
made in the job's process: the verdict shows it as such. What the measuring process runs is the
image's bytes, checked and timed under every rule whatever the label says.

The symbol table and origin logic are plain bytes and strings: tested without a GPU
(tests/test_modules.py); subscribing needs CUPTI and a GPU (scripts/gpu-python-proof.sh). So is
the part of the HIP design that is not hardware (PYTHON.md, "HIP"): a ROCm code object's URI
read into its bytes and its origin.
"""
import ctypes as C
import glob
import hashlib
import os
import struct
import sys
import threading

CUPTI_CB_DOMAIN_DRIVER_API = 1
CUPTI_CB_DOMAIN_RESOURCE = 3
CUPTI_CBID_RESOURCE_MODULE_LOADED = 6
CUPTI_API_ENTER, CUPTI_API_EXIT = 0, 1
# cupti_driver_cbid.h: cuModuleLoad, cuModuleLoadData, cuModuleLoadDataEx, cuModuleLoadFatBinary.
# Each one's params begin with `CUmodule *module`: at its exit, the handle of the module whose
# image the resource callback saw inside the call.
MODULE_LOAD_CBIDS = (18, 19, 20, 21)

# Shared objects on the stack that are plumbing, not the loader: the driver, CUPTI, the C
# library, and the interpreter's own (ctypes' callback trampoline runs through them).
# libcudart loads a library's registered fatbin for it (lazily: at the kernel's first launch, with
# that library's call below it on the stack), so it is plumbing too: torch's aten kernels were
# named "libcudart.so.13 (nvidia-cuda-runtime)" on an H200 before it was.
PLUMBING = ("libcuda.so", "libcupti.so", "libcudart.so", "libc.so", "libpthread.so", "libdl.so",
            "libffi.so", "_ctypes", "libpython", "ld-linux")


class _ResourceData(C.Structure):  # CUpti_ResourceData
    _fields_ = [("context", C.c_void_p), ("handle", C.c_void_p), ("descriptor", C.c_void_p)]


class _ModuleData(C.Structure):  # CUpti_ModuleResourceData
    _fields_ = [("module_id", C.c_uint32), ("cubin_size", C.c_size_t), ("cubin", C.c_void_p)]


class _CallbackData(C.Structure):  # CUpti_CallbackData
    _fields_ = [("site", C.c_int), ("function_name", C.c_char_p), ("params", C.c_void_p),
                ("return_value", C.c_void_p), ("symbol_name", C.c_char_p), ("context", C.c_void_p),
                ("context_uid", C.c_uint32), ("correlation_data", C.c_void_p),
                ("correlation_id", C.c_uint32)]


class _DlInfo(C.Structure):  # Dl_info
    _fields_ = [("fname", C.c_char_p), ("fbase", C.c_void_p), ("sname", C.c_char_p),
                ("saddr", C.c_void_p)]


def elf_functions(blob):
    """{name: bytes of its code} for the STT_FUNC symbols of a 64-bit little-endian ELF (a
    cubin), or None when `blob` is no such ELF. A kernel's code is its symbol's bytes in its
    section; two images whose kernel of one name has the same code run the same kernel."""
    if len(blob) < 64 or blob[:4] != b"\x7fELF" or blob[4] != 2 or blob[5] != 1:
        return None
    try:
        shoff, = struct.unpack_from("<Q", blob, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", blob, 0x3A)
        if shentsize != 64 or shoff + shnum * 64 > len(blob):
            return None
        secs = [struct.unpack_from("<IIQQQQIIQQ", blob, shoff + i * 64) for i in range(shnum)]
        out = {}
        for sec in secs:
            if sec[1] != 2:  # SHT_SYMTAB
                continue
            off, size, link = sec[4], sec[5], sec[6]
            if link >= shnum or off + size > len(blob):
                return None
            strtab = secs[link]
            for o in range(off, off + size - 23, 24):
                st_name, st_info, _other, st_shndx, st_value, st_size = struct.unpack_from(
                    "<IBBHQQ", blob, o)
                if st_info & 0xF != 2 or st_shndx >= shnum:  # STT_FUNC in a real section
                    continue
                start = strtab[4] + st_name
                end = blob.find(b"\0", start, strtab[4] + strtab[5])
                if end < 0:
                    continue
                name = blob[start:end].decode("ascii", "replace")
                code = secs[st_shndx]
                lo = code[4] + st_value
                body = blob[lo:lo + st_size] if code[1] != 8 else b""  # SHT_NOBITS has no bytes
                out[name] = body
        return out
    except struct.error:
        return None


def loader_of(stack):
    """The shared object that loaded a module: the first library on the (innermost-first) stack
    that is not plumbing, or "" when none is (the module came straight from Python through
    ctypes, which is the job's own doing)."""
    for path in stack:
        base = os.path.basename(path)
        if any(p in base for p in PLUMBING):
            continue
        if base.startswith("python") or path == sys.executable:
            continue
        return path
    return ""


def describe_origin(loader, job_roots, distribution_of=None):
    """{"origin": "job"|"library", "file", "package"} for a module loaded by `loader`."""
    if not loader:
        return {"origin": "job", "file": "", "package": "",
                "how": "loaded through the driver from Python (ctypes)"}
    real = os.path.realpath(loader)
    for root in job_roots:
        if root and real.startswith(os.path.realpath(root) + os.sep):
            return {"origin": "job", "file": os.path.basename(real), "package": "",
                    "how": "loaded by a library the job's run built (" + os.path.basename(real) + ")"}
    pkg = (distribution_of or distribution_of_file)(real)
    return {"origin": "library", "file": os.path.basename(real), "package": pkg, "how": ""}


def parse_code_object_uri(uri):
    """ROCm's code-object URI (what rocprofiler-sdk's code-object tracing reports for each loaded
    code object; PYTHON.md, "HIP") as {"kind": "file", "path", "offset", "size"} for one inside
    a file (a library's Tensile or MIOpen objects, a .hsaco), or {"kind": "memory", "pid",
    "offset", "size"} for one made in memory (hipRTC, a module loaded from bytes). The path is
    percent-decoded; a missing offset is 0 and a missing size is the rest of the file (None).
    A URI of another shape raises ValueError."""
    from urllib.parse import unquote
    for scheme, kind in (("file://", "file"), ("memory://", "memory")):
        if uri.startswith(scheme):
            break
    else:
        raise ValueError("not a code-object URI (file:// or memory://): " + uri[:80])
    rest = uri[len(scheme):]
    where, _, query = rest.partition("#")
    fields = {}
    for part in filter(None, query.split("&")):
        key, eq, value = part.partition("=")
        if not eq or key not in ("offset", "size") or key in fields:
            raise ValueError("code-object URI: unexpected '" + part[:40] + "' in " + uri[:80])
        try:
            fields[key] = int(value, 0)
        except ValueError:
            raise ValueError("code-object URI: " + key + " is not a number: " + value[:40]) from None
        if fields[key] < 0:
            raise ValueError("code-object URI: negative " + key)
    out = {"kind": kind, "offset": fields.get("offset", 0), "size": fields.get("size")}
    if kind == "file":
        path = unquote(where)
        if not path.startswith("/"):
            raise ValueError("code-object URI: the path is not absolute: " + path[:80])
        out["path"] = path
    else:
        if not where.isdigit() or "size" not in fields:
            raise ValueError("code-object URI: memory:// needs a process id and a size: " + uri[:80])
        out["pid"] = int(where)
    return out


def read_code_object(uri):
    """The bytes of a code object inside a file, as its URI places them (ValueError when the URI
    points outside the file); a memory:// object's bytes come with the tracing record itself."""
    u = parse_code_object_uri(uri)
    if u["kind"] != "file":
        raise ValueError("a memory:// code object is read from the tracing record, not a file")
    total = os.path.getsize(u["path"])
    size = total - u["offset"] if u["size"] is None else u["size"]
    if u["offset"] + size > total or size <= 0:
        raise ValueError(f"code-object URI: {size} bytes at offset {u['offset']} lie outside "
                         f"{os.path.basename(u['path'])} ({total} bytes)")
    with open(u["path"], "rb") as f:
        f.seek(u["offset"])
        return f.read(size)


def hip_code_object_origin(uri, loader, job_roots, distribution_of=None):
    """Where a HIP code object came from: one inside a file is that file's (a library's
    librocblas.so, its Tensile .co files, MIOpen's kernel database: named by its file and Python
    distribution, as describe_origin names a CUDA library) without a stack walk; one made in
    memory is its loader's, read off the stack as on CUDA (`loader`: MIOpen's hipRTC kernels are
    MIOpen's, a Triton kernel the job's)."""
    u = parse_code_object_uri(uri)
    if u["kind"] == "file":
        o = describe_origin(u["path"], job_roots, distribution_of)
        o["how"] = (o["how"] + "; " if o["how"] else "") + \
            f"code object at offset {u['offset']} of {os.path.basename(u['path'])}"
        return o
    return describe_origin(loader, job_roots, distribution_of)


_DIST_INDEX = None


def distribution_of_file(path):
    """'name version' of the installed Python distribution that owns `path`, or ''."""
    global _DIST_INDEX
    try:
        import importlib.metadata as md
    except ImportError:
        return ""
    if _DIST_INDEX is None:
        _DIST_INDEX = {}
        for dist in md.distributions():
            try:
                files = dist.files or []
                label = f"{dist.metadata['Name']} {dist.version}"
            except Exception:  # noqa: BLE001 (a broken dist-info is no reason to fail)
                continue
            for f in files:
                if str(f).endswith(".so") or ".so." in str(f):
                    try:
                        _DIST_INDEX[os.path.realpath(str(f.locate()))] = label
                    except Exception:  # noqa: BLE001
                        pass
    return _DIST_INDEX.get(os.path.realpath(path), "")


def find_cupti():
    """Candidate paths of libcupti: $KFLEET_CUPTI_LIB, the Python install's nvidia packages (torch
    wheels carry it), then CUDA's own folders."""
    out = []
    if os.environ.get("KFLEET_CUPTI_LIB"):
        out.append(os.environ["KFLEET_CUPTI_LIB"])
    for p in sys.path:
        if p and os.path.isdir(os.path.join(p, "nvidia")):
            out += sorted(glob.glob(os.path.join(p, "nvidia", "**", "libcupti.so*"), recursive=True),
                          reverse=True)
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            out += sorted(glob.glob(os.path.join(home, "extras", "CUPTI", "lib64", "libcupti.so*")) +
                          glob.glob(os.path.join(home, "lib64", "libcupti.so*")), reverse=True)
    out.append("libcupti.so")
    return out


class ModuleLog:
    """Subscribes to CUPTI's module-loaded callback; keeps each module's image and loader."""

    def __init__(self):
        self.modules = []          # {"sha", "blob", "stack", "functions", "handle"}
        self.error = ""
        self._lock = threading.Lock()
        self._thread = threading.local()  # the module loads under way on this thread
        self._cupti = None
        self._libc = C.CDLL(None)
        self._libc.backtrace.restype = C.c_int
        self._cb = C.CFUNCTYPE(None, C.c_void_p, C.c_int, C.c_uint, C.c_void_p)(self._on_callback)

    def subscribe(self):
        """True when CUPTI took the subscription; else self.error says why."""
        why = []
        for path in find_cupti():
            try:
                lib = C.CDLL(path)
            except OSError as e:
                why.append(f"{path}: {e}")
                continue
            sub = C.c_void_p()
            r = lib.cuptiSubscribe(C.byref(sub), self._cb, None)
            if r != 0:
                why.append(f"{path}: cuptiSubscribe returned {r} (another subscriber, such as a "
                           "profiler, already holds CUPTI's callbacks?)")
                continue
            r = lib.cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE,
                                        CUPTI_CBID_RESOURCE_MODULE_LOADED)
            if r != 0:
                why.append(f"{path}: cuptiEnableCallback returned {r}")
                continue
            # Which handle each image became (not fatal without: names then decide).
            for cbid in MODULE_LOAD_CBIDS:
                lib.cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, cbid)
            self._cupti = lib
            return True
        self.error = "; ".join(why[-3:]) or "no libcupti found"
        return False

    def _stack(self):
        frames = (C.c_void_p * 128)()
        n = self._libc.backtrace(frames, 128)
        out = []
        for i in range(n):
            info = _DlInfo()
            if self._libc.dladdr(C.c_void_p(frames[i]), C.byref(info)) and info.fname:
                f = info.fname.decode("utf-8", "replace")
                if not out or out[-1] != f:
                    out.append(f)
        return out

    def _on_callback(self, _userdata, domain, cbid, data):
        try:
            if domain == CUPTI_CB_DOMAIN_DRIVER_API and cbid in MODULE_LOAD_CBIDS and data:
                self._on_module_load_call(C.cast(data, C.POINTER(_CallbackData)).contents)
                return
            if domain != CUPTI_CB_DOMAIN_RESOURCE or cbid != CUPTI_CBID_RESOURCE_MODULE_LOADED or not data:
                return
            rd = C.cast(data, C.POINTER(_ResourceData)).contents
            if not rd.descriptor:
                return
            md = C.cast(rd.descriptor, C.POINTER(_ModuleData)).contents
            if not md.cubin or not md.cubin_size:
                return
            blob = C.string_at(md.cubin, md.cubin_size)
            stack = self._stack()
            with self._lock:
                self.modules.append({"sha": hashlib.sha256(blob).hexdigest(), "blob": blob,
                                     "stack": stack, "functions": None, "handle": None})
                index = len(self.modules) - 1
            pending = getattr(self._thread, "pending", None)
            if pending is not None:
                pending.append(index)
        except Exception:  # noqa: BLE001 (never raise into the driver)
            pass

    def _on_module_load_call(self, cb):
        """cuModuleLoad*: at entry, start collecting the images loaded inside the call; at exit,
        give them the module handle the call returned."""
        if cb.site == CUPTI_API_ENTER:
            self._thread.pending = []
            return
        pending, self._thread.pending = getattr(self._thread, "pending", None), None
        if not pending or not cb.params:
            return
        module_ptr = C.cast(cb.params, C.POINTER(C.c_void_p)).contents.value  # CUmodule *module
        if not module_ptr:
            return
        handle = C.cast(module_ptr, C.POINTER(C.c_void_p)).contents.value
        if handle:
            with self._lock:
                for i in pending:
                    self.modules[i]["handle"] = handle

    def of_handle(self, handle):
        """The module loaded as CUmodule `handle` (cuModuleLoad*), or None."""
        with self._lock:
            for m in reversed(self.modules):
                if handle and m.get("handle") == handle:
                    return m
        return None

    def defining(self, name):
        """The modules whose image defines function `name`, one per distinct code of it."""
        found, codes = [], set()
        with self._lock:
            mods = list(self.modules)
        for m in mods:
            if m["functions"] is None:
                m["functions"] = elf_functions(m["blob"]) or {}
            code = m["functions"].get(name)
            if code is None:
                continue
            key = hashlib.sha256(code).hexdigest()
            if key not in codes:
                codes.add(key)
                found.append(m)
        return found
