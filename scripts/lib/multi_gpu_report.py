#!/usr/bin/env python3
"""Reads jobs from kfleetd and prints what scripts/gpu-multi-gpu-check.sh checks.

  multi_gpu_report.py rows ID...      one line per job: id state slot uuid pci lease start/end
                                      (ms) median_us stdev_us p10_us p90_us cv_pct exclusive
  multi_gpu_report.py waits ID        the job's "waits_for: host" scheduler events
Needs KFLEET_SERVER and KFLEET_TOKEN in the environment.
"""
import json
import os
import sys
import urllib.request


def get(path):
    req = urllib.request.Request(os.environ["KFLEET_SERVER"] + path,
                                 headers={"Authorization": "Bearer " + os.environ["KFLEET_TOKEN"]})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)


def job_row(job_id):
    job = get(f"/api/v1/jobs/{job_id}")
    events = get(f"/api/v1/jobs/{job_id}/events?limit=10000")["events"]
    runs = job.get("runs", [])
    run = runs[-1] if runs else {}
    rid = run.get("id", 0)
    row = {"id": job_id, "state": job["job"]["state"], "slot": run.get("slot", "-"),
           "host": run.get("host", "-"), "exclusive": run.get("host_exclusive", False),
           "uuid": "-", "pci": "-", "start_ms": 0, "end_ms": 0, "median_us": 0.0,
           "stdev_us": 0.0, "p10_us": 0.0, "p90_us": 0.0, "cv_pct": 0.0, "gpus_named": 0}
    named = set()
    for e in events:
        d = e.get("data") or {}
        if e["type"] == "lease.granted" and d.get("run_id") == rid:
            row["start_ms"] = e["ts_ms"]
        if e.get("run_id") != rid:
            continue
        row["end_ms"] = max(row["end_ms"], e["ts_ms"])
        gpu = d.get("gpu")
        if e["type"] in ("stage.started", "stage.finished") and isinstance(gpu, dict):
            named.add((gpu.get("index"), gpu.get("uuid"), gpu.get("pci_bus_id")))
        if e["type"] == "bench.result":
            for k in ("median_us", "stdev_us", "p10_us", "p90_us"):
                row[k] = float(d.get(k, 0) or 0)
    if named:
        _, row["uuid"], row["pci"] = sorted(named, key=str)[0]
    row["gpus_named"] = len(named)  # 1: every stage named the same GPU
    if row["median_us"]:
        row["cv_pct"] = 100.0 * row["stdev_us"] / row["median_us"]
    return row


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("rows", "waits"):
        sys.exit(__doc__)
    if sys.argv[1] == "waits":
        for e in get(f"/api/v1/jobs/{sys.argv[2]}/events?limit=10000")["events"]:
            d = e.get("data") or {}
            if e["type"] == "sched.decision" and d.get("waits_for"):
                print(f"  job {sys.argv[2]}: waits_for={d['waits_for']} host={d.get('host')}: "
                      f"{d.get('reason')}")
        return
    for a in sys.argv[2:]:
        r = job_row(int(a))
        print(" ".join(str(r[k]) for k in (
            "id", "state", "slot", "uuid", "pci", "start_ms", "end_ms", "median_us", "stdev_us",
            "p10_us", "p90_us", "cv_pct", "exclusive", "gpus_named")))


if __name__ == "__main__":
    main()
