"""kfleet's PyTorch reference of rope@2 (PYTHON.md, "kfleet's PyTorch references"): NeoX-style
rotary embedding as models write it in eager mode (cos and sin gathered by position, the halves
rotated), written back into q and k, which the problem rotates in place. Recorded eager and under
torch.compile."""
import torch


def _rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def kfleet_problem_launch(args, stream):
    half = args.D // 2
    cs = args.cos_sin[args.positions.long()]          # [T, D]: cos in the first half, sin after
    cos = torch.cat((cs[:, :half], cs[:, :half]), dim=-1).unsqueeze(1)   # [T, 1, D]
    sin = torch.cat((cs[:, half:], cs[:, half:]), dim=-1).unsqueeze(1)
    for t in (args.q, args.k):
        x = t.float()
        t.copy_(x * cos + _rotate_half(x) * sin)
