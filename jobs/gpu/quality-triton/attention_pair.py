"""scripts/gpu-python-proof.sh's Triton pair for the verdict's resolution: kernels/triton/attention.py's
seed kernel (64 x 32 tiles), and the same kernel made slower by a known amount: the main loop's
per-tile work repeated for EXTRA_TILES more tiles of keys, folded into the output at a weight of
zero the compiler cannot see (correct, and slower in proportion). At S=3200 the main loop runs
100 tiles of 32 keys per program, every program alike, so one extra tile is +1 % of the loop's
work whatever the waves (jobs/gpu/quality-triton/slow1.yaml).
"""
import triton
import triton.language as tl

import kfleet

LOG2E = 1.4426950408889634


@triton.jit
def _kfleet_attn_fwd(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, qk_scale, v_scale,
                     HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     CAUSAL: tl.constexpr, KV_FP8: tl.constexpr, EXTRA_TILES: tl.constexpr,
                     extra_w):
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
    if EXTRA_TILES > 0:
        # The slow copy: the main loop's per-tile work again for EXTRA_TILES tiles of keys, folded
        # into the output at weight extra_w, 0.0 at run time but a value the compiler cannot see.
        m2 = tl.full([BLOCK_M], float("-inf"), tl.float32)
        l2 = tl.zeros([BLOCK_M], tl.float32)
        acc2 = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
        for t in range(0, EXTRA_TILES):
            offs_n = t * BLOCK_N + tl.arange(0, BLOCK_N)
            col_ok = offs_n[:, None] < seq_len
            k = tl.load(k_ptr + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=col_ok, other=0.0)
            v = tl.load(v_ptr + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=col_ok, other=0.0)
            if KV_FP8:
                k = k.to(tl.float16)
                v = v.to(tl.float16)
            s = tl.dot(q, tl.trans(k)) * qk_scale
            s = tl.where(offs_n[None, :] < seq_len, s, float("-inf"))
            m_new = tl.maximum(m2, tl.max(s, 1))
            alpha = tl.exp2(m2 - m_new)
            p = tl.exp2(s - m_new[:, None])
            l2 = l2 * alpha + tl.sum(p, 1)
            acc2 = acc2 * alpha[:, None] + tl.dot(p.to(tl.float16), v)
            m2 = m_new
        out = out + extra_w * (acc2 / l2[:, None])
    tl.store(o_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], out.to(tl.float16), mask=row_ok)


def _launch(args, extra_tiles):
    if (args.q_dtype != "fp16" or args.out_dtype != "fp16" or args.head_dim not in (16, 32, 64, 128)
            or args.kv_dtype not in ("fp16", "fp8_e4m3")):
        return kfleet.UNSUPPORTED
    grid = (triton.cdiv(args.seq_len, 64), args.batch * args.heads)
    qk_scale = args.softmax_scale * args.q_scale * args.k_scale * LOG2E
    _kfleet_attn_fwd[grid](args.q, args.k, args.v, args.o, args.seq_len, qk_scale, args.v_scale,
                           HEAD_DIM=args.head_dim, BLOCK_M=64, BLOCK_N=32,
                           CAUSAL=bool(args.causal), KV_FP8=args.kv_dtype == "fp8_e4m3",
                           EXTRA_TILES=extra_tiles, extra_w=0.0, num_warps=4, num_stages=2)
    return kfleet.OK


def kfleet_attention_launch(args, stream):
    """The seed kernel as it is (EXTRA_TILES=0 compiles the extra work away)."""
    return _launch(args, 0)


def kfleet_attention_launch_slow1(args, stream):
    """One extra tile of keys per program: +1 % of the main loop's work at S=3200."""
    return _launch(args, 1)
