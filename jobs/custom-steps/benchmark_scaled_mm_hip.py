"""Benchmark step of the custom job: prints one JSON metric line per measurement."""
import json
import sys

import torch


def main() -> int:
    n = int(sys.argv[sys.argv.index("-N") + 1]) if "-N" in sys.argv else 4096
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        a @ b
    for _ in range(10):
        start.record()
        a @ b
        end.record()
        torch.cuda.synchronize()
        ms = start.elapsed_time(end)
        print(json.dumps({"metric": "time_us", "value": ms * 1000.0, "case": f"n{n}"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
