#!/usr/bin/env bash
# Side-by-side OpenSHMEM benchmark: tether's libtether_shmem vs Open MPI's oshmem (the reference), same source
# (bench/shmem/osh_bench.c), same machine, 2 PEs, back to back. See bench/shmem/README.md.
#
#   bench/shmem/compare.sh [machine-name]        (default machine name: the short hostname)
#
# Writes bench/results/<machine>/shmem_compare.txt (ratio table ours/reference with a better/worse column, machine,
# command, date, versions, load average) and shmem_compare.jsonl (one object per row), and keeps every run's raw
# output in shmem_compare.runs.jsonl.
#
# Environment (all optional):
#   PRESET=host        CMake preset of our build (host or default); BUILD_DIR overrides build/<preset>
#   REPS=5             runs per implementation; the order alternates (ours first in odd runs, reference first in even)
#   BENCH_ARGS=...     extra osh_bench options for both (e.g. "--quick"); the default settings need no options
#   LOAD_MAX=1.0       wait until the 1-minute load average is below this before measuring ...
#   LOAD_WAIT=1200     ... for at most this many seconds (then measure anyway and say so in the result)
#   REF_OSHCC=/usr/bin/oshcc  REF_OSHRUN=/usr/bin/oshrun   the reference's wrapper and launcher
#   REF_RUN_ARGS="--mca osc ^rdma --bind-to none"          reference launcher options (why: README.md)
#   RUN_TIMEOUT=600    seconds per run before it is killed
#   TRANSPORT=shm      shm: each on its default one-host path (ours: the shm transport; the reference: UCX's sm),
#                      results in shmem_compare.*;
#                      ucx: both over the SAME UCX transport, UCX_TLS=tcp,self UCX_NET_DEVICES=lo (ours forced onto
#                      its UCX provider with TETHER_PATHS=host=ucx; the reference with --mca spml ucx and the UCX_*
#                      variables exported to its PEs), results in shmem_compare_ucx[_<n>pe].* (issue #19)
#   NPES=2             PEs per run (osh_bench measures PE 0 -> PE 1; more PEs join the barrier and the collective
#                      rows); results of NPES != 2 get the suffix _<n>pe
#   SUFFIX=            appended to the result name (e.g. SUFFIX=_coll with BENCH_ARGS="--ops bcast,reduce,..."), so a
#                      run of some rows does not replace the table of all rows
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
machine=${1:-$(hostname -s)}
preset=${PRESET:-host}
build=${BUILD_DIR:-$root/build/$preset}
reps=${REPS:-5}
load_max=${LOAD_MAX:-1.0}
load_wait=${LOAD_WAIT:-1200}
ref_oshcc=${REF_OSHCC:-/usr/bin/oshcc}
ref_oshrun=${REF_OSHRUN:-/usr/bin/oshrun}
ref_run_args=${REF_RUN_ARGS:---mca osc ^rdma --bind-to none}
run_timeout=${RUN_TIMEOUT:-600}
transport=${TRANSPORT:-shm}
npes=${NPES:-2}
case $transport in shm|ucx) ;; *) echo "compare.sh: TRANSPORT must be shm or ucx, got '$transport'" >&2; exit 2 ;; esac
case $npes in ''|*[!0-9]*|0|1) echo "compare.sh: NPES must be a number >= 2, got '$npes'" >&2; exit 2 ;; esac
result=shmem_compare
[[ $transport == ucx ]] && result+=_ucx
(( npes != 2 )) && result+=_${npes}pe
result+=${SUFFIX:-}
read -r -a bench_args <<<"${BENCH_ARGS:-}"
# The exact invocation, settings that change the measurement included (written into the result's header).
cmdline="TRANSPORT=$transport NPES=$npes${SUFFIX:+ SUFFIX=$SUFFIX} REPS=$reps${BUILD_DIR:+ BUILD_DIR=$BUILD_DIR}"
cmdline+="${PRESET:+ PRESET=$PRESET}${BENCH_ARGS:+ BENCH_ARGS=\"$BENCH_ARGS\"} bench/shmem/compare.sh $*"

die() { echo "compare.sh: $*" >&2; exit 1; }

# ---- prerequisites ------------------------------------------------------------------------------------------------
if [[ ! -x $ref_oshcc || ! -x $ref_oshrun ]]; then
  cat >&2 <<EOF
