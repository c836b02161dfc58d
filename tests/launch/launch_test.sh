#!/usr/bin/env bash
# launch_test.sh MODE LAUNCHER PROGRAM N: runs PROGRAM (launch_job*) at N ranks under a foreign launcher with no
# tether address set, and checks every rank printed its ok line and the job went the intended way:
#   pmix        LAUNCHER is Open MPI's mpirun: tether_init must take the PMIx path ("launcher pmix" in the log)
#   mpi-hydra   LAUNCHER is MPICH's mpiexec (Hydra): tether_init_mpi over MPI_COMM_WORLD ("rendezvous over MPI")
#   mpi-ompi    LAUNCHER is Open MPI's mpirun, PROGRAM built against Open MPI: tether_init_mpi likewise
#   mpi-absent  LAUNCHER is MPICH's mpiexec: rank ABSENT (5th argument) never calls tether_init_mpi; the others
#               fail within TETHER_TIMEOUT=3 (launch_job absent checks the time) instead of hanging
#   pmix-absent the same under Open MPI's mpirun through PMIx (the PMIx fence times out). mpirun's own exit status
#               is then non-zero by its rule (a process exited without PMIx init), so only the output is judged
set -u
mode=$1 launcher=$2 prog=$3 n=$4 absent=${5:-1}
out=$(mktemp) ; trap 'rm -f "$out"' EXIT
# Nothing that would give tether an address or position another way.
unset TETHER_BOOTSTRAP_ADDR TETHER_BOOTSTRAP_FD TETHER_RANK TETHER_SIZE TETHER_LOCAL_RANK TETHER_LOCAL_SIZE \
      TETHER_JOB_SECRET TETHER_LAUNCHER
export TETHER_LOG=info TETHER_TIMEOUT=${TETHER_TIMEOUT:-60} TETHER_DEFAULT_SEGMENT=host TETHER_GPU=none
case $mode in
  pmix|mpi-ompi|pmix-absent)
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
    export OMPI_MCA_btl_vader_single_copy_mechanism=none  # containers often forbid CMA (ptrace)
    extra=()
    if [ "$mode" = pmix-absent ]; then export TETHER_TIMEOUT=3; extra=(absent "$absent"); fi
    timeout 240 "$launcher" --oversubscribe -n "$n" "$prog" "${extra[@]}" >"$out" 2>&1 ;;
  mpi-hydra)
    timeout 240 "$launcher" -n "$n" "$prog" >"$out" 2>&1 ;;
  mpi-absent)
    export TETHER_TIMEOUT=3
    timeout 120 "$launcher" -n "$n" "$prog" absent "$absent" >"$out" 2>&1 ;;
  *) echo "launch_test.sh: unknown mode $mode"; exit 2 ;;
esac
rc=$?
ok=$(grep -c '^launch_job ok ' "$out")
case $mode in
  pmix) want='launcher pmix' ;;
  mpi-absent|pmix-absent) want='failed as expected' ; n_want=$((n - 1)) ;;
  *) want='rendezvous over MPI' ;;
esac
paths=$(grep -c "$want" "$out")
if [ "$mode" = pmix-absent ] && [ "$rc" -ne 124 ]; then rc=0; fi
if [ "$rc" -ne 0 ] || [ "$ok" -ne "$n" ] || [ "$paths" -lt "${n_want:-$n}" ]; then
  cat "$out"
  echo "launch_test.sh: FAIL ($mode, $n ranks): exit $rc, $ok of $n ok lines, '$want' in $paths log lines (want >= $n)"
  exit 1
fi
grep -E '^launch_job ok |Open MPI ABI|MPICH ABI|failed as expected' "$out" | sort | uniq -c | head -20
echo "launch_test.sh: $mode at $n ranks passed"
