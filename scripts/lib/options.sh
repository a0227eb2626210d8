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
  local specs=() s names var matched
  while [ $# -gt 0 ] && [ "$1" != -- ]; do specs+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  while [ $# -gt 0 ]; do
    case "$1" in -h|--help) usage; exit 0 ;; esac
    matched=""
    for s in "${specs[@]}"; do
      names=${s%%=*} var=${s#*=}
      [[ "|$names|" == *"|$1|"* ]] || continue
      matched=1
      if [ "${var%!}" != "$var" ]; then
        printf -v "${var%!}" 1
        shift
      else
        [ $# -ge 2 ] || die "$1 needs a value"
        printf -v "$var" '%s' "$2"
        shift 2
      fi
      break
    done
    [ -n "$matched" ] || die "unknown option '$1' (try --help)"
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
