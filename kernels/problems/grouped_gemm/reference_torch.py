"""kfleet's PyTorch reference of grouped_gemm@2 (PYTHON.md, "kfleet's PyTorch references"):
torch._grouped_mm, PyTorch's grouped GEMM for MoE experts, with the group ends as its offsets
(no host round trip, so the launch is one recording). It needs K and N to be multiples of 16 and
an sm_90 GPU; elsewhere the reference declines the case (kfleet.UNSUPPORTED), and the verdict says
there is no eager or compile timing for it. Recorded eager and under torch.compile."""
import torch

import kfleet


def kfleet_problem_launch(args, stream):
    if not hasattr(torch, "_grouped_mm") or args.K % 16 or args.N % 16:
        return kfleet.UNSUPPORTED
    out = torch._grouped_mm(args.a, args.w.transpose(-2, -1), offs=args.ends, out_dtype=torch.bfloat16)
    args.out.copy_(out)
    return kfleet.OK
