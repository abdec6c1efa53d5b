#!/usr/bin/env bash
# Runs named commands side by side, each with its output in its own log, and prints each log whole
# as its command ends (with its wall time and the CPU time its processes used, user + system, which
# tells a lane bound by the cores from one that waits), so lanes never interleave. Exits 1 when any
# lane failed. A server a lane starts as a daemon (PostgreSQL) is not its child: its CPU is not counted.
# Usage: tools/lanes.sh NAME 'COMMAND' [NAME 'COMMAND' ...]  (make test gives it one lane at a time)
set -u
logs=$(mktemp -d "${TMPDIR:-/tmp}/arrivalbench-lanes.XXXXXX")
declare -A names started
pids=()
while [ $# -ge 2 ]; do
  name=$1 command=$2; shift 2
  bash -c "$command"'; rc=$?; times >"'"$logs/$name.cpu"'"; exit $rc' >"$logs/$name.log" 2>&1 &
  pids+=($!); names[$!]=$name; started[$!]=$SECONDS
  echo "lane $name: started ($command)"
done
trap 'kill "${pids[@]}" 2>/dev/null; wait; exit 130' INT TERM
failed=0
remaining=${#pids[@]}
while [ "$remaining" -gt 0 ]; do
  wait -n -p done "${pids[@]}"; rc=$?
  [ -n "${done:-}" ] || break
  name=${names[$done]}
  cpu=$(awk 'NR == 2 { print "cpu " $1 " user, " $2 " system" }' "$logs/$name.cpu" 2>/dev/null)
  echo "==== lane $name: exit $rc after $((SECONDS - started[$done])) s wall${cpu:+, $cpu} ===="
  cat "$logs/$name.log"
  [ "$rc" -eq 0 ] || failed=1
  left=()
  for pid in "${pids[@]}"; do [ "$pid" = "$done" ] || left+=("$pid"); done
  pids=("${left[@]}")
  remaining=$((remaining - 1))
done
rm -rf "$logs"
exit "$failed"
