"""The Python recorder's parts that need no torch and no GPU: the launch-list writer, the
refusals, the device-code files, the command line on recorded data (CTest kernels_python_recorder,
run as `python3 -B -m unittest discover`; it writes only into temporary folders)."""
import copy
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.dirname(HERE)
sys.path.insert(0, PYDIR)

from kfleet_rec import fatbin, launch_list as ll, recording  # noqa: E402

FIXTURE = os.path.join(PYDIR, "..", "..", "tests", "python", "attention_capture.json")
ARENA = (0x600000000000, 0x610000000000)


def fake_cubin(tag=b"a"):
    # An ELF header saying EM_CUDA (190): what device_code.cpp takes whole.
    head = bytearray(64)
    head[:4] = b"\x7fELF"
    head[4] = 2
    struct.pack_into("<H", head, 18, 190)
    return bytes(head) + tag * 32


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        with open(FIXTURE, encoding="utf-8") as f:
            self.doc = json.load(f)
        with open(os.path.join(self.dir, "attn.cubin"), "wb") as f:
            f.write(fake_cubin())
        for pair in self.doc["captures"]:
            for cap in pair:
                for n in cap["nodes"]:
                    if n.get("image"):
                        n["image"] = os.path.join(self.dir, n["image"])

    def tearDown(self):
        self.tmp.cleanup()

    def run_doc(self, doc=None, dev=None):
        doc = doc or self.doc
        plan = recording.read_plan(doc["plan"])
        return recording.record_from_captures(plan, doc["captures"], os.path.join(self.dir, "l.txt"),
                                              os.path.join(self.dir, "dc"), dev)

    def refused(self, doc, dev=None):
        with self.assertRaises(recording.Refusal) as cm:
            self.run_doc(doc, dev)
        return str(cm.exception)

    def kernel(self, doc, cap=None):
        caps = [c for pair in doc["captures"] for c in pair]
        return [c["nodes"][0] for c in (caps if cap is None else [caps[cap]])]


class Writer(Base):
    def test_the_recorded_attention_kernel_becomes_the_lists_text(self):
        s = self.run_doc()
        self.assertEqual(s["lists"], 1)
        self.assertEqual(s["operations"], 2)
        self.assertEqual(len(s["device_code"]), 1)
        self.assertTrue(s["device_code"][0].endswith(".cubin"))
        with open(os.path.join(self.dir, "l.txt"), encoding="ascii") as f:
            text = f.read().splitlines()
        self.assertEqual(text[0], "kfleet-launch-list 1")
        self.assertEqual(text[1], "list benchmark")
        self.assertEqual(text[2], "status 0")
        self.assertIn("buffer 0x600000000000 1048576 input Q", text)
        kernel = [t for t in text if t.startswith("kernel ")][0]
        self.assertTrue(kernel.startswith(
            "kernel _attn_fwd 4 16 1 128 1 1 0 0 0 98304 98304 0 "
            "0:8,8:8,16:8,24:8,32:4,36:4,40:4,48:8,56:8 0000000000600000"))
        self.assertIn("memset 0x600000800000 0 4096 1 0 1", text)
        self.assertEqual(text[-2:], ["edge 1 0", "end"])

    def test_values_the_grammar_cannot_hold_are_named(self):
        with self.assertRaisesRegex(ll.LaunchError, "not one printable word"):
            ll.Kernel("two words", (1, 1, 1), (1, 1, 1)).text()
        with self.assertRaisesRegex(ll.LaunchError, "unsigned 32-bit"):
            ll.Kernel("k", (1 << 32, 1, 1), (1, 1, 1)).text()
        with self.assertRaisesRegex(ll.LaunchError, "past the parameter bytes"):
            ll.Kernel("k", (1, 1, 1), (1, 1, 1), slots=[(0, 8)], params=b"1234").text()
        with self.assertRaisesRegex(ll.LaunchError, "line break"):
            ll.serialize([ll.LaunchList("a\nb")])

    def test_only_the_recorder_modules_import_without_torch(self):
        code = ("import sys; sys.path.insert(0, %r); import kfleet, kfleet_record; "
                "from kfleet_rec import launch_list, recording, fatbin, cuda; "
                "print('torch' in sys.modules, 'triton' in sys.modules)") % PYDIR
        out = subprocess.run([sys.executable, "-B", "-c", code], capture_output=True, text=True)
        self.assertEqual(out.stdout.strip(), "False False", out.stderr)


