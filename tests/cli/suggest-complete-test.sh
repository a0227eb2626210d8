#!/usr/bin/env bash
# The real binaries correct and complete: an unknown command or option gets "did you mean ...?"
# (kfleet, kfleetd, kfleet-agent), and `kfleet completion bash`, sourced into bash, registers a
# completion that offers commands, options and job YAMLs (compgen on a prefix).
# Usage: suggest-complete-test.sh KFLEETD KFLEET_AGENT KFLEET
set -uo pipefail
[ $# = 3 ] || { echo "usage: $0 KFLEETD KFLEET_AGENT KFLEET" >&2; exit 2; }
kfleetd=$1 agent=$2 kfleet=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kfleet-complete-XXXXXX")
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }
trap 'rm -rf "$tmp"' EXIT
export HOME=$tmp NO_COLOR=1

# expect_suggestion WANT_EXIT WANT_TEXT COMMAND...
expect_suggestion() {
  local want_rc=$1 want=$2; shift 2
  local out rc
  out=$("$@" 2>&1); rc=$?
  [ "$rc" = "$want_rc" ] || bad "$*: exit $rc, want $want_rc"
  grep -qF -- "$want" <<<"$out" || bad "$*: no '$want' in: $out"
}
expect_suggestion 2 "kfleet: unknown command 'submti'; did you mean 'submit'?" "$kfleet" submti x.yaml
touch "$tmp/a.yaml"
expect_suggestion 2 "unknown option '--folow'; did you mean '--follow'?" "$kfleet" submit "$tmp/a.yaml" --folow
expect_suggestion 2 "unknown command 'revokee'; did you mean 'revoke'?" "$kfleet" token revokee 3
expect_suggestion 2 "unknown option '--sever'; did you mean '--server'?" "$kfleet" agents --sever http://x
expect_suggestion 2 "unknown command 'mnit'; did you mean 'mint'?" "$kfleet" enrol-token mnit --name x
expect_suggestion 2 "unknown command 'enrol-tokens'; did you mean 'enrol-token'?" "$kfleet" enrol-tokens list
expect_suggestion 2 "unknown command 'revok'; did you mean 'revoke'?" "$kfleet" agents revok 3
expect_suggestion 2 "kfleetd: unknown option '--dbb'; did you mean '--db'?" "$kfleetd" --dbb x.db
expect_suggestion 2 "kfleet-agent: unknown option '--backnd'; did you mean '--backend'?" "$agent" --server http://x --backnd cuda
# Nothing near: the error alone, no guess.
out=$("$kfleet" frobnicate 2>&1)
grep -q "did you mean" <<<"$out" && bad "kfleet frobnicate guessed: $out"

# One mistake, one line: the whole of stderr is that line and the hint, nothing on
# stdout; CLI11's own "The following arguments were not expected" is never printed beside it.
# expect_exactly WANT_LINE HELP_FOR COMMAND...
expect_exactly() {
  local want="$1"$'\n'"Run '$2 --help' for more information."; shift 2
  local out err rc
  out=$("$@" 2>"$tmp/stderr"); rc=$?
  err=$(cat "$tmp/stderr")
  [ "$rc" = 2 ] || bad "$*: exit $rc, want 2"
  [ -z "$out" ] || bad "$*: printed on stdout: $out"
  [ "$err" = "$want" ] || bad "$*: stderr is
$err
want
$want"
}
expect_exactly "kfleet: unknown command 'sbumit'; did you mean 'submit'?" kfleet "$kfleet" sbumit x.yaml
expect_exactly "kfleet: unknown command 'frobnicate'" kfleet "$kfleet" frobnicate --follow a b
expect_exactly "kfleet: unknown option '--jsn'; did you mean '--json'?" kfleet "$kfleet" --jsn status
expect_exactly "kfleet submit: unknown option '--folow'; did you mean '--follow'?" "kfleet submit" "$kfleet" submit "$tmp/a.yaml" --folow
expect_exactly "kfleet submit: missing files: job YAML files" "kfleet submit" "$kfleet" submit --follow
expect_exactly "kfleet submit: --priority needs a value (INT)" "kfleet submit" "$kfleet" submit "$tmp/a.yaml" --priority
expect_exactly "kfleet status: unknown option '--stat'; did you mean '--state'?" "kfleet status" "$kfleet" status --stat queued
expect_exactly "kfleet logs: unexpected argument '8'" "kfleet logs" "$kfleet" logs 7 8
expect_exactly "kfleet token: unknown command 'revokee'; did you mean 'revoke'?" "kfleet token" "$kfleet" token revokee 3
expect_exactly "kfleet token: missing a command: create, list or revoke" "kfleet token" "$kfleet" token
expect_exactly "kfleet token create: missing --user: who the token is for" "kfleet token create" "$kfleet" token create --scope read
expect_exactly "kfleet enrol-token: unknown command 'mnit'; did you mean 'mint'?" "kfleet enrol-token" "$kfleet" enrol-token mnit --name x
expect_exactly "kfleet agents: unknown command 'revok'; did you mean 'revoke'?" "kfleet agents" "$kfleet" agents revok 3
expect_exactly "kfleet baseline: unknown command 'lis'; did you mean 'list'?" "kfleet baseline" "$kfleet" --server http://127.0.0.1:9 baseline lis
expect_exactly "kfleet campaign: unknown command 'shwo'; did you mean 'show'?" "kfleet campaign" "$kfleet" --server http://127.0.0.1:9 campaign shwo fa
expect_exactly "kfleet regress: unknown command 'shw'; did you mean 'show'?" "kfleet regress" "$kfleet" --server http://127.0.0.1:9 regress shw 3
expect_exactly "kfleet completion: shell: tcsh not in {bash,zsh,fish}" "kfleet completion" "$kfleet" completion tcsh
expect_exactly "kfleet: no command given" kfleet "$kfleet" --json
expect_exactly "kfleetd: unknown option '--dbb'; did you mean '--db'?" kfleetd "$kfleetd" --dbb x.db
expect_exactly "kfleetd: unexpected argument 'serve'" kfleetd "$kfleetd" serve
expect_exactly "kfleet-agent: unknown option '--backnd'; did you mean '--backend'?" kfleet-agent "$agent" --server http://x --backnd cuda
expect_exactly "kfleet-agent: unknown option '--frobnicate'" kfleet-agent "$agent" --frobnicate

