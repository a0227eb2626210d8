#!/usr/bin/env python3
"""kfleet's recorder for Python kernels (kernels/harness/PYTHON.md).

The agent runs it, with the Python it found at start, in place of the job's C++ recorder:

  python3 kfleet_record.py --measure BUILD/kfleet-measure --source kernel.py --language triton
          [--entry NAME] [--torch-compile MODE] --device-code-dir RUN/device-code
          --cache-dir RUN/py-cache <stage> <harness options...> --record RUN/launches-N.txt
          [--device N]

--torch-compile MODE wraps the entry in torch.compile(mode=MODE) before its first call: how the
agent records kfleet's torch.compile reference of a problem (max-autotune-no-cudagraphs).

1. `kfleet-measure <stage> <options> --plan FILE`: kfleet's own harness (no job code) maps the
   case's buffers in the fixed arena and writes, per recording, the args bytes, the buffers and
   the args' fields (python_plan.cpp). One source of truth for the args: the measuring process
   later makes the very same ones and checks the recording against them.
2. This process maps the same buffers at the same addresses (cuda.py), imports the job's source,
   and per recording calls its launch function once outside capture (compilation, autotuning)
   and twice under torch.cuda.graph(capture_error_mode="global"); reads each graph back through
   the driver; refuses what cannot be replayed (recording.py); writes the launch list and the
   device code of every kernel it launched (Triton's cubins, an extension's fatbins) into
   --device-code-dir, named by content.
3. The agent runs kfleet-measure --replay with --device-code naming those files.

Lines on stdout: {"type":"recorded",...} or {"type":"error","phase":"record"|"setup",...}.
Exit: 0 recorded; 4 refused (the kernel's); 3 setup (torch/triton/driver missing); 2 usage.

`--from-captures FILE` (CI, no torch): the plan and captures from a JSON file instead of a GPU.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kfleet_rec import recording  # noqa: E402

OWN = {"--measure": "measure", "--source": "source", "--language": "language",
       "--entry": "entry", "--device-code-dir": "device_code_dir", "--cache-dir": "cache_dir",
       "--record": "record", "--from-captures": "from_captures", "--torch-compile": "torch_compile"}
DEFAULT_ENTRY = {"attention": "kfleet_attention_launch", "scaled_mm": "kfleet_scaled_mm_launch",
                 "problem": "kfleet_problem_launch"}
# torch.compile's modes a reference may be recorded under (torch.compile(mode=...)).
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


class Opts:
    measure = source = language = entry = device_code_dir = cache_dir = record = None
    from_captures = torch_compile = None
    device = 0
    rest = ()


def line(kind, **kw):
    print(json.dumps(dict(type=kind, **kw), separators=(",", ":")), flush=True)


def leave(code):
    """Ends the process as soon as its last line is out: the job's code ran here, and the
    interpreter's teardown (torch's pools and allocator, CUDA contexts, the job's own atexit
    handlers and destructors) may abort or hang after it, which would turn a refusal or a
    recording into "killed by SIGABRT". Nothing is left to write by then."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def fail(code, phase, message, **kw):
    line("error", phase=phase, message=message, **kw)
    leave(code)


def parse(argv):
    o, rest, i = Opts(), [], 0
    while i < len(argv):
        a = argv[i]
        if a in OWN:
            if i + 1 >= len(argv):
                fail(2, "usage", f"{a} wants a value")
            setattr(o, OWN[a], argv[i + 1])
            i += 2
            continue
        if a == "--device" and i + 1 < len(argv):
            o.device = int(argv[i + 1])
        rest.append(a)
        i += 1
    o.rest = rest
    if not o.record or not o.device_code_dir:
        fail(2, "usage", "--record FILE and --device-code-dir DIR are required")
    if not o.from_captures:
        for need in ("measure", "source", "language"):
            if not getattr(o, need):
                fail(2, "usage", f"--{need.replace('_', '-')} is required")
        if o.language not in ("triton", "torch"):
            fail(2, "usage", f"--language {o.language}: triton or torch")
    if o.torch_compile is not None and o.torch_compile not in COMPILE_MODES:
        fail(2, "usage", f"--torch-compile {o.torch_compile}: one of {', '.join(COMPILE_MODES)}")
    if o.torch_compile == "reduce-overhead":
        fail(2, "usage", "--torch-compile reduce-overhead makes CUDA graphs of its own, which a "
                         "recording cannot hold; use max-autotune-no-cudagraphs")
    return o


