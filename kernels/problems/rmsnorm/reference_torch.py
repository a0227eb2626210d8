"""kfleet's PyTorch reference of rmsnorm@2 (PYTHON.md, "kfleet's PyTorch references"): the
unfused RMSNorm that Llama-family models run in eager mode (upcast, mean of squares, rsqrt,
scale, weight), its last op writing the output buffer. Recorded eager and under torch.compile."""
import torch


def kfleet_problem_launch(args, stream):
    h = args.x.to(torch.float32)
    variance = h.pow(2).mean(-1, keepdim=True)
    h = h * torch.rsqrt(variance + args.eps)
    torch.mul(args.weight, h.to(args.x.dtype), out=args.y)
