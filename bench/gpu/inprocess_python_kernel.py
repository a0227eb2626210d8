#!/usr/bin/env python3
"""The GPU time of a Python kernel (Triton, or torch load_inline) measured in-process, without
kfleet's replay: the yardstick scripts/gpu-python-proof.sh holds the fleet's replayed median
against.

  inprocess_python_kernel.py --plan PLAN.json --source kernel.py [--entry NAME]
                             [--l2-flush 0|1] [--samples 300] [--kernel-lib DIR]
                             [--trace FILE] [--no-do-bench] [--inputs DIR]
                             [--torch-compile MODE] [--graph [--graph-dot F]] [--back-to-back]
                             [--gap-ms MS] [--cupti-raw LIBCUPTI [--cupti-hw-trace] [--cupti-kinds K,...]]
                             [--rewrite-inputs]
                             [--layout torch|plan] [--flush-with fill|memset]
                             [--entries BASE,COPY... [--rounds R]]
  inprocess_python_kernel.py --from-trace TRACE.json   (no GPU: the trace's numbers, for tests)

PLAN.json is `kfleet-measure benchmark <the job's case> --plan PLAN.json` (kfleet's own code
writes it): the case's tensors (dtype, shape) and values, exactly as the recorder gives them to
the launch function. This script makes tensors of those shapes (random data; K/V and the fp8
operands through float16), calls the launch function once to compile and a few times to warm
up, then times it two ways:

- CUPTI (the number the check uses): torch.profiler with ProfilerActivity.CUDA around --samples
  launches, each with the output poisoned and then the L2 flush the job's benchmark setting
  gives (2 x L2 written, with --l2-flush 1), as the harness does: by torch's `fill_` (a kernel),
  or with `--flush-with memset` by cudaMemsetAsync, as kfleet-measure writes it. Each launch runs
  inside a record_function range of its own; the device work (kernels, memsets, copies) whose
  runtime or driver call fell inside that range is the launch's, matched by CUPTI's correlation
  id. Per launch: the sum of those device durations (`median_us`, the kernel's own GPU time; the
  harness's replay times the span of all the launch's device work, the same for one kernel)
  and that span (`span_median_us`). The median over launches.
  With `--cupti-raw LIBCUPTI` CUPTI is set up as kfleet-measure sets it instead (raw_cupti.py:
  three activity kinds, no torch.profiler; each launch is the device work begun between two of
  CUPTI's host timestamps around it), to tell the tracer's part in a difference from the launch's;
  the line then has `cupti_kernel_configs` too: each kernel as its records say it ran (the shared
  memory carve-out executed, registers, shared memory, grid, block: kfleet-measure
  --kernel-configs prints the same of a replay). `--cupti-kinds runtime,driver,...` enables
  the further kinds torch.profiler enables as well (raw_cupti.EXTRA_KINDS), to see whether they
  move a kernel's reading (on two H100s torch.profiler read a stream launch 0.7 µs shorter).
- triton.testing.do_bench (median, its own L2 clearing): events around each call, so a short
  kernel's Python launch cost is in it; printed beside, not checked.

With `--inputs DIR` (kfleet-measure ... --plan PLAN.json --plan-inputs DIR wrote it) each tensor
holds the case's own inputs (a problem's structured inputs: positions, group ends), not random
values; an output is poisoned before each launch and an in-place (inout) tensor given its input
again. `--layout plan` puts the case's buffers where the arena has them relative to each other
(one allocation, 2 MiB aligned), not where torch's allocator would. `--torch-compile MODE` times
the entry under torch.compile (kfleet's compile reference).
Before each launch the whole device is synchronised, so that every launch begins on an idle GPU
after its flush, as kfleet-measure's timed runs do (PROTOCOL.md, "What a sample is"); then the
host waits `--gap-ms` (the replay's timed runs are that far apart: its refresh and re-checks sit
between them, so a long GEMM begins at the clock and power of a rested GPU, not of one that has
run it back to back: torch's grouped GEMM took 1,122 us 1.2 ms apart and 1,025 us 17 ms apart on
an H200). `--back-to-back` leaves both out (the GPU never idle). `copy_engine_ops` counts a launch's
memsets and copies that ran on a copy engine: torch's captured graph sends some there, and a graph
launched on a rested GPU waits for the engine (11 to 55 us more on an H200), where kfleet-measure
issues memsets and copies as kernels.
`--graph` captures the launch into a CUDA graph once and times its replays, as kfleet-measure
replays a recording: then `span_median_us`, the first-to-last device activity of a launch, is
the number to hold a replayed median against for a launch of several kernels (its gaps between
kernels are a graph's in both), and `median_us` stays the sum of the kernels' own times.

`--entries BASE,COPY,...` (a pair's calibration) times several entries of the source in this
one process, on the same tensors, interleaved: --rounds rounds, each running every entry's
--samples launches in turn (the order rotated each round, so none always runs first), all under
one profiler. A copy's slowdown is paired by round, its median against the base's
median of the same round, and the line gives the median of those ratios with their least and
most (`interleaved`). An entry timed in a process of its own moved by up to 0.63 % from one
process to the next on an H100 (docs/evidence/2026-12-06-h100-calib-pair-inproc-python-corpus.log),
more than a 1 % +- 0.3 % calibration can carry.

Prints one JSON line: {"median_us", "method": "cupti"|"do_bench", "cupti_median_us",
"span_median_us", "mean_us", "min_us", "samples", "kernels_per_launch", "kernel_names",
"kernel_configs" ({name, grid, block, regs, smem} of each kernel), "do_bench_median_us",
"l2_flush_bytes", "entry"} ("cupti_error" / "do_bench_error" when one failed; `median_us` is
CUPTI's, or do_bench's when CUPTI gave nothing).
"""
import argparse
import bisect
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time

