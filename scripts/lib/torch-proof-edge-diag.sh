# gpu-torch-proof.sh's edge_diag (EDGE_DIAG=...), sourced by it: the diagnostics of where a
# replayed reference's time goes, beside the in-process timings. It uses the proof's own
# helpers and state ($M, $out, SCRATCH, note, field, ...), so it runs only from there.
# shellcheck shell=bash disable=SC2154
# edge_diag NAME REPLAY_SPAN INPROC_SPAN ARGS...: the same recording replayed op by op on the
# stream, without the L2 flush and with every module loaded eagerly (EDGE_DIAG=tracer: none of
# these), and with CUPTI's hardware trace; beside the in-process timings inproc() took
# (inproc-*.out): each span and its gaps' sum, in one INFO line.
edge_diag() {
  local name=$1 med=$2 span=$3; shift 3
  local d=$out/r/$name dc; dc=$(ls "$d/dc-benchmark"/* 2>/dev/null | paste -sd, -)
  local bargs=("$@")
  rep() {  # OUT [VAR=VALUE...] -- OPTIONS...: one replay variant into $d/OUT.out
    local o=$1 envs=(); shift
    while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
    env "${envs[@]}" "$M" benchmark "${bargs[@]}" "${SCRATCH[@]}" --max-time-s 3 --min-samples 50 \
      --replay "$d/launches-benchmark.txt" --device 0 --device-code "$dc" "$@" >"$d/$o.out" 2>"$d/$o.err"
  }
  if [ "$EDGE_DIAG" = bare ]; then  # only the replay timed without the sample loop, step by step
    rep measure-bare -- --replay-bare 200
    rep measure-bare-builtin -- --replay-kernels builtin --replay-bare 200
    rep measure-bare-eager CUDA_MODULE_LOADING=EAGER -- --replay-bare 200
  elif [ "$EDGE_DIAG" = trigger ]; then  # which launch lengthens the edges for good, each in a
    # process of its own
    local t
    for t in noop-legacy noop-harness noop-nonblocking noop-blocking param-legacy noop-graph memset-legacy \
             noop-legacy-pregraph; do
      rep "measure-trig-$t" -- --replay-bare 100 --replay-bare-trigger "$t"
    done
    rep measure-bare -- --replay-bare 200
  elif [ "$EDGE_DIAG" != tracer ]; then
    rep measure-configs -- --kernel-configs
  fi
  if [ "$EDGE_DIAG" = swap ]; then  # the graph made before CUPTI is enabled (the old order), and
    # each kernel node the harness's empty kernel, in either order
    rep measure-graphfirst -- --replay-graph-before-tracer --kernel-configs
    rep measure-builtin -- --replay-kernels builtin --kernel-configs
    rep measure-builtin-graphfirst -- --replay-kernels builtin --replay-graph-before-tracer --kernel-configs
    rep measure-builtin-unloaded -- --replay-kernels builtin-unloaded --kernel-configs
    # and the replay timed in the measuring process as replay_shapes times it alone (--replay-bare:
    # no refresh, poison, flip, clock probe or re-check between launches), job's kernels and empty
    rep measure-bare -- --replay-bare 200
    rep measure-bare-builtin -- --replay-kernels builtin --replay-bare 200
    # and the same empty kernels in the recording's shapes in a process of its own (replay_shapes)
    local geg=$out/bin/replay_shapes
    [ -x "$geg" ] || "$nvcc" -std=c++17 -O3 $gen -o "$geg" "$root/bench/gpu/replay_shapes.cu" \
      "$H/cpu/launch_list.cpp" >"$out/logs/geg-build.log" 2>&1
    "$geg" --shapes "$d/launches-benchmark.txt" --runs 300 --cupti "$CUPTI_LIB" >"$d/shapes.out" 2>&1
  fi
  if diag_all; then
    rep measure-stream -- --replay-issue stream --replay-dot "$d/replay.dot"
    rep measure-noflush -- --no-l2-flush
    rep measure-eagerload CUDA_MODULE_LOADING=EAGER --
    rep measure-writable -- --inputs-writable
    [ -n "${NCU:-}" ] && timeout 120 "$NCU" "${NCU_ARGS[@]}" --log-file "$d/ncu-replay.csv" "$M" benchmark "${bargs[@]}" \
      "${SCRATCH[@]}" --max-time-s 1 --min-samples 30 --max-samples 30 --replay "$d/launches-benchmark.txt" \
      --device 0 --device-code "$dc" >"$d/measure-ncu.out" 2>"$d/measure-ncu.err"
  fi
  diag_all || [ "$EDGE_DIAG" = tracer ] && rep measure-hwtrace -- --cupti-hw-trace --replay-dot "$d/replay.dot"
  LAUNCH_CONFIGS=$root/bench/gpu/launch_configs.py python3 - "$d" "$med" "$span" <<'PY' >>"$d/edge-diag.txt"
import glob, json, os, sys
d, med, span = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
def last(path, want):
    r = {}
    try:
        for l in open(path, encoding="utf-8", errors="replace"):
            if l.startswith("{"):
                try: x = json.loads(l)
                except ValueError: continue
                if want is None or x.get("type") == want: r = x
    except OSError: pass
    return r
def one(label, f, want, key, base, of):
    if not os.path.exists(f"{d}/{f}"): return None  # a variant this run left out
    x = last(f"{d}/{f}", want)
    if not x.get(key): return label + ": none"
    g = x.get("edge_gaps_us") or []
    return "%s %.3f us (x%.4f of %s), gaps %.2f us over %d edges" % (label, x[key], x[key] / base, of, sum(g), len(g))
def configs(f, how):  # each kernel as CUPTI saw it run, replay against in-process (launch_configs.py)
    import subprocess
    r = subprocess.run([sys.executable, os.environ["LAUNCH_CONFIGS"], "--executed", how, f"{d}/{f}",
                        f"{d}/inproc-rawcupti.out"], capture_output=True, text=True)
    return r.stdout.strip() or None
def ncu():  # NCU: each kernel's median under Nsight Compute, replay against in-process
    import csv, statistics
    def read(f):
        m = {}
        try: lines = open(f"{d}/{f}", encoding="utf-8", errors="replace").read().splitlines()
        except OSError: return m
        at = next((j for j, l in enumerate(lines) if l.startswith('"ID"')), None)
        if at is None: return m
        for row in csv.DictReader(lines[at:]):
            try: v = float(row["Metric Value"].replace(",", ""))
            except (KeyError, ValueError): continue
            m.setdefault(row["Kernel Name"], {}).setdefault(row["Metric Name"], []).append(v)
        return m
    r, i = read("ncu-replay.csv"), read("ncu-inproc.csv")
    if not r and not i: return None
    out = []
    for n in r:
        if n not in i: continue
        fm = lambda m: ", ".join("%s %.4g" % (k, statistics.median(v)) for k, v in sorted(m.items()))
        out.append("%s: replay %s; in-process %s" % (n[:48], fm(r[n]), fm(i[n])))
    return "ncu: " + (" | ".join(out) if out else "no kernel in both (replay %d, in-process %d)" % (len(r), len(i)))
def carveouts(f, how):  # the carve-outs CUPTI read for each kernel name of a variant
    k = last(f"{d}/{f}", "kernel_configs").get("kernels") or []
    if not k: return None
    by = {}
    for c in k: by.setdefault(c.get("name", "?")[:40], set()).add(c.get("shared_executed"))
    return "%s: carve-outs %s" % (how, ", ".join("%s %s" % (n, "/".join(map(str, sorted(v)))) for n, v in by.items()))
def shapes():  # replay_shapes --shapes: the recording's shapes as empty kernels in a clean process
    try: got = [l.split(": ", 1)[1].strip() for l in open(f"{d}/shapes.out", errors="replace") if l.startswith("shapes of ")]
    except OSError: return None
    return "empty kernels in the recording's shapes, a clean process: " + (" | ".join(got) or "no result (shapes.out)")
def bare(f, how):  # --replay-bare: the replay timed in the measuring process without its sample loop
    if not os.path.exists(f"{d}/{f}"): return None
    xs = []
    for l in open(f"{d}/{f}", errors="replace"):
        if '"replay_bare"' not in l: continue
        try: xs.append(json.loads(l))
        except ValueError: continue
    # A stage whose CUPTI windows held fewer of the launch's kernels than the others (grouped
    # GEMM's eagerly loaded run, 12-05: 1 of 3, a 42 us "span" beside events of 1185 us) is
    # named so, with its events' time, not read as the launch's span.
    full = max([x.get("kernels_per_launch") or 0 for x in xs] or [0])
    got = []
    for x in xs:
        t = "%s %.3f us, gaps %.2f us" % (x.get("when"), x.get("span_us") or 0, x.get("gaps_us") or 0)
        k = x.get("kernels_per_launch") or 0
        if k < full:
            t = "%s: a span of %d of the launch's %d kernels only (events %.3f us)" % (
                x.get("when"), k, full, x.get("event_us") or 0)
        got.append(t)
    return "%s, timed without the sample loop: %s" % (how, ", ".join(got) or "none")
def hw_state():  # whether CUPTI took the hardware trace where it was asked (0: it did)
    if not os.path.exists(f"{d}/measure-hwtrace.err"): return None
    r = [l.split("tracing ", 1)[1].strip() for l in open(f"{d}/measure-hwtrace.err", errors="replace")
         if "CUPTI hardware event tracing" in l]
    t = last(f"{d}/inproc-hwtrace.out", None).get("tracer", "")
    return "hardware trace: replay %s, in-process %s" % (r[0] if r else "?", t.rsplit("hardware trace ", 1)[-1].rstrip(")") or "?")
print("; ".join(v for v in [
    one("replayed on the stream", "measure-stream.out", "bench", "median_us", med, "graph replay"),
    one("replayed without the flush", "measure-noflush.out", "bench", "median_us", med, "graph replay"),
    one("replayed with modules loaded eagerly", "measure-eagerload.out", "bench", "median_us", med, "graph replay"),
    one("replayed with inputs left writable", "measure-writable.out", "bench", "median_us", med, "graph replay"),
    one("in-process on mapped memory", "inproc-vmm.out", None, "span_median_us", span, "in-process"),
    one("in-process without the flush", "inproc-noflush.out", None, "span_median_us", span, "in-process"),
    one("in-process with the flush by cudaMemsetAsync", "inproc-memset.out", None, "span_median_us", span,
        "in-process"),
    one("in-process with the arena's layout", "inproc-layout.out", None, "span_median_us", span, "in-process"),
    one("replayed with CUPTI's hardware trace", "measure-hwtrace.out", "bench", "median_us", med, "graph replay"),
    one("in-process under CUPTI as kfleet-measure sets it", "inproc-rawcupti.out", None, "span_median_us", span,
        "in-process"),
    one("in-process under it with the hardware trace", "inproc-hwtrace.out", None, "span_median_us", span,
        "in-process"),
    one("replayed with the graph made before CUPTI was enabled", "measure-graphfirst.out", "bench",
        "median_us", med, "graph replay"),
    one("replayed with the harness's empty kernel in every kernel node", "measure-builtin.out", "bench",
        "median_us", med, "graph replay"),
    one("the same, the graph made before CUPTI was enabled", "measure-builtin-graphfirst.out", "bench",
        "median_us", med, "graph replay"),
    one("the same, the job's device code never loaded", "measure-builtin-unloaded.out", "bench",
        "median_us", med, "graph replay"),
    bare("measure-bare.out", "the job's kernels"), bare("measure-bare-builtin.out", "empty kernels"),
    *[bare(os.path.basename(f), "around " + f.rsplit("measure-trig-", 1)[1][:-len(".out")])
      for f in sorted(glob.glob(f"{d}/measure-trig-*.out"))],
    bare("measure-bare-eager.out", "the job's kernels, every module loaded eagerly"),
    shapes(), hw_state(), configs("measure-configs.out", "replay"),
    carveouts("measure-configs.out", "replay"), carveouts("measure-graphfirst.out", "graph first"),
    carveouts("measure-builtin.out", "empty kernels"),
    carveouts("measure-builtin-graphfirst.out", "empty kernels, graph first"), ncu()] if v))
PY
  note "${PART:-refs}" "$name:edge-diag" "-" INFO "$(tail -1 "$d/edge-diag.txt")"
}
