#!/usr/bin/env bash
# Shows every problem's kernel compared with kfleet's PyTorch references on an NVIDIA GPU, through
# kfleetd and one sandboxed `kfleet-agent --backend cuda` (docs/measurement.md, "Against
# PyTorch"): submits the library's naive kernel of each problem (jobs/problems/*.yaml) and a
# kernel of each family (jobs/gpu/01-correct.yaml: attention; jobs/scaled-mm-cuda/suite.yaml:
# scaled_mm), each retargeted to --gpu and put in one campaign, twice with `kfleet submit --wait
# --force`. The first run records and times eager and torch.compile (max-autotune-no-cudagraphs)
# by replay on the job's timed case; the second must read both from the agent's cache. Prints
# each verdict's "x eager / x torch.compile" line, then the campaign's fast_p, then one table row
# per job. Exits 1 when a verdict has no comparison, a reference was not timed (its note is
# printed) or the second run timed a reference again; 2 on a setup failure.
#   scripts/gpu-versus-pytorch.sh [--bin DIR] [--out DIR] [--gpu G] [--only REGEX] [--backend B] [--arch A]
#                                 [--keep-cache] [--reference-timeout S]
#     --bin DIR      kfleetd/kfleet-agent/kfleet already built in DIR (skips the build)
#     --out DIR      the database, the agent's work dir, the logs, each job's `kfleet status`
#                    (default ./versus-pytorch-run)
#     --gpu G        the jobs' target (default sm_90: an H100 or H200)
#     --only REGEX   only the jobs whose file matches
#     --backend B    cuda; `simulated --arch sm_90a` only tests this script without a GPU (its
#                    comparisons are simulated and say so)
#     --keep-cache   keep the agent's build cache of the last run in --out (its timed references
#                    among it), so that runs split by --only over several calls of a GPU machine
#                    (each under its time limit) end in one run that reads every reference
#     --reference-timeout S  the agent's bound on recording one reference (default 1800, the
#                    agent's own): past it the verdict carries a note, not a comparison, and
#                    the run goes on (a GPU call with a time limit of its own wants it shorter)
# The agent's Python is $KFLEET_PYTHON (else python3): it needs torch and triton.
# shellcheck source=lib/usage.sh
source "$(dirname "$0")/lib/usage.sh"
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
root=$PWD bin="" out="$root/versus-pytorch-run" gpu=sm_90 only=. backend=cuda arch="" keep=0 reference_timeout=1800
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --out|--run-dir) out=$2; shift 2 ;;
    --gpu) gpu=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --keep-cache) keep=1; shift ;;
    --reference-timeout) reference_timeout=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "gpu-versus-pytorch: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done
die() { echo "gpu-versus-pytorch: $*" >&2; exit 2; }
if [ -z "$bin" ]; then scripts/gpu-proof.sh --build-only || die "build failed"; bin=$root/build-gpu/bin; fi
for x in kfleetd kfleet-agent kfleet; do [ -x "$bin/$x" ] || die "$bin/$x is missing"; done

kept=""
if [ "$keep" = 1 ] && [ -d "$out/agent/build-cache" ]; then
  kept=$(mktemp -d "${out%/}.cache.XXXXXX") && mv "$out/agent/build-cache" "$kept/" || die "cannot keep $out/agent/build-cache"
fi
rm -rf "$out"; mkdir -p "$out/jobs" "$out/yaml"
if [ -n "$kept" ]; then
  mkdir -p "$out/agent" && mv "$kept/build-cache" "$out/agent/" && rmdir "$kept" || die "cannot put the kept cache back"
  echo "gpu-versus-pytorch: the agent's build cache of the last run kept ($out/agent/build-cache)"
fi
export KFLEET_HARNESS_DIR=$root/kernels/harness KFLEET_PROBLEMS_DIR=$root/kernels/problems
# shellcheck source=lib/local-cluster.sh
source "$root/scripts/lib/local-cluster.sh"
agent_flags=(--backend "$backend" --problems-dir "$KFLEET_PROBLEMS_DIR" --reference-timeout "$reference_timeout")
[ -n "$arch" ] && agent_flags+=(--arch "$arch" --gpu-class "$arch")
start_local_cluster "$bin" "$out" "${agent_flags[@]}" || die "kfleetd and agent gpu0 did not come up"
kf() { "$bin/kfleet" --no-color "$@"; }
command -v nvidia-smi >/dev/null && nvidia-smi -L | sed -n "${KFLEET_GPU:+$(( KFLEET_GPU + 1 ))}p"  # a gpu-detached lane's GPU alone
echo "gpu-versus-pytorch: kfleetd $KFLEET_SERVER, agent gpu0 (--backend $backend), problems $KFLEET_PROBLEMS_DIR"
kf agents | sed 's/^/  /'