from raw_cupti import EXTRA_KINDS, RawCupti  # ctypes only: CUPTI is loaded when --cupti-raw asks for it

TORCH_DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp8_e4m3": "float8_e4m3fn",
                "fp32": "float32", "u8": "uint8", "int32": "int32", "int64": "int64"}
DEFAULT_ENTRY = {"attention": "kfleet_attention_launch", "scaled_mm": "kfleet_scaled_mm_launch",
                 "problem": "kfleet_problem_launch"}
OUTPUTS = {"attention": "o", "scaled_mm": "d"}
LABEL = "kfleet_launch_"
DEVICE_CATS = ("kernel", "gpu_memset", "gpu_memcpy")
CALL_CATS = ("cuda_runtime", "cuda_driver")


class Args:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def launch_times(trace, names=None):
    """From a torch.profiler Chrome trace (a dict with traceEvents, or the list): per launch
    (record_function ranges named kfleet_launch_<i>, in order), in microseconds, (the sum of its
    device events' durations, the span from the first's start to the last's end, [their names],
    how many, how many of them were memsets or copies on a copy engine, [each event's start minus
    the end of the one before it, in start order], [launch_config() of each kernel]).
    A launch's device events are those whose CUPTI correlation id is a runtime or driver call
    made inside its range on the host. Launches with no device event are left out. When no launch
    call was seen at all, each run of device work between this script's own (the flush and the
    poison, whose calls were made outside every range) is one launch, in the device's order.
    `names`, a list, gets each launch's range name beside it (none in that last case)."""
    evs = trace.get("traceEvents", []) if isinstance(trace, dict) else list(trace)
    windows = []
    for e in evs:
        name = str(e.get("name", ""))
        if e.get("cat") == "user_annotation" and name.startswith(LABEL) and "ts" in e:
            windows.append((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), e.get("tid"),
                            e.get("pid"), name))
    windows.sort()
    starts = [w[0] for w in windows]
    device = {}
    for e in evs:
        if e.get("cat") in DEVICE_CATS and e.get("ph", "X") == "X" and "ts" in e:
            c = (e.get("args") or {}).get("correlation")
            if c is not None:
                device.setdefault(c, []).append(e)
    per, outside = {}, set()
    for e in evs:
        if e.get("cat") not in CALL_CATS or "ts" not in e:
            continue
        c = (e.get("args") or {}).get("correlation")
        if c is None or c not in device:
            continue
        t = float(e["ts"])
        i = bisect.bisect_right(starts, t) - 1
        # The range holding the call: ranges do not overlap (one launch each); look back a few
        # for a call made on another thread of the same process.
        for j in range(i, max(i - 4, -1), -1):
            s, end, tid, pid, name = windows[j]
            if s <= t <= end and (pid is None or e.get("pid") is None or pid == e.get("pid")):
                per.setdefault(name, []).extend(device[c])
                break
        else:
            outside.add(c)  # the flush, the poison: this script's own work
    groups = [per[w[4]] for w in windows if per.get(w[4])]
    if names is not None:
        names.extend(w[4] for w in windows if per.get(w[4]))
    if not groups and outside:
        # No launch call seen on the host (a launcher whose driver calls CUPTI did not report):
        # in the device's order, each run of device work between this script's own is a launch.
        order = sorted((e for c, es in device.items() for e in es), key=lambda e: float(e["ts"]))
        run = []
        for e in order:
            if (e.get("args") or {}).get("correlation") in outside:
                if run:
                    groups.append(run)
                run = []
            else:
                run.append(e)
        if run:
            groups.append(run)
    out = []
    for ds in groups:
        total = sum(float(d.get("dur", 0)) for d in ds)
        first = min(float(d["ts"]) for d in ds)
        last = max(float(d["ts"]) + float(d.get("dur", 0)) for d in ds)
        engine = sum(1 for d in ds if d.get("cat") in ("gpu_memset", "gpu_memcpy"))
        iv = sorted((float(d["ts"]), float(d["ts"]) + float(d.get("dur", 0))) for d in ds)
        gaps = [iv[i][0] - iv[i - 1][1] for i in range(1, len(iv))]
        out.append((total, last - first, sorted({str(d.get("name", "")) for d in ds}), len(ds), engine, gaps,
                    sorted({launch_config(d) for d in ds if d.get("cat") == "kernel"})))
    return out


