"""From what the graph reader saw to launch lists, with the recorder's refusals.

Input is data only (dicts, as `cuda.read_graph` returns them and as the CI fixtures hold them),
so every refusal here is tested without torch or a GPU. The words follow kernels/harness/src/
record.cu, so a C++ and a Python kernel refused for the same trick read the same.

A capture, as the graph reader describes it:
  {"error": null | "why the capture failed", "status": 0,
   "nodes": [{"type": "kernel", "function": "name", "grid": [x,y,z], "block": [x,y,z],
              "cluster": [x,y,z], "shared_bytes": n, "max_dynamic_shared": n,
              "non_portable_cluster": n, "slots": [[offset, size], ...], "params": "hex",
              "extra": false, "image": "path of the device code that defines it" | null,
              "image_note": "why there is none"},
             {"type": "memset", "dst": a, "pitch": p, "width": w, "height": h, "value": v,
              "element_size": 1},
             {"type": "memcpy", "dst": a, "src": b, "bytes": n, "flat": true},
             {"type": "empty"},
             {"type": "host" | "graph" | "wait_event" | "event_record" | "ext_semaphore" |
                      "mem_alloc" | "mem_free" | "batch_mem_op" | "conditional" | "other"}],
   "edges": [[from, to, port], ...]}   (port: launch_list.edge_port; [from, to] is port 0)
A plan (written by kfleet-measure --plan, kernels/harness/src/plan.cu):
  {"type": "plan", "version": 1, "family": "attention", "arena": [lo, hi],
   "recordings": [{"what": "correctness seed 0", "args": "hex", "fields": {...},
                   "buffers": [{"name": "input Q", "va": a, "bytes": n}, ...]}]}
"""
import hashlib
import os
import shutil

from . import launch_list as ll

KFLEET_OK = 0

NODE_TYPE_WORDS = {
    "host": "a host function node (cudaLaunchHostFunc, a callback, or Python run by the stream)",
    "graph": "a child graph (cudaGraphLaunch or a CUDAGraph.replay() inside the launch)",
    "wait_event": "a wait on an event recorded outside the capture",
    "event_record": "an event record the capture cannot join (torch.cuda.Event(...).record() "
                    "with external=True, or a timing event)",
    "ext_semaphore": "an external semaphore",
    "mem_alloc": "a stream-ordered allocation (cudaMallocAsync)",
    "mem_free": "a stream-ordered allocation (cudaMallocAsync)",
    "batch_mem_op": "a batched memory operation (stream wait/write value)",
    "conditional": "a conditional node",
}

LIBRARY_HINT = (
    "the measuring process replays the device code of every module the recorder saw the "
    "launch's process load (Triton's cubins, the job's extensions, and the modules of torch, "
    "cuBLAS and cuDNN, seen through CUPTI as they load); a kernel of none of them, such as one "
    "made from memory the recorder never saw loaded, cannot be replayed")


class Refusal(Exception):
    """The launch cannot be replayed (exit 4, phase record): the kernel's doing, named."""

    def __init__(self, what, why):
        super().__init__(f"replay mode refused the launch ({what}): {why}")
        self.what, self.why = what, why


def read_plan(doc):
    if not isinstance(doc, dict) or doc.get("type") != "plan" or doc.get("version") != 1:
        raise ValueError("not a kfleet recording plan (version 1)")
    lo, hi = doc["arena"]
    recs = []
    for r in doc["recordings"]:
        bufs = [ll.Buffer(b["name"], int(b["va"]), int(b["bytes"])) for b in r["buffers"]]
        recs.append({"what": r["what"], "args": bytes.fromhex(r["args"]), "buffers": bufs,
                     "fields": r.get("fields", {})})
    return {"family": doc["family"], "arena": (int(lo), int(hi)), "recordings": recs}


