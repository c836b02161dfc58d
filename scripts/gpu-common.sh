# Shared by scripts/gpu-check and scripts/gpu-datatype (sourced): the record header of a result file and a step that
# runs a command into a log and appends one line to the summary. Needs $machine, $sum and the script's name in $who.
# COMMIT=<hash> names the commit where the tree has no usable .git (the device tool sends a working tree).
commit_id() { echo "${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo '?')}"; }
header() {  # the exact command, as one line
  printf '# recorded by scripts/%s %s, %s, commit %s: %s\n' "$who" "$machine" "$(date -u +%Y-%m-%dT%H:%MZ)" \
    "$(commit_id)" "$*"
}
step() {  # name, log file, command...
  local name=$1 log=$2; shift 2
  local t0=$(date +%s)
  "$@" >"$log" 2>&1
  local rc=$?
  echo "$name: exit $rc in $(( $(date +%s) - t0 )) s — $(grep -E 'passed, [0-9]+ failed|tests passed|checks, [0-9]+ failed|checked .*: ok|all data validated|FAIL' "$log" | tail -2 | tr '\n' ' ')" >>"$sum"
  return $rc
}
