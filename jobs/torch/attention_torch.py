"""Attention launches as PyTorch users write them, for the attention family (kernels/harness/
PYTHON.md, "torch programs"): each is recorded and replayed like any kernel, its library kernels
(cuDNN, torch's flash attention, aten's fills) from the modules the recorder saw load.

- kfleet_attention_launch_zero_first: the output zeroed with a torch op (aten's fill kernel), then
  kernels/triton/attention.py's Triton kernel (language: triton).
- kfleet_attention_launch_sdpa: F.scaled_dot_product_attention, the result copied into the
  output (language: torch).
- kfleet_attention_launch_compiled: the same attention written as matmuls and a softmax, under
  torch.compile (inductor's Triton kernels and an extern matmul; language: torch).
"""
import os
import sys

import torch
import torch.nn.functional as F

import kfleet

# kernels/triton/attention.py: in a job's bundle as lib/triton/attention.py (the job names it
# lib:triton/attention.py), in the repository two folders up.
_here = os.path.dirname(os.path.abspath(__file__))
for _d in (os.path.join(_here, "..", "..", "kernels", "triton"), os.path.join(_here, "lib", "triton")):
    if os.path.isfile(os.path.join(_d, "attention.py")):
        sys.path.insert(0, _d)
try:
    import attention as _triton_attention
except ImportError:
    _triton_attention = None


def _plain(args):
    return args.q_dtype == "fp16" and args.kv_dtype == "fp16" and args.out_dtype == "fp16"


def kfleet_attention_launch_zero_first(args, stream):
    if _triton_attention is None or not _plain(args):
        return kfleet.UNSUPPORTED
    args.o.zero_()
    return _triton_attention.kfleet_attention_launch(args, stream)


def kfleet_attention_launch_sdpa(args, stream):
    if not _plain(args):
        return kfleet.UNSUPPORTED
    o = F.scaled_dot_product_attention(args.q, args.k, args.v, is_causal=bool(args.causal),
                                       scale=args.softmax_scale)
    args.o.copy_(o)
    return kfleet.OK


def _attention_ops(q, k, v, o, scale, causal):
    s = torch.matmul(q.float(), k.float().transpose(-1, -2)) * scale
    if causal:
        n = s.shape[-1]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    o.copy_(torch.matmul(torch.softmax(s, dim=-1).to(q.dtype), v))


_compiled = torch.compile(_attention_ops)


def kfleet_attention_launch_compiled(args, stream):
    if not _plain(args):
        return kfleet.UNSUPPORTED
    _compiled(args.q, args.k, args.v, args.o, args.softmax_scale, bool(args.causal))
    return kfleet.OK
