#!/usr/bin/env bash
# The soak's curve: kfleet_bench --soak at several fleet sizes on each backend, one after the
# other, each on a fresh kfleetd and database, with the machine's load (uptime) written beside
# every run. Prints a table of the points last (docs/performance.md quotes it).
#   scripts/soak-curve.sh [--live 500,2000,5000,10000] [--db sqlite,postgres] [--soak-s 60]
#                         [--retired 1000] [--takeover] [--swarm-cpu N] [--out DIR]
# --takeover: on PostgreSQL, each point ends with a kill -9 of the leader (its standby's
# takeover and the agents' return are timed). --swarm-cpu N: the simulated agents on CPU N
# alone, kfleetd and the databases on the others (kfleet_bench --soak --help). Needs a built
# kfleet_bench and kfleetd in ./build.
set -euo pipefail
cd "$(dirname "$0")/.."
live=500,2000,5000,10000 dbs=sqlite,postgres secs=60 retired=1000 takeover="" pin="" out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --live) live=$2; shift 2 ;;
    --db) dbs=$2; shift 2 ;;
    --soak-s) secs=$2; shift 2 ;;
    --retired) retired=$2; shift 2 ;;
    --takeover) takeover=--takeover; shift ;;
    --swarm-cpu) pin="--swarm-cpu $2"; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "soak-curve: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
bench=build/bench/kfleet_bench
[ -x "$bench" ] || { echo "soak-curve: $bench is missing: scripts/build.sh kfleet_bench kfleetd" >&2; exit 1; }
out=${out:-$(mktemp -d -t kfleet-soak-curve-XXXXXX)}
mkdir -p "$out"
summary="$out/summary.md"
{
  echo "| backend | live agents | user p50 | user p99 | user max | heartbeat p50 | heartbeat p99 | heartbeat max | errors | leases lost | store writes / beats | kfleetd RSS peak | KiB / agent | fds peak | kfleetd CPU | PostgreSQL CPU | load before → after |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
} > "$summary"
for db in ${dbs//,/ }; do
  for n in ${live//,/ }; do
    log="$out/soak-$db-$n.txt"
    extra=""
    [ "$db" = postgres ] && extra=$takeover
    extra="$extra $pin"
    echo "soak-curve: $db, $n live agents, $secs s -> $log ($(uptime))" >&2
    { echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD) uptime: $(uptime)"
      echo "# $bench --soak --live $n --retired $retired --soak-s $secs --db $db $extra"
      "$bench" --soak --live "$n" --retired "$retired" --soak-s "$secs" --db "$db" $extra 2>&1
      echo "# uptime after: $(uptime)"; } > "$log"
    python3 - "$log" "$db" "$n" >> "$summary" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
def row(name):
    m = re.search(r"\| " + re.escape(name) + r" \| (\d+) \| (\d+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|", t)
    return m.groups() if m else ("?",) * 5
u, h = row("user all"), row("agent heartbeat")
num = lambda p, d="?": (re.search(p, t) or [None, d])[1]
errors = int(u[1]) + int(h[1]) if "?" not in (u[1], h[1]) else "?"
lost = num(r"leases lost: (\d+) seen by agents")
retried = num(r"(\d+) jobs retried or in error")
beats, wrote = num(r"heard by kfleetd: (-?\d+)"), num(r"wrote to the store: (-?\d+)")
rss = num(r"MiB seeded, ([\d.]+) MiB peak"); per = num(r"\(([\d.]+) KiB more per connected agent\)")
fds = num(r"open files \d+ seeded, (\d+) peak"); cpu = num(r"CPU ([\d.]+)% of a core")
pg = num(r"PostgreSQL server CPU ([\d.]+)%", "")
load = re.findall(r"load averages \(1, 5, 15 min\): (\S+) \S+ \S+ before, (\S+)", t)
load = f"{load[0][0]} → {load[0][1]}" if load else "?"
print(f"| {sys.argv[2]} | {int(sys.argv[3]):,} | {u[2]} | {u[3]} | {u[4]} | {h[2]} | {h[3]} | {h[4]} | "
      f"{errors} | {lost} ({retried} jobs retried) | {wrote} / {beats} | {rss} MiB | {per} | {fds} | "
      f"{cpu}% | {pg + '%' if pg else ''} | {load} |")
tk = re.search(r"takeover: .*", t)
if tk: print(f"<!-- {sys.argv[2]} {sys.argv[3]}: {tk.group(0)} -->")
PY
  done
done
echo "soak-curve: logs in $out" >&2
cat "$summary"