def launch_config(ev):
    """A kernel event's launch configuration as the profiler reports it: (name, demangled;
    "X,Y,Z" grid; block; registers; static shared memory). A second autotuning in this process
    that chose another config than the recorder's shows here (launch_configs.py compares them),
    not as a replay slower or faster than in-process."""
    a = ev.get("args") or {}

    def dims(v):
        return ",".join(str(int(x)) for x in v) if isinstance(v, (list, tuple)) else "?"
    return (str(ev.get("name", "")), dims(a.get("grid")), dims(a.get("block")),
            a.get("registers per thread", ""), a.get("shared memory", ""))


def summarize(times):
    """The JSON fields of launch_times' result."""
    if not times:
        return {}
    us = sorted(t[0] for t in times)
    spans = sorted(t[1] for t in times)
    names = sorted({n for t in times for n in t[2]})
    counts = sorted({t[3] for t in times})
    return {"cupti_median_us": round(statistics.median(us), 3),
            "span_median_us": round(statistics.median(spans), 3),
            "mean_us": round(statistics.mean(us), 3), "min_us": round(us[0], 3),
            "samples": len(us), "kernels_per_launch": counts, "kernel_names": names[:8],
            "copy_engine_ops": max(t[4] for t in times),
            # Each gap's median by position (kfleet-measure's bench line has the same field):
            # where a chain's span exceeds its kernels. Empty when launches differ in length.
            "edge_gaps_us": [round(statistics.median(g), 3) for g in zip(*(t[5] for t in times))]
            if len(counts) == 1 else [],
            "kernel_configs": [dict(zip(("name", "grid", "block", "regs", "smem"), c)) for c in
                               sorted({c for t in times for c in t[6]})[:32]]}


