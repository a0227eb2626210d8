"""A Triton kernel for softmax@2 (a job names it with kernel: {problem: softmax@2, language:
triton, sources: [triton.py]}): one program per row, the row in tiles of BLOCK, an online max and
sum (fp32), then a second pass writing exp(x - max) / sum as fp16. Written for kfleet as the
problem's Triton starter: plain, not tuned."""
import triton
import triton.language as tl

import kfleet


@triton.jit
def _softmax_rows(x_ptr, y_ptr, V, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * V
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, V, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row + offs, mask=offs < V, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        # A lane that has seen no element yet keeps m = -inf: no exp(-inf - -inf) for it.
        alpha = tl.where(m_new == float("-inf"), 0.0, tl.exp(m - m_new))
        s = s * alpha + tl.where(offs < V, tl.exp(x - m_new), 0.0)
        m = m_new
    mx = tl.max(m, 0)
    total = tl.sum(s * tl.exp(m - mx), 0)
    for start in range(0, V, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row + offs, mask=offs < V, other=float("-inf")).to(tl.float32)
        tl.store(y_ptr + row + offs, (tl.exp(x - mx) / total).to(tl.float16), mask=offs < V)


def kfleet_problem_launch(args, stream):
    _softmax_rows[(args.R,)](args.x, args.y, args.V, BLOCK=1024, num_warps=4)
    return kfleet.OK
