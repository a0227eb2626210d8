"""kfleet_rec.inductor_configs without torch: a stand-in for inductor's CachingAutotuner whose
run() makes the calls torch's does (autotune_to_one_config when it has several launchers, then
coordinate_descent_tuning from the one left unless its config was found by it)."""

import os
import sys
import types
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from kfleet_rec import inductor_configs as ic  # noqa: E402


class Config:
    def __init__(self, num_warps, num_stages=1, **kwargs):
        self.kwargs, self.num_warps, self.num_stages = kwargs, num_warps, num_stages
        self.found_by_coordesc = False


class Launcher:
    def __init__(self, config):
        self.config = config


class CachingAutotuner:
    """What run() does in torch 2.8 to 2.11 with several configs, coordinate descent on or off."""

    def __init__(self, name, configs, coordesc=False, fastest=0, descend_to=None):
        self.inductor_meta = {"kernel_name": name, "coordinate_descent_tuning": coordesc}
        self.launchers = [Launcher(c) for c in configs]
        self.fastest, self.descend_to, self.tuned, self.descended = fastest, descend_to, 0, 0

    def autotune_to_one_config(self, *args, **kwargs):
        self.tuned += 1
        self.launchers = [self.launchers[self.fastest]]

    def coordinate_descent_tuning(self, launcher, *args, **kwargs):
        self.descended += 1
        if self.descend_to is None:
            return launcher
        c = self.descend_to
        c.found_by_coordesc = True
        return Launcher(c)

    def run(self, *args, **kwargs):
        if len(self.launchers) > 1:
            self.autotune_to_one_config(*args, **kwargs)
        if not getattr(self.launchers[0].config, "found_by_coordesc", False) and \
                self.inductor_meta.get("coordinate_descent_tuning", False):
            self.launchers = [self.coordinate_descent_tuning(self.launchers[0], *args, **kwargs)]


class InductorConfigsTest(unittest.TestCase):
    def setUp(self):
        # a fresh class per test: pin() patches the class it finds
        cls = type("CachingAutotuner", (CachingAutotuner,), {})
        mod = types.ModuleType("torch._inductor.runtime.triton_heuristics")
        mod.CachingAutotuner = cls
        self.saved = {k: sys.modules.get(k) for k in
                      ("torch", "torch._inductor", "torch._inductor.runtime",
                       "torch._inductor.runtime.triton_heuristics")}
        for k in self.saved:
            sys.modules[k] = types.ModuleType(k)
        sys.modules["torch._inductor.runtime.triton_heuristics"] = mod
        self.CA = cls

    def tearDown(self):
        for k, v in self.saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v

    def test_tuned_says_each_kernels_one_config_and_skips_untuned_ones(self):
        a = self.CA("triton_red_fused_0", [Config(16, R0_BLOCK=2048, XBLOCK=1), Config(8, R0_BLOCK=1024, XBLOCK=1)],
                    fastest=1)
        b = self.CA("triton_poi_fused_1", [Config(4, XBLOCK=256), Config(4, XBLOCK=512)])
        a.run()
        got = ic.tuned()
        self.assertEqual(got["triton_red_fused_0"],
                         {"kwargs": {"R0_BLOCK": 1024, "XBLOCK": 1}, "num_warps": 8, "num_stages": 1})
        self.assertNotIn("triton_poi_fused_1", got)  # never ran: still two candidates
        del a, b

    def test_a_dead_weak_proxy_among_the_objects_is_passed_over(self):
        import weakref

        class Thing:
            pass
        t = Thing()
        proxy = weakref.proxy(t)
        del t  # the proxy stays in gc's objects; isinstance on it raises ReferenceError
        a = self.CA("k0", [Config(4, XBLOCK=64)])
        self.assertIn("k0", ic.tuned())
        del a, proxy

    def test_one_name_with_two_configs_is_not_pinnable(self):
        a = self.CA("k0", [Config(4, XBLOCK=64)])
        b = self.CA("k0", [Config(8, XBLOCK=128)])
        self.assertIsNone(ic.tuned()["k0"])
        del a, b

    def pinned_run(self, recorded, **tuning):
        """Pinned to `recorded`, a reduction with two candidates and coordinate descent on, run once."""
        said = ic.pin(recorded)
        a = self.CA("k0", [Config(8, R0_BLOCK=1024, XBLOCK=1), Config(16, R0_BLOCK=2048, XBLOCK=1)],
                    coordesc=True, **tuning)
        a.run()
        return a, said

    def test_pin_takes_the_recorded_config_and_skips_coordinate_descent(self):
        recorded = {"k0": ic.describe(Config(16, R0_BLOCK=2048, XBLOCK=1))}
        # this process's own tuning would pick the other candidate, and descend from it
        a, said = self.pinned_run(recorded, fastest=0, descend_to=Config(8, R0_BLOCK=512, XBLOCK=1))
        self.assertEqual((a.tuned, a.descended), (0, 0))
        self.assertTrue(ic.same(a.launchers[0].config, recorded["k0"]))
        self.assertEqual(said["k0"], "pinned to the recording's config")
        self.assertEqual(ic.compare(recorded, ic.tuned()), "inductor configs the recording's (1 kernels)")

    def test_a_recorded_config_not_among_the_candidates_is_tuned_here_and_said(self):
        recorded = {"k0": ic.describe(Config(8, R0_BLOCK=512, XBLOCK=1))}  # found by coordinate descent
        a, said = self.pinned_run(recorded, fastest=1, descend_to=Config(16, R0_BLOCK=4096, XBLOCK=1))
        self.assertEqual((a.tuned, a.descended), (1, 1))
        self.assertIn("not among this process's 2 candidates", said["k0"])
        line = ic.compare(recorded, ic.tuned())
        self.assertTrue(line.startswith("INDUCTOR CONFIGS DIFFER (1 of 1)"), line)
        self.assertIn("recorded R0_BLOCK=512,XBLOCK=1 w8 s1, ran R0_BLOCK=4096,XBLOCK=1 w16 s1", line)

    def test_kernels_not_named_tune_as_before(self):
        ic.pin({"other": ic.describe(Config(4, XBLOCK=64))})
        a = self.CA("k0", [Config(4, XBLOCK=64), Config(4, XBLOCK=128)], fastest=1)
        a.run()
        self.assertEqual(a.tuned, 1)
        self.assertEqual(a.launchers[0].config.kwargs, {"XBLOCK": 128})
        self.assertIn("k0: not run here", ic.compare({"k0": ic.describe(Config(4, XBLOCK=64))}, {}))


if __name__ == "__main__":
    unittest.main()
