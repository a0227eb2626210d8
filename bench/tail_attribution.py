#!/usr/bin/env python3
"""What a submit-to-lease tail is made of, sample by sample.

Lays kfleet_bench's latency samples (--samples-out: depth, index, start and end in ns on
CLOCK_MONOTONIC, ms) over a scheduler trace recorded on the same clock:

  perf record -e sched:sched_switch -e sched:sched_wakeup -e sched:sched_wakeup_new -a \\
      -k CLOCK_MONOTONIC -o sched.data -- \\
      kfleet_bench --db sqlite --depths 10000 --samples-out samples.tsv
  perf sched timehist -i sched.data > timehist.txt
  bench/tail_attribution.py samples.tsv timehist.txt [--slowest 5]

For each of the slowest samples of each depth, and for the median ones as a baseline, it
splits the sample's window into the time kfleetd's API thread (the one that serves requests,
schedules and writes) ran, the time it waited runnable for a CPU (woken, not yet on one: the
run queue) and the rest; gives the time kfleetd's other threads ran (kfleetd-wal: SQLite's
checkpoints) and the bench's own threads waited runnable (the user client that submits, the
agent that long-polls); and names what held the CPUs while the API thread waited. Per depth it
also counts the samples a kernel thread (kdamond, kswapd, ...) ran in for more than 0.5 ms, among
the slowest and the rest. bench/sqlite-tail.sh runs all three steps (on PostgreSQL too: pass
--db postgres).
"""
import argparse
import collections
import re
import sys

LINE = re.compile(r"^\s*(\d+\.\d+)\s+\[(\d+)\]\s+(.+?)\[(\d+)(?:/(\d+))?\]\s+"
                  r"(\d+\.\d+)\s+(\d+\.\d+)\s+(\d+\.\d+)")


def parse_timehist(path):
    """Yields (comm, tid, pid, cpu, wake, start, end): a task woke at `wake` (seconds), waited
    runnable until `start`, ran until `end` on `cpu`."""
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            t, cpu, comm, tid, pid, _wait, delay, run = m.groups()
            end = float(t)
            start = end - float(run) / 1e3
            wake = start - float(delay) / 1e3
            out.append((comm.strip(), int(tid), int(pid or tid), int(cpu), wake, start, end))
    return out


def overlap(a0, a1, b0, b1):
    return max(0.0, min(a1, b1) - max(a0, b0))


def union_ms(intervals):
    """Milliseconds covered by `intervals` (timehist can give one thread two overlapping
    slices around a migration: count each instant once)."""
    total, end = 0.0, None
    for a, b in sorted(intervals):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total * 1e3


def attribute(slices, a, b, who):
    """Milliseconds the tasks matching `who` ran and waited runnable inside [a, b], the
    longest single runnable wait, and the runnable-wait intervals."""
    runs, waits = [], []
    longest = 0.0
    for comm, _tid, _pid, _cpu, wake, start, end in slices:
        if not who(comm):
            continue
        if overlap(start, end, a, b) > 0:
            runs.append((max(start, a), min(end, b)))
        w = overlap(wake, start, a, b)
        if w > 0:
            longest = max(longest, w)
            waits.append((max(wake, a), min(start, b)))
    return union_ms(runs), union_ms(waits), longest * 1e3, waits


def holders(slices, intervals):
    """Who ran on the CPUs during `intervals`: milliseconds per command, largest first."""
    by = collections.Counter()
    for comm, _tid, _pid, _cpu, _wake, start, end in slices:
        for w0, w1 in intervals:
            o = overlap(start, end, w0, w1)
            if o > 0:
                by[comm] += o * 1e3
    return by.most_common(4)


# Kernel threads that can hold a CPU for milliseconds at a stretch. On the 2-core development
# machine kdamond (the kernel's DAMON memory monitor) ran 1-30 ms at a time, 78 times in 25 s,
# and a thread woken onto its CPU waited behind it while the other CPU idled.
KERNEL_THREADS = ("kdamond", "kswapd", "kcompactd", "khugepaged", "rcu_", "ksoftirqd",
                  "kworker", "migration/")


