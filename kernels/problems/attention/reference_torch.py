"""kfleet's PyTorch reference of the attention family (PYTHON.md, "kfleet's PyTorch
references"): F.scaled_dot_product_attention (flash, cuDNN or memory-efficient, as torch picks),
fp8 K/V dequantised to fp16 first, the result written to the output buffer. Recorded eager and
under torch.compile."""
import torch
import torch.nn.functional as F

import kfleet


def kfleet_attention_launch(args, stream):
    if args.out_dtype != "fp16" or args.q_dtype != "fp16":
        return kfleet.UNSUPPORTED
    k, v = args.k, args.v
    if args.kv_dtype == "fp8_e4m3":
        k = k.to(torch.float16) * args.k_scale
        v = v.to(torch.float16) * args.v_scale
    o = F.scaled_dot_product_attention(args.q, k, v, is_causal=bool(args.causal),
                                       scale=args.softmax_scale)
    args.o.copy_(o)
    return kfleet.OK
