"""The recorder's view of loaded modules (kfleet_rec/modules.py) and torch's scratch allocator
(kfleet_rec/scratch.py), without a GPU: a cubin's functions read from its symbol table, the
loader of a module told from a call stack, duplicate kernels told apart by their code, and the
allocator's C source compiled with the host's compiler and driven through ctypes."""
import ctypes as C
import os
import struct
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from kfleet_rec import modules, scratch  # noqa: E402


def make_elf(functions, machine=190):
    """A minimal 64-bit ELF (EM_CUDA by default) whose .symtab names each function in
    `functions` ({name: code bytes}), each in its own .text.<name> section."""
    names = list(functions)
    shstr = b"\0" + b"".join(b".text." + n.encode() + b"\0" for n in names) + b".symtab\0.strtab\0.shstrtab\0"
    strtab = b"\0" + b"".join(n.encode() + b"\0" for n in names)
    body = b""
    text_offsets = []
    base = 64
    for n in names:
        text_offsets.append(base + len(body))
        body += functions[n]
        body += b"\0" * (-len(body) % 8)
    symtab_off = base + len(body)
    symtab = b"\0" * 24
    spos = 1
    for i, n in enumerate(names):
        symtab += struct.pack("<IBBHQQ", spos, 0x12, 0x10, 1 + i, 0, len(functions[n]))
        spos += len(n) + 1
    strtab_off = symtab_off + len(symtab)
    shstr_off = strtab_off + len(strtab)
    shoff = shstr_off + len(shstr)
    shoff += -shoff % 8
    sections = [struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)]
    npos = 1
    for i, n in enumerate(names):
        sections.append(struct.pack("<IIQQQQIIQQ", npos, 1, 6, 0, text_offsets[i], len(functions[n]), 0, 0, 8, 0))
        npos += len(".text.") + len(n) + 1
    symtab_index = len(sections)
    sections.append(struct.pack("<IIQQQQIIQQ", npos, 2, 0, 0, symtab_off, len(symtab),
                                symtab_index + 1, 1, 8, 24))
    npos += len(".symtab") + 1
    sections.append(struct.pack("<IIQQQQIIQQ", npos, 3, 0, 0, strtab_off, len(strtab), 0, 0, 1, 0))
    npos += len(".strtab") + 1
    sections.append(struct.pack("<IIQQQQIIQQ", npos, 3, 0, 0, shstr_off, len(shstr), 0, 0, 1, 0))
    header = (b"\x7fELF" + bytes([2, 1, 1]) + b"\0" * 9 +
              struct.pack("<HHIQQQIHHHHHH", 2, machine, 1, 0, 0, shoff, 0, 64, 0, 0, 64,
                          len(sections), len(sections) - 1))
    blob = header + body + symtab + strtab + shstr
    blob += b"\0" * (shoff - len(blob))
    return blob + b"".join(sections)


class ElfFunctions(unittest.TestCase):
    def test_functions_and_their_code(self):
        blob = make_elf({"_attn_fwd": b"\x01" * 32, "cutlass_gemm": b"\x02" * 16})
        got = modules.elf_functions(blob)
        self.assertEqual(set(got), {"_attn_fwd", "cutlass_gemm"})
        self.assertEqual(got["_attn_fwd"], b"\x01" * 32)
        self.assertEqual(got["cutlass_gemm"], b"\x02" * 16)

    def test_not_an_elf_or_truncated(self):
        self.assertIsNone(modules.elf_functions(b"\x50\xed\x55\xba" + b"\0" * 100))  # a fatbin
        blob = make_elf({"k": b"\x01" * 8})
        self.assertIsNone(modules.elf_functions(blob[:80]))
        self.assertIsNone(modules.elf_functions(b""))


