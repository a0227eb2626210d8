#!/usr/bin/env bash
# The comparison with PyTorch, whole (docs/gpu-checks.md): every GPU check of "faster than
# PyTorch" in one scripts/gpu-detached.sh run, so in one log, of one tree. About 3,600 s of GPU
# work, longer than one lease of one GPU: on a host of several GPUs the four parts run side by
# side, one lane a GPU (the Pth part chosen on GPU P mod N), after the deps and the build; on one
# GPU, --parts takes what fits a lease. Its steps (gpu-detached.sh's names) in brackets:
#   fleet   gpu-problems-proof.sh: each problem's naive, Triton and torch jobs and the three torch
#           programs through kfleetd (every verdict with its eager / torch.compile line) [fleet],
#           then the C++ corpus [cppcorpus] (~1,130 s on an H100: 973 and 159 s on 12-06)
#   pair    gpu-torch-proof.sh triton,gap,inline,calib (the Triton, load_inline and attention
#           replays against in-process; the 1 % copy picked) [pair-torch], then gpu-python-proof.sh
#           inproc,pair: the calibrated copy `regressed` 5 of 5 at 0.5 %, its twin `same` 5 of 5
#           [pair] (~1,050 s)
#   refs    gpu-torch-proof.sh refs: every reference, eager and compile, replay against
#           in-process [refs] (~1,000 s)
#   corpus  the Python corpus through kfleetd [pycorpus] (~420 s), then gpu-versus-pytorch.sh on
#           the families' kernels (attention, scaled_mm) against their references [families]
#           (~190 s)
#   scripts/gpu-pytorch-whole.sh [--parts LIST] [--python PY] [--specs DIR] [--budget S] [--gpus N] [--dry-run]
#     --parts LIST the parts to run, a comma list (default fleet,pair,refs,corpus)
#     --python PY  the Python with torch and triton (default /opt/torch/.venv/bin/python3)
#     --specs DIR  the problems' specs (default .device/specs; gpu-torch-proof.sh --specs)
#     --budget S   gpu-detached.sh's budget (default 1,500: four H100s end in about 1,250); at most
#                  the device seconds left less ~200 (the machine's start, the polls)
#     --gpus N     lanes to use (default: every GPU nvidia-smi lists, at most 4)
#     --dry-run    print the gpu-detached.sh command line, start nothing
#     --tree DIR, --state DIR  passed to gpu-detached.sh (tests/scripts/gpu-pytorch-whole-test.sh
#                  runs the steps over stand-in scripts)
# Then `scripts/gpu-detached.sh poll --wait 540` until it exits 0; the log is $OUT/run.log.
# shellcheck source=lib/usage.sh
source "$(dirname "$0")/lib/usage.sh"
set -uo pipefail
# shellcheck source=lib/options.sh
source "$(dirname "$0")/lib/options.sh"
py=/opt/torch/.venv/bin/python3 specs=.device/specs budget=1500 gpus='' dry='' tree='' state=''
parts=fleet,pair,refs,corpus
parse_options --parts=parts --python=py --specs=specs --budget=budget --gpus=gpus --dry-run=dry! --tree=tree --state=state -- "$@"
pass=()
[ -n "$tree" ] && pass+=(--tree "$tree")
[ -n "$state" ] && pass+=(--state "$state")
if [ -z "$gpus" ]; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
  [ "$gpus" -ge 1 ] || die "nvidia-smi lists no GPU (--gpus N to say how many)"
  [ "$gpus" -gt 4 ] && gpus=4
fi
[[ "$gpus" =~ ^[1-9][0-9]*$ ]] || die "--gpus wants a count, got '$gpus'"
# shellcheck disable=SC2016  # expanded by each step's bash, in the run's state folder
T='"$KFLEET_DETACHED"'
steps=(
  'deps:60:dpkg -i .device/packages/deps/bubblewrap_*.deb >/dev/null && bwrap --version'
  'build:300:scripts/gpu-proof.sh --build-only'
)
# each part's steps, NAME:SECONDS:COMMAND, the lane put in below
declare -A part=(
  [fleet]="fleet:1200:scripts/gpu-problems-proof.sh --bin build-gpu/bin --out $T/fleet --python $py --no-python-corpus --only 'problems/[a-z_0-9]+(-triton|-torch)?\\.yaml|torch/'
cppcorpus:300:scripts/gpu-problems-proof.sh --bin build-gpu/bin --out $T/cpp --no-python-corpus --only exploits/"
  [pair]="pair-torch:450:scripts/gpu-torch-proof.sh --out $T/tp --python $py --specs $specs --only 'triton,gap,inline,calib'
pair:1000:e=\$(cat $T/tp/calibrated-slow1-entry 2>/dev/null); scripts/gpu-python-proof.sh --bin build-gpu/bin --out $T/pair --python $py --only 'inproc,pair' --tries 5 \${e:+--slow1-entry kfleet_attention_launch_\$e}"
  [refs]="refs:1300:scripts/gpu-torch-proof.sh --out $T/refs --python $py --specs $specs --only refs"
  [corpus]="pycorpus:600:scripts/gpu-problems-proof.sh --bin build-gpu/bin --out $T/pyc --python $py --only exploits/python/
families:600:KFLEET_PYTHON=$py scripts/gpu-versus-pytorch.sh --bin build-gpu/bin --out $T/versus --only 'gpu/01|scaled-mm'"
)
n=0
IFS=, read -ra chosen <<<"$parts"
for p in "${chosen[@]}"; do
  [ -n "${part[$p]:-}" ] || die "no part '$p' (fleet, pair, refs, corpus)"
  while IFS= read -r st; do steps+=("${st%%:*}@$(( n % gpus )):${st#*:}"); done <<<"${part[$p]}"
  n=$(( n + 1 ))
done
if [ -n "$dry" ]; then
  printf '%q ' "$(dirname "$0")/gpu-detached.sh" start "${pass[@]}" --budget "$budget" "${steps[@]}"; echo
  exit 0
fi
echo "gpu-pytorch-whole: ${#steps[@]} steps on $gpus GPU lane(s), budget $budget s"
exec "$(dirname "$0")/gpu-detached.sh" start "${pass[@]}" --budget "$budget" "${steps[@]}"
