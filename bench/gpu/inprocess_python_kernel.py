#!/usr/bin/env python3
"""The GPU time of a Python kernel (Triton, or torch load_inline) measured in-process, without
CUPTI and without kfleet's replay: the yardstick scripts/gpu-python-proof.sh holds the fleet's
replayed median against.

  inprocess_python_kernel.py --plan PLAN.json --source kernel.py [--entry NAME]
                             [--l2-flush 0|1] [--samples 500] [--kernel-lib DIR]

PLAN.json is `kfleet-measure benchmark <the job's case> --plan PLAN.json` (kfleet's own code
writes it): the case's tensors (dtype, shape) and values, exactly as the recorder gives them to
the launch function. This script makes tensors of those shapes (random data; K/V and the fp8
operands through float16), calls the launch function once to compile, then per sample, as the
harness does: the L2 flushed (a memset of 2 x L2, when --l2-flush 1), the output poisoned,
a torch.cuda._sleep that keeps the GPU busy while Python enqueues the rest (so no launch gap is
timed), then torch.cuda.Event around one launch; then the same with no launch between the
events, whose median (what the events add) is taken off. Prints one JSON line:
{"median_us", "raw_median_us", "event_overhead_us", "mean_us", "min_us", "samples",
"l2_flush_bytes", "entry"}.
"""
import argparse
import importlib.util
import json
import os
import statistics
import sys

TORCH_DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp8_e4m3": "float8_e4m3fn",
                "fp32": "float32", "u8": "uint8"}
DEFAULT_ENTRY = {"attention": "kfleet_attention_launch", "scaled_mm": "kfleet_scaled_mm_launch"}
OUTPUTS = {"attention": "o", "scaled_mm": "d"}


class Args:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plan", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--entry", default="")
    ap.add_argument("--l2-flush", type=int, default=1)
    ap.add_argument("--samples", type=int, default=500)
    ap.add_argument("--kernel-lib", default="", help="the folder of kfleet.py (kernels/harness/python)")
    a = ap.parse_args()
    import torch

    with open(a.plan, encoding="utf-8") as f:
        plan = json.load(f)
    family = plan["family"]
    entry = a.entry or DEFAULT_ENTRY[family]
    fields = plan["recordings"][-1]["fields"]  # the benchmark's recording
    if a.kernel_lib:
        sys.path.insert(0, a.kernel_lib)
    sys.path.insert(0, os.path.dirname(os.path.abspath(a.source)))
    spec = importlib.util.spec_from_file_location("kfleet_job", a.source)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["kfleet_job"] = mod
    spec.loader.exec_module(mod)
    fn = getattr(mod, entry)

    dev = torch.device("cuda:0")
    torch.manual_seed(0)
    kw = dict(fields.get("values", {}))
    for t in fields.get("tensors", []):
        if not t.get("va"):
            kw[t["name"]] = None
            continue
        if t.get("dtype") in (None, "", "bytes") or t["name"] == "workspace":
            kw[t["name"]] = torch.zeros(int(t["bytes"]), dtype=torch.uint8, device=dev)
            continue
        dt = getattr(torch, TORCH_DTYPES[t["dtype"]])
        x = torch.randn(tuple(t["shape"]), dtype=torch.float16, device=dev)
        if dt == torch.uint8:
            x = torch.randint(0, 255, tuple(t["shape"]), dtype=torch.uint8, device=dev)
        kw[t["name"]] = x.to(dt) if dt != torch.uint8 else x
    args = Args(**kw)
    out = kw.get(OUTPUTS.get(family, ""))
    stream = torch.cuda.Stream(device=dev)
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size
    flush_bytes = max(2 * l2, 64 << 20) if a.l2_flush else 0
    flush = torch.empty(flush_bytes, dtype=torch.uint8, device=dev) if flush_bytes else None
    times = []
    with torch.cuda.stream(stream):
        r = fn(args, stream)  # compiles (Triton's JIT, load_inline's build is at import)
        if r not in (None, 0):
            print(json.dumps({"error": f"{entry} returned {r} (unsupported?)"}))
            return 1
        torch.cuda.synchronize()
        for _ in range(10):
            fn(args, stream)
        torch.cuda.synchronize()
        # The same sequence with nothing between the events: what the events themselves add.
        empty = []
        for launch, into in ((True, times), (False, empty)):
            for i in range(a.samples):
                if flush is not None:
                    flush.fill_(i & 0xff)
                if out is not None:
                    out.view(torch.uint8).fill_(0xff)
                torch.cuda._sleep(200_000)  # ~100 us: the GPU stays busy while Python enqueues
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record(stream)
                if launch:
                    fn(args, stream)
                e.record(stream)
                into.append((s, e))
        torch.cuda.synchronize()
    us = sorted(s.elapsed_time(e) * 1000.0 for s, e in times)
    overhead = statistics.median(s.elapsed_time(e) * 1000.0 for s, e in empty)
    # median_us: the kernel's time less the events' own (the empty pair's median); raw_median_us
    # as the events read it.
    print(json.dumps({"median_us": round(statistics.median(us) - overhead, 3),
                      "raw_median_us": round(statistics.median(us), 3),
                      "event_overhead_us": round(overhead, 3), "mean_us": round(statistics.mean(us), 3),
                      "min_us": round(us[0], 3), "samples": len(us), "l2_flush_bytes": flush_bytes,
                      "entry": entry}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