class Origins(unittest.TestCase):
    STACK = ["/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/python3.12/lib-dynload/_ctypes.so",
             "/usr/lib/x86_64-linux-gnu/libffi.so.8", "/opt/v/nvidia/cu13/lib/libcupti.so.13",
             "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/opt/v/nvidia/cublas/lib/libcublasLt.so.13",
             "/opt/v/torch/lib/libtorch_cuda.so"]

    def test_the_loader_is_the_first_library_below_the_plumbing(self):
        self.assertEqual(modules.loader_of(self.STACK), "/opt/v/nvidia/cublas/lib/libcublasLt.so.13")
        self.assertEqual(modules.loader_of(self.STACK[:5]), "")

    def test_the_runtime_loads_for_the_library_that_launched(self):
        # torch's aten kernels: cudart loads libtorch_cuda's fatbin lazily, inside its launch
        lazy = ["/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/opt/v/nvidia/cu13/lib/libcudart.so.13",
                "/opt/v/torch/lib/libtorch_cuda.so", "/opt/v/torch/lib/libtorch_python.so"]
        self.assertEqual(modules.loader_of(lazy), "/opt/v/torch/lib/libtorch_cuda.so")
        # the job calling the runtime from Python (ctypes) is the job's own doing
        self.assertEqual(modules.loader_of(lazy[:2] + self.STACK[1:3]), "")

    def test_a_library_is_named_with_its_package(self):
        o = modules.describe_origin("/opt/v/nvidia/cublas/lib/libcublasLt.so.13", ["/run/job"],
                                    distribution_of=lambda p: "nvidia-cublas 13.0.2")
        self.assertEqual((o["origin"], o["file"], o["package"]),
                         ("library", "libcublasLt.so.13", "nvidia-cublas 13.0.2"))

    def test_a_library_the_run_built_is_the_jobs(self):
        with tempfile.TemporaryDirectory() as d:
            so = os.path.join(d, "triton", "cuda_utils.so")
            o = modules.describe_origin(so, [d], distribution_of=lambda p: "should not be asked")
            self.assertEqual(o["origin"], "job")
            self.assertIn("cuda_utils.so", o["how"])
        self.assertEqual(modules.describe_origin("", [])["origin"], "job")

    def test_a_hip_code_objects_uri_gives_its_bytes_and_its_origin(self):
        # What rocprofiler-sdk reports for a code object a ROCm torch loads (PYTHON.md, "HIP"):
        # one inside a library file, by offset and size, and one made in memory.
        with tempfile.TemporaryDirectory() as d:
            lib = os.path.join(d, "rocm libs", "librocblas.so.4")  # a space: percent-encoded
            os.makedirs(os.path.dirname(lib))
            co = make_elf({"Cijk_Alik_Bljk_HHS_BH_MT64x64": b"\x11" * 32}, machine=224)  # EM_AMDGPU
            host = b"\x7fELF-host-part" * 100  # the library's own code before its device code
            with open(lib, "wb") as f:
                f.write(host + co + b"\0" * 64)
            uri = "file://" + lib.replace(" ", "%20") + f"#offset={len(host)}&size={len(co)}"
            self.assertEqual(modules.parse_code_object_uri(uri),
                             {"kind": "file", "path": lib, "offset": len(host), "size": len(co)})
            blob = modules.read_code_object(uri)
            self.assertEqual(blob, co)
            self.assertIn("Cijk_Alik_Bljk_HHS_BH_MT64x64", modules.elf_functions(blob))
            o = modules.hip_code_object_origin(uri, loader="", job_roots=["/run/job"],
                                               distribution_of=lambda p: "rocblas 4.4.0" if p == lib else "")
            self.assertEqual((o["origin"], o["file"], o["package"]), ("library", "librocblas.so.4", "rocblas 4.4.0"))
            self.assertIn(f"offset {len(host)}", o["how"])
            # Past the file's end, or no number where one belongs: refused, not read short.
            for bad in (f"file://{lib.replace(' ', '%20')}#offset={len(host)}&size=999999",
                        f"file://{lib.replace(' ', '%20')}#offset=x",
                        f"file://{lib.replace(' ', '%20')}#offset=1&offset=2",
                        "file://relative/path#offset=0", "memory://12#offset=0x7f00",
                        "https://example.com/x.co", "memory://abc#offset=0&size=4"):
                with self.assertRaises(ValueError, msg=bad):
                    modules.read_code_object(bad) if bad.startswith("file") else modules.parse_code_object_uri(bad)
        # Made in memory (MIOpen's hipRTC kernels, a Triton kernel): its loader's, from the stack.
        mem = "memory://4242#offset=0x7f0012340000&size=8192"
        self.assertEqual(modules.parse_code_object_uri(mem),
                         {"kind": "memory", "pid": 4242, "offset": 0x7f0012340000, "size": 8192})
        o = modules.hip_code_object_origin(mem, loader="/opt/rocm/lib/libMIOpen.so.1", job_roots=["/run/job"],
                                           distribution_of=lambda p: "")
        self.assertEqual((o["origin"], o["file"]), ("library", "libMIOpen.so.1"))
        with tempfile.TemporaryDirectory() as d:
            o = modules.hip_code_object_origin(mem, loader=os.path.join(d, "triton", "hip_utils.so"),
                                               job_roots=[d])
            self.assertEqual(o["origin"], "job")

    def test_duplicate_kernels_are_told_apart_by_their_code(self):
        log = modules.ModuleLog.__new__(modules.ModuleLog)
        import threading
        log._lock = threading.Lock()
        same = make_elf({"at_fill": b"\x07" * 16, "a": b"\x01" * 8})
        also = make_elf({"at_fill": b"\x07" * 16, "b": b"\x02" * 8})
        other = make_elf({"at_fill": b"\x09" * 16})
        log.modules = [{"sha": "1", "blob": same, "stack": [], "functions": None},
                       {"sha": "2", "blob": also, "stack": [], "functions": None}]
        self.assertEqual(len(log.defining("at_fill")), 1)  # the same code twice: one kernel
        self.assertEqual(log.defining("missing"), [])
        log.modules.append({"sha": "3", "blob": other, "stack": [], "functions": None})
        self.assertEqual(len(log.defining("at_fill")), 2)  # another body of that name: ambiguous