# Each job retargeted to --gpu, in one campaign (its fast_p is the summary), no parent.
jobs=()
for f in jobs/problems/rmsnorm.yaml jobs/problems/softmax.yaml jobs/problems/rope.yaml \
         jobs/problems/grouped_gemm.yaml jobs/problems/topk.yaml jobs/problems/fp8_block_gemm.yaml \
         jobs/gpu/01-correct.yaml jobs/scaled-mm-cuda/suite.yaml; do
  [[ "$f" =~ $only ]] || continue
  [ -f "$f" ] || die "$f is missing"
  name=$(echo "$f" | sed 's|^jobs/||; s|\.yaml$||; s|/|-|g')
  sed -E -e "s|^target: .*|target: {gpu: $gpu}|" -e 's|^campaign: .*|campaign: versus-pytorch|' \
      -e '/^parent: /d' -e "s|^name: .*|name: versus-pytorch/$name|" "$f" >"$out/yaml/$name.yaml"
  grep -q '^campaign:' "$out/yaml/$name.yaml" || sed -i '1i campaign: versus-pytorch' "$out/yaml/$name.yaml"
  jobs+=("$name")
done
[ "${#jobs[@]}" -gt 0 ] || die "no job matches --only $only"

# One verdict's comparisons as "eager|compile" fields: SPEEDUP [LO, HI] cached|timed, or the note.
versus_fields() {
  python3 -c '
import json, sys
j = json.load(sys.stdin)
v = (j.get("job") or {}).get("verdict") or {}
out = {}
for c in v.get("versus") or []:
    if "speedup" in c:
        ci = " [%.2f, %.2f]" % (c["ci_low"], c["ci_high"]) if "ci_low" in c else ""
        out[c["baseline"]] = "%.3fx%s %s %.2fus" % (c["speedup"], ci, "cached" if c.get("cached") else "timed",
                                                   c.get("reference_us", 0))
    else:
        out[c["baseline"]] = "NOTE " + c.get("note", "")
print("%s\t%s\t%s\t%s" % (out.get("eager", "NONE"), out.get("compile", "NONE"),
                          v.get("median_us", ""), (v.get("versus") or [{}])[0].get("case", "")))'
}

rows=() failures=0
for name in "${jobs[@]}"; do
  for run in 1 2; do
    t0=$(date +%s)
    res=$(kf --json submit "$out/yaml/$name.yaml" --force --wait --kernel-lib "$root/kernels" \
          2>"$out/jobs/$name.$run.submit.err"); rc=$?
    secs=$(( $(date +%s) - t0 ))
    id=$(printf '%s' "$res" | json_field job.id)
    [ -n "$id" ] || { echo "== $name run $run: not submitted: $(head -3 "$out/jobs/$name.$run.submit.err")"; failures=$((failures + 1)); continue; }
    status=$(kf --json status "$id" 2>/dev/null)
    kf status "$id" >"$out/jobs/$name.$run.status" 2>&1
    kf logs "$id" >"$out/jobs/$name.$run.log" 2>&1
    state=$(printf '%s' "$status" | json_field job.state)
    IFS=$'\t' read -r eager compile median case_name <<<"$(printf '%s' "$status" | versus_fields)"
    echo "== $name run $run: job $id, $state after ${secs}s (exit $rc)"
    printf '%s' "$status" | json_field job.verdict.reason | sed 's/^/   /'
    ok=OK
    for f in "$eager" "$compile"; do
      case "$f" in
        NONE) ok=FAIL ;;                                   # no comparison at all
        NOTE*) ok=FAIL ;;                                  # a reference was not timed
        *timed*) [ "$run" = 2 ] && ok=FAIL ;;              # the second run must read the cache
      esac
    done
    [ "$ok" = OK ] || failures=$((failures + 1))
    rows+=("$(printf '%s\t%s\t%s\t%s\t%s\t%s\t%ss\t%s' "$name" "$run" "$case_name" "$median" "$eager" "$compile" "$secs" "$ok")")
  done
done

echo
echo "== the campaign (fast_p against each reference)"
kf campaign show versus-pytorch | sed -n '/## Against PyTorch/,$p'
echo
echo "== gpu-versus-pytorch results ($(nvidia-smi -L 2>/dev/null | head -1), backend $backend)"
printf '%-26s %-3s %-12s %-9s %-44s %-44s %-6s %s\n' JOB RUN CASE KERNEL_US EAGER TORCH.COMPILE TIME CHECK
for r in "${rows[@]}"; do
  IFS=$'\t' read -r n run c m e k s ok <<<"$r"
  printf '%-26s %-3s %-12s %-9s %-44s %-44s %-6s %s\n' "$n" "$run" "$c" "${m:0:8}" "${e:0:44}" "${k:0:44}" "$s" "$ok"
done
# shellcheck disable=SC2154  # pids: local-cluster.sh's
kill -0 "${pids[1]}" 2>/dev/null || { echo "gpu-versus-pytorch: agent gpu0 DIED"; failures=$((failures + 1)); }
echo "gpu-versus-pytorch: ${#rows[@]} run(s), $failures failure(s); logs in $out"
[ "${#rows[@]}" -gt 0 ] && [ "$failures" = 0 ]
