#!/usr/bin/env bash
# mpi_pytest.sh PYTHON MPIRUN|none N TESTFILE (ctest python_mpi_<n>pe, label python): tether.init(comm=...) tests
# (python/tests/test_mpi.py) at N ranks under Open MPI's mpirun, with the venv's mpi4py, and no tether launcher
# variable set. Exit 77 (ctest: skipped) with the reason when Open MPI's mpirun or the venv's mpi4py is missing
# (python/tests/setup_env.sh installs mpi4py when mpicc.openmpi is there; .ci/run installs openmpi-bin and
# libopenmpi-dev); otherwise 0 only when every rank's pytest passed with nothing skipped and every rank went through
# tether_init_mpi's rendezvous ("rendezvous over MPI" in tether's log).
set -u
py=$1 mpirun=$2 n=$3 file=$4
if [ "$mpirun" = none ] || [ ! -x "$mpirun" ]; then
  echo "mpi_pytest.sh: SKIP: Open MPI's mpirun (mpirun.openmpi) not found: apt-get install openmpi-bin libopenmpi-dev"
  exit 77
fi
if ! why=$("$py" -c 'import mpi4py' 2>&1); then
  echo "mpi_pytest.sh: SKIP: no mpi4py in the test venv ($py): ${why##*$'\n'} (setup_env.sh installs it when" \
       "mpicc.openmpi is there; see its output in the python_env test)"
  exit 77
fi
out=$(mktemp) ; trap 'rm -f "$out"' EXIT
unset TETHER_BOOTSTRAP_ADDR TETHER_BOOTSTRAP_FD TETHER_RANK TETHER_SIZE TETHER_LOCAL_RANK TETHER_LOCAL_SIZE \
      TETHER_JOB_SECRET TETHER_LAUNCHER
export TETHER_LOG=info TETHER_TIMEOUT=${TETHER_TIMEOUT:-60} TETHER_DEFAULT_SEGMENT=host TETHER_GPU=none
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none  # containers often forbid CMA (ptrace)
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
timeout 240 "$mpirun" "${root[@]}" --oversubscribe --tag-output -n "$n" \
  "$py" -m pytest -q -s -p no:cacheprovider -rs "$file" >"$out" 2>&1
rc=$?
# Counted as occurrences, not lines: mpirun may put two ranks' output on one line (CI, 2026-11-27: "1 of 2 ranks
# passed" with both summaries on one line).
passed=$(grep -oE '[0-9]+ passed' "$out" | wc -l)
bad=$(grep -oE '[0-9]+ (failed|skipped|errors?)' "$out" | wc -l)
paths=$(grep -o 'rendezvous over MPI' "$out" | wc -l)
if [ $rc -ne 0 ] || [ "$passed" -ne "$n" ] || [ "$bad" -ne 0 ] || [ "$paths" -lt "$n" ]; then
  cat "$out"
  echo "mpi_pytest.sh: FAIL at $n ranks: exit $rc, $passed of $n ranks passed, $bad ranks failed/skipped," \
       "'rendezvous over MPI' in $paths log lines (want >= $n)"
  exit 1
fi
grep -E '[0-9]+ passed' "$out"
echo "mpi_pytest.sh: $file at $n ranks passed ($paths tether_init_mpi rendezvous log lines)"