for shell in bash zsh fish; do
  "$kfleet" completion "$shell" >"$tmp/complete.$shell" || bad "kfleet completion $shell failed"
  grep -q "submit" "$tmp/complete.$shell" || bad "the $shell script does not name submit"
done
expect_suggestion 2 "tcsh not in {bash,zsh,fish}" "$kfleet" completion tcsh

# Sourced into a real bash: the completion is registered, and answers on a prefix.
mkdir -p "$tmp/work/jobs" && touch "$tmp/work/a.yaml" "$tmp/work/notes.txt"
cd "$tmp/work" || exit 1
answers=$(bash --norc --noprofile -c '
  source "$1" || exit 9
  complete -p kfleet || exit 8
  ask() {
    COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMPREPLY=(); _kfleet
    echo "$*| $(printf "%s\n" "${COMPREPLY[@]}" | sort | paste -sd " ")"
  }
  ask kfleet su
  ask kfleet submit --f
  ask kfleet submit ""
  ask kfleet token ""
  ask kfleet --server http://x re
  ask kfleet --json st
  ask kfleet submit --follow ""
  ask kfleet baseline ""
  ask kfleet enrol-token ""
  ask kfleet agents re
  # compgen runs the registered function as the shell would for "kfleet su<TAB>".
  COMP_WORDS=(kfleet su); COMP_CWORD=1
  echo "compgen| $(compgen -F _kfleet -- su 2>/dev/null | paste -sd " ")"
' bash "$tmp/complete.bash")
rc=$?
echo "$answers"
[ "$rc" = 0 ] || bad "sourcing the bash script or complete -p failed ($rc)"
want_line() { grep -qxF -- "$1" <<<"$answers" || bad "completion: want the line '$1'"; }
grep -qF "complete -o filenames -F _kfleet kfleet" <<<"$answers" || bad "complete -p kfleet did not show _kfleet"
want_line "kfleet su| submit"
grep -q "^kfleet submit --f| .*--follow" <<<"$answers" || bad "no --follow for submit --f"
grep -q "^kfleet submit --f| .*--force" <<<"$answers" || bad "no --force for submit --f"
grep -q "^kfleet submit | .*a.yaml" <<<"$answers" || bad "submit does not offer a.yaml"
grep -q "^kfleet submit | .*jobs" <<<"$answers" || bad "submit does not offer the jobs/ folder"
grep -q "^kfleet submit | .*notes.txt" <<<"$answers" && bad "submit offers a file that is not YAML"
want_line "kfleet token | create list revoke"
want_line "kfleet --server http://x re| regress report results"
want_line "kfleet baseline | list set"
want_line "kfleet enrol-token | list mint revoke"
grep -q "^kfleet agents re| .*revoke" <<<"$answers" || bad "agents does not offer revoke"
want_line "kfleet --json st| status"   # a flag takes no value: the next word is the command
grep -q "^kfleet submit --follow | .*a.yaml" <<<"$answers" || bad "submit --follow does not offer a.yaml"
grep -q "^compgen| submit" <<<"$answers" || bad "compgen -F _kfleet on 'su' did not give submit"
[ "$fail" = 0 ] && echo "suggest-complete-test: ok"
exit "$fail"
