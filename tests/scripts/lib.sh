# Sourced by the scripts' tests here: their setup, from their command line KFLEETD KFLEET_AGENT
# KFLEET (the built binaries).
#   script_test_setup NAME "$@"   checks the arguments; makes $tmp (removed at exit unless a check
#     failed, then kept and named), $tmp/bin with the three binaries, HOME=$tmp, NO_COLOR=1;
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
  export HOME=$tmp NO_COLOR=1
  mkdir -p "$tmp/bin"
  ln -s "$1" "$tmp/bin/kfleetd"
  ln -s "$2" "$tmp/bin/kfleet-agent"
  ln -s "$3" "$tmp/bin/kfleet"
}
