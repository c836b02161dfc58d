#!/usr/bin/env bash
# Side-by-side two-sided messaging benchmark: tether's tether_send/recv/isend/irecv (tether_bench_msg) vs MPI
# point-to-point (tether_bench_msg_mpi, Open MPI), the same source bench/msg/msg_bench.c over two backends, same
# machine, 2 ranks, runs alternating. See "msg" in bench/README.md.
#
#   bench/msg/compare.sh [machine-name]        (default machine name: the short hostname)
#
# Builds nothing: both binaries and tetherrun must be built in BUILD_DIR first, e.g.
#   cmake --build build/default --target tether_bench_msg tether_bench_msg_mpi tetherrun
# Writes bench/results/<machine>/msg_compare.txt (side-by-side table, ratio tether/MPI with a verdict, machine,
# date, commit, command, versions, load) and msg_compare.jsonl (one object per row), and keeps every run's raw rows
# in msg_compare.runs.jsonl.
#
# Environment (all optional):
#   BUILD_DIR=build/default   the configured build tree holding the binaries
#   REPS=3             runs per implementation; the order alternates (tether first in odd runs, MPI first in even)
#   BENCH_ARGS=...     extra msg_bench options for both (e.g. "--quick"); the defaults need none
#   LOAD_MAX=1.0       wait until the 1-minute load average is below this before measuring ...
#   LOAD_WAIT=600      ... for at most this many seconds (then measure anyway and say so in the result)
#   MPIRUN=mpirun      the MPI launcher (Open MPI's; the binary must be linked to the same MPI)
#   MPI_RUN_ARGS="--oversubscribe --bind-to none"   launcher options (+ --allow-run-as-root when run as root);
#                      Open MPI's transport is left at its defaults (the probe below records which it picked)
#   RUN_TIMEOUT=300    seconds per run before it is killed
#   SUFFIX=            appended to the result name (msg_compare<SUFFIX>.*)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
machine=${1:-$(hostname -s)}
build=${BUILD_DIR:-$root/build/default}
reps=${REPS:-3}
load_max=${LOAD_MAX:-1.0}
load_wait=${LOAD_WAIT:-600}
mpirun=${MPIRUN:-mpirun}
run_timeout=${RUN_TIMEOUT:-300}
result=msg_compare${SUFFIX:-}
read -r -a bench_args <<<"${BENCH_ARGS:-}"
read -r -a mpi_args <<<"${MPI_RUN_ARGS:---oversubscribe --bind-to none}"
[[ $(id -u) -eq 0 ]] && mpi_args=(--allow-run-as-root "${mpi_args[@]}")
cmdline="BUILD_DIR=$build REPS=$reps${BENCH_ARGS:+ BENCH_ARGS=\"$BENCH_ARGS\"} LOAD_MAX=$load_max bench/msg/compare.sh $*"

die() { echo "compare.sh: $*" >&2; exit 1; }

# ---- prerequisites ------------------------------------------------------------------------------------------------
tetherrun=$build/tools/tetherrun/tetherrun
bin_t=$build/bench/msg/tether_bench_msg
bin_m=$build/bench/msg/tether_bench_msg_mpi
for f in "$tetherrun" "$bin_t" "$bin_m"; do
  [[ -x $f ]] || die "$f missing: build it first (cmake --build $build --target tether_bench_msg tether_bench_msg_mpi" \
    "tetherrun; tether_bench_msg_mpi needs MPI: apt-get install libopenmpi-dev openmpi-bin)"
done
command -v "$mpirun" >/dev/null || die "$mpirun not found (apt-get install openmpi-bin)"
command -v python3 >/dev/null || die "python3 is needed to aggregate the runs"
run_tether=("$tetherrun" -n 2 "$bin_t")
run_mpi=("$mpirun" "${mpi_args[@]}" -np 2 "$bin_m")

# ---- versions and Open MPI's choice of transport -------------------------------------------------------------------
git_desc=$(git -C "$root" describe --always --dirty 2>/dev/null || echo '?')
git_branch=$(git -C "$root" rev-parse --abbrev-ref HEAD 2>/dev/null || echo '?')
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || echo '?')
mpi_ver=$("$mpirun" --version 2>/dev/null | head -1)
mpi_lib=$(ldd "$bin_m" | awk '/libmpi\./ {print $3; exit}')
# One tiny run with Open MPI's selection verbose: which PML and which BTL carry rank 0 -> rank 1.
probe=$(timeout 60 "${run_mpi[@]:0:${#run_mpi[@]}-1}" --mca pml_base_verbose 10 --mca btl_base_verbose 10 \
          --mca mpi_show_mca_params all "$bin_m" --quick --ops latency --max-size 1 2>&1 || true)
