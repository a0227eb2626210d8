"""Each kernel's grid and block as a recording launches it, against the same kernel timed
in-process (inprocess_python_kernel.py's kernel_configs), for scripts/gpu-torch-proof.sh's refs
lines: a replay/in-process ratio compares one kernel only when both ran the same configuration
(inductor tunes again in a second process; a library picks by shape).
   python3 launch_configs.py LAUNCH_LIST INPROC_JSON_OUTPUT
prints one line: "launch configs the same (N kernels)", or "LAUNCH CONFIGS DIFFER: ..." naming
each kernel whose grid or block differs, and how many names were not matched (the recording has
mangled names, the profiler demangled ones: c++filt joins them where it is installed).
   python3 launch_configs.py --executed HOW REPLAY_OUT INPROC_RAW_CUPTI_OUT
holds what CUPTI says each kernel ran with (kfleet-measure --kernel-configs' `kernel_configs`
line against the in-process `cupti_kernel_configs` of raw_cupti.py, both with mangled names):
carve-out, registers, shared and local memory, grid and block; one line, prefixed with HOW."""
import json
import shutil
import subprocess
import sys

# Graph memset and copy nodes run as the driver's kernels in-process; replay issues them itself.
DRIVER_KERNELS = ("memset", "memcpy")


def recorded(list_text):
    """[(name, grid, block)] of a launch list's kernel lines."""
    out = []
    for line in list_text.splitlines():
        f = line.split()
        if len(f) >= 8 and f[0] == "kernel":
            out.append((f[1], ",".join(f[2:5]), ",".join(f[5:8])))
    return out


def cxxfilt(names):
    """names demangled by c++filt, or as they are when it is missing or fails."""
    exe = shutil.which("c++filt")
    if not exe or not names:
        return list(names)
    try:
        p = subprocess.run([exe], input="\n".join(names) + "\n", capture_output=True, text=True, timeout=30)
        out = p.stdout.splitlines()
        return out if p.returncode == 0 and len(out) == len(names) else list(names)
    except (OSError, subprocess.SubprocessError):
        return list(names)


def compare(rec, configs, demangle=cxxfilt):
    """rec: recorded()'s list; configs: kernel_configs dicts. One line, as the module says."""
    ran = {}
    for c in configs:
        if not str(c.get("name", "")).startswith(DRIVER_KERNELS):
            ran.setdefault(c["name"], set()).add((c.get("grid"), c.get("block")))
    if not ran:
        return "launch configs: none reported in-process"
    plain = demangle([r[0] for r in rec])
    differ, unmatched, same = [], 0, 0
    for (mangled, grid, block), name in zip(rec, plain):
        seen = ran.get(name) or ran.get(mangled)
        if seen is None:
            unmatched += 1
        elif (grid, block) in seen:
            same += 1
        else:
            other = sorted(seen)[0]
            differ.append("%s replay grid %s block %s, in-process grid %s block %s"
                          % (name[:60], grid, block, other[0], other[1]))
    tail = "; %d of %d names not matched" % (unmatched, len(rec)) if unmatched else ""
    if differ:
        return "LAUNCH CONFIGS DIFFER: " + "; ".join(differ)[:400] + tail
    return "launch configs the same (%d kernels)%s" % (same, tail)


EXECUTED_FIELDS = ("grid", "block", "regs", "shared_static", "shared_dynamic", "shared_executed",
                   "carveout_requested", "local_per_thread")


def compare_executed(replay, inproc):
    """replay, inproc: lists of executed-config dicts (with "name"). One line: how many of the
    kernels both ran had the same configs, the replay's carve-outs, and each field that differs."""
    seen = [n for n in dict.fromkeys(k["name"] for k in replay) if any(k["name"] == n for k in inproc)]
    if not seen:
        return "executed configs: no kernel in both"
    out, same = [], 0
    for n in seen:
        r = {tuple(json.dumps(k.get(f)) for f in EXECUTED_FIELDS) for k in replay if k["name"] == n}
        i = {tuple(json.dumps(k.get(f)) for f in EXECUTED_FIELDS) for k in inproc if k["name"] == n}
        if r == i:
            same += 1
            continue
        diff = ["%s replay %s in-process %s" % (f, "/".join(sorted({c[j] for c in r})), "/".join(sorted({c[j] for c in i})))
                for j, f in enumerate(EXECUTED_FIELDS) if {c[j] for c in r} != {c[j] for c in i}]
        out.append("%s: %s" % (n[:48], ", ".join(diff)))
    carve = sorted({k.get("shared_executed") for k in replay if k["name"] in seen})
    head = "executed configs (CUPTI) the same for %d of %d kernels (shared memory carve-outs %s bytes)" % (
        same, len(seen), "/".join(map(str, carve)))
    return head + ("; DIFFER: " + "; ".join(out) if out else "")


def last_json(path, key):
    """The value of `key` in the last JSON line of the file that has it (None without one)."""
    found = None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("{") and key in line:
                    try:
                        found = json.loads(line).get(key, found)
                    except ValueError:
                        pass
    except OSError:
        pass
    return found


def main(argv):
    if len(argv) == 5 and argv[1] == "--executed":
        r, i = last_json(argv[3], "kernels"), last_json(argv[4], "cupti_kernel_configs")
        if r and i:
            print("%s: %s" % (argv[2], compare_executed(r, i)))
        return
    with open(argv[1], encoding="utf-8", errors="replace") as f:
        rec = recorded(f.read())
    configs = []
    with open(argv[2], encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("{") and "kernel_configs" in line:
                try:
                    configs = json.loads(line).get("kernel_configs") or []
                except ValueError:
                    pass
    print(compare(rec, configs))


if __name__ == "__main__":
    main(sys.argv)