class ModuleHandles(unittest.TestCase):
    def test_a_module_load_call_names_the_handle_of_the_image_loaded_inside_it(self):
        """The callback's own path, driven with the structures CUPTI passes: cuModuleLoadData's
        entry, the resource callback with the image, its exit with *module set."""
        log = modules.ModuleLog()
        blob = make_elf({"triton_red_fused_0": b"\x05" * 16})
        image = C.create_string_buffer(blob, len(blob))
        md = modules._ModuleData(module_id=7, cubin_size=len(blob), cubin=C.cast(image, C.c_void_p).value)
        rd = modules._ResourceData(descriptor=C.cast(C.pointer(md), C.c_void_p).value)
        handle = C.c_void_p(0x51234)

        class Params(C.Structure):  # cuModuleLoadData_params
            _fields_ = [("module", C.POINTER(C.c_void_p)), ("image", C.c_void_p)]
        params = Params(C.pointer(handle), C.cast(image, C.c_void_p).value)
        enter = modules._CallbackData(site=modules.CUPTI_API_ENTER, params=C.addressof(params))
        leave = modules._CallbackData(site=modules.CUPTI_API_EXIT, params=C.addressof(params))
        log._on_callback(None, modules.CUPTI_CB_DOMAIN_DRIVER_API, 19, C.addressof(enter))
        log._on_callback(None, modules.CUPTI_CB_DOMAIN_RESOURCE, modules.CUPTI_CBID_RESOURCE_MODULE_LOADED,
                         C.addressof(rd))
        log._on_callback(None, modules.CUPTI_CB_DOMAIN_DRIVER_API, 19, C.addressof(leave))
        self.assertEqual(len(log.modules), 1)
        self.assertEqual(log.modules[0]["blob"], blob)
        self.assertIs(log.of_handle(0x51234), log.modules[0])
        self.assertIsNone(log.of_handle(0x9999))
        # An image loaded outside any cuModuleLoad* call (a library's, lazily) has no handle.
        log._on_callback(None, modules.CUPTI_CB_DOMAIN_RESOURCE, modules.CUPTI_CBID_RESOURCE_MODULE_LOADED,
                         C.addressof(rd))
        self.assertIsNone(log.modules[1]["handle"])