def paired_slowdowns(medians, base):
    """The calibration's arithmetic: medians {entry: [median_us of each round]}, base the entry
    the others are held against. Per entry but the base: each round's slowdown in percent
    (its median over the base's median of the same round), and the median, least and most of
    those; rounds where either side has no number are left out and counted."""
    out = {}
    for name, ms in medians.items():
        if name == base:
            continue
        pct = [(x / b - 1.0) * 100.0 for x, b in zip(ms, medians[base]) if x and b]
        out[name] = {"median_pct": round(statistics.median(pct), 3) if pct else None,
                     "min_pct": round(min(pct), 3) if pct else None,
                     "max_pct": round(max(pct), 3) if pct else None,
                     "rounds": len(pct), "rounds_left_out": len(ms) - len(pct),
                     "rounds_pct": [round(v, 3) for v in pct]}
    return out


def rotated(names, r):
    """Round r's order: each entry first in turn."""
    k = r % len(names)
    return names[k:] + names[:k]


def interleaved_times(a, fns, args, stream, inouts, flush, outs):
    """--entries: every entry's --samples launches in turn, --rounds times, under one profiler;
    each launch's range is named for its round and entry, and each (round, entry) block's CUPTI
    median is kept (None where no device work matched)."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function
    order = list(fns)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for r in range(a.rounds):
            for name in rotated(order, r):
                for i in range(a.samples):
                    before_launch(i, a, inouts, flush, outs)
                    with record_function(f"{LABEL}{r}.{order.index(name)}.{i}"):
                        fns[name](args, stream)
        torch.cuda.synchronize()
    return interleaved_result(a.rounds, a.samples, order, profiler_trace(prof))


def profiler_trace(prof, keep=""):
    """The profiler's Chrome trace, read back; written to `keep` and left there when given (--trace),
    else to a temporary file that is removed."""
    path = keep
    if not keep:
        fd, path = tempfile.mkstemp(suffix=".json")
        os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    finally:
        if not keep:
            os.unlink(path)


def interleaved_result(rounds, samples, order, trace):
    """The --entries line from the profiler's trace: launches named kfleet_launch_<round>.<entry
    index>.<sample>, grouped by round and entry."""
    labels = []
    times = launch_times(trace, labels)
    blocks = {}
    for label, t in zip(labels, times):
        r, k, _ = label[len(LABEL):].split(".")
        blocks.setdefault((int(r), int(k)), []).append(t[0])
    medians = {n: [round(statistics.median(blocks[(r, k)]), 3) if blocks.get((r, k)) else None
                   for r in range(rounds)] for k, n in enumerate(order)}
    return {"interleaved": {"rounds": rounds, "samples": samples, "base": order[0],
                            "medians_us": medians, "slowdowns": paired_slowdowns(medians, order[0])}}


def raw_launch_times(records, windows):
    """launch_times' tuples from raw CUPTI records (start_ns, end_ns, kind) and each launch's
    window (t0_ns, t1_ns): a launch is the device work begun inside its window; memsets and
    copies (any kind but the kernel's, 10) count as copy-engine work. No name or config is known."""
    times = []
    for t0, t1 in windows:
        iv = sorted(r for r in records if t0 <= r[0] <= t1)
        if not iv:
            continue
        gaps = [(iv[k][0] - iv[k - 1][1]) / 1000.0 for k in range(1, len(iv))]
        times.append((sum(e - b for b, e, _ in iv) / 1000.0, (max(e for _, e, _ in iv) - iv[0][0]) / 1000.0,
                      [], len(iv), sum(1 for r in iv if r[2] != 10), gaps, []))
    return times


def before_launch(i, a, inouts, flush, outs):
    """What precedes launch i, as kfleet-measure's timed runs have it: in-place inputs given back,
    the outputs poisoned, then the L2 flush (last: nothing the launch touches is in the L2); then
    (unless --back-to-back) an idle GPU and --gap-ms."""
    import torch
    for x, pristine in inouts:
        x.copy_(pristine)
    for out in outs:
        out.view(torch.uint8).fill_(0xff)
    if flush is not None:
        if a.flush_with == "memset":
            memset_async(flush, i & 0xff)
        else:
            flush.fill_(i & 0xff)
    if not a.back_to_back:
        torch.cuda.synchronize()
        if a.gap_ms > 0:
            time.sleep(a.gap_ms / 1000.0)


_CUDA_MEMSET = []


def memset_async(t, value):
    """cudaMemsetAsync of tensor t's bytes on torch's current stream (the runtime torch loaded,
    found by its soname), as kfleet-measure writes its L2 flush."""
    import ctypes
    import torch
    if not _CUDA_MEMSET:
        for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
            try:
                f = ctypes.CDLL(name).cudaMemsetAsync
            except (OSError, AttributeError):
                continue
            f.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p]
            f.restype = ctypes.c_int
            _CUDA_MEMSET.append(f)
            break
        else:
            raise RuntimeError("--flush-with memset: no libcudart to call cudaMemsetAsync from")
    rc = _CUDA_MEMSET[0](t.data_ptr(), value, t.numel() * t.element_size(),
                         torch.cuda.current_stream().cuda_stream)
    if rc != 0:
        raise RuntimeError(f"--flush-with memset: cudaMemsetAsync returned {rc}")


