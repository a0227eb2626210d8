#!/usr/bin/env bash
# scripts/gpu-pytorch-whole.sh starts the whole PyTorch comparison as one gpu-detached.sh run;
# its steps are command lines in strings, and a quoting slip would cost a lent machine's lease.
# Here they run over a tree whose GPU scripts are stand-ins that print their arguments: every
# part runs with the arguments it needs, in its lane (two GPUs: parts 0 and 2 on GPU 0, 1 and 3
# on GPU 1), the pair step is given the entry calib wrote, and everything lands in one log;
# --parts takes some of the parts.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kfleet-gpu-whole-XXXXXX")
trap 'bash "$root/scripts/gpu-detached.sh" stop --state "$tmp/st" >/dev/null 2>&1
      if [ "$fail" = 0 ]; then rm -rf "$tmp"; else echo "kept $tmp" >&2; fi' EXIT
mkdir -p "$tmp/tree/scripts" "$tmp/bin"
cp "$root/scripts/gpu-detached.sh" "$tmp/tree/scripts/"
cp -r "$root/scripts/lib" "$tmp/tree/scripts/"
for s in gpu-proof gpu-problems-proof gpu-torch-proof gpu-python-proof gpu-versus-pytorch; do
  # a stand-in: its name, the lane's GPU and each argument in brackets; gpu-torch-proof's calib
  # writes the entry it picked, as the real one does
  cat >"$tmp/tree/scripts/$s.sh" <<EOF
#!/usr/bin/env bash
printf '%s' "RAN $s gpu=\$KFLEET_GPU py=\${KFLEET_PYTHON:-}"; printf ' [%s]' "\$@"; echo
if [ "$s" = gpu-torch-proof ]; then
  all="\$*"
  while [ \$# -gt 0 ]; do [ "\$1" = --out ] && out=\$2; shift; done
  case "\$all" in *calib*) mkdir -p "\$out" && echo t1h >"\$out/calibrated-slow1-entry" ;; esac
fi
EOF
  chmod +x "$tmp/tree/scripts/$s.sh"
done
# the deps step's dpkg and bwrap, stood in for on PATH
printf '#!/bin/sh\nexit 0\n' >"$tmp/bin/dpkg"; printf '#!/bin/sh\necho bubblewrap stand-in\n' >"$tmp/bin/bwrap"
chmod +x "$tmp/bin/dpkg" "$tmp/bin/bwrap"

PATH=$tmp/bin:$PATH bash "$root/scripts/gpu-pytorch-whole.sh" --gpus 2 --python /py/bin/python3 --specs /the/specs \
  --tree "$tmp/tree" --state "$tmp/st" --budget 300 >"$tmp/start.out" 2>&1 || bad "start failed: $(cat "$tmp/start.out")"
grep -q "9 steps on 2 GPU lane" "$tmp/start.out" || bad "start did not say its steps and lanes: $(cat "$tmp/start.out")"
PATH=$tmp/bin:$PATH bash "$root/scripts/gpu-detached.sh" poll --state "$tmp/st" --wait 60 --out "$tmp/out" >/dev/null ||
  bad "the run did not end"
L=$tmp/out/run.log
has() { grep -qE -- "$1" "$L" || bad "no line matching '$1'"; }
has '^bubblewrap stand-in$'
has '^RAN gpu-proof gpu= py= \[--build-only\]$'
has "^RAN gpu-problems-proof gpu=0 .*\[--python\] \[/py/bin/python3\] \[--no-python-corpus\] \[--only\] \[problems/\[a-z_0-9\]\+\(-triton\|-torch\)\?\\\\\.yaml\|torch/\]$"
has '^RAN gpu-torch-proof gpu=1 .*\[--specs\] \[/the/specs\] \[--only\] \[triton,gap,inline,calib\]$'
has '^RAN gpu-torch-proof gpu=0 .*\[--only\] \[refs\]$'
has '^RAN gpu-problems-proof gpu=1 .*\[--python\] \[/py/bin/python3\] \[--only\] \[exploits/python/\]$'
has '^RAN gpu-problems-proof gpu=0 .*\[--no-python-corpus\] \[--only\] \[exploits/\]$'
has '^RAN gpu-python-proof gpu=1 .*\[--only\] \[inproc,pair\] \[--tries\] \[5\] \[--slow1-entry\] \[kfleet_attention_launch_t1h\]$'
has '^RAN gpu-versus-pytorch gpu=1 py=/py/bin/python3 .*\[--only\] \[gpu/01\|scaled-mm\]$'
grep -q "st/fleet\]" "$L" || bad "the fleet part's --out is not in the run's state folder"
[ "$(grep -c '^==== [a-z-]*: exit 0' "$L")" = 9 ] || bad "not 9 steps ended with exit 0: $(grep '^==== ' "$L")"
# --parts: only those parts, the lanes dealt among them; an unknown part is refused
d=$(bash "$root/scripts/gpu-pytorch-whole.sh" --gpus 2 --parts refs,corpus --dry-run)
for want in 'deps:60:' 'build:300:' 'refs@0:1300:' 'pycorpus@1:600:' 'families@1:600:'; do
  grep -qF -- "$want" <<<"$d" || bad "--parts refs,corpus: no step $want in: $d"
done
grep -qE '(^| )(fleet|cppcorpus|pair-torch|pair)@' <<<"$d" && bad "--parts refs,corpus ran other parts: $d"
bash "$root/scripts/gpu-pytorch-whole.sh" --gpus 1 --parts refs,nope --dry-run >/dev/null 2>&1
[ $? = 2 ] || bad "an unknown part was not refused"
# without a GPU, nvidia-smi lists none: said, nothing started
PATH=$tmp/bin:/usr/bin:/bin bash "$root/scripts/gpu-pytorch-whole.sh" --state "$tmp/st2" >/dev/null 2>&1
[ $? = 2 ] || command -v nvidia-smi >/dev/null || bad "no GPU and no --gpus: not exit 2"
[ "$fail" = 0 ] && echo "gpu-pytorch-whole-test: OK"
exit "$fail"
