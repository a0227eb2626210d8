# Sourced by the scripts' tests here: their setup, from their command line KFLEETD KFLEET_AGENT
# KFLEET (the built binaries).
#   script_test_setup NAME "$@"   checks the arguments; makes $tmp (removed at exit unless a check
#     failed, then kept and named), $tmp/bin with the three binaries, HOME=$tmp, NO_COLOR=1,
#     python3 the interpreter itself (not a wrapper such as a pyenv shim);
#     sets $root (the repository) and `bad MESSAGE` (a failed check: FAIL on stderr, $fail=1)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }

script_test_setup() {
  local name=$1
  shift
  [ $# = 3 ] || { echo "usage: $0 KFLEETD KFLEET_AGENT KFLEET" >&2; exit 2; }
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/kfleet-$name-XXXXXX")
  trap 'if [ "$fail" = 0 ]; then rm -rf "$tmp"; else echo "kept $tmp" >&2; fi' EXIT
  # The scripts start python3 hundreds of times. Where python3 is a wrapper (a pyenv shim is a
  # chain of bash scripts, about 0.5 s of CPU a start), they get the interpreter it resolves to.
  local py
  py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) || py=""
  if [ -n "$py" ] && [ -x "$py" ]; then
    mkdir -p "$tmp/python"
    ln -s "$py" "$tmp/python/python3"
    export PATH="$tmp/python:$PATH"
  fi
  export HOME=$tmp NO_COLOR=1
  mkdir -p "$tmp/bin"
  ln -s "$1" "$tmp/bin/kfleetd"
  ln -s "$2" "$tmp/bin/kfleet-agent"
  ln -s "$3" "$tmp/bin/kfleet"
}
