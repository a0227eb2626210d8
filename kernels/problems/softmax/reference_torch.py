"""kfleet's PyTorch reference of softmax@2 (PYTHON.md, "kfleet's PyTorch references"): what a
model runs in eager mode, aten's softmax kernel (fp32 accumulation) writing the output buffer.
The agent records it as is (eager) and under torch.compile (max-autotune-no-cudagraphs), and
times both by the same replay as the job's kernel."""
import torch


def kfleet_problem_launch(args, stream):
    torch.ops.aten._softmax.out(args.x, -1, False, out=args.y)
