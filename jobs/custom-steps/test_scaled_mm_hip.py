"""Correctness step of the custom job: runs scaled_mm.co (built by `make`) on random inputs and
compares with a float32 reference. Exit status 0 passes, anything else fails the gate."""
import ctypes
import sys

import torch

hip = ctypes.CDLL("libamdhip64.so")


def check(status: int, what: str) -> None:
    if status != 0:
        raise SystemExit(f"{what} failed with hipError {status}")


def main() -> int:
    torch.manual_seed(0)
    m = n = k = 256
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)

    module, func = ctypes.c_void_p(), ctypes.c_void_p()
    check(hip.hipModuleLoad(ctypes.byref(module), b"scaled_mm.co"), "hipModuleLoad")
    check(hip.hipModuleGetFunction(ctypes.byref(func), module, b"gemm_f16"), "hipModuleGetFunction")
    args = [ctypes.c_void_p(a.data_ptr()), ctypes.c_void_p(b.data_ptr()),
            ctypes.c_void_p(c.data_ptr()), ctypes.c_int(m), ctypes.c_int(n), ctypes.c_int(k)]
    argv = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.pointer(x), ctypes.c_void_p) for x in args])
    check(hip.hipModuleLaunchKernel(func, n // 16, m // 16, 1, 16, 16, 1, 0, None, argv, None),
          "hipModuleLaunchKernel")
    torch.cuda.synchronize()

    ref = a.float() @ b.float()
    err = (c.float() - ref).abs().max().item()
    print(f"max_abs={err:.4g}")
    return 0 if err <= 0.25 else 1


if __name__ == "__main__":
    sys.exit(main())