def plan_from_measure(o):
    """Step 1: kfleet-measure --plan (kfleet's code, the job's none)."""
    path = o.record + ".plan.json"
    cmd = [o.measure] + list(o.rest) + ["--plan", path]
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    sys.stderr.write(p.stderr)
    if p.returncode != 0:
        why = p.stderr.strip().splitlines()[-1:] or [f"exit {p.returncode}"]
        for l in p.stdout.splitlines():
            try:
                m = json.loads(l)
            except ValueError:
                continue
            if m.get("type") == "error":
                why = [m.get("message", why[0])]
        code = 2 if p.returncode == 2 else 3
        fail(code, "usage" if code == 2 else "setup", "kfleet-measure --plan failed: " + why[0])
    with open(path, encoding="utf-8") as f:
        return recording.read_plan(json.load(f))


def set_caches(o):
    """Compilation happens here, in the job's sandbox, with its caches in the run's folder."""
    base = o.cache_dir or os.path.join(os.path.dirname(os.path.abspath(o.record)), "py-cache")
    o.cache_dir = base
    os.environ["TRITON_CACHE_DIR"] = os.path.join(base, "triton")
    os.environ["TORCH_EXTENSIONS_DIR"] = os.path.join(base, "torch_extensions")
    # torch.compile's inductor: its generated code, FX graph and autotuning caches
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(base, "inductor")
    os.environ.setdefault("TRITON_HOME", base)
    os.environ.setdefault("XDG_CACHE_HOME", base)
    for k in ("TRITON_CACHE_DIR", "TORCH_EXTENSIONS_DIR", "TORCHINDUCTOR_CACHE_DIR"):
        os.makedirs(os.environ[k], exist_ok=True)


def stacks_later():
    """KFLEET_STACKS_AFTER_S=N (the agent sets it a little under the recorder's time limit): if
    this process is still running after N seconds, every thread's Python stack goes to stderr
    (the run's log), once, so a recording that hangs says where before it is killed."""
    try:
        after = float(os.environ.get("KFLEET_STACKS_AFTER_S", "0"))
    except ValueError:
        return
    if after > 0:
        import faulthandler
        faulthandler.dump_traceback_later(after, repeat=False, file=sys.stderr, exit=False)


def main(argv):
    o = parse(argv)
    stacks_later()
    try:
        if o.from_captures:
            with open(o.from_captures, encoding="utf-8") as f:
                doc = json.load(f)
            plan = recording.read_plan(doc["plan"])
            captures, is_dev = doc["captures"], None
            here = os.path.dirname(os.path.abspath(o.from_captures))
            for pair in captures:  # images named relative to the file
                for cap in pair:
                    for n in cap.get("nodes", []):
                        if n.get("image") and not os.path.isabs(n["image"]):
                            n["image"] = os.path.join(here, n["image"])
            devs = set(int(v) for v in doc.get("device_addresses", []))
            if devs:
                is_dev = devs.__contains__
        else:
            plan = plan_from_measure(o)
            o.entry = o.entry or DEFAULT_ENTRY.get(plan["family"])
            if not o.entry:
                fail(3, "setup", f"family {plan['family']} has no Python launch ABI yet")
            set_caches(o)
            from kfleet_rec import runner
            try:
                captures, is_dev = runner.record(o, plan)
            except runner.SetupError as e:
                fail(3, "setup", str(e))
        summary = recording.record_from_captures(plan, captures, o.record, o.device_code_dir, is_dev)
    except recording.Refusal as r:
        fail(4, "record", str(r), recording=r.what)
    except SystemExit:
        raise
    except Exception as e:  # noqa: BLE001 (the job's process: whatever broke is named)
        import traceback
        traceback.print_exc()
        fail(4, "record", f"the recorder failed under the job's code: {type(e).__name__}: {e}")
    print(json.dumps(summary, separators=(",", ":")), flush=True)
    return 0


if __name__ == "__main__":
    leave(main(sys.argv[1:]))
