"""scripts/gpu-python-proof.sh's Triton pair for the verdict's resolution: kernels/triton/attention.py's
seed kernel (64 x 32 tiles), and the same kernel made slower by a known amount: its main loop run
for EXTRA_TILES more tiles of keys past the sequence, every one masked (no memory read, scores of
-inf, so the output is unchanged) but computed like any other tile. At S=3200 the loop runs 100
tiles per program, every program alike, so each extra tile is about +1 % of the kernel's work in
the same pipelined loop, with no register or occupancy change. An extra loop after the main one
(this file's first design) cost 6.5 % for one tile: a second accumulator and a loop with its own
prologue changed the kernel, not just its work.

The proof calibrates in-process (bench/gpu/inprocess_python_kernel.py --entries, CUPTI: every
entry in one process, interleaved, each copy paired with the base by round) which entry is
1 % +- 0.3 % slower than the base on the machine at hand and submits that one
(scripts/gpu-python-proof.sh --slow1-entry). On three H200s one tile measured +0.60 to +0.78 %
and two +1.18 to +1.44 %, so a fixed entry does not hold everywhere; a half step (a second tile
in every other head's programs) measured +0.79 %
(docs/evidence/2026-12-02-h200-calib-torch-jobs-eager-refs.log). slow1.yaml names the half step,
slow5.yaml eight tiles (+5.47 to +5.57 %). On H100s one and a half tiles read +0.79 and +0.53 %,
two +0.93 and +1.57 %, each entry then in a process of its own, which alone moved it by up to
0.63 % (docs/evidence/2026-12-06-h100-calib-pair-inproc-python-corpus.log).
"""
import triton
import triton.language as tl

import kfleet

LOG2E = 1.4426950408889634


@triton.jit
def _kfleet_attn_fwd(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, qk_scale, v_scale,
                     HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     CAUSAL: tl.constexpr, KV_FP8: tl.constexpr, EXTRA_TILES: tl.constexpr,
                     ODD_HEADS_ONE_MORE: tl.constexpr):
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
    hi_loop = hi + EXTRA_TILES * BLOCK_N
    if ODD_HEADS_ONE_MORE:  # a half step: one tile more in every other (b, h) slab's programs
        hi_loop = hi_loop + (tl.program_id(1) % 2) * BLOCK_N
    for start_n in range(0, hi_loop, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        col_ok = offs_n[:, None] < seq_len
        k = tl.load(k_ptr + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=col_ok, other=0.0)
        v = tl.load(v_ptr + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=col_ok, other=0.0)
        if KV_FP8:
            k = k.to(tl.float16)
            v = v.to(tl.float16)
        s = tl.dot(q, tl.trans(k)) * qk_scale  # log2 domain: softmax scale, K's scale, log2(e)
        valid = (offs_n[None, :] < seq_len) & (offs_n[None, :] < hi)
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


def _launch(args, extra_tiles, odd_heads_one_more=False):
    if (args.q_dtype != "fp16" or args.out_dtype != "fp16" or args.head_dim not in (16, 32, 64, 128)
            or args.kv_dtype not in ("fp16", "fp8_e4m3")):
        return kfleet.UNSUPPORTED
    grid = (triton.cdiv(args.seq_len, 64), args.batch * args.heads)
    qk_scale = args.softmax_scale * args.q_scale * args.k_scale * LOG2E
    _kfleet_attn_fwd[grid](args.q, args.k, args.v, args.o, args.seq_len, qk_scale, args.v_scale,
                           HEAD_DIM=args.head_dim, BLOCK_M=64, BLOCK_N=32,
                           CAUSAL=bool(args.causal), KV_FP8=args.kv_dtype == "fp8_e4m3",
                           EXTRA_TILES=extra_tiles, ODD_HEADS_ONE_MORE=odd_heads_one_more,
                           num_warps=4, num_stages=2)
    return kfleet.OK


def kfleet_attention_launch(args, stream):
    """The seed kernel as it is (EXTRA_TILES=0: the loop ends at the sequence)."""
    return _launch(args, 0)


def kfleet_attention_launch_slow_t1(args, stream):
    """One masked tile of keys more per program: +0.60 to +0.78 % in-process on H200s (2026-12-02)."""
    return _launch(args, 1)


def kfleet_attention_launch_slow_t2(args, stream):
    """Two masked tiles more: +1.18 to +1.44 % in-process on H200s (2026-12-02)."""
    return _launch(args, 2)


def kfleet_attention_launch_slow_t1h(args, stream):
    """One masked tile more everywhere and a second one in the programs of every other (b, h)
    slab: 1.5 tiles on average, +0.79 % in-process on an H200; slow1.yaml's entry."""
    return _launch(args, 1, True)


def kfleet_attention_launch_slow_t3(args, stream):
    """Three masked tiles more (the calibration's next step)."""
    return _launch(args, 3)


def kfleet_attention_launch_slow_t8(args, stream):
    """Eight masked tiles more: five gave +3.25 % on an H200, so about +5 % (slow5.yaml)."""
    return _launch(args, 8)