def kernel_stalls(slices, windows, min_ms=0.5):
    """How many of `windows` ((start, end) in seconds) a kernel thread ran in for more than
    `min_ms` milliseconds of one slice."""
    import bisect
    runs = sorted((start, end) for comm, _t, _p, _c, _w, start, end in slices
                  if comm.startswith(KERNEL_THREADS) and (end - start) * 1e3 > min_ms)
    starts = [r[0] for r in runs]
    longest = max([b - a for a, b in runs] or [0.0])
    hit = 0
    for a, b in windows:
        i = bisect.bisect_left(starts, a - longest)
        if any(overlap(r0, r1, a, b) * 1e3 > min_ms for r0, r1 in runs[i:bisect.bisect_right(starts, b)]):
            hit += 1
    return hit


def self_test():
    """The arithmetic on a trace made up to know its answer; exits non-zero when it is wrong."""
    import os
    import tempfile
    # kfleetd's API thread (tid = pid 500) woke at 100.007, waited runnable 2 ms while `sh` held
    # the CPU, ran 1 ms; timehist also gives it an overlapping 0.5 ms slice on the other CPU
    # (counted once). Its checkpoint thread ran 0.25 ms. The sample lasted 100.006-100.012.
    trace = "\n".join([
        "           time    cpu  task name                       wait time  sch delay   run time",
        "   100.009000 [0000]  sh[600]                              0.000      0.000      4.000",
        "   100.010000 [0000]  kfleetd[500]                         0.000      2.000      1.000",
        "   100.010000 [0001]  kfleetd[500]                         0.000      0.000      0.500",
        "   100.011000 [0001]  kfleetd-wal[501/500]                 0.000      0.000      0.250",
        "   100.011000 [0001]  kfleet_bench[700/699]                0.000      0.500      0.250",
    ]) + "\n"
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "timehist.txt")
        with open(path, "w") as f:
            f.write(trace)
        slices = parse_timehist(path)
    a, b = 100.006, 100.012
    api = [x for x in slices if x[0] == "kfleetd" and x[1] == x[2]]
    ran, waited, longest, waits = attribute(api, a, b, lambda c: True)
    wal = attribute([x for x in slices if x[0] == "kfleetd-wal"], a, b, lambda c: True)[0]
    bench = attribute(slices, a, b, lambda c: c.startswith("kfleet_bench"))[1]
    held = dict(holders([x for x in slices if x not in api], waits))
    got = (round(ran, 3), round(waited, 3), round(longest, 3), round(wal, 3), round(bench, 3),
           round(held.get("sh", 0), 3))
    want = (1.0, 2.0, 2.0, 0.25, 0.5, 2.0)
    if got != want:
        sys.exit("tail_attribution self-test: got %s, want %s" % (got, want))
    # A kernel thread's 3 ms run meets the first window by 1 ms, the second by 0.25 ms (too
    # little), the third not at all.
    kd = [("kdamond.0", 77, 77, 1, 200.0, 200.000, 200.003)]
    stalls = kernel_stalls(kd, [(199.999, 200.001), (200.00275, 200.004), (200.004, 200.005)])
    if stalls != 1:
        sys.exit("tail_attribution self-test: kernel_stalls gave %d, want 1" % stalls)
    print("tail_attribution self-test: ok")


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("samples", help="kfleet_bench --samples-out file")
    ap.add_argument("timehist", help="perf sched timehist output over the same run")
    ap.add_argument("--slowest", type=int, default=5, help="slow samples per depth (5)")
    args = ap.parse_args()

    samples = collections.defaultdict(list)
    with open(args.samples) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 5:
                continue
            depth, idx, s0, s1, ms = parts[:5]  # a sixth column, the submit's answer, is not used
            samples[int(depth)].append((float(ms), int(idx), int(s0) / 1e9, int(s1) / 1e9))
    slices = parse_timehist(args.timehist)
    if not slices:
        sys.exit("tail_attribution: no task lines in %s (is it `perf sched timehist` output?)"
                 % args.timehist)
    t_first = min(s[5] for s in slices)
    t_last = max(s[6] for s in slices)

    is_kfleetd = lambda c: c.startswith("kfleetd")
    # The API thread is kfleetd's process's first (its tid is its pid); timehist gives the
    # other threads as tid/pid.
    api = [s for s in slices if is_kfleetd(s[0]) and s[1] == s[2]]
    others = [s for s in slices if is_kfleetd(s[0]) and s[1] != s[2]]
    api_holders = [s for s in slices if not (is_kfleetd(s[0]) and s[1] == s[2])]
    is_bench = lambda c: c.startswith("kfleet_bench")
    for depth in sorted(samples):
        rows = sorted(samples[depth], reverse=True)
        covered = [r for r in rows if r[2] >= t_first and r[3] <= t_last]
        if len(covered) < len(rows):
            print("depth %d: %d of %d samples lie outside the trace" %
                  (depth, len(rows) - len(covered), len(rows)))
        ms_sorted = sorted(r[0] for r in rows)
        p99 = ms_sorted[min(len(ms_sorted) - 1, int(0.99 * (len(ms_sorted) - 1) + 0.5))]
        p50 = ms_sorted[len(ms_sorted) // 2]
        print("\n## %d queued: %d samples, p50 %.2f ms, p99 %.2f ms\n" % (depth, len(rows), p50, p99))
        print("| sample | ms | API thread ran | API thread runnable, waiting for a CPU (longest) "
              "| other kfleetd threads ran | bench threads runnable | rest | CPUs held meanwhile by |")
        print("|---|---:|---:|---:|---:|---:|---:|---|")
        mid = len(covered) // 2
        picks = [("slow", r) for r in covered[:args.slowest]] + \
                [("median", r) for r in covered[max(0, mid - 2):mid + 3]]
        totals = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0])
        for kind, (ms, idx, a, b) in picks:
            k_ran, k_wait, k_long, k_waits = attribute(api, a, b, lambda c: True)
            o_ran, _o_wait, _o_long, _ = attribute(others, a, b, lambda c: True)
            _b_ran, b_wait, _b_long, _ = attribute(slices, a, b, is_bench)
            rest = max(0.0, ms - k_ran - k_wait)
            held = holders(api_holders, k_waits)
            held_s = ", ".join("%s %.2f" % (c, v) for c, v in held) or "-"
            print("| #%d (%s) | %.2f | %.2f | %.2f (%.2f) | %.2f | %.2f | %.2f | %s |" %
                  (idx, kind, ms, k_ran, k_wait, k_long, o_ran, b_wait, rest, held_s))
            t = totals[kind]
            t[0] += ms
            t[1] += k_wait
            t[2] += b_wait
            t[3] += 1
        for kind in ("slow", "median"):
            ms, kw, bw, n = totals[kind]
            if n:
                print("\n%s samples: %.2f ms mean, of it kfleetd's API thread waiting runnable %.2f ms (%.0f%%), "
                      "bench threads waiting runnable %.2f ms" %
                      (kind, ms / n, kw / n, 100.0 * kw / ms if ms else 0, bw / n))
        # The slowest 1.5 % (at least --slowest) against the rest: how often a kernel thread
        # held a CPU for more than 0.5 ms inside the sample.
        n_slow = max(args.slowest, int(0.015 * len(covered)))
        slow_w = [(r[2], r[3]) for r in covered[:n_slow]]
        rest_w = [(r[2], r[3]) for r in covered[n_slow:]]
        print("\nkernel threads (%s) running > 0.5 ms inside a sample: %d of the %d slowest, "
              "%d of the other %d" % (", ".join(KERNEL_THREADS), kernel_stalls(slices, slow_w),
                                      len(slow_w), kernel_stalls(slices, rest_w), len(rest_w)))


if __name__ == "__main__":
    main()
