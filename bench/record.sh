#!/usr/bin/env bash
# Records one benchmark run under bench/results/<machine>/: <bench>.txt (header + tables) and <bench>.jsonl.
#
#   bench/record.sh <machine> <build-dir> <bench> [-n PES] [benchmark options...]
#   e.g. bench/record.sh h200-x2 build/default put_get -n 2 --max-size 1G
#
# <machine> names the results folder (a stable, descriptive name such as "h200-x2" or "ci-2core", not a random
# hostname). The .txt starts with the exact command used to record it; the benchmark's own header follows
# (hostname, CPU, date in UTC, its command line, PE count, settings).
set -euo pipefail
if [[ $# -lt 3 ]]; then
  sed -n '4,5p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
machine=$1 build=$2 bench=$3
shift 3
npes=2
if [[ ${1:-} == -n ]]; then
  npes=$2
  shift 2
fi
here=$(cd "$(dirname "$0")" && pwd)
exe=$build/bench/tether_bench_$bench
launcher=$build/tools/tetherrun/tetherrun
[[ -x $exe ]] || { echo "record.sh: $exe not found (build target tether_bench_$bench)" >&2; exit 1; }
[[ -x $launcher ]] || launcher=$(command -v tetherrun || true)
[[ -n $launcher ]] || { echo "record.sh: tetherrun not found under $build/tools/tetherrun or in PATH" >&2; exit 1; }
out=$(realpath -m --relative-to=. "$here/results/$machine")
mkdir -p "$out"
txt=$out/$bench.txt jsonl=$out/$bench.jsonl
cmd=("$launcher" -n "$npes" "$exe" --json "$jsonl" "$@")
{
  printf '# recorded with: bench/record.sh %q %q %q -n %q' "$machine" "$build" "$bench" "$npes"
  if [[ $# -gt 0 ]]; then printf ' %q' "$@"; fi
  printf '\n# which ran: %s\n' "${cmd[*]}"
  if [[ -n ${TETHER_HEAP_SIZE:-} ]]; then printf '# TETHER_HEAP_SIZE=%s\n' "$TETHER_HEAP_SIZE"; fi
} >"$txt"
"${cmd[@]}" | tee -a "$txt"
echo "record.sh: wrote $txt and $jsonl" >&2
