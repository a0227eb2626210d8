# Sourced by the GPU scripts (gpu-proof, gpu-exploits, measure-quality and the checks): their
# command lines, their one way to fail, and the binaries they run.
#   parse_options SPEC... -- "$@"
#     each SPEC is `--name=var` (takes a value, into $var), `--name=var!` (a flag: var=1), or
#     `--a|--b=var` (two spellings); -h/--help prints the script's header (lib/usage.sh, which
#     the script sources first); anything else is an error
#   die MESSAGE   "SCRIPT: MESSAGE" on stderr, then exit 2 (a setup failure)
#   need_bins     $bin: the folder of kfleetd, kfleet-agent and kfleet, as given or else built by
#                 scripts/gpu-proof.sh --build-only (from the repository root, $root); dies
#                 when one of them is missing

script_name=${0##*/}
script_name=${script_name%.sh}
die() { echo "$script_name: $*" >&2; exit 2; }

parse_options() {
  # Its locals are prefixed: `printf -v` into a caller's variable that a local shares a name with
  # sets the local instead (a script's `--specs=specs` was silently dropped so).
  local _po_specs=() _po_s _po_names _po_var _po_matched
  while [ $# -gt 0 ] && [ "$1" != -- ]; do _po_specs+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  while [ $# -gt 0 ]; do
    case "$1" in -h|--help) usage; exit 0 ;; esac
    _po_matched=""
    for _po_s in "${_po_specs[@]}"; do
      _po_names=${_po_s%%=*} _po_var=${_po_s#*=}
      [[ "|$_po_names|" == *"|$1|"* ]] || continue
      _po_matched=1
      if [ "${_po_var%!}" != "$_po_var" ]; then
        printf -v "${_po_var%!}" 1
        shift
      else
        [ $# -ge 2 ] || die "$1 needs a value"
        printf -v "$_po_var" '%s' "$2"
        shift 2
      fi
      break
    done
    [ -n "$_po_matched" ] || die "unknown option '$1' (try --help)"
  done
}

need_bins() {
  if [ -z "$bin" ]; then
    scripts/gpu-proof.sh --build-only || die "build failed"
    bin=$root/build-gpu/bin
  fi
  local x
  for x in kfleetd kfleet-agent kfleet; do [ -x "$bin/$x" ] || die "$bin/$x is missing"; done
}
