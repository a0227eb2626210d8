"""kfleet's PyTorch reference of fp8_block_gemm@2 (PYTHON.md, "kfleet's PyTorch references"): the
operands dequantised with their 1x128 and 128x128 block scales, then one bf16 GEMM writing the
output buffer: what a model without a block-scaled fp8 kernel runs in eager mode. Recorded eager
and under torch.compile (which fuses the dequantisation)."""
import torch


def kfleet_problem_launch(args, stream):
    K = args.K
    a_scale = args.a_scale.repeat_interleave(128, dim=1)[:, :K]                 # [M, K]
    b_scale = args.b_scale.repeat_interleave(128, dim=0)[:args.N]               # [N, cdiv(K)]
    b_scale = b_scale.repeat_interleave(128, dim=1)[:, :K]                      # [N, K]
    a = (args.a.to(torch.float32) * a_scale).to(torch.bfloat16)
    b = (args.b.to(torch.float32) * b_scale).to(torch.bfloat16)
    torch.matmul(a, b.t(), out=args.out)