class Installed(unittest.TestCase):
    """What the recorder reads off the Python install and the process: a library's package, the
    CUPTI it subscribes through, and the libraries on a call stack."""

    def test_a_shared_library_is_named_by_the_distribution_that_installed_it(self):
        with tempfile.TemporaryDirectory() as d:
            lib = os.path.join(d, "fakecublas", "lib")
            os.makedirs(lib)
            for f in ("libfakeblas.so.13", "README.txt"):
                open(os.path.join(lib, f), "wb").close()
            info = os.path.join(d, "nvidia_fakeblas-13.1.0.3.dist-info")
            os.makedirs(info)
            with open(os.path.join(info, "METADATA"), "w") as f:
                f.write("Metadata-Version: 2.1\nName: nvidia-fakeblas\nVersion: 13.1.0.3\n")
            with open(os.path.join(info, "RECORD"), "w") as f:
                f.write("fakecublas/lib/libfakeblas.so.13,,\nfakecublas/lib/README.txt,,\n")
            sys.path.insert(0, d)
            modules._DIST_INDEX = None
            try:
                self.assertEqual(modules.distribution_of_file(os.path.join(lib, "libfakeblas.so.13")),
                                 "nvidia-fakeblas 13.1.0.3")
                self.assertEqual(modules.distribution_of_file(os.path.join(lib, "README.txt")), "")
            finally:
                sys.path.remove(d)
                modules._DIST_INDEX = None

    def test_cupti_is_looked_for_where_it_was_named_then_in_the_wheels_then_in_cuda(self):
        with tempfile.TemporaryDirectory() as d:
            wheel = os.path.join(d, "site", "nvidia", "cu13", "lib")
            cuda = os.path.join(d, "cuda", "extras", "CUPTI", "lib64")
            for p in (wheel, cuda):
                os.makedirs(p)
                open(os.path.join(p, "libcupti.so.13"), "wb").close()
            saved = {k: os.environ.get(k) for k in ("KFLEET_CUPTI_LIB", "CUDA_HOME", "CUDA_PATH")}
            os.environ.update(KFLEET_CUPTI_LIB="/named/libcupti.so", CUDA_HOME=os.path.join(d, "cuda"))
            os.environ.pop("CUDA_PATH", None)
            sys.path.insert(0, os.path.join(d, "site"))
            try:
                got = modules.find_cupti()
            finally:
                sys.path.remove(os.path.join(d, "site"))
                for k, v in saved.items():
                    os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
            self.assertEqual(got[:3], ["/named/libcupti.so", os.path.join(wheel, "libcupti.so.13"),
                                       os.path.join(cuda, "libcupti.so.13")])
            self.assertEqual(got[-1], "libcupti.so")

    def test_cupti_that_refuses_the_subscription_or_the_callback_is_named(self):
        # Three stand-ins for libcupti, built with the host's compiler: one already taken by
        # another subscriber (a profiler), one that will not enable the module callback, one
        # that takes both. The log says why of each refusal, and subscribes through the third.
        import shutil
        import subprocess
        cc = shutil.which("cc") or shutil.which("gcc")
        self.assertIsNotNone(cc, "no C compiler (cc or gcc) on PATH")
        src = ("int cuptiSubscribe(void **s, void *cb, void *u) { *s = (void *)1; return SUB; }\n"
               "int cuptiEnableCallback(unsigned e, void *s, int d, unsigned id) { return EN; }\n")
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "cupti.c"), "w") as f:
                f.write(src)
            libs = []
            for name, sub, en in (("taken", 1, 0), ("no-callback", 0, 7), ("good", 0, 0)):
                out = os.path.join(d, f"libcupti-{name}.so")
                subprocess.run([cc, "-shared", "-fPIC", f"-DSUB={sub}", f"-DEN={en}", "-o", out,
                                os.path.join(d, "cupti.c")], check=True)
                libs.append(out)
            saved = modules.find_cupti
            try:
                modules.find_cupti = lambda: libs[:2]
                log = modules.ModuleLog()
                self.assertFalse(log.subscribe())
                self.assertIn(f"{libs[0]}: cuptiSubscribe returned 1 (another subscriber", log.error)
                self.assertIn(f"{libs[1]}: cuptiEnableCallback returned 7", log.error)
                modules.find_cupti = lambda: libs
                log = modules.ModuleLog()
                self.assertTrue(log.subscribe())
                self.assertEqual(log.error, "")
            finally:
                modules.find_cupti = saved

    def test_a_call_stack_names_each_library_once_in_a_row(self):
        stack = modules.ModuleLog()._stack()
        self.assertTrue(stack, "backtrace and dladdr named no library")
        self.assertTrue(any("libc.so" in f or "python" in f for f in stack), stack)
        self.assertFalse([a for a, b in zip(stack, stack[1:]) if a == b], stack)


class ScratchAllocator(unittest.TestCase):
    def test_a_bump_allocator_over_one_range(self):
        with tempfile.TemporaryDirectory() as d:
            so = scratch.build_library(d)
            self.assertEqual(scratch.build_library(d), so)  # compiled once
            lib = C.CDLL(so)
            lib.kfleet_scratch_alloc.restype = C.c_void_p
            lib.kfleet_scratch_used.restype = C.c_uint64
            lib.kfleet_scratch_failed.restype = C.c_ulong
            lo = 0x7F0000000000
            lib.kfleet_scratch_region(C.c_uint64(lo), C.c_size_t(1 << 20))
            a = lib.kfleet_scratch_alloc(C.c_size_t(100), 0, None)
            b = lib.kfleet_scratch_alloc(C.c_size_t(5000), 0, None)
            self.assertEqual(a, lo)
            self.assertEqual(b, lo + 4096)                 # page-aligned
            lib.kfleet_scratch_free(C.c_void_p(a), C.c_size_t(100), 0, None)
            c = lib.kfleet_scratch_alloc(C.c_size_t(10), 0, None)
            self.assertEqual(c, lo + 4096 + 8192)          # never reused: the pool above reuses
            self.assertIsNone(lib.kfleet_scratch_alloc(C.c_size_t(2 << 20), 0, None))
            self.assertEqual(lib.kfleet_scratch_failed(), 1)
            self.assertEqual(lib.kfleet_scratch_used(), 4096 + 8192 + 4096)

    def test_no_compiler_is_a_clear_error(self):
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(scratch.ScratchError) as e:
                scratch.build_library(d, cc=os.path.join(d, "no-such-cc"))
            self.assertIn("no C compiler", str(e.exception))

    def test_the_plan_names_the_buffer(self):
        from kfleet_rec.launch_list import Buffer
        self.assertEqual(scratch.scratch_buffer([Buffer("output", 1, 2), Buffer("python scratch", 4096, 8192)]),
                         (4096, 8192))
        self.assertIsNone(scratch.scratch_buffer([Buffer("output", 1, 2)]))


if __name__ == "__main__":
    unittest.main()
