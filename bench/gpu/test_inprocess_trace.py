"""The in-process yardstick's arithmetic on a made-up torch.profiler trace whose answer is known
(bench/gpu/inprocess_python_kernel.py: each launch's device time, span and gaps between kernels,
as kfleet-measure's bench line has them). No torch, no GPU.
   python3 -m unittest bench/gpu/test_inprocess_trace.py"""
import os
import sys
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

    def test_launches_of_other_lengths_have_no_gaps_by_position(self):
        ev = launch(0, 0, [(10, 10), (20.4, 10)], 7) + launch(1, 100, [(110, 10)], 8)
        s = m.summarize(m.launch_times({"traceEvents": ev}))
        self.assertEqual(s["kernels_per_launch"], [1, 2])
        self.assertEqual(s["edge_gaps_us"], [])


if __name__ == "__main__":
    unittest.main()
