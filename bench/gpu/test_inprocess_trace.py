"""The in-process yardstick's arithmetic on a made-up torch.profiler trace whose answer is known
(bench/gpu/inprocess_python_kernel.py: each launch's device time, span and gaps between kernels,
as kfleet-measure's bench line has them). No torch, no GPU.
   python3 -m unittest bench/gpu/test_inprocess_trace.py"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import inprocess_python_kernel as m  # noqa: E402


def launch(i, t0, kernels, corr):
    """A record_function range kfleet_launch_<i> at t0 with one graph launch (correlation
    `corr`) whose kernels are (start, duration) pairs in microseconds, in any order."""
    ev = [{"cat": "user_annotation", "name": m.LABEL + str(i), "ts": t0, "dur": 5, "tid": 1, "pid": 1},
          {"cat": "cuda_runtime", "name": "cudaGraphLaunch", "ts": t0 + 1, "pid": 1, "args": {"correlation": corr}}]
    for n, (ts, dur) in enumerate(kernels):
        ev.append({"cat": "kernel", "name": "k%d" % n, "ts": ts, "dur": dur, "args": {"correlation": corr}})
    return ev


class InProcessTrace(unittest.TestCase):
    def test_span_sum_and_gaps_by_position(self):
        # Three kernels a launch: 0.4 us then an overlap of 0.1 us; the second launch 0.2 us later
        # at its first edge. Listed out of order: gaps follow the start order.
        ev = launch(0, 0, [(20.4, 10), (10, 10), (30.3, 5)], 7) + \
             launch(1, 100, [(110, 10), (120.6, 10), (130.5, 5)], 8)
        s = m.summarize(m.launch_times({"traceEvents": ev}))
        self.assertEqual(s["samples"], 2)
        self.assertEqual(s["cupti_median_us"], 25.0)
        self.assertAlmostEqual(s["span_median_us"], 25.4, places=6)  # 25.3 and 25.5
        self.assertEqual(s["kernels_per_launch"], [3])
        self.assertEqual(s["edge_gaps_us"], [0.5, -0.1])

    def test_without_launch_calls_each_run_between_the_scripts_own_work_is_a_launch(self):
        # CUPTI reported no launch call (a launcher whose driver calls it did not see): the
        # flush before each launch, a call outside every range with its memset, splits the
        # device's work into launches, in the device's order.
        ev = [{"cat": "user_annotation", "name": m.LABEL + str(i), "ts": t, "dur": 5, "tid": 1, "pid": 1}
              for i, t in ((0, 100), (1, 200))]
        for corr, t in ((1, 90), (3, 190)):
            ev += [{"cat": "cuda_runtime", "name": "cudaMemsetAsync", "ts": t, "pid": 1, "args": {"correlation": corr}},
                   {"cat": "gpu_memset", "name": "Memset", "ts": t + 5, "dur": 2, "args": {"correlation": corr}}]
        ev += [{"cat": "kernel", "name": "k0", "ts": 121, "dur": 4, "args": {"correlation": 2}},
               {"cat": "kernel", "name": "k1", "ts": 110, "dur": 10, "args": {"correlation": 2}},
               {"cat": "kernel", "name": "k0", "ts": 210, "dur": 9, "args": {"correlation": 4}}]
        names = []
        got = m.launch_times({"traceEvents": ev}, names)
        self.assertEqual([(t[0], t[1], t[2], t[3]) for t in got], [(14.0, 15.0, ["k0", "k1"], 2), (9.0, 9.0, ["k0"], 1)])
        self.assertEqual(names, [])  # no range holds them: none is named

    def test_each_kernels_launch_configuration_is_reported(self):
        # Two launches of one kernel; the second ran with another grid (a config tuned again).
        ev = launch(0, 0, [(10, 10)], 7) + launch(1, 100, [(110, 10)], 8)
        ks = [e for e in ev if e["cat"] == "kernel"]
        ks[0]["args"].update({"grid": [256, 1, 1], "block": [64, 1, 1], "registers per thread": 32,
                              "shared memory": 64})
        ks[1]["args"].update({"grid": [2048, 1, 1], "block": [256, 1, 1]})
        s = m.summarize(m.launch_times({"traceEvents": ev}))
        self.assertEqual(s["kernel_configs"], [
            {"name": "k0", "grid": "2048,1,1", "block": "256,1,1", "regs": "", "smem": ""},
            {"name": "k0", "grid": "256,1,1", "block": "64,1,1", "regs": 32, "smem": 64}])
        raw = m.summarize(m.raw_launch_times([(0, 1_000, 10)], [(0, 5_000)]))
        self.assertEqual(raw["kernel_configs"], [])  # raw CUPTI: no names, no configs

    def test_recorded_configs_are_held_against_the_in_process_ones(self):
        import launch_configs as lc
        rec = lc.recorded("kfleet-launch-list 1\nlist benchmark\n"
                          "kernel _Z3fooi 256 1 1 64 1 1 0 0 0 64 49152 0 0:8 00\n"
                          "kernel triton_red_0 1024 1 1 512 1 1 0 0 0 0 0 0 0:8 00\nend\n")
        self.assertEqual(rec, [("_Z3fooi", "256,1,1", "64,1,1"), ("triton_red_0", "1024,1,1", "512,1,1")])
        names = {"_Z3fooi": "foo(int)"}
        dm = lambda ns: [names.get(n, n) for n in ns]  # noqa: E731
        same = [{"name": "foo(int)", "grid": "256,1,1", "block": "64,1,1"},
                {"name": "triton_red_0", "grid": "1024,1,1", "block": "512,1,1"},
                {"name": "memset32", "grid": "8,1,1", "block": "512,1,1"}]  # the driver's: left out
        self.assertEqual(lc.compare(rec, same, dm), "launch configs the same (2 kernels)")
        tuned = same[:1] + [{"name": "triton_red_0", "grid": "256,1,1", "block": "64,1,1"}]
        self.assertEqual(lc.compare(rec, tuned, dm), "LAUNCH CONFIGS DIFFER: triton_red_0 replay grid "
                         "1024,1,1 block 512,1,1, in-process grid 256,1,1 block 64,1,1")
        self.assertEqual(lc.compare(rec, same[1:], dm), "launch configs the same (1 kernels); 1 of 2 names not matched")
        self.assertEqual(lc.compare(rec, [], dm), "launch configs: none reported in-process")

    def test_the_command_line_reads_the_list_and_the_last_in_process_configs_with_cxxfilt(self):
        # As gpu-torch-proof.sh runs it: the recording's launch list, the in-process run's
        # output (its last kernel_configs line counts), mangled names through the host's c++filt.
        import shutil
        self.assertIsNotNone(shutil.which("c++filt"), "no c++filt (binutils) on PATH")
        with tempfile.TemporaryDirectory() as d:
            lst, out = os.path.join(d, "launches.txt"), os.path.join(d, "inproc.out")
            with open(lst, "w") as f:
                f.write("kfleet-launch-list 1\nlist benchmark\n"
                        "kernel _Z3fooi 256 1 1 64 1 1 0 0 0 64 49152 0 0:8 00\nend\n")
            with open(out, "w") as f:
                for grid in ("8,1,1", "256,1,1"):
                    f.write("noise\n" + json.dumps({"kernel_configs": [
                        {"name": "foo(int)", "grid": grid, "block": "64,1,1"}]}) + "\n")
            p = subprocess.run([sys.executable, "-B", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "launch_configs.py"), lst, out], capture_output=True, text=True)
            self.assertEqual((p.returncode, p.stdout.strip()), (0, "launch configs the same (1 kernels)"), p.stderr)

    def test_executed_configs_are_held_against_the_in_process_ones(self):
        import launch_configs as lc
        k = {"name": "_Z3fooi", "grid": [2048, 1, 1], "block": [256, 1, 1], "regs": 32, "shared_static": 0,
             "shared_dynamic": 32, "shared_executed": 32768, "carveout_requested": -1, "local_per_thread": 0}
        harness = dict(k, name="_ZN6kfleet7harness4fill")  # the harness's own: not in-process
        self.assertEqual(lc.compare_executed([k, harness], [dict(k, count=5)]),
                         "executed configs (CUPTI) the same for 1 of 1 kernels (shared memory carve-outs 32768 bytes)")
        self.assertEqual(lc.compare_executed([dict(k, shared_executed=0)], [k]),
                         "executed configs (CUPTI) the same for 0 of 1 kernels (shared memory carve-outs 0 bytes); "
                         "DIFFER: _Z3fooi: shared_executed replay 0 in-process 32768")
        self.assertEqual(lc.compare_executed([harness], [k]), "executed configs: no kernel in both")
        with tempfile.TemporaryDirectory() as d:
            rep, inp = os.path.join(d, "replay.out"), os.path.join(d, "inproc.out")
            with open(rep, "w") as f:
                f.write('{"type":"bench","median_us":1}\n' + json.dumps({"type": "kernel_configs", "kernels": [k]}) + "\n")
            with open(inp, "w") as f:
                f.write(json.dumps({"span_median_us": 1, "cupti_kernel_configs": [dict(k, regs=40)]}) + "\n")
            out = subprocess.run([sys.executable, lc.__file__, "--executed", "replay", rep, inp],
                                 capture_output=True, text=True, check=True).stdout
            self.assertEqual(out, "replay: executed configs (CUPTI) the same for 0 of 1 kernels (shared memory "
                                  "carve-outs 32768 bytes); DIFFER: _Z3fooi: regs replay 32 in-process 40\n")

    def test_launches_of_other_lengths_have_no_gaps_by_position(self):
        ev = launch(0, 0, [(10, 10), (20.4, 10)], 7) + launch(1, 100, [(110, 10)], 8)
        s = m.summarize(m.launch_times({"traceEvents": ev}))
        self.assertEqual(s["kernels_per_launch"], [1, 2])
        self.assertEqual(s["edge_gaps_us"], [])


    def test_raw_cupti_records_group_by_window(self):
        # --cupti-raw: two launches' windows in ns; a fill before the first window and a memset
        # inside the second; records out of order.
        records = [(2_000, 12_000, 10), (-5_000, -1_000, 10), (12_256, 22_256, 10),
                   (100_000, 110_000, 10), (110_000, 110_500, 2), (110_512, 120_512, 10)]
        windows = [(0, 50_000), (90_000, 150_000)]
        s = m.summarize(m.raw_launch_times(records, windows))
        self.assertEqual(s["samples"], 2)
        self.assertEqual(s["kernels_per_launch"], [2, 3])
        self.assertEqual(m.raw_launch_times(records, windows)[0][5], [0.256])
        self.assertEqual(m.raw_launch_times(records, windows)[1][4], 1)  # the memset
        self.assertEqual(m.raw_launch_times(records, windows)[1][5], [0.0, 0.012])
        self.assertAlmostEqual(m.raw_launch_times(records, windows)[0][1], 20.256)
        self.assertEqual(m.raw_launch_times(records, [(200_000, 300_000)]), [])

    def test_paired_slowdowns_hold_each_round_against_its_own_base(self):
        # The base drifts 1 % between rounds; the copy is 1 % slower in each round. Paired, the
        # slowdown is 1 % every round; pooled, the drift would widen it.
        med = {"base": [100.0, 101.0, 100.0], "slow": [101.0, 102.01, 101.0], "gone": [101.0, None, 99.0]}
        s = m.paired_slowdowns(med, "base")
        self.assertNotIn("base", s)
        self.assertEqual(s["slow"]["rounds_pct"], [1.0, 1.0, 1.0])
        self.assertEqual((s["slow"]["median_pct"], s["slow"]["min_pct"], s["slow"]["max_pct"]), (1.0, 1.0, 1.0))
        self.assertEqual((s["gone"]["rounds"], s["gone"]["rounds_left_out"]), (2, 1))
        self.assertEqual((s["gone"]["min_pct"], s["gone"]["max_pct"]), (-1.0, 1.0))
        self.assertEqual(s["gone"]["median_pct"], 0.0)
        self.assertIsNone(m.paired_slowdowns({"b": [None], "c": [1.0]}, "b")["c"]["median_pct"])

    def test_interleaved_trace_is_grouped_by_round_and_entry(self):
        # Two rounds of base (index 0) and slow (1), two launches a block; round 1 runs slow
        # first. The base drifts from 10 to 11 us; slow is 1 % over it in each round.
        ev, corr, t = [], 1, 0.0
        plan = [(0, 0, 10.0), (0, 1, 10.1), (1, 1, 11.11), (1, 0, 11.0)]
        for r, k, dur in plan:
            for i in range(2):
                ev += launch("%d.%d.%d" % (r, k, i), t, [(t + 2, dur)], corr)
                corr, t = corr + 1, t + 100
        x = m.interleaved_result(2, 2, ["base", "slow"], {"traceEvents": ev})["interleaved"]
        self.assertEqual(x["medians_us"], {"base": [10.0, 11.0], "slow": [10.1, 11.11]})
        self.assertEqual(x["slowdowns"]["slow"]["rounds_pct"], [1.0, 1.0])
        # A block with no device work matched: that round is left out, and counted.
        x = m.interleaved_result(3, 2, ["base", "slow"], {"traceEvents": ev})["interleaved"]
        self.assertEqual(x["medians_us"]["slow"][2], None)
        self.assertEqual(x["slowdowns"]["slow"]["rounds_left_out"], 1)

    def test_rounds_rotate_so_each_entry_comes_first_in_turn(self):
        names = ["base", "a", "b"]
        self.assertEqual([m.rotated(names, r)[0] for r in range(4)], ["base", "a", "b", "base"])
        self.assertEqual(sorted(m.rotated(names, 2)), sorted(names))

    def test_entries_options_are_checked(self):
        import subprocess
        me = os.path.join(os.path.dirname(os.path.abspath(__file__)), "inprocess_python_kernel.py")
        for extra, said in ((["--entries", "base"], "a base and at least one copy"),
                            (["--entries", "base,base"], "each named once"),
                            (["--entries", "base,slow", "--graph"], "excludes --entry, --graph"),
                            (["--entries", "base,slow", "--rounds", "0"], "--rounds is at least 1")):
            r = subprocess.run([sys.executable, "-B", me, "--plan", "p", "--source", "s"] + extra,
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 2, extra)
            self.assertIn(said, r.stderr)

    def test_raw_cupti_options_are_checked(self):
        import subprocess
        me = os.path.join(os.path.dirname(os.path.abspath(__file__)), "inprocess_python_kernel.py")
        for extra, said in ((["--cupti-hw-trace"], "goes with --cupti-raw"),
                            (["--cupti-raw", "x.so", "--back-to-back"], "excludes --back-to-back"),
                            (["--cupti-kinds", "runtime"], "--cupti-kinds goes with --cupti-raw"),
                            (["--cupti-raw", "x.so", "--cupti-kinds", "runtime,bogus"],
                             "no kind bogus (known: cuda_event,driver,external_correlation")):
            r = subprocess.run([sys.executable, "-B", me, "--plan", "p", "--source", "s"] + extra,
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 2)
            self.assertIn(said, r.stderr)

    def test_raw_cupti_enables_the_asked_kinds_after_its_own(self):
        import types
        import raw_cupti
        with self.assertRaises(KeyError):  # before any library is loaded
            raw_cupti.RawCupti("no-such-libcupti.so", extra_kinds=["bogus"])
        calls = []
        t = raw_cupti.RawCupti.__new__(raw_cupti.RawCupti)
        t.lib = types.SimpleNamespace(cuptiActivityEnable=lambda k: calls.append(k.value) or 0)
        t.extra_kinds = [raw_cupti.EXTRA_KINDS[k] for k in ("runtime", "synchronization")]
        t.enable()
        self.assertEqual(calls, [10, 1, 2, 5, 38])
        t.lib = types.SimpleNamespace(cuptiActivityEnable=lambda k: 1 if k.value == 38 else 0)
        with self.assertRaisesRegex(RuntimeError, r"cuptiActivityEnable\(38\) failed \(1\)"):
            t.enable()

    def test_extra_kinds_are_cuptis_numbers_and_tracer_truths(self):
        # raw_cupti names its kinds and holds their numbers; tracer_truth.cu (which loads CUPTI
        # without its headers) holds the profiler set as bare numbers. Both against
        # cupti_activity.h of this machine's CUDA: a renumbered or mistyped kind fails here.
        import re
        import raw_cupti
        cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
        header = next((h for h in (os.path.join(cuda, "include", "cupti_activity.h"),
                                   os.path.join(cuda, "extras", "CUPTI", "include", "cupti_activity.h"))
                       if os.path.isfile(h)), None)
        self.assertIsNotNone(header, "no cupti_activity.h under " + cuda + " (set CUDA_HOME)")
        enum = {m.group(1): int(m.group(2)) for m in re.finditer(
            r"CUPTI_ACTIVITY_KIND_([A-Z_]+)\s*=\s*(\d+)", open(header, encoding="utf-8").read())}
        for name, number in raw_cupti.EXTRA_KINDS.items():
            self.assertEqual(enum.get(name.upper()), number, name)
        self.assertEqual((raw_cupti.KERNEL, raw_cupti.MEMCPY, raw_cupti.MEMSET),
                         (enum["CONCURRENT_KERNEL"], enum["MEMCPY"], enum["MEMSET"]))
        here = os.path.dirname(os.path.abspath(__file__))
        src = open(os.path.join(here, "tracer_truth.cu"), encoding="utf-8").read()
        got = re.search(r'kinds == "profiler"\) g_cupti_extra_kinds = \{([0-9, ]+)\}', src)
        self.assertIsNotNone(got, "tracer_truth.cu no longer sets its profiler kinds as a list")
        profiler = ("runtime", "driver", "synchronization", "overhead", "external_correlation")
        self.assertEqual(sorted(int(x) for x in got.group(1).split(",")),
                         sorted(raw_cupti.EXTRA_KINDS[k] for k in profiler))
        # gpu-python-proof's profiler-kinds row asks raw_cupti for the same set by name
        proof = open(os.path.join(here, "..", "..", "scripts", "gpu-python-proof.sh"), encoding="utf-8").read()
        self.assertIn("--cupti-kinds=" + ",".join(profiler), proof)

    def test_a_flush_by_memset_that_cannot_run_says_so(self):
        # No GPU here: cudaMemsetAsync fails (or no libcudart is found), and the flush says so
        # rather than leaving the L2 as it was. A stand-in torch gives the stream and the tensor.
        import types
        fake = types.ModuleType("torch")
        fake.cuda = types.SimpleNamespace(current_stream=lambda: types.SimpleNamespace(cuda_stream=0))
        t = types.SimpleNamespace(data_ptr=lambda: 0x1000, numel=lambda: 64, element_size=lambda: 1)
        saved = sys.modules.get("torch")
        sys.modules["torch"] = fake
        try:
            with self.assertRaisesRegex(RuntimeError, "^--flush-with memset: (cudaMemsetAsync returned [1-9]|no libcudart)"):
                m.memset_async(t, 7)
        finally:
            if saved is None:
                del sys.modules["torch"]
            else:
                sys.modules["torch"] = saved
            m._CUDA_MEMSET.clear()

    def test_interleaved_times_runs_every_block_in_rotated_order_under_one_profiler(self):
        # No torch here: a stand-in torch whose profiler keeps what the launches put in it, and
        # launch functions that each add one kernel of a known duration under the open range.
        import contextlib
        import types
        st = {"t": 0.0, "corr": 0, "events": [], "calls": [], "profilers": 0}

        @contextlib.contextmanager
        def record_function(name):
            t0 = st["t"]
            st["t"] += 1
            yield
            st["t"] += 30
            st["events"].append({"cat": "user_annotation", "name": name, "ts": t0,
                                 "dur": st["t"] - t0, "tid": 1, "pid": 1})

        class Profile:
            def __init__(self, activities):
                self.activities = activities

            def __enter__(self):
                st["profilers"] += 1
                st["events"].clear()
                return self

            def __exit__(self, *exc):
                return False

            def export_chrome_trace(self, path):
                with open(path, "w", encoding="utf-8") as f:
                    json.dump({"traceEvents": list(st["events"])}, f)

        def kernel_of(name, us):
            def fn(_args, _stream):
                st["corr"] += 1
                st["calls"].append(name)
                c = st["corr"]
                st["events"].append({"cat": "cuda_runtime", "name": "cuLaunchKernelEx", "ts": st["t"] + 1,
                                     "pid": 1, "args": {"correlation": c}})
                st["events"].append({"cat": "kernel", "name": name, "ts": st["t"] + 5, "dur": us,
                                     "args": {"correlation": c}})
            return fn

        fake = types.ModuleType("torch")
        fake.cuda = types.SimpleNamespace(synchronize=lambda: None)
        prof = types.ModuleType("torch.profiler")
        prof.ProfilerActivity = types.SimpleNamespace(CPU="cpu", CUDA="cuda")
        prof.profile, prof.record_function = Profile, record_function
        fake.profiler = prof
        saved = {k: sys.modules.get(k) for k in ("torch", "torch.profiler")}
        sys.modules.update({"torch": fake, "torch.profiler": prof})
        try:
            a = types.SimpleNamespace(rounds=2, samples=3, back_to_back=True, gap_ms=0.0, flush_with="fill")
            fns = {"base": kernel_of("base", 10.0), "slow": kernel_of("slow", 10.1)}
            x = m.interleaved_times(a, fns, None, None, [], None, [])["interleaved"]
        finally:
            for k, v in saved.items():
                if v is None:
                    sys.modules.pop(k, None)
                else:
                    sys.modules[k] = v
        self.assertEqual(st["profilers"], 1)
        self.assertEqual(st["calls"], ["base"] * 3 + ["slow"] * 3 + ["slow"] * 3 + ["base"] * 3)
        self.assertEqual(x["medians_us"], {"base": [10.0, 10.0], "slow": [10.1, 10.1]})
        self.assertEqual(x["slowdowns"]["slow"]["rounds_pct"], [1.0, 1.0])


if __name__ == "__main__":
    unittest.main()
