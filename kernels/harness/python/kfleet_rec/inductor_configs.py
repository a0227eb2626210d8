"""torch.compile's tuned Triton configs: which config each of inductor's kernels in this process
runs once it has been tuned, and pinning another process to those same configs.

The recorder says which configs its kernels were tuned to (an `inductor_configs` line after the
launch's first call). A second process that compiles the same program tunes again, on its own
timings, and may pick another config of a kernel of the same name and grid: bench/gpu's
in-process yardstick then times another kernel than the recording holds (PYTHON.md). `pin`
makes that process take the recorded config where its autotuner has it among its candidates and
skip coordinate descent from there; `tuned` afterwards says what each kernel ran, to compare.

This is a diagnostic of the measuring method: the line comes from the job's process, like every
other line it prints, and no verdict reads it.
"""

import gc


def _autotuners():
    try:
        from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    except Exception:  # noqa: BLE001 (no torch, or an inductor without it: nothing tuned)
        return []
    found = []
    for o in gc.get_objects():
        try:  # a weak proxy whose referent is gone raises on any look at it
            if isinstance(o, CachingAutotuner):
                found.append(o)
        except ReferenceError:
            continue
    return found


def kernel_name(autotuner):
    """The kernel's name as its launches carry it (inductor's `kernel_name`, else the function's)."""
    meta = getattr(autotuner, "inductor_meta", None) or {}
    name = meta.get("kernel_name") if isinstance(meta, dict) else None
    fn = getattr(autotuner, "fn", None)
    return name or getattr(fn, "__name__", None) or getattr(fn, "name", None)


def describe(config):
    """A Triton config as plain data: its block sizes and other constants, warps and stages."""
    kwargs = dict(getattr(config, "kwargs", None) or {})
    return {"kwargs": {k: kwargs[k] for k in sorted(kwargs) if isinstance(kwargs[k], (bool, int, float, str))},
            "num_warps": getattr(config, "num_warps", None),
            "num_stages": getattr(config, "num_stages", None)}


def same(config, described):
    d = describe(config)
    return all(d[k] == described.get(k) for k in ("kwargs", "num_warps", "num_stages"))


def tuned():
    """{kernel name: its config} for every inductor kernel of this process tuned to one config;
    a name whose kernels run different configs (two graphs, one name) maps to None."""
    out = {}
    for a in _autotuners():
        launchers = getattr(a, "launchers", None) or []
        name = kernel_name(a)
        if len(launchers) != 1 or not name:
            continue
        d = describe(launchers[0].config)
        out[name] = d if name not in out or out[name] == d else None
    return out


def pin(table):
    """From now on, each inductor kernel named in `table` ({name: described config}) runs that
    config where its autotuner has it among its candidates, with no coordinate descent from it.
    Returns a dict that says, per kernel, what happened as each is first run."""
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner as CA
    said = {}
    tune, descend = CA.autotune_to_one_config, CA.coordinate_descent_tuning

    def autotune_to_one_config(self, *args, **kwargs):
        name = kernel_name(self)
        want = table.get(name)
        if want:
            hit = [l for l in self.launchers if same(l.config, want)]
            if hit:
                self.launchers = hit[:1]
                said[name] = "pinned to the recording's config"
                return None
            said[name] = (f"the recording's config is not among this process's "
                          f"{len(self.launchers)} candidates: tuned here")
        return tune(self, *args, **kwargs)

    def coordinate_descent_tuning(self, launcher, *args, **kwargs):
        name = kernel_name(self)
        want = table.get(name)
        if want and same(launcher.config, want):
            said.setdefault(name, "the recording's config, no coordinate descent")
            return launcher
        return descend(self, launcher, *args, **kwargs)

    CA.autotune_to_one_config = autotune_to_one_config
    CA.coordinate_descent_tuning = coordinate_descent_tuning
    return said


def compare(recorded, ran):
    """One line: whether the kernels ran the recorded configs."""
    names = sorted(n for n in recorded if recorded[n] is not None)
    differ = [n for n in names if n in ran and ran[n] != recorded[n]]
    missing = [n for n in names if n not in ran]
    if not names:
        return "no tuned inductor kernel recorded"
    if not differ and not missing:
        return f"inductor configs the recording's ({len(names)} kernels)"
    parts = [f"{n}: recorded {fmt(recorded[n])}, ran {fmt(ran[n])}" for n in differ]
    parts += [f"{n}: not run here" for n in missing]
    return f"INDUCTOR CONFIGS DIFFER ({len(differ) + len(missing)} of {len(names)}): " + "; ".join(parts)


def fmt(d):
    if not d:
        return "?"
    kw = ",".join(f"{k}={v}" for k, v in d["kwargs"].items())
    return f"{kw} w{d['num_warps']} s{d['num_stages']}"
