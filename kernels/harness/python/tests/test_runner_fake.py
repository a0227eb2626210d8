"""The recorder's GPU half (runner.py) driven end to end with a fake torch, a fake triton and a
fake driver: no GPU, no torch. What it proves: the plan's fields become the launch's args, the
launch is called once outside capture and twice under torch.cuda.graph(keep_graph=True,
capture_error_mode="global") per recording, Triton's cubins are caught as Triton loads them and
named by the kernel nodes that use them, buffers are mapped at the plan's addresses and unmapped,
and exceptions become the right captures. What it cannot prove (the GPU run does): that torch,
Triton and the driver behave as these fakes do."""
import contextlib
import os
import sys
import tempfile
import types
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from kfleet_rec import recording, runner  # noqa: E402

CUBIN = b"\x7fELF" + b"\2" + b"\0" * 13 + bytes([190, 0]) + b"\0" * 44 + b"kernel"


class FakeTensor:
    def __init__(self, va, nbytes, dtype="uint8", shape=None):
        self.va, self.nbytes, self.dtype, self.shape = va, nbytes, dtype, shape or (nbytes,)

    def view(self, x):
        if isinstance(x, tuple):
            return FakeTensor(self.va, self.nbytes, self.dtype, x)
        return FakeTensor(self.va, self.nbytes, x, self.shape)

    def data_ptr(self):
        return self.va


def fake_torch(log):
    torch = types.ModuleType("torch")
    for name in ("float16", "bfloat16", "float8_e4m3fn", "float32", "uint8"):
        setattr(torch, name, name)

    def as_tensor(obj, device=None):
        cai = obj.__cuda_array_interface__
        log.append(("as_tensor", cai["data"][0], cai["shape"][0], device))
        return FakeTensor(cai["data"][0], cai["shape"][0])
    torch.as_tensor = as_tensor
    torch.zeros = lambda *a, **k: None
    cuda = types.SimpleNamespace()
    cuda.is_available = lambda: True
    cuda.set_device = lambda d: log.append(("set_device", d))

    class Stream:
        def __init__(self, device=None):
            self.cuda_stream = 0x5000
    cuda.Stream = Stream

    @contextlib.contextmanager
    def stream(s):
        log.append(("stream", "enter"))
        yield
        log.append(("stream", "exit"))
    cuda.stream = stream

    class CUDAGraph:
        def __init__(self, keep_graph=False):
            assert keep_graph
            self.captured = False

        def raw_cuda_graph(self):
            assert self.captured
            return 0x6000

        def reset(self):
            log.append(("reset",))
    cuda.CUDAGraph = CUDAGraph

    @contextlib.contextmanager
    def graph(g, stream=None, capture_error_mode=None, pool=None):
        assert capture_error_mode == "global" and stream is not None
        log.append(("capture", "begin") if pool is None else ("capture", "begin", "pool", pool))
        yield
        g.captured = True
        log.append(("capture", "end"))
    cuda.graph = graph

    class MemPool:  # torch.cuda.MemPool over a pluggable allocator
        def __init__(self, allocator):
            self.allocator, self.id = allocator, ("pool", 1)
    cuda.MemPool = MemPool

    @contextlib.contextmanager
    def use_mem_pool(pool):
        log.append(("mem_pool", "enter"))
        yield
        log.append(("mem_pool", "exit"))
    cuda.use_mem_pool = use_mem_pool

    class CUDAPluggableAllocator:
        def __init__(self, path, alloc, free):
            log.append(("allocator", os.path.basename(path).startswith("kfleet_scratch_"), alloc, free))

        def allocator(self):
            return "raw allocator"
    cuda.memory = types.SimpleNamespace(CUDAPluggableAllocator=CUDAPluggableAllocator)
    torch.cuda = cuda

    def compile(fn, mode=None):
        log.append(("compile", mode))

        def compiled(*a):
            log.append(("compiled call",))
            return fn(*a)
        return compiled
    torch.compile = compile
    return torch