def _one_kernel_lists(x, y):
    """Two captures of one launch, each the one kernel operation given."""
    return ll.LaunchList("benchmark", nodes=[x]), ll.LaunchList("benchmark", nodes=[y])


def _in_arena(v):
    return ARENA[0] <= v < ARENA[1]


class Refusals(Base):
    def test_a_kernel_without_device_code_is_refused_by_name(self):
        doc = copy.deepcopy(self.doc)
        for n in self.kernel(doc):
            n["image"], n["image_note"] = None, "no module the process loaded defines it"
            n["function"] = "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
        msg = self.refused(doc)
        self.assertIn("kernel sm90_xmma_gemm_f16f16", msg)
        self.assertIn("(operation 0) has no device code", msg)
        self.assertIn("(no module the process loaded defines it)", msg)
        self.assertIn("seen through CUPTI as they load", msg)
        self.assertTrue(msg.startswith("replay mode refused the launch (benchmark): "))

    def test_a_kernel_the_driver_cannot_name_is_refused(self):
        doc = copy.deepcopy(self.doc)
        for n in self.kernel(doc):
            n["function"] = None
        self.assertIn("whose name the driver does not give back", self.refused(doc))

    def test_a_host_node_is_refused(self):
        doc = copy.deepcopy(self.doc)
        for pair in doc["captures"]:
            for cap in pair:
                cap["nodes"][1] = {"type": "host"}
        self.assertIn("the launch enqueued a host function node", self.refused(doc))

    def test_other_node_types_are_named(self):
        for t, words in (("graph", "a child graph"), ("event_record", "an event record"),
                         ("mem_alloc", "stream-ordered allocation"), ("conditional", "conditional")):
            doc = copy.deepcopy(self.doc)
            for pair in doc["captures"]:
                for cap in pair:
                    cap["nodes"][1] = {"type": t}
            self.assertIn(words, self.refused(doc))

    def test_an_address_outside_the_buffers_is_refused(self):
        doc = copy.deepcopy(self.doc)
        for n in self.kernel(doc):
            p = bytearray.fromhex(n["params"])
            p[0:8] = (0x600100000000).to_bytes(8, "little")
            n["params"] = p.hex()
        msg = self.refused(doc)
        self.assertIn("kernel _attn_fwd (operation 0), parameter 0 byte 0, holds 0x600100000000", msg)
        self.assertIn("reserved range but outside its buffers", msg)

    def test_the_launchs_own_allocation_is_refused(self):
        doc = copy.deepcopy(self.doc)
        for n in self.kernel(doc):
            p = bytearray.fromhex(n["params"])
            p[24:32] = (0x7f0000200000).to_bytes(8, "little")  # a tensor made before the launch
            n["params"] = p.hex()
        msg = self.refused(doc, dev=lambda v: v == 0x7f0000200000)
        self.assertIn("parameter 3 byte 0, holds 0x7f0000200000", msg)
        self.assertIn("memory allocated before the launch, or outside torch's allocator", msg)

    def test_two_recordings_that_differ_say_which_parameter_and_both_values(self):
        doc = copy.deepcopy(self.doc)
        pair = doc["captures"][0]
        for n in pair[1]["nodes"]:
            if n["type"] == "kernel":
                p = bytearray.fromhex(n["params"])
                p[8:16] = (int.from_bytes(p[8:16], "little") + 0x200000).to_bytes(8, "little")
                n["params"] = p.hex()
        msg = self.refused(doc)
        self.assertIn("two recordings of the same args differ", msg)
        self.assertRegex(msg, r"\(parameter 1 byte 0: 0x[0-9a-f]+ \(an address\) then 0x[0-9a-f]+ \(an address\)\)")

    def test_an_allocation_that_moves_between_captures_is_named_by_its_address(self):
        doc = copy.deepcopy(self.doc)
        for i, n in enumerate(self.kernel(doc)):  # torch.empty under capture: a new pool each time
            p = bytearray.fromhex(n["params"])
            p[24:32] = (0x7f0000200000 + i * 0x100000).to_bytes(8, "little")
            n["params"] = p.hex()
        msg = self.refused(doc, dev=lambda v: v >= 0x7f0000000000)
        self.assertIn("device memory the harness did not give the launch", msg)

    def test_a_library_kernels_uninitialised_struct_entries_are_not_a_difference(self):
        # torch's cat: a by-value struct with room for 64 input pointers, the unused ones left as
        # the stack had them, so two captures of the same launch differ there.
        def cat(garbage, origin="library", scalar=7, entry=0x600000600000):
            params = entry.to_bytes(8, "little") + garbage.to_bytes(8, "little") + bytes(8)
            params += scalar.to_bytes(4, "little") + bytes(4)
            k = ll.Kernel("CatArrayBatchedCopy", (4, 1, 1), (128, 1, 1), slots=[(0, 24), (24, 4)],
                          params=params)
            k.origin = {"origin": origin}
            return k

        self.assertEqual(ll.difference(*_one_kernel_lists(cat(0xedec5826), cat(0x3ab4b24c)), _in_arena), "")
        # Strict without the address test, for a kernel the job built (its scalars too), for an
        # entry that is an address in either capture, and for a launch shape.
        self.assertIn("parameter 0 byte 8", ll.difference(*_one_kernel_lists(cat(0xedec5826), cat(0x3ab4b24c))))
        self.assertNotEqual(ll.difference(*_one_kernel_lists(cat(1, "job"), cat(2, "job")), _in_arena), "")
        self.assertNotEqual(ll.difference(*_one_kernel_lists(cat(1, "job", scalar=1), cat(1, "job", scalar=2)),
                                          _in_arena), "")
        self.assertEqual(ll.difference(*_one_kernel_lists(cat(1, scalar=1), cat(1, scalar=2)), _in_arena), "")
        self.assertNotEqual(ll.difference(*_one_kernel_lists(cat(1), cat(0x600000700000)), _in_arena), "")
        self.assertNotEqual(ll.difference(*_one_kernel_lists(cat(1), cat(1, entry=0x600000700000)), _in_arena), "")
        wide = cat(2)
        wide.grid = (8, 1, 1)
        self.assertNotEqual(ll.difference(*_one_kernel_lists(cat(1), wide), _in_arena), "")

    def test_a_library_kernels_empty_functor_byte_is_not_a_difference(self):
        # torch's pow(x, 2): vectorized_elementwise_kernel(int N, lambda f, Array<char*, 2> data),
        # the lambda empty, so its one byte is whatever the host stack held (seen on an H200).
        def pow2(functor_byte, origin="library", n=4096):
            params = n.to_bytes(4, "little") + bytes([functor_byte]) + bytes(3)
            params += (0x600000600000).to_bytes(8, "little") + (0x600000700000).to_bytes(8, "little")
            k = ll.Kernel("vectorized_elementwise_kernel", (4, 1, 1), (128, 1, 1),
                          slots=[(0, 4), (4, 1), (8, 16)], params=params)
            k.origin = {"origin": origin}
            return k

        self.assertEqual(ll.difference(*_one_kernel_lists(pow2(0x10), pow2(0xa7)), _in_arena), "")
        # The same byte, or a different count, in a kernel the job built is still a difference.
        self.assertIn("then", ll.difference(*_one_kernel_lists(pow2(0x10, "job"), pow2(0xa7, "job")), _in_arena))
        self.assertNotEqual(ll.difference(*_one_kernel_lists(pow2(1, "job", n=4096), pow2(1, "job", n=4095)),
                                          _in_arena), "")

    def test_a_library_kernels_words_too_short_for_an_address_are_not_a_difference(self):
        # On an H200 (torch 2.11): pow's functor and a lambda's last four bytes in rope's multiply
        # (elementwise_kernel(int N, lambda f), f 100 bytes) held host-stack values that changed
        # from one capture to the next. Four bytes hold no address, so they cannot move the work.
        def mul(tail, lead=0x600000600000, origin="library"):
            params = (4096).to_bytes(4, "little") + bytes(4)
            params += lead.to_bytes(8, "little") + bytes(88) + tail.to_bytes(4, "little")
            k = ll.Kernel("elementwise_kernel", (4, 1, 1), (128, 1, 1), slots=[(0, 4), (8, 100)],
                          params=params)
            k.origin = {"origin": origin}
            return k

        self.assertEqual(ll.difference(*_one_kernel_lists(mul(0x13168b20), mul(0x135aa840)), _in_arena), "")
        self.assertIn("parameter 1 byte 96: 0x13168b20 then 0x135aa840",
                      ll.difference(*_one_kernel_lists(mul(0x13168b20, origin="job"), mul(0x135aa840, origin="job")),
                                    _in_arena))
        # A pointer the lambda holds that differs is still a difference, and the refusal lists
        # every word that differs, saying which values are addresses.
        self.assertIn("parameter 1 byte 0: 0x600000600000 (an address) then 0x600000700000 (an address); "
                      "parameter 1 byte 96: 0x1 then 0x2)",
                      ll.difference(*_one_kernel_lists(mul(1), mul(2, lead=0x600000700000)), _in_arena))

    def test_a_library_kernels_stale_addresses_inside_the_buffers_are_not_a_difference(self):
        # On an H200 (torch 2.11): rope's multiply, elementwise_kernel(int N, lambda f), its
        # OffsetCalculator filled for 3 of 25 dimensions; the rest held the host stack's values,
        # 20 words that differed between captures, stale tensor addresses among them.
        scratch = ll.Buffer("python_scratch", 0x600000600000, 0x200000)

        def mul(stale, origin="library"):
            params = (4096).to_bytes(4, "little") + bytes(4) + stale.to_bytes(8, "little") + bytes(8)
            k = ll.Kernel("elementwise_kernel", (4, 1, 1), (128, 1, 1), slots=[(0, 4), (8, 16)],
                          params=params)
            k.origin = {"origin": origin}
            return ll.LaunchList("benchmark", buffers=[scratch], nodes=[k])

        self.assertEqual(ll.difference(mul(0x600000612340), mul(0x7ffe00000057), _in_arena), "")
        self.assertEqual(ll.difference(mul(0x600000612340), mul(0x6000006ff000), _in_arena), "")
        # An address in the reserved range outside the buffers, or a kernel the job built, is
        # still a difference, and the refusal says which value is an address.
        self.assertIn("0x600000612340 (an address) then 0x600000900000 (an address)",
                      ll.difference(mul(0x600000612340), mul(0x600000900000), _in_arena))
        self.assertNotEqual(ll.difference(mul(0x600000612340, "job"), mul(0x7ffe00000057, "job"), _in_arena), "")

    def test_each_operation_replay_cannot_hold_is_refused_in_the_recorders_words(self):
        # Node by node, each in both captures: a kernel whose parameters came through 'extra', a
        # parameter layout past the node's bytes, a grid the list cannot write, a memset of
        # 8-byte elements, a 2-D copy; then an edge to a node the graph does not have.
        def kernel(**kw):
            return lambda n: n.update(kw) if n["type"] == "kernel" else None

        def memset(**kw):
            return lambda n: n.update(kw) if n["type"] == "memset" else None
        cases = [
            (kernel(extra=True), "kernel _attn_fwd was given its parameters through 'extra'"),
            (kernel(slots=[[0, 1 << 20]]), "kernel _attn_fwd: its parameter layout (cuFuncGetParamInfo) "
                                           "lies past the parameter bytes the node holds"),
            (kernel(grid=[4, 16]), "operation 0: kernel _attn_fwd: grid wants 3 dimensions, got 2"),
            (memset(element_size=8), "a memset whose element size is not 1, 2 or 4"),
            (lambda n: n.update({"type": "memcpy", "dst": 0x600000600000, "src": 0x600000700000,
                                 "bytes": 64, "flat": False}) if n["type"] == "memset" else None,
             "a memcpy with arrays or more than one dimension"),
        ]
        for change, words in cases:
            doc = copy.deepcopy(self.doc)
            for pair in doc["captures"]:
                for cap in pair:
                    for n in cap["nodes"]:
                        change(n)
            msg = self.refused(doc)
            self.assertIn(words, msg)
            self.assertTrue(msg.startswith("replay mode refused the launch ("), msg)
        doc = copy.deepcopy(self.doc)
        for pair in doc["captures"]:
            for cap in pair:
                cap["edges"] = [[0, len(cap["nodes"]), 0]]
        self.assertIn("an edge to a node outside the captured graph", self.refused(doc))

    def test_a_memset_outside_the_buffers_is_refused(self):
        doc = copy.deepcopy(self.doc)
        for pair in doc["captures"]:
            for cap in pair:
                cap["nodes"][1]["width"] = 1 << 30
        self.assertIn("memset (operation 1) writes 0x600000800000 +1073741824", self.refused(doc))

    def test_a_pitched_memset_is_bounded_by_its_last_row(self):
        # Rows of 4096 bytes, 16 MiB apart, in the 64 MiB workspace: four rows end inside it,
        # the fifth row starts past 64 MiB.
        for height, inside in ((4, True), (5, False)):
            doc = copy.deepcopy(self.doc)
            for pair in doc["captures"]:
                for cap in pair:
                    cap["nodes"][1].update(pitch=1 << 24, height=height)
            if inside:
                self.run_doc(doc)
            else:
                self.assertIn("memset (operation 1) writes 0x600000800000 +67112960", self.refused(doc))

    def test_a_host_copy_is_refused(self):
        doc = copy.deepcopy(self.doc)
        for pair in doc["captures"]:
            for cap in pair:
                cap["nodes"][1] = {"type": "memcpy", "dst": 0x600000600000, "src": 0x7ffd0000,
                                   "bytes": 64, "flat": True}
        self.assertIn("host memory or the launch's own allocations", self.refused(doc))

    def test_two_recordings_that_differ_are_refused(self):
        doc = copy.deepcopy(self.doc)
        self.kernel(doc, cap=1)[0]["grid"] = [5, 16, 1]
        msg = self.refused(doc)
        self.assertIn("two recordings of the same args differ (operation 0 was 'kernel _attn_fwd 4 16 1", msg)
        self.assertIn("then 'kernel _attn_fwd 5 16 1", msg)

    def test_a_launch_counter_in_the_status_is_refused(self):
        doc = copy.deepcopy(self.doc)
        doc["captures"][0][1]["status"] = 1
        self.assertIn("the launch function returned 0 then 1", self.refused(doc))

    def test_nothing_enqueued_is_refused(self):
        doc = copy.deepcopy(self.doc)
        for cap in doc["captures"][0]:
            cap["nodes"], cap["edges"] = [], []
        self.assertIn("enqueued nothing into `stream`", self.refused(doc))

    def test_unsupported_with_nothing_enqueued_is_recorded(self):
        doc = copy.deepcopy(self.doc)
        for cap in doc["captures"][0]:
            cap["nodes"], cap["edges"], cap["status"] = [], [], 1
        self.assertEqual(self.run_doc(doc)["operations"], 0)

    def test_a_failed_capture_is_refused_with_the_error(self):
        doc = copy.deepcopy(self.doc)
        doc["captures"][0][0] = {"error": "RuntimeError: CUDA error: operation not permitted when stream is capturing"}
        msg = self.refused(doc)
        self.assertIn("could not be captured (RuntimeError: CUDA error: operation not permitted", msg)
        self.assertIn("a Triton autotuner benchmarking inside the launch", msg)

    def test_an_exception_in_the_launch_is_named(self):
        doc = copy.deepcopy(self.doc)
        doc["captures"][0][0] = {"error": "NameError: name 'x' is not defined", "raised": True}
        self.assertIn("NameError: name 'x' is not defined", self.refused(doc))

    def test_a_status_that_is_not_an_int_is_refused(self):
        doc = copy.deepcopy(self.doc)
        for cap in doc["captures"][0]:
            cap["status"] = "fast"
        self.assertIn("returned 'fast'", self.refused(doc))

    def test_one_name_from_two_images_is_refused(self):
        doc = copy.deepcopy(self.doc)
        other = os.path.join(self.dir, "other.cubin")
        with open(other, "wb") as f:
            f.write(fake_cubin(b"b"))
        for pair in doc["captures"]:
            for cap in pair:
                k2 = copy.deepcopy(cap["nodes"][0])
                k2["image"] = other
                cap["nodes"].append(k2)
                cap["edges"].append([0, 2])
        self.assertIn("kernel _attn_fwd comes from two different device-code images", self.refused(doc))

    def test_a_programmatic_edge_keeps_its_port_and_an_unknown_kind_is_refused(self):
        # A library kernel launched with programmatic stream serialization is captured with a
        # programmatic edge to the next kernel (CUgraphEdgeData type 1, from port 1 or 2).
        self.assertEqual([ll.edge_port(0, 0, 0), ll.edge_port(1, 1, 0), ll.edge_port(1, 2, 0)], [0, 1, 2])
        self.assertEqual([ll.edge_port(1, 0, 0), ll.edge_port(0, 1, 0), ll.edge_port(1, 1, 1), ll.edge_port(2, 0, 0)],
                         [-1, -1, -1, -1])
        doc = copy.deepcopy(self.doc)
        for pair in doc["captures"]:
            for cap in pair:
                cap["nodes"].append(copy.deepcopy(cap["nodes"][0]))
                cap["edges"].append([0, 2, 1])
        self.run_doc(doc)
        with open(os.path.join(self.dir, "l.txt"), encoding="ascii") as f:
            self.assertIn("edge 0 2 programmatic", f.read().splitlines())
        for pair in doc["captures"]:
            for cap in pair:
                cap["edges"][-1] = [0, 2, -1]
        self.assertIn("a graph edge of a kind replay does not take", self.refused(doc))
        # The same edge once programmatic and once ordinary: the two recordings differ.
        doc["captures"][0][0]["edges"][-1] = [0, 2, 1]
        doc["captures"][0][1]["edges"][-1] = [0, 2, 0]
        self.assertIn("the dependencies between operations differ", self.refused(doc))

    def test_nothing_is_written_when_refused(self):
        doc = copy.deepcopy(self.doc)
        for n in self.kernel(doc):
            n["image"] = None
        self.refused(doc)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "l.txt")))