def _node(d, what, i):
    t = d.get("type")
    if t == "kernel":
        name = d.get("function")
        if not name:
            raise Refusal(what, f"operation {i}: a kernel whose name the driver does not give "
                                "back (cuFuncGetName): " + LIBRARY_HINT)
        if d.get("extra"):
            raise Refusal(what, f"kernel {name} was given its parameters through 'extra'")
        params = bytes.fromhex(d.get("params") or "")
        slots = [tuple(s) for s in d.get("slots", [])]
        if any(o + s > len(params) for o, s in slots):
            raise Refusal(what, f"kernel {name}: its parameter layout (cuFuncGetParamInfo) lies "
                                "past the parameter bytes the node holds")
        try:
            k = ll.Kernel(name, d["grid"], d["block"], d.get("cluster", (0, 0, 0)),
                          d.get("shared_bytes", 0), d.get("max_dynamic_shared", -1),
                          d.get("non_portable_cluster", -1), slots, params)
            k.text()
        except ll.LaunchError as e:
            raise Refusal(what, f"operation {i}: {e}")
        k.image = d.get("image")
        k.image_note = d.get("image_note", "")
        k.origin = d.get("origin") if isinstance(d.get("origin"), dict) else None
        return k
    if t == "memset":
        m = ll.Memset(d["dst"], d["pitch"], d["width"], d["height"], d["value"], d["element_size"])
        if m.element_size not in (1, 2, 4):
            raise Refusal(what, "a memset whose element size is not 1, 2 or 4")
        return m
    if t == "memcpy":
        if not d.get("flat", True):
            raise Refusal(what, "a memcpy with arrays or more than one dimension (only flat "
                                "device-to-device copies inside the harness's buffers can be replayed)")
        return ll.Memcpy(d["dst"], d["src"], d["bytes"])
    if t == "empty":
        return ll.Empty()
    raise Refusal(what, "the launch enqueued " +
                  NODE_TYPE_WORDS.get(t, f"a node type replay does not support ({t})") +
                  ": replay runs only kernels, memsets and device copies")


def capture_to_list(rec, cap):
    """One capture of one recording as a LaunchList, or Refusal."""
    what = rec["what"]
    if cap.get("raised"):
        raise Refusal(what, "the launch function raised under capture (" + cap["error"] + ")")
    if cap.get("error"):
        raise Refusal(what, "the launch could not be captured (" + cap["error"] + "): a "
                      "synchronous call during the launch (a torch op that reads a tensor on the "
                      "host: .item(), .tolist(), printing a tensor, torch.cuda.synchronize(), an "
                      "allocation outside torch's capture pool), work on the legacy default "
                      "stream, a side stream not joined back into `stream` before the launch "
                      "returned, or a Triton autotuner benchmarking inside the launch")
    status = cap.get("status", KFLEET_OK)
    if not isinstance(status, int) or isinstance(status, bool):
        raise Refusal(what, f"the launch function returned {status!r}: return kfleet.OK (0), "
                            "kfleet.UNSUPPORTED (1) or None")
    nodes = [_node(d, what, i) for i, d in enumerate(cap.get("nodes", []))]
    l = ll.LaunchList(what, status, rec["args"], rec["buffers"], nodes, cap.get("edges", []))
    for a, b, port in l.edges:
        if not (0 <= a < len(nodes) and 0 <= b < len(nodes)):
            raise Refusal(what, "an edge to a node outside the captured graph")
        if port not in ll.EDGE_PORT_WORDS:
            raise Refusal(what, "a graph edge of a kind replay does not take (only ordinary and "
                                "programmatic dependencies between the launch's operations)")
    return l


