"""The launch list (kernels/harness/cpu/launch_list.hpp) written from Python.

This is the writer only, plus the two checks the recorder makes before it writes (two recordings
that differ, addresses outside the harness's buffers). Its output must be exactly what
cpu/launch_list.cpp's parse_launch_lists accepts: the CTest `kernels_python_launch_list` runs it
and parses the result with the C++ parser. Nothing here is trusted: kfleet-measure re-checks the
list as it checks anything from the job's process.
"""

MAGIC = "kfleet-launch-list 1"
U32 = (1 << 32) - 1
U64 = (1 << 64) - 1


class LaunchError(Exception):
    """A value that cannot be written in the launch list's grammar (the recorder's bug or a
    kernel it cannot describe): the message says which."""


def _word(text, what):
    # A kernel name is one word of the grammar: no spaces, no line breaks, printable ASCII.
    if not text or any(c <= " " or c > "~" for c in text):
        raise LaunchError(f"{what} {text!r} is not one printable word (the launch list cannot hold it)")
    return text


def _line(text, what):
    if "\n" in text or "\r" in text:
        raise LaunchError(f"{what} {text!r} has a line break")
    return text


def _u(v, bits, what):
    if not isinstance(v, int) or isinstance(v, bool) or v < 0 or v > (1 << bits) - 1:
        raise LaunchError(f"{what} {v!r} is not an unsigned {bits}-bit integer")
    return v


def _i32(v, what):
    if not isinstance(v, int) or isinstance(v, bool) or v < -(1 << 31) or v > (1 << 31) - 1:
        raise LaunchError(f"{what} {v!r} is not a 32-bit integer")
    return v


def hex_bytes(b):
    return "-" if not b else bytes(b).hex()


class Kernel:
    kind = "kernel"

    def __init__(self, function, grid, block, cluster=(0, 0, 0), shared_bytes=0,
                 max_dynamic_shared=-1, non_portable_cluster=-1, slots=(), params=b""):
        self.function = function
        self.grid, self.block, self.cluster = tuple(grid), tuple(block), tuple(cluster)
        self.shared_bytes = shared_bytes
        self.max_dynamic_shared = max_dynamic_shared
        self.non_portable_cluster = non_portable_cluster
        self.slots = [tuple(s) for s in slots]  # (offset, size), cuFuncGetParamInfo's view
        self.params = bytes(params)

    def text(self):
        f = _word(self.function, "kernel name")
        dims = []
        for name, d in (("grid", self.grid), ("block", self.block), ("cluster", self.cluster)):
            if len(d) != 3:
                raise LaunchError(f"kernel {f}: {name} wants 3 dimensions, got {len(d)}")
            dims += [str(_u(x, 32, f"kernel {f} {name}")) for x in d]
        for off, size in self.slots:
            _u(off, 32, f"kernel {f} parameter offset")
            _u(size, 32, f"kernel {f} parameter size")
            if off + size > len(self.params):
                raise LaunchError(f"kernel {f}: a parameter slot lies past the parameter bytes")
        slots = ",".join(f"{o}:{s}" for o, s in self.slots) or "-"
        return " ".join(["kernel", f] + dims + [
            str(_u(self.shared_bytes, 32, f"kernel {f} shared bytes")),
            str(_i32(self.max_dynamic_shared, f"kernel {f} max dynamic shared")),
            str(_i32(self.non_portable_cluster, f"kernel {f} non-portable cluster")),
            slots, hex_bytes(self.params)])


class Memset:
    kind = "memset"

    def __init__(self, dst, pitch, width, height, value, element_size):
        self.dst, self.pitch, self.width, self.height = dst, pitch, width, height
        self.value, self.element_size = value, element_size

    def bytes(self):
        if self.height > 1:
            return self.pitch * (self.height - 1) + self.width * self.element_size
        return self.width * self.element_size

    def text(self):
        if self.element_size not in (1, 2, 4):
            raise LaunchError("memset element size must be 1, 2 or 4")
        return "memset 0x%x %d %d %d %d %d" % (
            _u(self.dst, 64, "memset dst"), _u(self.pitch, 64, "memset pitch"),
            _u(self.width, 64, "memset width"), _u(self.height, 64, "memset height"),
            _u(self.value, 32, "memset value"), self.element_size)


class Memcpy:
    kind = "memcpy"

    def __init__(self, dst, src, nbytes):
        self.dst, self.src, self.nbytes = dst, src, nbytes

    def text(self):
        return "memcpy 0x%x 0x%x %d" % (_u(self.dst, 64, "memcpy dst"), _u(self.src, 64, "memcpy src"),
                                        _u(self.nbytes, 64, "memcpy bytes"))


