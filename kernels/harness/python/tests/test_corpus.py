"""The Python kernels and the exploit corpus hang together, read without importing torch or
triton: every row of jobs/exploits/python/expected.tsv names a job file, every job's entry is a
function of its module, and the example kernels define the launch functions their jobs name."""
import ast
import glob
import os
import re
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))


def functions(path):
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}


def job_field(path, key):
    with open(path, encoding="utf-8") as f:
        m = re.search(r"^\s+%s:\s*(.+)$" % key, f.read(), re.M)
    return m.group(1).strip() if m else ""


class Corpus(unittest.TestCase):
    def test_every_row_names_a_job_whose_entry_the_module_defines(self):
        d = os.path.join(ROOT, "jobs", "exploits", "python")
        defined = functions(os.path.join(d, "exploits.py"))
        rows = []
        with open(os.path.join(d, "expected.tsv"), encoding="utf-8") as f:
            for line in f:
                if line.strip() and not line.startswith("#"):
                    rows.append(line.rstrip("\n").split("\t"))
        self.assertEqual(sorted(r[0] for r in rows), sorted(os.path.basename(p) for p in glob.glob(os.path.join(d, "*.yaml"))))
        for file, state, gate, reason in rows:
            entry = job_field(os.path.join(d, file), "entry")
            self.assertIn(entry, defined, file)
            self.assertEqual(job_field(os.path.join(d, file), "language"), "triton", file)
            self.assertIn(state, ("passed", "rejected"), file)
            re.compile(reason)

    def test_the_example_kernels_define_what_their_jobs_launch(self):
        self.assertTrue({"kfleet_attention_launch", "kfleet_attention_launch_bn64"} <=
                        functions(os.path.join(ROOT, "kernels", "triton", "attention.py")))
        self.assertIn("kfleet_scaled_mm_launch", functions(os.path.join(ROOT, "kernels", "torch", "scaled_mm_ext.py")))
        step2 = os.path.join(ROOT, "jobs", "fa-s512-triton", "step2-triton-bn64.yaml")
        self.assertEqual(job_field(step2, "entry"), "kfleet_attention_launch_bn64")


class References(unittest.TestCase):
    def test_every_problem_has_a_torch_reference_with_its_abis_entry(self):
        """kfleet's PyTorch reference of each problem (PYTHON.md): the file the agent records
        eager and under torch.compile, defining the launch entry of the problem's ABI."""
        entry = {"attention": "kfleet_attention_launch", "scaled_mm": "kfleet_scaled_mm_launch"}
        problems = sorted(os.path.dirname(p) for p in
                          glob.glob(os.path.join(ROOT, "kernels", "problems", "*", "problem.yaml")))
        self.assertGreaterEqual(len(problems), 8)
        for d in problems:
            ref = os.path.join(d, "reference_torch.py")
            self.assertTrue(os.path.exists(ref), ref)
            with open(os.path.join(d, "problem.yaml"), encoding="utf-8") as f:
                m = re.search(r"^abi:\s*(\w+)", f.read(), re.M)
            want = entry.get(m.group(1) if m else "generic", "kfleet_problem_launch")
            self.assertIn(want, functions(ref), ref)


if __name__ == "__main__":
    unittest.main()
