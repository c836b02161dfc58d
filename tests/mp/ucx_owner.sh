#!/bin/sh
# ucx_owner.sh TETHERRUN PROGRAM N: runs PROGRAM (mp_ucx_owner) on N PEs with TETHER_UCX_AMO=owner and passes when
# it succeeds AND every PE's UCX provider reports at its end that it served owner-executed operations for its peers
# (so the atomics and signals really took the owner path, not UCX's native atomics).
set -u
run=$1 prog=$2 n=$3
out=$(TETHER_UCX_AMO=owner TETHER_LOG=info:transport "$run" -n "$n" --tag-output "$prog" 2>&1)
rc=$?
echo "$out" | grep -v "path to the"
[ "$rc" -eq 0 ] || { echo "ucx_owner: $prog failed (exit $rc)"; exit 1; }
served=$(echo "$out" | grep -c "owner-executed operations: served [1-9]")
if [ "$served" -ne "$n" ]; then
  echo "ucx_owner: $served of $n PEs served owner-executed operations (expected all)"
  exit 1
fi
echo "ucx_owner: all $n PEs served owner-executed operations"