class Empty:
    kind = "empty"

    def text(self):
        return "empty"


class Buffer:
    def __init__(self, name, va, nbytes):
        self.name, self.va, self.nbytes = name, va, nbytes

    def contains(self, lo, n):
        return lo >= self.va and n <= self.nbytes and lo - self.va <= self.nbytes - n


class LaunchList:
    def __init__(self, what, status=0, args=b"", buffers=(), nodes=(), edges=()):
        self.what, self.status, self.args = what, status, bytes(args)
        self.buffers, self.nodes = list(buffers), list(nodes)
        # (from, to, port): port 0 an ordinary dependency, 1 or 2 CUDA's programmatic one from
        # that port of the upstream kernel (cpu/launch_list.hpp, LaunchEdge)
        self.edges = [tuple(e) + (0,) * (3 - len(e)) for e in edges]


EDGE_PORT_WORDS = {0: "", 1: " programmatic", 2: " launch-completion"}


def edge_port(dep_type, from_port, to_port):
    """A captured edge's port as the list writes it (CUgraphEdgeData's fields): 0 an ordinary
    dependency, 1 or 2 a programmatic one from that port of the upstream kernel, -1 a kind of edge
    that replay does not take (replay.cu's gpuGraphGetEdges makes the same choice)."""
    if dep_type == 0 and from_port == 0 and to_port == 0:
        return 0
    if dep_type == 1 and to_port == 0 and from_port in (1, 2):
        return from_port
    return -1


def serialize(lists):
    out = [MAGIC]
    for l in lists:
        out.append("list " + _line(l.what, "recording name"))
        out.append("status %d" % _i32(l.status, "status"))
        out.append("args " + hex_bytes(l.args))
        for b in l.buffers:
            out.append("buffer 0x%x %d %s" % (_u(b.va, 64, "buffer address"), _u(b.nbytes, 64, "buffer size"),
                                            _line(b.name, "buffer name")))
        for n in l.nodes:
            out.append(n.text())
        for a, b, port in l.edges:
            if a >= len(l.nodes) or b >= len(l.nodes):
                raise LaunchError(f"edge {a} -> {b} names a node the list does not have")
            if port not in EDGE_PORT_WORDS:
                raise LaunchError(f"edge {a} -> {b} has port {port}, which replay does not take")
            out.append("edge %d %d%s" % (_u(a, 32, "edge"), _u(b, 32, "edge"), EDGE_PORT_WORDS[port]))
        out.append("end")
    return "\n".join(out) + "\n"


def _where(x, y, is_address=None):
    """Where two kernel operations of one name differ: the launch shape, or the 8-byte words of
    their parameters that differ (an address the launch allocated differently is the usual one),
    with both values, the first four; with `is_address`, each value that is an address says so."""
    if getattr(x, "kind", "") != "kernel" or getattr(y, "kind", "") != "kernel" or x.function != y.function:
        return ""
    if (x.grid, x.block, x.shared_bytes) != (y.grid, y.block, y.shared_bytes):
        return (f" (grid {list(x.grid)} block {list(x.block)} shared {x.shared_bytes} then grid "
                f"{list(y.grid)} block {list(y.block)} shared {y.shared_bytes})")
    px, py = bytes(x.params), bytes(y.params)

    def word(v):
        return f"0x{v:x}" + (" (an address)" if is_address is not None and is_address(v) else "")
    found = []
    for o in range(0, min(len(px), len(py)), 8):
        if px[o:o + 8] != py[o:o + 8]:
            slot = next((k for k, (off, size) in enumerate(x.slots) if off <= o < off + size), -1)
            found.append(f"parameter {slot} byte {o - x.slots[slot][0] if slot >= 0 else o}: "
                         f"{word(int.from_bytes(px[o:o + 8], 'little'))} then "
                         f"{word(int.from_bytes(py[o:o + 8], 'little'))}")
    if not found:
        return ""
    more = f"; {len(found) - 4} more words differ" if len(found) > 4 else ""
    return " (" + "; ".join(found[:4]) + more + ")"