pml=$(sed -n 's/.*select: component \([a-z0-9]*\) selected.*/\1/p' <<<"$probe" | head -1)
btl=$(sed -n 's/.*Using \([a-z0-9]*\) btl for send to \[\[[0-9]*,[0-9]*\],1\].*/\1/p' <<<"$probe" | head -1)
yield=$(sed -n 's/.*\(mpi_yield_when_idle=[a-z]* ([^)]*)\).*/\1/p' <<<"$probe" | head -1)
single_copy=$(ompi_info --param btl vader --level 9 2>/dev/null |
                sed -n 's/.*btl_vader_single_copy_mechanism" (current value: "\([^"]*\)".*/\1/p' | head -1)
site_conf=$(grep -hv '^\s*\(#\|$\)' /etc/openmpi/openmpi-mca-params.conf 2>/dev/null | paste -sd ';' || true)

# ---- wait for a quiet machine ---------------------------------------------------------------------------------------
source "$here/../wait_quiet.sh"
wait_quiet "$load_max" "$load_wait"

# ---- runs ---------------------------------------------------------------------------------------------------------
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
loads=()
run_one() {  # impl rep
  local impl=$1 rep=$2 rc=0
  local -n cmd=run_$impl
  local out=$work/$impl.$rep l0
  l0=$(load1)
  timeout "$run_timeout" "${cmd[@]}" --json "$out.jsonl" "${bench_args[@]}" >"$out.txt" 2>"$out.err" || rc=$?
  loads+=("$impl#$rep:$l0")
  if ! grep -q '^# msg_bench: done' "$out.txt" || (( rc != 0 )); then
    cat "$out.txt" "$out.err" >&2
    die "run $rep of $impl failed (exit $rc): ${cmd[*]}"
  fi
  echo "compare.sh: run $rep $impl done (load $l0)" >&2
}
for ((r = 1; r <= reps; ++r)); do
  if (( r % 2 )); then run_one tether "$r"; run_one mpi "$r"; else run_one mpi "$r"; run_one tether "$r"; fi
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- header, aggregate and write ----------------------------------------------------------------------------------
{
  echo "# msg_compare: tether two-sided messaging vs MPI point-to-point, same source bench/msg/msg_bench.c"
  echo "# machine: $machine (hostname $(hostname), $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)," \
    "$(nproc) online CPUs)"
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "# commit: $git_desc (branch $git_branch); build $build ($build_type), $(cc --version | head -1)"
  echo "# command: $cmdline"
  echo "# tether: ${run_tether[*]} --json FILE ${bench_args[*]:-}"
  echo "# MPI: ${run_mpi[*]} --json FILE ${bench_args[*]:-}"
  echo "# MPI version: $mpi_ver; $bin_m linked to $mpi_lib"
  echo "# MPI transport: Open MPI defaults, selected pml ${pml:-?}, btl ${btl:-?} for rank 0 -> 1 (vader single copy:" \
    "${single_copy:-?}, ${yield:-mpi_yield_when_idle ?}); site config /etc/openmpi/openmpi-mca-params.conf: ${site_conf:-none}"
  for impl in tether mpi; do
    sed -n 's/^# \(msg_bench: impl\|host\|sizes\)/#   \1/p' "$work/$impl.1.txt"
  done
  echo "# runs: $reps per implementation, back to back, order alternating (tether first in odd runs)"
  echo "# $load_note; after: $load_after"
  echo "# 1-min load at the start of each run (it includes this benchmark's own 2 busy ranks of the runs before):"
  echo "#   ${loads[*]}"
} >"$work/header"
outdir=$root/bench/results/$machine
mkdir -p "$outdir"
python3 "$here/compare_msg.py" "$work" "$reps" "$outdir/$result"
echo "compare.sh: wrote $outdir/$result.txt, .jsonl and .runs.jsonl" >&2