class DeviceCode(unittest.TestCase):
    @staticmethod
    def fatbin(body):
        return struct.pack("<IHHQ", fatbin.FATBIN_MAGIC, 1, 16, len(body)) + body

    @staticmethod
    def elf_with(section):
        # A minimal 64-bit ELF: header, the section's bytes, the names, three section headers.
        names = b"\0.shstrtab\0.nv_fatbin\0"
        data_off = 64
        names_off = data_off + len(section)
        shoff = (names_off + len(names) + 7) & ~7
        out = bytearray(shoff + 3 * 64)
        out[:4] = b"\x7fELF"
        out[4] = 2
        struct.pack_into("<Q", out, 0x28, shoff)
        struct.pack_into("<HHH", out, 0x3A, 64, 3, 1)
        out[data_off:data_off + len(section)] = section
        out[names_off:names_off + len(names)] = names
        struct.pack_into("<IIQQQQ", out, shoff + 64, 1, 3, 0, 0, names_off, len(names))
        struct.pack_into("<IIQQQQ", out, shoff + 128, 11, 1, 0, 0, data_off, len(section))
        return bytes(out)

    def test_an_extensions_section_splits_into_its_fatbins(self):
        a, b = self.fatbin(b"x" * 20), self.fatbin(b"y" * 8)
        section = a + b"\0" * 4 + b"\0" * 8 + b
        elf = self.elf_with(section)
        self.assertEqual(fatbin.nv_fatbin_section(elf), section)
        self.assertEqual(fatbin.split_fatbins(section), [a, b])

    def test_bytes_that_are_not_fatbins_give_none(self):
        self.assertEqual(fatbin.split_fatbins(b"not a fatbin at all....."), [])
        self.assertIsNone(fatbin.nv_fatbin_section(b"\x7fELF" + b"\0" * 10))
        self.assertIsNone(fatbin.nv_fatbin_section(b"plain text"))
        truncated = self.fatbin(b"z" * 40)[:30]
        self.assertEqual(fatbin.split_fatbins(truncated), [])