def only_non_addresses_differ(x, y, is_address, in_buffers=None):
    """True when kernel operations x and y are one library kernel launched alike whose parameters
    differ only in words that point nowhere outside the harness's buffers: what a library leaves
    uninitialised or sets from the host's state, as
    - a fixed-size parameter struct's unused entries (torch's cat passes CatArrInputTensorMetadata,
      room for 64 input pointers, whatever the count of its inputs; the OffsetCalculator in
      torch's elementwise lambdas, room for 25 dimensions, of which rope's multiply fills 3 and
      leaves the host stack's values, stale tensor addresses among them, in the rest: 20 words
      differed between two captures on an H200);
    - an empty functor passed by value, one byte that nothing writes (torch's elementwise kernels
      take their lambda so, as pow's x*x has), and the padding inside a captured lambda;
    - a scalar or a struct's tail too short to hold an address.
    An address is looked for as check_addresses does: in every 8-byte-aligned word of a slot of 8
    bytes or more. A differing word is a difference when either value is an address outside the
    buffers (`in_buffers`: the addresses the harness gave the launch), as are a kernel the job
    built and the launch shape. Replay runs the first capture, whose every word check_addresses
    vetted, and the second is held to the same rule word by word; every timed run's output is
    checked as for any kernel."""
    if getattr(x, "kind", "") != "kernel" or getattr(y, "kind", "") != "kernel":
        return False
    if any((getattr(n, "origin", None) or {}).get("origin") != "library" for n in (x, y)):
        return False
    same = ("function", "grid", "block", "cluster", "shared_bytes", "max_dynamic_shared",
            "non_portable_cluster", "slots")
    if any(getattr(x, k) != getattr(y, k) for k in same) or len(x.params) != len(y.params):
        return False
    px, py = bytes(x.params), bytes(y.params)
    for o in range(len(px)):
        if px[o] == py[o]:
            continue
        slot = next(((off, size) for off, size in x.slots if off <= o < off + size), None)
        if slot is None:
            return False
        w = o - o % 8  # the 8-byte-aligned word holding byte o
        if slot[1] >= 8 and slot[0] <= w and w + 8 <= slot[0] + slot[1]:
            for v in (int.from_bytes(px[w:w + 8], "little"), int.from_bytes(py[w:w + 8], "little")):
                if is_address(v) and not (in_buffers is not None and in_buffers(v)):
                    return False
    return True


def difference(a, b, is_address=None):
    """'' when a and b enqueue the same work, else the first difference, in the C++ words.
    With `is_address` (a word -> whether it is an address the launch may use or the device's),
    a library kernel's words that point nowhere outside both captures' buffers are not a
    difference (only_non_addresses_differ)."""
    if a.status != b.status:
        return f"the launch function returned {a.status} then {b.status}"
    if len(a.nodes) != len(b.nodes):
        return f"{len(a.nodes)} operations the first time, {len(b.nodes)} the second"
    def in_buffers(v):
        return any(buf.contains(v, 0) for buf in a.buffers) and any(buf.contains(v, 0) for buf in b.buffers)

    for i, (x, y) in enumerate(zip(a.nodes, b.nodes)):
        tx, ty = x.text(), y.text()
        if tx != ty:
            if is_address is not None and only_non_addresses_differ(x, y, is_address, in_buffers):
                continue
            return f"operation {i} was '{tx[:120]}' then '{ty[:120]}'{_where(x, y, is_address)}"
    if sorted(a.edges) != sorted(b.edges):
        return "the dependencies between operations differ"
    return ""


def check_addresses(l, arena_lo, arena_hi, is_device_address=None):
    """'' when every address the list uses lies in its buffers (cpu/launch_list.cpp's rule:
    every 8-byte-aligned word of a parameter slot of 8 bytes or more is a possible address)."""
    def inside(lo, n):
        return any(b.contains(lo, n) for b in l.buffers)

    for i, n in enumerate(l.nodes):
        where = f"operation {i}"
        if n.kind == "kernel":
            for s, (off, size) in enumerate(n.slots):
                if size < 8:
                    continue
                o = off
                while o + 8 <= off + size:
                    if o % 8 == 0:
                        v = int.from_bytes(n.params[o:o + 8], "little")
                        if not inside(v, 0):
                            what = (f"kernel {n.function} ({where}), parameter {s} byte {o - off}, "
                                    f"holds 0x{v:x}")
                            if arena_lo <= v < arena_hi:
                                return what + ": an address in the harness's reserved range but outside its buffers"
                            if is_device_address is not None and is_device_address(v):
                                return (what + ": device memory the harness did not give the launch (only the "
                                        "args' tensors, the workspace and what torch allocates during the launch "
                                        "may be used; memory allocated before the launch, or outside torch's "
                                        "allocator, cannot be replayed)")
                    o += 8
        elif n.kind == "memset":
            if not inside(n.dst, n.bytes()):
                return f"memset ({where}) writes 0x{n.dst:x} +{n.bytes()}: outside the harness's buffers"
        elif n.kind == "memcpy":
            if not inside(n.dst, n.nbytes) or not inside(n.src, n.nbytes):
                return (f"memcpy ({where}) between 0x{n.src:x} and 0x{n.dst:x}: outside the harness's "
                        "buffers (host memory or the launch's own allocations cannot be replayed)")
    return ""