def record_one(rec, first, second, arena, is_device_address=None):
    """Two captures of the same args -> the recording, or Refusal (record.cu's record_one, with
    the first capture's kernels and addresses looked at before the two are compared: a tensor
    the launch allocated under capture lands at another address each time, and "device memory
    the harness did not give" says why, where "the recordings differ" would not)."""
    what = rec["what"]
    a = capture_to_list(rec, first)
    b = capture_to_list(rec, second)
    # A kernel the measuring process could not load is named first (record.cu refuses a kernel
    # it cannot name as it reads the graph, before any address is looked at).
    for i, n in enumerate(a.nodes):
        if n.kind == "kernel" and not n.image:
            note = f" ({n.image_note})" if n.image_note else ""
            raise Refusal(what, f"kernel {n.function} (operation {i}) has no device code the "
                                f"recorder can give the measuring process{note}: {LIBRARY_HINT}")
    bad = ll.check_addresses(a, arena[0], arena[1], is_device_address)
    if bad:
        raise Refusal(what, bad)
    # A library kernel's bytes that hold no address may differ
    # (launch_list.only_non_addresses_differ); the list written is the first capture's, whose
    # every word check_addresses has just looked at.
    lo, hi = arena

    def is_address(v):
        return (lo <= v < hi or any(buf.contains(v, 0) for buf in a.buffers)
                or (is_device_address is not None and is_device_address(v)))
    diff = ll.difference(a, b, is_address)
    if diff:
        raise Refusal(what, f"two recordings of the same args differ ({diff}): the launch must "
                            "enqueue the same work every time it is given the same args")
    if not a.nodes and a.status == KFLEET_OK:
        raise Refusal(what, "the launch returned KFLEET_OK but enqueued nothing into `stream`: work "
                            "on a stream it did not join back into `stream`, or left to a host "
                            "thread, is not part of the launch")
    return a


def image_file_name(path):
    """The name a device-code image gets in the device-code folder: its content's hash (the job
    chooses kernel names, not file names)."""
    with open(path, "rb") as f:
        data = f.read()
    ext = ".cubin" if data[:4] == b"\x7fELF" else ".fatbin"
    return hashlib.sha256(data).hexdigest()[:16] + ext, data


def collect_images(lists):
    """The device-code files the lists use, in first-use order; Refusal when one kernel name is
    defined by two different images (the measuring process finds kernels by name)."""
    by_name, order = {}, []
    for l in lists:
        for n in l.nodes:
            if n.kind != "kernel":
                continue
            name, _ = image_file_name(n.image)
            have = by_name.setdefault(n.function, name)
            if have != name:
                raise Refusal(l.what, f"kernel {n.function} comes from two different device-code "
                                      "images (two Triton specialisations or configs of one "
                                      "@triton.jit function in one launch, or two extensions "
                                      "defining one name): the measuring process finds kernels "
                                      "by name; give the variants different names")
            if name not in [o[0] for o in order]:
                order.append((name, n.image))
    return order


def write_outputs(lists, out_path, code_dir):
    """Writes the launch list (atomically, as record.cu does) and each used image into
    `code_dir` as <sha256/16>.cubin|.fatbin; returns the image files' paths."""
    images = collect_images(lists)
    text = ll.serialize(lists)
    os.makedirs(code_dir, exist_ok=True)
    written = []
    for name, src in images:
        dst = os.path.join(code_dir, name)
        tmp = dst + ".tmp"
        shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
        written.append(dst)
    tmp = out_path + ".tmp"
    with open(tmp, "w", encoding="ascii", newline="\n") as f:
        f.write(text)
    os.replace(tmp, out_path)
    return written


def record_from_captures(plan, captures, out_path, code_dir, is_device_address=None):
    """plan: read_plan's result; captures: per recording, the two captures. Returns the summary
    the recorder prints, or raises Refusal."""
    if len(captures) != len(plan["recordings"]):
        raise ValueError("one pair of captures per recording of the plan")
    lists = [record_one(rec, pair[0], pair[1], plan["arena"], is_device_address)
             for rec, pair in zip(plan["recordings"], captures)]
    files = write_outputs(lists, out_path, code_dir)
    return {"type": "recorded", "lists": len(lists), "operations": sum(len(l.nodes) for l in lists),
            "path": out_path, "device_code": files, "kernels": kernel_origins(lists)}


def kernel_origins(lists):
    """Each kernel the lists launch, once: its name, the image file that holds it and where the
    recorder saw that image come from (the job's Triton or extension build, or a library with
    its file and package). The recorder's report: the verdict shows it as such."""
    out, seen = [], set()
    for l in lists:
        for n in l.nodes:
            if n.kind != "kernel" or n.function in seen:
                continue
            seen.add(n.function)
            o = getattr(n, "origin", None) or {}
            out.append({"function": n.function, "image": image_file_name(n.image)[0] if n.image else "",
                        "origin": o.get("origin", "job"), "file": o.get("file", ""),
                        "package": o.get("package", ""), "how": o.get("how", "")})
    return out
