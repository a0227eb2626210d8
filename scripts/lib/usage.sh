# Sourced first by scripts/*.sh, before they cd: `usage` prints the script's header (the comment
# block under its first line, without the leading "# "), what -h/--help shows. One place, so a
# header that grows is shown whole and a script run by a relative path from anywhere finds itself.
usage_file=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
usage() { awk 'NR == 1 { next } !/^#/ || /^# shellcheck / { exit } { sub(/^# ?/, ""); print }' "$usage_file"; }
