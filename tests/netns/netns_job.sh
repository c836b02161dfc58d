#!/usr/bin/env bash
# netns_job.sh: one tether job split over the two "hosts" of scripts/netns-hosts, started by hand the documented way
# (one tetherrun per host, each its range of ranks, the same --rendezvous and --secret-file).
#
# Usage: netns_job.sh [options] <netns-hosts> <tetherrun> <npes> -- program [args...]
#   --expect-fail SEC  the job must fail (non-zero) within SEC seconds; default: it must succeed
#   --expect REGEX     the combined output must match REGEX (repeatable; lines carry "[tether-a] [rank] " prefixes)
#   --absent H         host H (0 or 1) starts no PE: a bootstrap peer that never arrives
#   --overlap          host 1 also starts the last rank of host 0 (a second tetherrun, before its own range)
#   --link-down SEC    host 1 sets its veth link down SEC seconds after its PEs started (with `ip`, or with
#                      scripts/netns_pyroute2.py where netns-hosts made the hosts with pyroute2: NETNS_TOOL)
#   --split-gpus       each host gets its own GPUs (CUDA_VISIBLE_DEVICES): host 0 the first half of the GPUs
#                      (of CUDA_VISIBLE_DEVICES when set, else of `nvidia-smi -L`), host 1 the second half; with
#                      fewer than 2 GPUs both hosts keep what they see (said in the output)
# Ranks 0..npes/2-1 run on host 0 (tether-a, which holds rank 0 and listens), the rest on host 1 (tether-b).
# UCX_NET_DEVICES defaults to the veth (NETNS_DEV). Exit 77 (skip) when netns-hosts cannot make the hosts.
# Internal: netns-hosts runs this script again on each host as `netns_job.sh --host <secret-file> ...`.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
readonly port=29500  # each network namespace has its own ports: no clash with other jobs

split_gpus() {  # host index: export this host's half of the GPUs as CUDA_VISIBLE_DEVICES
  local gpus=() n g first last
  if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
    IFS=, read -r -a gpus <<<"$CUDA_VISIBLE_DEVICES"
  else
    n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
    for ((g = 0; g < n; ++g)); do gpus+=("$g"); done
  fi
  n=${#gpus[@]}
  if [ "$n" -lt 2 ]; then
    echo "netns_job: $n GPU(s) visible: not split, both hosts see ${CUDA_VISIBLE_DEVICES:-all}"
    return
  fi
  if [ "$1" = 0 ]; then first=0 last=$((n / 2 - 1)); else first=$((n / 2)) last=$((n - 1)); fi
  CUDA_VISIBLE_DEVICES=$(IFS=,; echo "${gpus[*]:first:last-first+1}")
  export CUDA_VISIBLE_DEVICES
  echo "netns_job: $(hostname) uses GPU(s) $CUDA_VISIBLE_DEVICES of ${gpus[*]}"
}

if [ "${1:-}" = "--host" ]; then
  secret=$2 absent=$3 overlap=$4 link_down=$5 tr=$6 npes=$7
  shift 8  # ... and the "--"
  i=$NETNS_HOST_INDEX half=$((npes / 2))
  if [ "$i" = "$absent" ]; then echo "netns_job: host $i starts no PE (--absent)"; exit 0; fi
  if [ "$i" = 0 ]; then first=0 last=$((half - 1)); else first=$half last=$((npes - 1)); fi
  export UCX_NET_DEVICES=${UCX_NET_DEVICES:-$NETNS_DEV}
  [ "${NETNS_JOB_SPLIT_GPUS:-0}" = 1 ] && split_gpus "$i"
  run_range() { "$tr" -n "$npes" --ranks "$1" --rendezvous "$NETNS_ADDR_0:$port" --secret-file "$secret" --tag-output "${@:2}"; }
  if [ "$i" = 1 ] && [ "$overlap" = 1 ]; then
    # A second copy of rank half-1 in its own tetherrun at once, the real range 1 s later: both copies of that rank
    # arrive while rank 0 still waits for this host's ranks, so the later copy is refused (not left in a backlog).
    echo "netns_job: $(hostname) starts rank $((half - 1)) (a second copy) and ranks $first-$last of $npes"
    run_range "$((half - 1))" "$@" &
    dup=$!
    sleep 1
    run_range "$first-$last" "$@"
    rc=$?
    wait "$dup"
    drc=$?
    [ "$rc" != 0 ] && exit "$rc"
    exit "$drc"
  fi
  echo "netns_job: $(hostname) starts ranks $first-$last of $npes (rendezvous $NETNS_ADDR_0:$port)"
  if [ "$i" = 1 ] && [ "$link_down" != - ]; then
    run_range "$first-$last" "$@" &
    job=$!
    sleep "$link_down"
    echo "netns_job: setting $NETNS_DEV down on $(hostname)"
    if [ "${NETNS_TOOL:-ip}" = pyroute2 ]; then  # no `ip` on this machine (netns-hosts made the hosts with pyroute2)
      python3 "$here/../../scripts/netns_pyroute2.py" linkdown "$NETNS_DEV"
    else
      ip link set dev "$NETNS_DEV" down
    fi
    wait "$job"
    exit $?
  fi
  run_range "$first-$last" "$@"
  exit $?
fi

expect_fail= absent=- overlap=0 link_down=- regexes=()
while [ $# -gt 0 ]; do
  case $1 in
    --expect-fail) expect_fail=$2; shift 2 ;;
    --expect) regexes+=("$2"); shift 2 ;;
    --absent) absent=$2; shift 2 ;;
    --overlap) overlap=1; shift ;;
    --link-down) link_down=$2; shift 2 ;;
    --split-gpus) export NETNS_JOB_SPLIT_GPUS=1; shift ;;
    *) break ;;
  esac
done
[ $# -ge 5 ] && [ "$4" = -- ] || { echo "usage: netns_job.sh [options] <netns-hosts> <tetherrun> <npes> -- program..." >&2; exit 2; }
hosts=$1 tr=$2 npes=$3
shift 4
tmp=$(mktemp -d "${TMPDIR:-/tmp}/netns_job.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# The same secret on both hosts, from a file as a user would distribute it.
od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$tmp/secret"
echo >>"$tmp/secret"
chmod 600 "$tmp/secret"

if [ "${NETNS_JOB_SPLIT_GPUS:-0}" = 1 ] && ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "netns_job: SKIP: a GPU job (--split-gpus) but no GPU is visible (nvidia-smi -L)"
  exit 77
fi
limit=${expect_fail:-240}
start=$(date +%s)
"$hosts" --timeout "$limit" -- "$here/netns_job.sh" --host "$tmp/secret" "$absent" "$overlap" "$link_down" "$tr" \
  "$npes" -- "$@" >"$tmp/out" 2>&1
rc=$?
elapsed=$(($(date +%s) - start))
cat "$tmp/out"
echo "netns_job: exit status $rc after ${elapsed}s"
[ "$rc" = 77 ] && grep -q 'netns-hosts: SKIP' "$tmp/out" && exit 77
fail() { echo "netns_job: FAIL: $*"; exit 1; }
if [ -n "$expect_fail" ]; then
  [ "$rc" != 0 ] || fail "the job succeeded; expected a failure"
  [ "$rc" != 124 ] && [ "$elapsed" -lt "$expect_fail" ] || fail "the job hung (stopped after ${expect_fail}s)"
else
  [ "$rc" = 0 ] || fail "the job failed"
fi
for re in "${regexes[@]}"; do
  grep -Eq -- "$re" "$tmp/out" || fail "output does not match /$re/"
done
echo "netns_job: PASS"