class FakeModuleLog:
    """modules.ModuleLog without CUPTI: `loaded` stands for what the callback would have seen."""
    loaded = []

    def __init__(self):
        self.modules, self.error = [], ""

    def subscribe(self):
        self.modules = list(FakeModuleLog.loaded)
        return True

    def defining(self, name):
        return [m for m in self.modules if name in m["names"]]


def fake_triton():
    triton = types.ModuleType("triton")
    compiler_pkg = types.ModuleType("triton.compiler")
    compiler = types.ModuleType("triton.compiler.compiler")

    class CompiledKernel:
        def __init__(self, name):
            self.name, self.asm, self.function = name, {"cubin": CUBIN}, None

        def _init_handles(self):
            self.function = 0xF00D
    compiler.CompiledKernel = CompiledKernel
    compiler_pkg.compiler = compiler
    triton.compiler = compiler_pkg
    return {"triton": triton, "triton.compiler": compiler_pkg, "triton.compiler.compiler": compiler}


class FakeDriver:
    instances = []

    def __init__(self):
        self.calls, self.maps = [], []
        FakeDriver.instances.append(self)

    def has(self, name):
        return True

    def call(self, name, *a):
        self.calls.append(name)

    def reserve(self, lo, hi):
        self.calls.append(("reserve", lo, hi))

    def map(self, va, n, dev):
        self.maps.append(va)
        return (va, n, 0)

    def unmap(self, m):
        self.calls.append(("unmap", m[0]))

    def is_device_address(self, v):
        return False

    def image_defines(self, path, name):
        with open(path, "rb") as f:
            return f.read() == CUBIN and name == "_attn_fwd"

    def read_graph(self, handle, resolve):
        image, note, origin = resolve(0xF00D, "_attn_fwd")
        params = (0x600000000000).to_bytes(8, "little")
        return {"error": None, "edges": [],
                "nodes": [{"type": "kernel", "function": "_attn_fwd", "grid": [1, 1, 1],
                           "block": [128, 1, 1], "slots": [[0, 8]], "params": params.hex(),
                           "image": image, "image_note": note, "origin": origin}]}


PLAN = {"type": "plan", "version": 1, "family": "attention", "arena": [0x600000000000, 0x610000000000],
        "recordings": [{"what": f"correctness seed {s}", "args": "01000000",
                        "buffers": [{"name": "input Q", "va": 0x600000000000, "bytes": 4096},
                                    {"name": "output", "va": 0x600000200000, "bytes": 4096}],
                        "fields": {"tensors": [
                            {"name": "q", "va": 0x600000000000, "bytes": 4096, "dtype": "fp16", "shape": [1, 1, 32, 64]},
                            {"name": "o", "va": 0x600000200000, "bytes": 4096, "dtype": "fp16", "shape": [1, 1, 32, 64]},
                            {"name": "bias", "va": 0, "bytes": 0, "dtype": "fp16", "shape": [64]}],
                            "values": {"seq_len": 32, "softmax_scale": 0.125}}} for s in (0, 1)]}

JOB = '''
import kfleet
from triton.compiler.compiler import CompiledKernel
calls = []
def kfleet_attention_launch(args, stream):
    calls.append((args.q.shape, args.q.dtype, args.o.va, args.bias, args.seq_len))
    k = CompiledKernel("_attn_fwd")
    k._init_handles()
    if MODE == "raise" and len(calls) % 3 != 1:  # under capture, not the first call
        raise RuntimeError("operation not permitted when stream is capturing")
    if MODE == "raise_first":  # the first call, outside capture
        raise ValueError("the kernel's first compile failed")
    return None
MODE = "ok"
'''


