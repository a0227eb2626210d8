#!/usr/bin/env python3
"""Times a kfleet attention kernel outside kfleet: the job's source built as a shared library,
called through ctypes on torch tensors, timed by triton.testing.do_bench (CUDA events, L2
cleared before each run, median). The second opinion that measure-quality.sh compares the
agent's median with.
usage: do_bench_attention.py LIB.so B H S D [repeats]"""
import ctypes
import sys

import torch
import triton.testing


class AttentionArgs(ctypes.Structure):  # kernels/harness/include/kfleet_harness/abi.h
    _fields_ = [("abi_version", ctypes.c_int), ("batch", ctypes.c_int), ("heads", ctypes.c_int),
                ("seq_len", ctypes.c_int), ("head_dim", ctypes.c_int), ("causal", ctypes.c_int),
                ("q_dtype", ctypes.c_int), ("kv_dtype", ctypes.c_int), ("out_dtype", ctypes.c_int),
                ("q", ctypes.c_void_p), ("k", ctypes.c_void_p), ("v", ctypes.c_void_p),
                ("o", ctypes.c_void_p), ("q_scale", ctypes.c_float), ("k_scale", ctypes.c_float),
                ("v_scale", ctypes.c_float), ("softmax_scale", ctypes.c_float),
                ("workspace", ctypes.c_void_p), ("workspace_bytes", ctypes.c_size_t)]


def main():
    lib = ctypes.CDLL(sys.argv[1])
    b, h, s, d = (int(x) for x in sys.argv[2:6])
    repeats = int(sys.argv[6]) if len(sys.argv) > 6 else 3
    launch = lib.kfleet_attention_launch
    launch.argtypes = [ctypes.POINTER(AttentionArgs), ctypes.c_void_p]
    launch.restype = ctypes.c_int
    torch.manual_seed(0)
    q, k, v = (torch.rand(b, h, s, d, device="cuda", dtype=torch.float16) * 2 - 1 for _ in range(3))
    o = torch.empty_like(q)
    ws = torch.zeros(64 << 20, device="cuda", dtype=torch.uint8)
    args = AttentionArgs(1, b, h, s, d, 0, 0, 0, 0, q.data_ptr(), k.data_ptr(), v.data_ptr(),
                         o.data_ptr(), 1.0, 1.0, 1.0, d ** -0.5, ws.data_ptr(), ws.numel())
    stream = torch.cuda.current_stream().cuda_stream

    def run():
        if launch(ctypes.byref(args), stream) != 0:
            raise SystemExit("kernel refused the shape")

    run()
    torch.cuda.synchronize()
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float())
    err = ((o.float() - ref).norm() / ref.norm()).item()
    for _ in range(repeats):
        ms = triton.testing.do_bench(run, warmup=500, rep=3000, return_mode="median")
        print(f'{{"metric": "do_bench_median_us", "value": {ms * 1000:.3f}, "rel_l2_vs_sdpa": {err:.2e}}}',
              flush=True)


if __name__ == "__main__":
    main()
