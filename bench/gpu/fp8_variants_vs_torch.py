#!/usr/bin/env python3
"""Several builds of fp8_sdpa against torch fp16 SDPA (cuDNN) at B4 H16 S2048 D64, timed the way
suite_vs_torch.py times the suite (triton do_bench, L2 cleared, median), in interleaved rounds
so that the builds share the GPU's state: each round times every build once, each beside its own
cuDNN run. Each build is NAME:SOURCE:DEFINES (DEFINES comma-separated, may be empty; an entry
that starts with '-' is passed to nvcc as it is, e.g. --ptxas-options=-dlcm=cg; SOURCE any
file implementing the ABI, e.g. kernels/suite/fp8_sdpa.cu or an edited copy of it). Builds are
compiled in parallel for the device's arch. Prints one line per timing, then a summary: the
median per build and its speed as % of cuDNN's median over the whole run.

usage: fp8_variants_vs_torch.py [--rounds N] [--build DIR] NAME:SOURCE:DEFS [...]
example: fp8_variants_vs_torch.py base:kernels/suite/fp8_sdpa.cu: \\
             xor:kernels/suite/fp8_sdpa.cu:USE_SMEM_SWIZZLE_XOR=1
"""
import argparse
import ctypes
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import suite_vs_torch as svt  # noqa: E402
import torch  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("builds", nargs="+", help="NAME:SOURCE:DEFINES")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--build", default="/tmp/kfleet-fp8-variants")
    a = ap.parse_args()
    repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    builds = []
    for b in a.builds:
        parts = b.split(":", 2)
        if len(parts) != 3 or not parts[0] or not os.path.isfile(parts[1]):
            ap.error(f"'{b}': want NAME:SOURCE:DEFINES with an existing SOURCE")
        builds.append(parts)
    os.makedirs(a.build, exist_ok=True)
    major, minor = torch.cuda.get_device_capability()
    arch = f"{major}{minor}" + ("a" if major == 9 else "")
    procs = {}
    for name, src, defs in builds:
        cmd = ["nvcc", "-std=c++17", "-O3", f"-gencode=arch=compute_{arch},code=sm_{arch}",
               "-shared", "-Xcompiler", "-fPIC", f"-I{repo}/kernels/harness/include"]
        cmd += [d if d.startswith("-") else f"-D{d}" for d in defs.split(",") if d]
        cmd += [src, "-o", f"{a.build}/{name}.so"]
        procs[name] = subprocess.Popen(cmd)
    libs = {}
    for name, p in procs.items():
        if p.wait() != 0:
            print(f"fp8_variants_vs_torch: {name} failed to build", file=sys.stderr)
            return 2
        libs[name] = ctypes.CDLL(f"{a.build}/{name}.so")
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, sm_{arch}", flush=True)
    times = {name: [] for name, _, _ in builds}
    errs, cudnn = {}, []
    for r in range(a.rounds):
        for name, _, _ in builds:
            us_k, us_t, _, err, _ = svt.attention(libs[name], 4, 16, 2048, 64, fp8=True)
            times[name].append(us_k)
            cudnn.append(us_t)
            errs[name] = err
            print(f"round {r} {name}: {us_k:.2f} us (cuDNN {us_t:.2f}) rel_l2 {err:.2e}", flush=True)
    ref = statistics.median(cudnn)
    print(f"cuDNN fp16 median {ref:.2f} us over {len(cudnn)} runs")
    for name, _, _ in builds:
        m = statistics.median(times[name])
        print(f"{name:12s} {m:8.2f} us  {100 * ref / m:5.1f} % of cuDNN's speed  "
              f"runs {', '.join(f'{t:.2f}' for t in times[name])}  rel_l2 {errs[name]:.2e}")
    bad = [n for n, e in errs.items() if not e < 0.02]
    if bad:
        print("fp8_variants_vs_torch: output differs from torch's: " + ", ".join(bad),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
