"""kfleet's PyTorch reference of the scaled_mm family (PYTHON.md, "kfleet's PyTorch references"):
torch._scaled_mm (cuBLASLt's fp8 GEMM) with per-tensor scales and the bias, writing the output
buffer; a K x N B is made column-major first, as eager code must. Recorded eager and under
torch.compile."""
import torch

import kfleet

OUT = {"fp16": torch.float16, "bf16": torch.bfloat16}


def kfleet_scaled_mm_launch(args, stream):
    if args.out_dtype not in OUT or args.a_dtype != "fp8_e4m3" or args.b_dtype != "fp8_e4m3":
        return kfleet.UNSUPPORTED
    dev = args.a.device
    # The scales are the args' values: made on the device by a fill, not copied from the host.
    scale_a = torch.full((), args.a_scale, dtype=torch.float32, device=dev)
    scale_b = torch.full((), args.b_scale, dtype=torch.float32, device=dev)
    b = args.b.t() if args.b_layout == "nk" else args.b.t().contiguous().t()   # [K, N], column-major
    torch._scaled_mm(args.a, b, scale_a=scale_a, scale_b=scale_b, bias=args.bias,
                     out_dtype=OUT[args.out_dtype], out=args.d)
    return kfleet.OK
