#!/usr/bin/env bash
# scripts/gpu-multi-gpu-check.sh on a simulated 3-GPU host (--backend simulated): the script only
# ever runs for real on a lent multi-GPU machine, so this keeps it working between those runs.
# Its checks (one job per GPU at once, a host-exclusive job alone after waiting for the host)
# must pass, and it must stop with an error, not wait, when a submit is refused.
# Usage: gpu-multi-gpu-check-test.sh KFLEETD KFLEET_AGENT KFLEET
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
script_test_setup multi-gpu "$@"

"$root/scripts/gpu-multi-gpu-check.sh" --bin "$tmp/bin" --run-dir "$tmp/run" --backend simulated \
  --gpus 3 --rounds 1 >"$tmp/check.log" 2>&1
rc=$?
cat "$tmp/check.log"
[ "$rc" = 0 ] || bad "the check exited $rc"
for want in "CHECK 1: OK" "CHECK 2: OK" "distinct GPU UUIDs 3" "waited for the host: True" \
            "0 mismatch(es) (backend simulated, 3 GPUs)"; do
  grep -qF "$want" "$tmp/check.log" || bad "no '$want' in its output"
done
# Three runs "at once" in section 3, one per slot.
[ "$(grep -c '^    together ' "$tmp/check.log")" = 3 ] || bad "section 3 does not list 3 runs on all GPUs at once"

# A refused submit (no kernel library for lib: sources) ends the check within seconds.
KFLEET_KERNEL_LIB=$tmp/nowhere timeout 120 "$root/scripts/gpu-multi-gpu-check.sh" --bin "$tmp/bin" \
  --run-dir "$tmp/run-refused" --backend simulated --gpus 1 --rounds 1 >"$tmp/refused.log" 2>&1
rc=$?
[ "$rc" = 2 ] || bad "a refused submit: exit $rc, want 2 (124 means it waited instead)"
grep -q "a submit failed" "$tmp/refused.log" || bad "a refused submit was not reported: $(tail -3 "$tmp/refused.log")"
[ "$fail" = 0 ] && echo "gpu-multi-gpu-check-test: ok"
exit "$fail"
