"""torch's allocations during a launch, placed in the harness's "python scratch" buffer.

A torch program allocates as it runs: an op's result, a temporary under torch.compile, cuBLAS's
workspace, cuDNN's. Replay needs every address a recorded kernel uses to be one the measuring
process maps at the same place, so the recorder gives torch an allocator whose memory is that
buffer of the fixed arena (kfleet-measure --python-scratch-mib maps it, in the plan and when it
replays): a pluggable allocator (a bump allocator in C, compiled here with the host's C compiler,
as Triton compiles its launchers) behind a torch.cuda.MemPool, active while the launch runs
outside capture and given to torch.cuda.graph as its pool under capture. torch's caching
allocator sits on top, so freed blocks are reused and two captures of the same launch allocate
the same addresses. Memory is never handed back to the range: what the pool holds stays mapped
at the same place for every recording.
"""
import ctypes as C
import hashlib
import os
import subprocess

SOURCE = r"""
/* kfleet's allocator for torch inside the recorder: a bump pointer over one fixed range. */
#include <stddef.h>
#include <stdint.h>
static uintptr_t g_lo, g_cur, g_hi, g_mark;
static unsigned long g_failed;
static size_t g_largest_failed;
void kfleet_scratch_region(uintptr_t lo, size_t n) { g_lo = g_cur = g_mark = lo; g_hi = lo + n; }
/* Below the mark: what the pool of uncaptured calls holds (kept); a capture starts at it. */
void kfleet_scratch_mark(void) { g_mark = g_cur; }
void kfleet_scratch_reset(void) { g_cur = g_mark; }
uintptr_t kfleet_scratch_used(void) { return g_cur - g_lo; }
unsigned long kfleet_scratch_failed(void) { return g_failed; }
size_t kfleet_scratch_largest_failed(void) { return g_largest_failed; }
void* kfleet_scratch_alloc(size_t size, int device, void* stream) {
  size_t a = (size + 4095) & ~(size_t)4095;
  (void)device; (void)stream;
  if (!g_lo || a < size || g_cur + a > g_hi || g_cur + a < g_cur) {
    g_failed++;
    if (size > g_largest_failed) g_largest_failed = size;
    return 0;
  }
  void* p = (void*)g_cur;
  g_cur += a;
  return p;
}
void kfleet_scratch_free(void* p, size_t size, int device, void* stream) {
  (void)p; (void)size; (void)device; (void)stream;
}
"""


class ScratchError(Exception):
    pass


def build_library(cache_dir, cc=None):
    """The allocator's shared object, compiled once per source into `cache_dir`."""
    tag = hashlib.sha256(SOURCE.encode()).hexdigest()[:12]
    so = os.path.join(cache_dir, f"kfleet_scratch_{tag}.so")
    if os.path.exists(so):
        return so
    os.makedirs(cache_dir, exist_ok=True)
    src = so[:-3] + ".c"
    with open(src, "w", encoding="ascii") as f:
        f.write(SOURCE)
    compiler = cc or os.environ.get("CC") or "cc"
    tmp = so + ".tmp"
    try:
        p = subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-o", tmp, src],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True)
    except OSError as e:
        raise ScratchError(f"no C compiler to build the recorder's allocator ({compiler}: {e}); "
                           "set CC, or install gcc (Triton needs one too)")
    if p.returncode != 0:
        raise ScratchError(f"{compiler} could not build the recorder's allocator: "
                           f"{(p.stderr or p.stdout).strip()[-300:]}")
    os.replace(tmp, so)
    return so


class Scratch:
    """The pool over [va, va + nbytes); `pool` is None when torch has no MemPool."""

    def __init__(self, torch, so_path, va, nbytes):
        self.va, self.nbytes = va, nbytes
        self.lib = C.CDLL(so_path)
        self.lib.kfleet_scratch_used.restype = C.c_uint64
        self.lib.kfleet_scratch_failed.restype = C.c_ulong
        self.lib.kfleet_scratch_largest_failed.restype = C.c_size_t
        self.lib.kfleet_scratch_region(C.c_uint64(va), C.c_size_t(nbytes))
        mem = self.torch_memory = torch.cuda.memory
        if not hasattr(torch.cuda, "MemPool") or not hasattr(mem, "CUDAPluggableAllocator"):
            raise ScratchError("this torch has no torch.cuda.MemPool (torch 2.8 or later is needed)")
        self.so_path = so_path
        self.allocator = self._pluggable()
        self.torch = torch
        self.pool = torch.cuda.MemPool(self.allocator.allocator())  # the uncaptured calls'
        self.capture_pools = []
        self._use = getattr(torch.cuda, "use_mem_pool", None) or getattr(mem, "use_mem_pool")

    def _pluggable(self):
        # One allocator object per pool: each keeps its own table of the pointers it handed out
        # and refuses to free one it has no entry for, and two captures' pools are given the same
        # addresses (one table shared by both lost an entry when the first pool freed it, and the
        # second's free aborted the process: "Trying to free a pointer not allocated here").
        # The objects share the library's bump pointer: it is loaded once.
        return self.torch_memory.CUDAPluggableAllocator(self.so_path, "kfleet_scratch_alloc",
                                                        "kfleet_scratch_free")

    def active(self):
        """A context in which torch allocates from the scratch range."""
        return self._use(self.pool)

    def mark(self):
        """After an uncaptured call: what its pool now holds is kept below every capture's."""
        self.lib.kfleet_scratch_mark()

    def capture_pool(self):
        """A context giving torch.cuda.graph's keyword for a fresh pool that allocates from the
        mark: two captures of the same launch make the same requests in the same order, so they
        get the same addresses. Nothing a capture allocates runs, so the next capture may take the same
        range; the pool itself is kept (torch may still free into it)."""
        scratch = self

        class _Ctx:
            def __enter__(self):
                scratch.lib.kfleet_scratch_reset()
                self.allocator = scratch._pluggable()
                self.pool = scratch.torch.cuda.MemPool(self.allocator.allocator())
                return {"pool": self.pool.id}

            def __exit__(self, *exc):
                # Kept alive: torch frees into a pool it knows until the process ends (dropping
                # one with blocks in use made a later free fail: "invalid device pointer").
                scratch.capture_pools.append((self.allocator, self.pool))
                return False
        return _Ctx()

    def used(self):
        return int(self.lib.kfleet_scratch_used())

    def exhausted(self):
        """'' or why torch ran out of scratch (named in a refusal)."""
        if not self.lib.kfleet_scratch_failed():
            return ""
        return (f"the launch's torch allocations needed more than the {self.nbytes >> 20} MiB of "
                f"scratch the harness maps for them (a request of "
                f"{int(self.lib.kfleet_scratch_largest_failed()) >> 20} MiB failed after "
                f"{self.used() >> 20} MiB were taken)")


def scratch_buffer(buffers):
    """(va, bytes) of the plan's python scratch buffer, or None."""
    for b in buffers:
        if b.name == "python scratch":
            return b.va, b.nbytes
    return None
