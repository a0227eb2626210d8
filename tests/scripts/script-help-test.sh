#!/usr/bin/env bash
# Every script under scripts/ that takes options prints its whole header on -h/--help, exit 0,
# through scripts/lib/usage.sh: run by a relative path from another folder (the scripts cd to the
# repository root before they parse), and the header's last line included (ranges of line numbers
# kept by hand had cut clean-clone-check's --ref and seven lines of gpu-python-proof's).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kfleet-script-help-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
n=0
for f in "$root"/scripts/*.sh; do
  name=${f##*/}
  if ! grep -qE -- '-h\|--help\)|^parse_options ' "$f"; then continue; fi
  grep -q 'source "$(dirname "$0")/lib/usage.sh"' "$f" || { bad "$name takes -h/--help but does not source lib/usage.sh"; continue; }
  # the header found another way than usage.sh's: every line from the second to the one before
  # the shellcheck directive that precedes the source line, each without its "# "
  stop=$(grep -n '^# shellcheck source=lib/usage.sh$' "$f" | head -1 | cut -d: -f1)
  [ -n "$stop" ] || { bad "$name: no '# shellcheck source=lib/usage.sh' line before it sources usage.sh"; continue; }
  want=$(sed -n "2,$((stop - 1))p" "$f" | sed -E 's/^# ?//')
  [ "$(wc -l <<<"$want")" -ge 3 ] || bad "$name: a header of under 3 lines"
  rel=$(realpath --relative-to="$tmp" "$f")
  got=$(cd "$tmp" && timeout 30 bash "$rel" --help 2>&1); rc=$?
  [ $rc = 0 ] || bad "$name --help: exit $rc: $(tail -2 <<<"$got")"
  [ "$got" = "$want" ] || bad "$name --help is not its header: $(diff <(echo "$got") <(echo "$want") | head -4)"
  n=$((n + 1))
done
[ "$n" -ge 20 ] || bad "only $n scripts checked"
[ -z "$(ls -A "$tmp")" ] || bad "a script's --help wrote into the folder it ran from: $(ls -A "$tmp")"
[ "$fail" = 0 ] && echo "script-help-test: OK ($n scripts)"
exit "$fail"