def raw_cupti_times(raw, a, launch, args, stream, inouts, flush, outs):
    """--cupti-raw: the launches timed by raw_cupti.RawCupti, each alone on an idle GPU between
    two of CUPTI's host timestamps; the same fields as summarize(), and which tracer it was."""
    import torch
    raw.enable()
    raw.configs.clear()  # the timed launches' kernels only (and this script's flush and poison)
    windows = []
    for i in range(a.samples):
        before_launch(i, a, inouts, flush, outs)  # --cupti-raw excludes --back-to-back
        t0 = raw.now()
        launch(args, stream)
        torch.cuda.synchronize()
        windows.append((t0, raw.now()))
    raw.flush()
    times = raw_launch_times(raw.records, windows)
    s = summarize(times)
    s["tracer"] = "raw CUPTI (%s%s%s)" % (a.cupti_raw, ", hardware trace %s" % raw.hw_trace
                                          if a.cupti_hw_trace else "",
                                          ", also " + a.cupti_kinds if a.cupti_kinds else "")
    s["cupti_kernel_configs"] = raw.configs
    return s if times else {"cupti_error": "raw CUPTI recorded no device work in the launches"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plan")
    ap.add_argument("--source")
    ap.add_argument("--entry", default="")
    ap.add_argument("--l2-flush", type=int, default=1)
    ap.add_argument("--samples", type=int, default=300)
    ap.add_argument("--kernel-lib", default="",
                    help="the folder of kfleet.py (kernels/harness/python)")
    ap.add_argument("--trace", default="", help="keep the profiler's Chrome trace here")
    ap.add_argument("--no-do-bench", action="store_true")
    ap.add_argument("--from-trace", default="", help="no GPU: summarize this trace (tests)")
    ap.add_argument("--inputs", default="", help="the case's buffers (kfleet-measure --plan-inputs)")
    ap.add_argument("--torch-compile", default="", help="time the entry under torch.compile(mode=...)")
    ap.add_argument("--inductor-configs", default="", metavar="JSON",
                    help="with --torch-compile: the recorder's tuned configs ({kernel: config}, its "
                         "inductor_configs line), which this process's kernels are pinned to")
    ap.add_argument("--graph", action="store_true", help="time replays of a CUDA graph of the launch")
    ap.add_argument("--graph-dot", default="", help="with --graph: write the graph (DOT, verbose) here")
    ap.add_argument("--back-to-back", action="store_true",
                    help="no device synchronisation between the flush and the launch")
    ap.add_argument("--gap-ms", type=float, default=0.0,
                    help="the host's wait between the synchronisation and each launch")
    ap.add_argument("--cupti-raw", default="", metavar="LIBCUPTI",
                    help="time with CUPTI set up as kfleet-measure sets it (raw_cupti.py), not torch.profiler")
    ap.add_argument("--layout", choices=("torch", "plan"), default="torch",
                    help="plan: the case's buffers at the arena's relative addresses (one allocation, "
                         "2 MiB aligned, each buffer at its offset in the plan), not torch's own")
    ap.add_argument("--flush-with", choices=("fill", "memset"), default="fill",
                    help="the L2 flush written by torch's fill_ (a kernel) or by cudaMemsetAsync, as "
                         "kfleet-measure writes it")
    ap.add_argument("--rewrite-inputs", action="store_true",
                    help="each input (any dtype) copied back from a copy of its own bytes before each "
                         "launch (torch's copy_), as kfleet-measure --same-inputs copy does before each sample")
    ap.add_argument("--entries", default="", metavar="BASE,COPY,...",
                    help="time these entries interleaved in this process; each copy's slowdown "
                         "against the first, paired by round (a pair's calibration)")
    ap.add_argument("--rounds", type=int, default=8, help="with --entries: rounds of every entry")
    ap.add_argument("--cupti-hw-trace", action="store_true",
                    help="with --cupti-raw: CUPTI's hardware event tracing (asked before the CUDA "
                         "context; Blackwell only, CUPTI says)")
    ap.add_argument("--cupti-kinds", default="", metavar="KIND,...",
                    help="with --cupti-raw: these activity kinds enabled as well (of %s: those "
                         "torch.profiler enables), their records not kept" % ",".join(sorted(EXTRA_KINDS)))
    a = ap.parse_args()
    if a.from_trace:
        with open(a.from_trace, encoding="utf-8") as f:
            s = summarize(launch_times(json.load(f)))
        print(json.dumps(dict(s, median_us=s.get("cupti_median_us", ""), method="cupti")))
        return 0 if s else 1
    if not a.plan or not a.source:
        ap.error("--plan and --source are needed (or --from-trace)")
    if a.cupti_hw_trace and not a.cupti_raw:
        ap.error("--cupti-hw-trace goes with --cupti-raw")
    kinds = [k for k in a.cupti_kinds.split(",") if k]
    if kinds and not a.cupti_raw:
        ap.error("--cupti-kinds goes with --cupti-raw")
    unknown = sorted(set(kinds) - EXTRA_KINDS.keys())
    if unknown:
        ap.error("--cupti-kinds: no kind %s (known: %s)" % (",".join(unknown), ",".join(sorted(EXTRA_KINDS))))
    if a.cupti_raw and a.back_to_back:
        ap.error("--cupti-raw times launches on an idle GPU: it excludes --back-to-back")
    entries = [e for e in a.entries.split(",") if e]
    if a.entries and (len(entries) < 2 or len(set(entries)) != len(entries)):
        ap.error("--entries takes a base and at least one copy, each named once")
    if entries and (a.graph or a.cupti_raw or a.torch_compile or a.entry):
        ap.error("--entries times each entry as it launches: it excludes --entry, --graph, "
                 "--cupti-raw and --torch-compile")
    if a.rounds < 1:
        ap.error("--rounds is at least 1")
    tracer = None
    if a.cupti_raw:  # before torch makes the CUDA context: hardware tracing must precede it
        tracer = RawCupti(a.cupti_raw, hw_trace=a.cupti_hw_trace, extra_kinds=kinds)
    import torch

    with open(a.plan, encoding="utf-8") as f:
        plan = json.load(f)
    family = plan["family"]
    entry = (entries[0] if entries else a.entry) or DEFAULT_ENTRY[family]
    fields = plan["recordings"][-1]["fields"]  # the benchmark's recording
    if a.kernel_lib:
        sys.path.insert(0, a.kernel_lib)
    # After the installed packages: a problem's folder holds its Triton kernel as triton.py,
    # which must not stand in for the triton package that torch.compile imports.
    sys.path.append(os.path.dirname(os.path.abspath(a.source)))
    spec = importlib.util.spec_from_file_location("kfleet_job", a.source)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["kfleet_job"] = mod
    spec.loader.exec_module(mod)
    fn = getattr(mod, entry)
    fns = {e: getattr(mod, e) for e in entries}
    pinned, recorded = None, None
    if a.torch_compile:
        fn = torch.compile(fn, mode=a.torch_compile)
        if a.inductor_configs:  # tune as the recording did, not again (kfleet_rec/inductor_configs.py)
            from kfleet_rec import inductor_configs
            with open(a.inductor_configs, encoding="utf-8") as f:
                recorded = json.load(f)
            pinned = inductor_configs.pin(recorded)

    dev = torch.device("cuda:0")
    torch.manual_seed(0)
    kw = dict(fields.get("values", {}))
    outs, inouts = [], []
    placed = fields.get("tensors", []) if a.layout == "plan" else []
    placed = [t for t in placed if t.get("va")]
    if placed:  # one allocation, each buffer where the arena has it relative to the first
        base = min(int(t["va"]) for t in placed)
        span = max(int(t["va"]) + int(t["bytes"]) for t in placed) - base
        arena = torch.empty(span + (2 << 20), dtype=torch.uint8, device=dev)
        off0 = (-arena.data_ptr()) % (2 << 20)

        def slot(t, x):
            o = off0 + int(t["va"]) - base
            y = arena[o:o + x.numel() * x.element_size()].view(x.dtype).view(x.shape)
            y.copy_(x)
            return y
    for t in fields.get("tensors", []):
        if not t.get("va"):
            kw[t["name"]] = None
            continue
        if t.get("dtype") in (None, "", "bytes", "u8") or t["name"] == "workspace":
            x = torch.zeros(int(t["bytes"]), dtype=torch.uint8, device=dev)
            kw[t["name"]] = slot(t, x) if placed else x
            continue
        dt = getattr(torch, TORCH_DTYPES[t["dtype"]])
        saved = os.path.join(a.inputs, f"{int(t['va']):x}.bin") if a.inputs else ""
        if saved and os.path.exists(saved):
            raw = torch.frombuffer(bytearray(open(saved, "rb").read()), dtype=torch.uint8)
            x = raw[:int(t["bytes"])].to(dev).view(dt).view(tuple(t["shape"]))
        elif dt in (torch.int32, torch.int64):
            x = torch.zeros(tuple(t["shape"]), dtype=dt, device=dev)
        else:
            x = torch.randn(tuple(t["shape"]), dtype=torch.float16, device=dev).to(dt)
        if placed:
            x = slot(t, x)
        kw[t["name"]] = x
        if t.get("role") == "output" or (family != "problem" and t["name"] == OUTPUTS.get(family)):
            outs.append(x)
        elif t.get("role") == "inout" or a.rewrite_inputs:  # given back (--rewrite-inputs: every
            inouts.append((x, x.clone()))                    # input, as --same-inputs copy does)
    args = Args(**kw)
    stream = torch.cuda.Stream(device=dev)
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size
    flush_bytes = max(2 * l2, 64 << 20) if a.l2_flush else 0
    flush = torch.empty(flush_bytes, dtype=torch.uint8, device=dev) if flush_bytes else None
    result = {"l2_flush_bytes": flush_bytes, "flush_with": a.flush_with if flush_bytes else "",
              "entry": entry, "graph": a.graph, "torch_compile": a.torch_compile,
              "idle_before_launch": not a.back_to_back, "inputs_rewritten": a.rewrite_inputs,
              "gap_ms": 0 if a.back_to_back else a.gap_ms}
    with torch.cuda.stream(stream):
        r = fn(args, stream)  # compiles (Triton's JIT, load_inline's build is at import)
        if r not in (None, 0):
            print(json.dumps({"error": f"{entry} returned {r} (unsupported?)"}))
            return 1
        if a.torch_compile:
            # Whether inductor took the recorder's compiled graph from the shared cache or
            # compiled (and tuned) it again here: a fresh tuning may pick another kernel than
            # the one replay times.
            try:
                from torch._dynamo.utils import counters
                result["inductor_counters"] = {k: v for k, v in counters["inductor"].items()
                                               if "cache" in k or "autotune" in k}
            except Exception as e:  # noqa: BLE001 (a diagnostic: its absence is said)
                result["inductor_counters"] = f"{type(e).__name__}: {e}"
            try:  # the configs this process's kernels ran, against the recording's
                from kfleet_rec import inductor_configs
                ran = inductor_configs.tuned()
                result["inductor_configs"] = ran
                if recorded is not None:
                    result["inductor_pinned"] = pinned
                    result["inductor_configs_compare"] = inductor_configs.compare(recorded, ran)
            except ImportError as e:  # without --kernel-lib: not said
                result["inductor_configs"] = f"{type(e).__name__}: {e}"
        torch.cuda.synchronize()
        for f in list(fns.values()) or [fn]:
            for _ in range(20):  # the first compiles
                f(args, stream)
        torch.cuda.synchronize()
        if fns:
            result.update(interleaved_times(a, fns, args, stream, inouts, flush, outs))
            print(json.dumps(result))
            ok = all(v["median_pct"] is not None for v in result["interleaved"]["slowdowns"].values())
            return 0 if ok else 1
        launch = fn
        if a.graph:
            g = torch.cuda.CUDAGraph()
            if a.graph_dot:
                # The captured graph is kept to be written out (torch destroys it once
                # instantiated unless asked to keep it; older torch keeps it in debug mode).
                try:
                    g = torch.cuda.CUDAGraph(keep_graph=True)
                except TypeError:
                    g.enable_debug_mode()
            with torch.cuda.graph(g, stream=stream):
                fn(args, stream)
            torch.cuda.synchronize()
            if a.graph_dot:
                g.debug_dump(a.graph_dot)  # every node with its launch attributes (DOT)

            def launch(_args, _stream):
                g.replay()

        if tracer is not None:
            result.update(raw_cupti_times(tracer, a, launch, args, stream, inouts, flush, outs))
        else:  # CUPTI, through torch.profiler: each launch's own device work.
            try:
                from torch.profiler import ProfilerActivity, profile, record_function
                with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                    for i in range(a.samples):
                        before_launch(i, a, inouts, flush, outs)
                        with record_function(f"{LABEL}{i}"):
                            launch(args, stream)
                    torch.cuda.synchronize()
                trace = profiler_trace(prof, a.trace)
                s = summarize(launch_times(trace))
                if s:
                    result.update(s)
                else:
                    cats = sorted({str(e.get("cat")) for e in trace.get("traceEvents", [])})
                    result["cupti_error"] = f"no device work matched to a launch (event kinds: {cats})"
            except Exception as e:  # noqa: BLE001 - said in the output, do_bench still runs
                result["cupti_error"] = f"{type(e).__name__}: {e}"

        # triton.testing.do_bench: events around each call (its launch cost included).
        if not a.no_do_bench:
            try:
                from triton.testing import do_bench

                def call():
                    launch(args, stream)
                try:
                    ms = do_bench(call, warmup=25, rep=200, return_mode="median")
                except TypeError:  # a triton without return_mode
                    ms = do_bench(call, warmup=25, rep=200, quantiles=[0.5])
                    ms = ms[0] if isinstance(ms, (list, tuple)) else ms
                result["do_bench_median_us"] = round(float(ms) * 1000.0, 3)
            except Exception as e:  # noqa: BLE001
                result["do_bench_error"] = f"{type(e).__name__}: {e}"
        torch.cuda.synchronize()
    if "cupti_median_us" in result:
        result.update(median_us=result["cupti_median_us"], method="cupti")
    elif "do_bench_median_us" in result:
        result.update(median_us=result["do_bench_median_us"], method="do_bench")
    print(json.dumps(result))
    return 0 if "median_us" in result else 1


if __name__ == "__main__":
    sys.exit(main())