compare.sh: the reference OpenSHMEM (Open MPI's oshmem) is not installed: $ref_oshcc / $ref_oshrun not found.
Install it (Debian/Ubuntu):   sudo apt-get install openmpi-bin libopenmpi-dev
or point REF_OSHCC and REF_OSHRUN at another OpenSHMEM's compiler wrapper and launcher.
EOF
  exit 3
fi
command -v python3 >/dev/null || die "python3 is needed to aggregate the runs"

# ---- build ours (a no-op when up to date) and both binaries --------------------------------------------------------
if [[ ! -f $build/CMakeCache.txt ]]; then
  [[ -z ${BUILD_DIR:-} ]] || die "BUILD_DIR=$build is not a configured build tree"
  (cd "$root" && cmake --preset "$preset" >/dev/null)
fi
cmake --build "$build" -j2 --target tether_shmem tetherrun tether_bench_osh >/dev/null ||
  die "building our tree ($build) failed"
our_oshcc=$build/tools/tetherrun/oshcc
our_oshrun=$build/tools/tetherrun/tetherrun
[[ -x $our_oshcc && -x $our_oshrun ]] || die "$our_oshcc or $our_oshrun missing after the build"

bin=$build/bench/shmem/compare
mkdir -p "$bin"
cflags=(-O2 -std=c11)
"$our_oshcc" "${cflags[@]}" "$root/bench/shmem/osh_bench.c" -o "$bin/osh_bench_tether"
"$ref_oshcc" "${cflags[@]}" "$root/bench/shmem/osh_bench.c" -o "$bin/osh_bench_oshmem"

ref_root=()
[[ $(id -u) -eq 0 ]] && ref_root=(--allow-run-as-root)
# Oversubscription makes Open MPI yield while it polls (slower): only ask for it when there are fewer cores than PEs.
(( $(nproc) < npes )) && ref_root+=(--oversubscribe)
read -r -a ref_extra <<<"$ref_run_args"
our_env=() ref_env=() transport_note="each on its own default one-host path (ours: shm transport; reference: UCX)"
if [[ $transport == ucx ]]; then
  ucx_vars=(UCX_TLS=tcp,self UCX_NET_DEVICES=lo)
  our_env=(env TETHER_PATHS=host=ucx TETHER_GPU=none "${ucx_vars[@]}")
  ref_env=(env "${ucx_vars[@]}")
  # its MPI side (barriers) on UCX too; pml ucx refuses tcp unless told to take any transport and device
  ref_extra+=(--mca spml ucx --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_TLS -x UCX_NET_DEVICES)
  transport_note="both over UCX with ${ucx_vars[*]} (ours: TETHER_PATHS=host=ucx; reference: --mca spml ucx --mca pml ucx, pml_ucx_tls/devices any)"
fi
run_tether=("${our_env[@]}" "$our_oshrun" -n "$npes" "$bin/osh_bench_tether" --impl tether)
run_oshmem=("${ref_env[@]}" "$ref_oshrun" "${ref_root[@]}" -np "$npes" "${ref_extra[@]}" "$bin/osh_bench_oshmem"
            --impl oshmem)

# ---- versions -----------------------------------------------------------------------------------------------------
git_desc=$(git -C "$root" describe --always --dirty 2>/dev/null || echo '?')
git_branch=$(git -C "$root" rev-parse --abbrev-ref HEAD 2>/dev/null || echo '?')
our_ver="tether $git_desc (branch $git_branch), preset $preset"
[[ -n ${BUILD_DIR:-} ]] && our_ver="tether $git_desc (branch $git_branch), build $BUILD_DIR"
ompi_ver=$(ompi_info --version 2>/dev/null | head -1 || true)
ucx_ver=$(ucx_info -v 2>/dev/null | sed -n 's/^# *Library version[^0-9]*\([0-9.]*\).*/\1/p' | head -1 || true)
[[ -n $ucx_ver ]] || ucx_ver=$(dpkg-query -W -f '${Version}' libucx0 2>/dev/null || echo '?')
cc_ver=$(cc --version 2>/dev/null | head -1 || echo '?')
cpu=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)

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
  local out=$work/$impl.$rep
  local l0; l0=$(load1)
  timeout "$run_timeout" "${cmd[@]}" --json "$out.jsonl" "${bench_args[@]}" >"$out.txt" 2>"$out.err" || rc=$?
  loads+=("$impl#$rep:$l0")
  if ! grep -q '^# osh_bench: done' "$out.txt"; then
    cat "$out.txt" "$out.err" >&2
    die "run $rep of $impl failed (exit $rc): ${cmd[*]}"
  fi
  if (( rc != 0 )); then
    echo "compare.sh: note: $impl run $rep exited $rc after completing (crash in shmem_finalize?);" \
      "its results are kept" >&2
    echo "$impl run $rep exited $rc after '# osh_bench: done'" >>"$work/notes"
  fi
  echo "compare.sh: run $rep $impl done (load $l0)" >&2
}
for ((r = 1; r <= reps; ++r)); do
  if (( r % 2 )); then run_one tether "$r"; run_one oshmem "$r"; else run_one oshmem "$r"; run_one tether "$r"; fi
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- aggregate and write ------------------------------------------------------------------------------------------
outdir=$root/bench/results/$machine
mkdir -p "$outdir"
export WORK=$work REPS=$reps OUTDIR=$outdir MACHINE=$machine CMDLINE=$cmdline HOSTNAME_=$(hostname) CPU=$cpu \
  NPROC=$(nproc) OUR_VER=$our_ver OMPI_VER=$ompi_ver UCX_VER=$ucx_ver CC_VER=$cc_ver LOAD_NOTE=$load_note \
  LOAD_AFTER=$load_after LOADS="${loads[*]}" RUN_TETHER="${run_tether[*]}" RUN_OSHMEM="${run_oshmem[*]}" \
  BENCH_ARGS_=${bench_args[*]:-} CFLAGS_="${cflags[*]}" OUR_OSHCC=$our_oshcc REF_OSHCC_=$ref_oshcc \
  RESULT=$result TRANSPORT_NOTE=$transport_note NPES=$npes
python3 "$here/compare_report.py"
echo "compare.sh: wrote $outdir/$result.txt and .jsonl" >&2
