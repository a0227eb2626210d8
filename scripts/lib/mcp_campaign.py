#!/usr/bin/env python3
"""Drives `kfleet mcp` over stdio as an MCP client would (JSON-RPC 2.0, one message a line):
initialize, then for each step a tools/call kfleet_submit_child with the whole job (its YAML and
its source files) and kfleet_wait_verdict, then kfleet_get_campaign. Used by
scripts/gpu-python-proof.sh to run a campaign through the MCP server.

  mcp_campaign.py --kfleet BIN/kfleet --campaign NAME --timeout-s 300 \
      STEP.yaml=FILE[,FILE...] ...

Each STEP.yaml is sent as job.yaml; each FILE as job.files[{path: basename, content}]. The parent
is the step YAML's parent (kfleetd resolves it by name within the campaign: the previous step's
job id is passed as parent_job, allow_non_best so that a rejected step's sibling still builds on
the parent it names). Prints one JSON line per step ({"step", "job_id", "state", "perf",
"median_us", "reason"}), then {"campaign": ...} with the campaign as kfleet_get_campaign
returns it. Exit 0 when every call answered (the verdicts are the caller's to judge), 1 when a
call failed (the error is printed), 2 on usage.
"""
import argparse
import json
import os
import subprocess
import sys
import time


class Mcp:
    def __init__(self, argv, log):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=log, text=True, bufsize=1)
        self.next_id = 0

    def send(self, msg):
        self.p.stdin.write(json.dumps(msg) + "\n")
        self.p.stdin.flush()

    def call(self, method, params):
        self.next_id += 1
        want = self.next_id
        self.send({"jsonrpc": "2.0", "id": want, "method": method, "params": params})
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError(f"kfleet mcp closed its output before answering {method} "
                                   f"(exit {self.p.poll()})")
            msg = json.loads(line)
            if msg.get("id") != want:
                continue  # a notification (progress)
            if "error" in msg:
                raise RuntimeError(f"{method}: JSON-RPC error {msg['error']}")
            return msg["result"]

    def tool(self, name, arguments):
        r = self.call("tools/call", {"name": name, "arguments": arguments})
        if r.get("isError"):
            text = " ".join(c.get("text", "") for c in r.get("content", []))
            raise RuntimeError(f"{name}: {text}")
        return r.get("structuredContent", {})

    def close(self):
        try:
            self.p.stdin.close()
            self.p.wait(timeout=10)
        except Exception:  # noqa: BLE001
            self.p.kill()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kfleet", required=True)
    ap.add_argument("--campaign", required=True)
    ap.add_argument("--root-job", type=int, required=True, help="the campaign's root job id")
    ap.add_argument("--timeout-s", type=float, default=300)
    ap.add_argument("--log", default=os.devnull, help="kfleet mcp's stderr goes here")
    ap.add_argument("steps", nargs="+", help="STEP.yaml=FILE[,FILE...]")
    a = ap.parse_args()
    with open(a.log, "a", encoding="utf-8") as log:
        m = Mcp([a.kfleet, "--no-color", "mcp"], log)
        try:
            init = m.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                         "clientInfo": {"name": "gpu-python-proof", "version": "1"}})
            m.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            print(json.dumps({"initialized": init.get("serverInfo", {})}), flush=True)
            by_name = {}
            parent = a.root_job
            for step in a.steps:
                yaml_path, _, files = step.partition("=")
                with open(yaml_path, encoding="utf-8") as f:
                    yaml = f.read()
                job_files = []
                for path in filter(None, files.split(",")):
                    with open(path, encoding="utf-8") as f:
                        job_files.append({"path": os.path.basename(path), "content": f.read()})
                # The step's parent by its name (parent: in the YAML), when an earlier step was it.
                pname = next((l.split(":", 1)[1].strip() for l in yaml.splitlines()
                              if l.startswith("parent:")), "")
                pid = by_name.get(pname, parent)
                t0 = time.time()
                sub = m.tool("kfleet_submit_child", {
                    "campaign": a.campaign, "parent_job": pid, "force": True,
                    "allow_non_best": True, "job": {"yaml": yaml, "files": job_files}})
                jid = sub["job_id"]
                v = m.tool("kfleet_wait_verdict", {"job_id": jid, "timeout_s": a.timeout_s})
                verdict = v.get("verdict") or {}
                name = sub.get("name", "")
                by_name[name] = jid
                print(json.dumps({"step": os.path.basename(yaml_path), "job_id": jid, "name": name,
                                  "finished": v.get("finished"), "state": v.get("state", ""),
                                  "perf": verdict.get("perf", ""),
                                  "median_us": verdict.get("median_us", ""),
                                  "reason": verdict.get("reason", ""),
                                  "seconds": round(time.time() - t0, 1)}), flush=True)
            c = m.tool("kfleet_get_campaign", {"name": a.campaign})
            print(json.dumps({"campaign": c}), flush=True)
        except (RuntimeError, OSError, ValueError, KeyError) as e:
            print(json.dumps({"error": str(e)}), flush=True)
            return 1
        finally:
            m.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
