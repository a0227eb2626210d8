"""A Triton attention kernel for kfleet's attention family (kernels/harness/PYTHON.md):
flash-attention's online softmax, one program per (BLOCK_M queries, batch *
head), fp16 Q/K/V/O or fp8 e4m3 K/V with their scales, causal or not. Written for kfleet, plain
and readable rather than tuned; it is the Triton seed of the fa-s512 campaign
(jobs/fa-s512-triton/) and the honest control of the Python exploit corpus.

    kernel: {family: attention, language: triton, sources: ["lib:triton/attention.py"]}
"""
import triton
import triton.language as tl

import kfleet

LOG2E = 1.4426950408889634


@triton.jit
def _kfleet_attn_fwd(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, qk_scale, v_scale,
                     HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     CAUSAL: tl.constexpr, KV_FP8: tl.constexpr):
    pid_m = tl.program_id(0)
    base = tl.program_id(1).to(tl.int64) * seq_len * HEAD_DIM  # (b, h) slab of [B, H, S, D]
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = offs_m[:, None] < seq_len
    q = tl.load(q_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], mask=row_ok, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    hi = seq_len
    if CAUSAL:
        hi = tl.minimum(seq_len, (pid_m + 1) * BLOCK_M)
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        col_ok = offs_n[:, None] < seq_len
        k = tl.load(k_ptr + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=col_ok, other=0.0)
        v = tl.load(v_ptr + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=col_ok, other=0.0)
        if KV_FP8:
            k = k.to(tl.float16)
            v = v.to(tl.float16)
        s = tl.dot(q, tl.trans(k)) * qk_scale  # log2 domain: softmax scale, K's scale, log2(e)
        valid = offs_n[None, :] < seq_len
        if CAUSAL:
            valid = valid & (offs_n[None, :] <= offs_m[:, None])
        s = tl.where(valid, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    out = acc * (v_scale / l_i[:, None])
    tl.store(o_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], out.to(tl.float16), mask=row_ok)


def _launch(args, block_m, block_n, num_warps, num_stages):
    if (args.q_dtype != "fp16" or args.out_dtype != "fp16" or args.head_dim not in (16, 32, 64, 128)
            or args.kv_dtype not in ("fp16", "fp8_e4m3")):
        return kfleet.UNSUPPORTED
    grid = (triton.cdiv(args.seq_len, block_m), args.batch * args.heads)
    qk_scale = args.softmax_scale * args.q_scale * args.k_scale * LOG2E
    _kfleet_attn_fwd[grid](args.q, args.k, args.v, args.o, args.seq_len, qk_scale, args.v_scale,
                           HEAD_DIM=args.head_dim, BLOCK_M=block_m, BLOCK_N=block_n,
                           CAUSAL=bool(args.causal), KV_FP8=args.kv_dtype == "fp8_e4m3",
                           num_warps=num_warps, num_stages=num_stages)
    return kfleet.OK


def kfleet_attention_launch(args, stream):
    """The seed: 64 x 32 tiles. Enqueued on torch's current stream, which is `stream`."""
    return _launch(args, block_m=64, block_n=32, num_warps=4, num_stages=2)


def kfleet_attention_launch_bn64(args, stream):
    """The campaign's first step, one change: 64-key tiles (kernel.entry selects it)."""
    return _launch(args, block_m=64, block_n=64, num_warps=4, num_stages=2)


def kfleet_attention_launch_bn16(args, stream):
    """A step that must be rejected (jobs/fa-s512-triton/step3-triton-bn16.yaml): 16-key tiles,
    unpipelined: four times the iterations of bn64, each with the same online-softmax rescale."""
    return _launch(args, block_m=64, block_n=16, num_warps=4, num_stages=1)