class CommandLine(Base):
    def cli(self, doc):
        path = os.path.join(self.dir, "capture.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        p = subprocess.run([sys.executable, "-B", os.path.join(PYDIR, "kfleet_record.py"),
                            "--from-captures", path, "--record", os.path.join(self.dir, "l.txt"),
                            "--device-code-dir", os.path.join(self.dir, "dc")],
                           capture_output=True, text=True)
        return p.returncode, [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]

    def test_recorded_then_refused(self):
        rc, lines = self.cli(self.doc)
        self.assertEqual(rc, 0)
        self.assertEqual(lines[-1]["type"], "recorded")
        doc = copy.deepcopy(self.doc)
        for pair in doc["captures"]:
            for cap in pair:
                cap["nodes"][1] = {"type": "host"}
        rc, lines = self.cli(doc)
        self.assertEqual(rc, 4)
        self.assertEqual(lines[-1]["phase"], "record")
        self.assertEqual(lines[-1]["recording"], "benchmark")
        self.assertIn("a host function node", lines[-1]["message"])

    def test_a_teardown_that_aborts_cannot_hide_the_last_line(self):
        # torch's pools and the job's own atexit handlers run at interpreter exit; the recorder
        # leaves before them, so its refusal or its recording is what the agent reads.
        path = os.path.join(self.dir, "capture.json")
        refused = copy.deepcopy(self.doc)
        for pair in refused["captures"]:
            for cap in pair:
                cap["nodes"][1] = {"type": "host"}
        for doc, want_rc, want in ((self.doc, 0, "recorded"), (refused, 4, "error")):
            with open(path, "w", encoding="utf-8") as f:
                json.dump(doc, f)
            argv = ["kfleet_record.py", "--from-captures", path, "--record",
                    os.path.join(self.dir, "l.txt"), "--device-code-dir", os.path.join(self.dir, "dc")]
            code = ("import atexit, os, runpy, sys; atexit.register(os.abort); sys.argv = %r; "
                    "runpy.run_path(%r, run_name='__main__')" % (argv, os.path.join(PYDIR, "kfleet_record.py")))
            p = subprocess.run([sys.executable, "-B", "-c", code], capture_output=True, text=True)
            self.assertEqual(p.returncode, want_rc, p.stderr[-400:])
            self.assertEqual(json.loads(p.stdout.splitlines()[-1])["type"], want)

    def rec(self, *args):
        """kfleet_record.py with ARGS (not from captures) -> (exit code, its last JSON line)."""
        p = subprocess.run([sys.executable, "-B", os.path.join(PYDIR, "kfleet_record.py"), *args,
                            "--record", os.path.join(self.dir, "l.txt"),
                            "--device-code-dir", os.path.join(self.dir, "dc")],
                           capture_output=True, text=True)
        lines = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
        return p.returncode, lines[-1] if lines else {}

    def measure(self, body):
        """A stand-in kfleet-measure: Python that runs BODY with `plan` the --plan path."""
        path = os.path.join(self.dir, "measure")
        with open(path, "w") as f:
            f.write(f"#!{sys.executable}\nimport json, sys\nplan = sys.argv[sys.argv.index('--plan') + 1]\n"
                    + body)
        os.chmod(path, 0o755)
        return path

    def test_what_a_recording_needs_is_named(self):
        job = ("--source", os.path.join(self.dir, "job.py"))
        rc, m = self.rec(*job, "--language", "triton", "correctness")
        self.assertEqual((rc, m.get("phase")), (2, "usage"))
        self.assertEqual(m["message"], "--measure is required")
        rc, m = self.rec("--measure", "/bin/true", *job, "--language", "cuda", "correctness")
        self.assertEqual((rc, m.get("phase")), (2, "usage"))
        self.assertEqual(m["message"], "--language cuda: triton or torch")

    def test_a_plan_that_fails_is_quoted_from_the_measuring_process(self):
        job = ("--source", os.path.join(self.dir, "job.py"), "--language", "triton", "correctness")
        for code, phase in ((3, "setup"), (2, "usage")):
            m = self.measure('print(json.dumps({"type": "error", "message": "no problem spec softmax@9"}))\n'
                             f"print('a line of its own')\nsys.exit({code})\n")
            rc, last = self.rec("--measure", m, *job)
            self.assertEqual((rc, last.get("phase")), (code, phase))
            self.assertEqual(last["message"], "kfleet-measure --plan failed: no problem spec softmax@9")

    def test_a_family_without_a_python_launch_abi_is_a_setup_error(self):
        m = self.measure('json.dump({"type": "plan", "version": 1, "family": "conv2d", "arena": [0, 1], '
                         '"recordings": []}, open(plan, "w"))\n')
        rc, last = self.rec("--measure", m, "--source", os.path.join(self.dir, "job.py"),
                            "--language", "torch", "correctness")
        self.assertEqual((rc, last.get("phase")), (3, "setup"))
        self.assertEqual(last["message"], "family conv2d has no Python launch ABI yet")

    def test_usage(self):
        p = subprocess.run([sys.executable, "-B", os.path.join(PYDIR, "kfleet_record.py"), "correctness"],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn('"phase":"usage"', p.stdout)


if __name__ == "__main__":
    unittest.main()