class Runner(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.log = []
        self.saved = {k: sys.modules.get(k) for k in ("torch", "triton", "triton.compiler",
                                                      "triton.compiler.compiler", "kfleet_job")}
        sys.modules["torch"] = fake_torch(self.log)
        sys.modules.update(fake_triton())
        self.saved_driver = runner.Driver
        runner.Driver = FakeDriver
        FakeDriver.instances.clear()
        self.saved_modlog = runner.modlog.ModuleLog
        runner.modlog.ModuleLog = FakeModuleLog
        FakeModuleLog.loaded = []

    def tearDown(self):
        runner.Driver = self.saved_driver
        runner.modlog.ModuleLog = self.saved_modlog
        for k, v in self.saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
        self.tmp.cleanup()

    def opts(self, mode="ok"):
        src = os.path.join(self.tmp.name, "job.py")
        with open(src, "w") as f:
            f.write(JOB.replace('MODE = "ok"', f'MODE = "{mode}"'))
        return types.SimpleNamespace(language="triton", device=0, source=src,
                                     entry="kfleet_attention_launch",
                                     device_code_dir=os.path.join(self.tmp.name, "dc"),
                                     cache_dir=os.path.join(self.tmp.name, "cache"))

    def test_a_plan_is_recorded_and_written(self):
        plan = recording.read_plan(PLAN)
        caps, _ = runner.record(self.opts(), plan)
        self.assertEqual(len(caps), 2)
        job = sys.modules["kfleet_job"]
        # once outside capture, twice under it, per recording
        self.assertEqual(len(job.calls), 6)
        self.assertEqual(job.calls[0], ((1, 1, 32, 64), "float16", 0x600000200000, None, 32))
        self.assertEqual([e for e in self.log if e[0] == "capture"].count(("capture", "begin")), 4)
        d = FakeDriver.instances[0]
        self.assertEqual(d.calls[0], ("reserve", 0x600000000000, 0x610000000000))
        self.assertEqual(d.maps, [0x600000000000, 0x600000200000] * 2)
        self.assertIn(("unmap", 0x600000200000), d.calls)
        self.assertIn("cuCtxSynchronize", d.calls)
        out = os.path.join(self.tmp.name, "l.txt")
        s = recording.record_from_captures(plan, caps, out, self.opts().device_code_dir)
        self.assertEqual(s["lists"], 2)
        self.assertEqual(len(s["device_code"]), 1)
        with open(s["device_code"][0], "rb") as f:
            self.assertEqual(f.read(), CUBIN)  # the cubin Triton loaded, caught by the hook
        self.assertEqual([(k["function"], k["origin"], k["how"]) for k in s["kernels"]],
                         [("_attn_fwd", "job", "Triton cubin")])
        # No python scratch buffer in the plan: torch's own allocator, no pool under capture.
        self.assertNotIn(("mem_pool", "enter"), self.log)

    def test_torch_allocates_from_the_python_scratch_buffer(self):
        doc = dict(PLAN)
        doc["recordings"] = [dict(r, buffers=r["buffers"] + [{"name": "python scratch",
                                                              "va": 0x600000400000, "bytes": 1 << 22}])
                             for r in PLAN["recordings"]]
        caps, _ = runner.record(self.opts(), recording.read_plan(doc))
        self.assertEqual(len(caps), 2)
        self.assertIn(("allocator", True, "kfleet_scratch_alloc", "kfleet_scratch_free"), self.log)
        # the uncaptured call in the pool, and both captures given it as their graph pool
        self.assertEqual(self.log.count(("mem_pool", "enter")), 2)
        self.assertEqual(self.log.count(("capture", "begin", "pool", ("pool", 1))), 4)
        self.assertEqual(FakeDriver.instances[0].maps[:3], [0x600000000000, 0x600000200000, 0x600000400000])

    def refused_with_scratch_run_out(self, mode):
        """The Refusal of recording in MODE with a 4 MiB python scratch buffer that ran out."""
        doc = dict(PLAN)
        doc["recordings"] = [dict(r, buffers=r["buffers"] + [{"name": "python scratch",
                                                              "va": 0x600000400000, "bytes": 1 << 22}])
                             for r in PLAN["recordings"]]
        with mock.patch.object(runner.scratchmod.Scratch, "exhausted",
                               lambda s: "the launch's torch allocations needed more than the 4 MiB"):
            with self.assertRaises(recording.Refusal) as cm:
                runner.record(self.opts(mode), recording.read_plan(doc))
        return cm.exception

    def test_scratch_run_out_under_capture_is_named_with_its_sizes(self):
        # torch says "CUDA out of memory" with the GPU nearly free: the scratch ran out
        self.assertIn("needed more than the 4 MiB; under capture: RuntimeError",
                      str(self.refused_with_scratch_run_out("raise")))

    def test_scratch_run_out_in_a_capture_that_went_on_is_still_a_refusal(self):
        # The launch caught torch's out-of-memory itself and went on: both captures end without
        # an error, but an allocation failed, so what was captured is not the launch's work.
        self.assertEqual(self.refused_with_scratch_run_out("ok").why,
                         "the launch's torch allocations needed more than the 4 MiB")
        dc = os.path.join(self.tmp.name, "dc")
        self.assertEqual(os.listdir(dc) if os.path.isdir(dc) else [], [])  # no device code written

    def test_a_reference_is_compiled_before_its_first_call(self):
        o = self.opts()
        o.torch_compile = "max-autotune-no-cudagraphs"
        runner.record(o, recording.read_plan(PLAN))
        self.assertEqual(self.log.count(("compile", "max-autotune-no-cudagraphs")), 1)
        self.assertEqual(self.log.count(("compiled call",)), 6)

    def test_an_exception_under_capture_is_a_refusal_before_the_launch_runs_again(self):
        with self.assertRaises(recording.Refusal) as cm:
            runner.record(self.opts("raise"), recording.read_plan(PLAN))
        self.assertIn("raised under capture (RuntimeError: operation not permitted", str(cm.exception))
        # Once outside capture, once under it, and no more: after a failed capture torch's
        # allocator still counts it as running, so nothing else may run in the process.
        self.assertEqual(len(sys.modules["kfleet_job"].calls), 2)
        self.assertEqual(self.log.count(("capture", "end")), 1)

    def test_a_launch_that_fails_outside_capture_is_a_refusal_that_quotes_it(self):
        o = self.opts("raise_first")
        o.torch_compile = "max-autotune-no-cudagraphs"  # the recorder then also asks inductor
        with self.assertRaises(recording.Refusal) as cm:
            runner.record(o, recording.read_plan(PLAN))
        self.assertIn("failed outside capture (its first call, which compiles): "
                      "ValueError: the kernel's first compile failed", str(cm.exception))

    def test_a_long_exception_is_quoted_by_its_first_line_and_its_end(self):
        # inductor's compile worker: the subprocess's traceback in the text, its cause last
        e = RuntimeError("SubprocException: An exception occurred in a subprocess:\n"
                         + "  File x, line 1, in do_job\n" * 80 + "OutOfResources: shared memory, 232448 > 227328")
        s = runner.said(e)
        self.assertLessEqual(len(s), 700 + len("RuntimeError: "))
        self.assertTrue(s.startswith("RuntimeError: SubprocException: An exception occurred in a subprocess: [...]"), s)
        self.assertTrue(s.endswith("OutOfResources: shared memory, 232448 > 227328"), s)
        self.assertEqual(runner.said(ValueError(" short ")), "ValueError: short")

    def test_a_harness_without_kfleet_is_a_setup_error_before_the_job_code(self):
        saved = sys.modules.get("kfleet")
        sys.modules["kfleet"] = None  # import kfleet raises ImportError, as with the file gone
        try:
            with self.assertRaises(runner.SetupError) as cm:
                runner.record(self.opts(), recording.read_plan(PLAN))
        finally:
            if saved is None:
                sys.modules.pop("kfleet", None)
            else:
                sys.modules["kfleet"] = saved
        self.assertIn("cannot import its kfleet module", str(cm.exception))
        self.assertNotIn("kfleet_job", sys.modules)  # the job's code never ran

    def test_a_triton_job_where_triton_does_not_import_is_a_setup_error(self):
        sys.modules["triton"] = None  # import triton raises ImportError (tearDown puts it back)
        with self.assertRaises(runner.SetupError) as cm:
            runner.record(self.opts(), recording.read_plan(PLAN))
        self.assertIn("the agent's Python cannot import triton", str(cm.exception))
        self.assertNotIn("kfleet_job", sys.modules)  # the job's code never ran

    def test_a_capture_invalidated_at_its_end_is_its_error_not_a_graph_to_read(self):
        # The job raised nothing, but capture_end found the capture broken (a side stream left
        # unjoined): the error is the capture's, and the graph is never read.
        torch = sys.modules["torch"]

        @contextlib.contextmanager
        def graph(g, stream=None, capture_error_mode=None, pool=None):
            yield
            raise RuntimeError("operation not permitted when stream is capturing")
        torch.cuda.graph = graph
        cap = runner._capture(torch, FakeDriver(), None, lambda a, s: None, None, torch.cuda.Stream(), {})
        self.assertEqual(cap, {"error": "RuntimeError: operation not permitted when stream is capturing"})

    def test_the_jobs_own_kfleet_py_does_not_replace_the_harnesss(self):
        with open(os.path.join(self.tmp.name, "kfleet.py"), "w") as f:
            f.write("OK = 99\n")
        sys.modules.pop("kfleet", None)
        runner.record(self.opts(), recording.read_plan(PLAN))
        import kfleet
        self.assertEqual(os.path.dirname(os.path.abspath(kfleet.__file__)), os.path.dirname(HERE))
        self.assertEqual(kfleet.OK, 0)

    def test_a_missing_entry_is_named(self):
        o = self.opts()
        o.entry = "nope"
        with self.assertRaises(recording.Refusal) as cm:
            runner.record(o, recording.read_plan(PLAN))
        self.assertIn("defines no function nope(args, stream)", str(cm.exception))


class NameDriver:
    """A driver whose image defines a kernel when the kernel's name is in its bytes."""

    def image_defines(self, path, name):
        with open(path, "rb") as f:
            return name.encode() in f.read()

    @staticmethod
    def modules(blob, loader, only=None):
        """A module log of one module, `blob`, loaded by the library `loader`."""
        class Mods:
            error = ""

            def defining(self, name):
                return [{"blob": blob, "stack": ["/x/libcuda.so.1", loader]}] if only in (None, name) else []
        return Mods()


class ExtensionImages(unittest.TestCase):
    def test_an_extension_built_in_the_run_is_found_by_kernel_name(self):
        from test_recording import DeviceCode
        with tempfile.TemporaryDirectory() as d:
            ext = os.path.join(d, "torch_extensions", "mm_ext")
            os.makedirs(ext)
            fb = DeviceCode.fatbin(b"kfleet_scaled_mm_fp8".ljust(24, b"\0"))
            with open(os.path.join(ext, "mm_ext.so"), "wb") as f:
                f.write(DeviceCode.elf_with(fb))

            images = runner.Images(NameDriver(), os.path.join(d, "staging"), os.path.join(d, "torch_extensions"),
                                   os.path.join(d, "triton"))
            path, note, origin = images.resolve(0x1234, "kfleet_scaled_mm_fp8")
            self.assertEqual(note, "")
            self.assertEqual(origin["how"], "extension fatbin")
            with open(path, "rb") as f:
                self.assertEqual(f.read(), fb)  # the bare fatbin, split out of the .so
            path, note, origin = images.resolve(0x1234, "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_nn")
            self.assertIsNone(path)
            self.assertIn("could not watch module loads", note)

    def test_two_extension_fatbins_that_define_it_are_a_refusal(self):
        # Which of two would be the code the launch ran is not known: neither is taken.
        from test_recording import DeviceCode
        with tempfile.TemporaryDirectory() as d:
            for ext in ("mm_ext", "mm_ext_v2"):
                os.makedirs(os.path.join(d, "torch_extensions", ext))
                with open(os.path.join(d, "torch_extensions", ext, ext + ".so"), "wb") as f:
                    f.write(DeviceCode.elf_with(DeviceCode.fatbin(b"kfleet_scaled_mm_fp8".ljust(24, b"\0"))))
            images = runner.Images(NameDriver(), os.path.join(d, "staging"), os.path.join(d, "torch_extensions"),
                                   os.path.join(d, "triton"))
            path, note, origin = images.resolve(0x1234, "kfleet_scaled_mm_fp8")
            self.assertIsNone(path)
            self.assertIsNone(origin)
            self.assertEqual(note, "2 of the job's extension fatbins define it")

    def test_a_library_kernel_comes_from_the_module_the_process_loaded(self):
        with tempfile.TemporaryDirectory() as d:
            blob = b"\x7fELF" + b"nvjet_sm90_gemm".ljust(40, b"\0")

            mods = NameDriver.modules(blob, "/v/nvidia/cublas/lib/libcublasLt.so.13", only="nvjet_sm90_gemm")
            images = runner.Images(NameDriver(), os.path.join(d, "staging"), os.path.join(d, "torch_extensions"),
                                   os.path.join(d, "triton"), roots=[d], modules=mods)
            path, note, origin = images.resolve(0x1, "nvjet_sm90_gemm")
            self.assertEqual(note, "")
            with open(path, "rb") as f:
                self.assertEqual(f.read(), blob)
            self.assertEqual((origin["origin"], origin["file"]), ("library", "libcublasLt.so.13"))
            path, note, _ = images.resolve(0x1, "at_missing_kernel")
            self.assertIsNone(path)
            self.assertIn("no module the process loaded defines it", note)

    def test_a_kernel_compiled_in_the_run_is_the_jobs_whichever_library_loads_it(self):
        # torch.compile's Triton kernels: inductor writes each cubin into its cache in the run's
        # folder and loads it through libtorch_python; the verdict must not call it a library's.
        with tempfile.TemporaryDirectory() as d:
            blob = b"\x7fELF" + b"triton_poi_fused_0".ljust(40, b"\0")
            os.makedirs(os.path.join(d, "inductor", "ab"))
            with open(os.path.join(d, "inductor", "ab", "triton_poi_fused_0.cubin"), "wb") as f:
                f.write(blob)

            mods = NameDriver.modules(blob, "/v/torch/lib/libtorch_python.so")
            images = runner.Images(NameDriver(), os.path.join(d, "staging"), None, None, roots=[d], modules=mods)
            path, note, origin = images.resolve(0x1, "triton_poi_fused_0")
            self.assertEqual(note, "")
            self.assertEqual(origin["origin"], "job")
            self.assertEqual(origin["how"], "compiled in the run, loaded by libtorch_python.so")
            # The same image with no cubin of it in the run's folders is the library's.
            other = runner.Images(NameDriver(), os.path.join(d, "staging2"), None, None,
                                  roots=[os.path.join(d, "elsewhere")], modules=mods)
            self.assertEqual(other.resolve(0x1, "triton_poi_fused_0")[2]["origin"], "library")


class InductorHook(unittest.TestCase):
    """torch.compile's kernels load through inductor's own launcher: the hook keeps each one's
    cubin by the function handle its load made, from the bytes or from the file it names."""

    NAMES = ("torch", "torch._inductor", "torch._inductor.runtime",
             "torch._inductor.runtime.static_cuda_launcher")

    def setUp(self):
        patch = mock.patch.dict(sys.modules, {k: types.ModuleType(k) for k in self.NAMES})
        patch.start()
        self.addCleanup(patch.stop)

        class StaticallyLaunchedCudaKernel:
            handles = iter(range(0x70, 0x80))

            def __init__(self, name, **attrs):
                self.name, self.function = name, None
                self.__dict__.update(attrs)

            def load_kernel(self, device):
                self.function = next(self.handles)
        self.cls = StaticallyLaunchedCudaKernel
        sys.modules[self.NAMES[-1]].StaticallyLaunchedCudaKernel = StaticallyLaunchedCudaKernel

    def test_each_loaded_kernel_is_kept_by_its_handle(self):
        with tempfile.TemporaryDirectory() as d:
            images = runner.Images(NameDriver(), os.path.join(d, "staging"), None, None)
            self.assertTrue(images.install_inductor_hook())
            with open(os.path.join(d, "k1.cubin"), "wb") as f:
                f.write(b"\x7fELF triton_per_fused_1")
            a = self.cls("triton_poi_fused_0", cubin_raw=b"\x7fELF triton_poi_fused_0")
            b = self.cls("triton_per_fused_1", cubin_path=os.path.join(d, "k1.cubin"))
            c = self.cls("triton_red_fused_2", cubin_path=os.path.join(d, "gone.cubin"))
            for k in (a, b, c):
                k.load_kernel(0)
            self.assertEqual(images.triton, {a.function: ("triton_poi_fused_0", b"\x7fELF triton_poi_fused_0"),
                                             b.function: ("triton_per_fused_1", b"\x7fELF triton_per_fused_1")})

    def test_a_torch_without_the_launcher_is_no_hook(self):
        del sys.modules[self.NAMES[-1]].StaticallyLaunchedCudaKernel.load_kernel
        with tempfile.TemporaryDirectory() as d:
            self.assertFalse(runner.Images(NameDriver(), os.path.join(d, "s"), None, None).install_inductor_hook())


class RegsDriver(NameDriver):
    """A driver whose image's kernel has the register count written after "regs=" in its bytes,
    and whose launched functions are {handle: register count}."""

    def __init__(self, launched):
        self.launched = launched

    def module_of(self, func):
        return 0xAB

    def code_differs(self, path, name, func):
        with open(path, "rb") as f:
            regs = int(f.read().split(b"regs=")[1][:2])
        ran = self.launched[func]
        return "" if regs == ran else f"registers {regs} in the image, {ran} as launched"


class TheCodeThatRan(unittest.TestCase):
    """An autotuner loads many kernels of one name: replay must get the code the launch ran."""

    def candidates(self, *regs):
        blobs = [b"\x7fELF" + b"triton_red_fused_0 regs=%02d" % r for r in regs]

        class Mods:
            error = ""

            def defining(self, name):
                return [{"blob": b, "stack": ["/v/torch/lib/libtorch_python.so"], "functions": {name: b}}
                        for b in blobs]

            def of_handle(self, handle):  # the handle named the first candidate's module
                return self.defining("triton_red_fused_0")[0]
        return Mods()

    def test_the_module_whose_code_the_launch_ran_is_taken_over_the_one_its_handle_named(self):
        with tempfile.TemporaryDirectory() as d:
            images = runner.Images(RegsDriver({0x7: 30}), os.path.join(d, "staging"), None, None,
                                   roots=[d], modules=self.candidates(22, 30))
            path, note, _ = images.resolve(0x7, "triton_red_fused_0")
            self.assertEqual(note, "")
            with open(path, "rb") as f:
                self.assertIn(b"regs=30", f.read())

    def test_no_module_with_the_code_that_ran_is_a_refusal_that_says_how_they_differ(self):
        with tempfile.TemporaryDirectory() as d:
            images = runner.Images(RegsDriver({0x7: 30}), os.path.join(d, "staging"), None, None,
                                   roots=[d], modules=self.candidates(22, 24))
            path, note, _ = images.resolve(0x7, "triton_red_fused_0")
            self.assertIsNone(path)
            self.assertIn("not the code the launch ran (registers 22 in the image, 30 as launched)", note)

    def test_a_handle_whose_module_lacks_the_name_does_not_choose_among_them(self):
        # Two modules define the kernel; the module the function's handle names defines other
        # kernels only (a stale or forged handle): no one of the two is taken for it.
        mods = self.candidates(22, 30)
        mods.of_handle = lambda handle: {"blob": b"\x7fELF other", "stack": [], "functions": {"other": b""}}
        with tempfile.TemporaryDirectory() as d:
            images = runner.Images(RegsDriver({0x7: 30}), os.path.join(d, "staging"), None, None,
                                   roots=[d], modules=mods)
            path, note, _ = images.resolve(0x7, "triton_red_fused_0")
            self.assertIsNone(path)
            self.assertEqual(note, "2 loaded modules define a kernel of this name with different code")

    def test_two_other_modules_with_the_code_that_ran_are_a_refusal_not_a_pick(self):
        with tempfile.TemporaryDirectory() as d:
            images = runner.Images(RegsDriver({0x7: 30}), os.path.join(d, "staging"), None, None,
                                   roots=[d], modules=self.candidates(22, 30, 30))
            path, note, _ = images.resolve(0x7, "triton_red_fused_0")
            self.assertIsNone(path)
            self.assertIn("not the code the launch ran (registers 22 in the image, 30 as launched), "
                          "and 2 other loaded modules are", note)

    def test_a_triton_cubin_caught_at_load_is_checked_too(self):
        with tempfile.TemporaryDirectory() as d:
            images = runner.Images(RegsDriver({0x9: 30}), os.path.join(d, "staging"), None, None)
            images.triton[0x9] = ("_attn_fwd", b"\x7fELF _attn_fwd regs=22")
            path, note, _ = images.resolve(0x9, "_attn_fwd")
            self.assertIsNone(path)
            self.assertIn("is not the code the launch ran (registers 22", note)
            images.triton[0x9] = ("_attn_fwd", b"\x7fELF _attn_fwd regs=30")
            self.assertEqual(images.resolve(0x9, "_attn_fwd")[1], "")


class JobWorkspace(unittest.TestCase):
    """kfleet.Workspace: a job's scratch carved from the harness's workspace, aligned, and never
    past its end (an address past it would be refused at record time; this says why first)."""

    class Bytes:  # a uint8 tensor's numel, slices and views, as byte offsets
        def __init__(self, n, start=0):
            self.n, self.start, self.dtype = n, start, "uint8"

        def numel(self):
            return self.n

        def __getitem__(self, s):
            return JobWorkspace.Bytes(s.stop - s.start, self.start + s.start)

        def view(self, how):
            if isinstance(how, str):
                self.dtype = how
            return self

    def setUp(self):
        torch = types.ModuleType("torch")
        torch.float32, torch.float16, torch.int8 = "float32", "float16", "int8"
        size = {"float32": 4, "float16": 2, "int8": 1}
        torch.empty = lambda n, dtype: types.SimpleNamespace(element_size=lambda: size[dtype])
        patch = mock.patch.dict(sys.modules, {"torch": torch})
        patch.start()
        self.addCleanup(patch.stop)
        import kfleet
        self.kfleet, self.torch = kfleet, torch

    def test_each_take_is_aligned_and_the_end_is_a_clear_error(self):
        ws = self.kfleet.Workspace(self.Bytes(4096))
        a = ws.take((3,), self.torch.float32)
        b = ws.take((2, 1), self.torch.float16)
        self.assertEqual([(t.start, t.n, t.dtype) for t in (a, b)], [(0, 12, "float32"), (256, 4, "float16")])
        with self.assertRaises(MemoryError) as cm:
            ws.take((2000,), self.torch.float32)
        self.assertEqual(str(cm.exception), "kfleet.Workspace: 8512 bytes wanted, the workspace has 4096 "
                                            "(job option --workspace-mib)")
        # Triton's allocator takes its alignment from the request, from then on
        t = ws.triton_allocator()(100, 1024, None)
        self.assertEqual((t.start, t.n), (1024, 100))


class StacksBeforeTheLimit(unittest.TestCase):
    """KFLEET_STACKS_AFTER_S: a recorder still running then writes every thread's Python stack to
    its stderr (the run's log), so a hang says where it waits before the agent kills it."""

    def run_recorder_stub(self, after):
        import subprocess
        code = ("import os, sys, time; sys.path.insert(0, %r); import kfleet_record; "
                "kfleet_record.stacks_later(); time.sleep(1.5)" % os.path.dirname(HERE))
        env = dict(os.environ, KFLEET_STACKS_AFTER_S=after)
        return subprocess.run([sys.executable, "-B", "-c", code], env=env, capture_output=True,
                              text=True, timeout=30)

    def test_a_recorder_past_the_mark_writes_its_stacks(self):
        r = self.run_recorder_stub("0.3")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("most recent call first", r.stderr)
        self.assertIn('File "<string>", line 1', r.stderr)

    def test_none_without_the_variable_or_before_the_mark(self):
        for after in ("", "0", "60", "not a number"):
            r = self.run_recorder_stub(after)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotIn("most recent call first", r.stderr, after)


if __name__ == "__main__":
    unittest.main()
