#!/usr/bin/env bash
# The comparison with PyTorch, whole (docs/gpu-checks.md): every GPU check of "faster than
# PyTorch" in one scripts/gpu-detached.sh run, so in one log, of one tree. About 3,600 s of GPU
# work, longer than one lease of one GPU: on a host of several GPUs the four parts run side by
# side, one lane a GPU (part P on GPU P mod N), after the deps and the build.
#   fleet   gpu-problems-proof.sh: each problem's naive, Triton and torch jobs and the three torch
#           programs through kfleetd (every verdict with its eager / torch.compile line), then
#           the C++ corpus (~1,080 s on an H100)
#   pair    gpu-torch-proof.sh triton,gap,inline,calib (the Triton, load_inline and attention
#           replays against in-process; the 1 % copy picked), then gpu-python-proof.sh
#           inproc,pair: the calibrated copy `regressed` 5 of 5 at 0.5 %, its twin `same` 5 of 5
#           (~1,050 s)
#   refs    gpu-torch-proof.sh refs: every reference, eager and compile, replay against
#           in-process (~1,000 s)
#   corpus  the Python corpus through kfleetd (~420 s), then gpu-versus-pytorch.sh on the
#           families' kernels (attention, scaled_mm) against their references
#   scripts/gpu-pytorch-whole.sh [--python PY] [--specs DIR] [--budget S] [--gpus N] [--dry-run]
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
parse_options --python=py --specs=specs --budget=budget --gpus=gpus --dry-run=dry! --tree=tree --state=state -- "$@"
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
lane() { echo $(( $1 % gpus )); }
steps=(
  'deps:60:dpkg -i .device/packages/deps/bubblewrap_*.deb >/dev/null && bwrap --version'
  'build:300:scripts/gpu-proof.sh --build-only'
  "fleet@$(lane 0):1200:scripts/gpu-problems-proof.sh --bin build-gpu/bin --out $T/fleet --python $py --no-python-corpus --only 'problems/[a-z_0-9]+(-triton|-torch)?\\.yaml|torch/'"
  "pair-torch@$(lane 1):450:scripts/gpu-torch-proof.sh --out $T/tp --python $py --specs $specs --only 'triton,gap,inline,calib'"
  "refs@$(lane 2):1300:scripts/gpu-torch-proof.sh --out $T/refs --python $py --specs $specs --only refs"
  "pycorpus@$(lane 3):600:scripts/gpu-problems-proof.sh --bin build-gpu/bin --out $T/pyc --python $py --only exploits/python/"
  "cppcorpus@$(lane 0):300:scripts/gpu-problems-proof.sh --bin build-gpu/bin --out $T/cpp --no-python-corpus --only exploits/"
  "pair@$(lane 1):1000:e=\$(cat $T/tp/calibrated-slow1-entry 2>/dev/null); scripts/gpu-python-proof.sh --bin build-gpu/bin --out $T/pair --python $py --only 'inproc,pair' --tries 5 \${e:+--slow1-entry kfleet_attention_launch_\$e}"
  "families@$(lane 3):600:KFLEET_PYTHON=$py scripts/gpu-versus-pytorch.sh --bin build-gpu/bin --out $T/versus --only 'gpu/01|scaled-mm'"
)
if [ -n "$dry" ]; then
  printf '%q ' "$(dirname "$0")/gpu-detached.sh" start "${pass[@]}" --budget "$budget" "${steps[@]}"; echo
  exit 0
fi
echo "gpu-pytorch-whole: ${#steps[@]} steps on $gpus GPU lane(s), budget $budget s"
exec "$(dirname "$0")/gpu-detached.sh" start "${pass[@]}" --budget "$budget" "${steps[@]}"
