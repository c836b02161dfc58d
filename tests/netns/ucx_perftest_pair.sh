#!/usr/bin/env bash
# ucx_perftest_pair.sh: one ucx_perftest run between the two "hosts" of scripts/netns-hosts (the reference that
# tether over UCX is compared against): the server on host 0 (tether-a), the client on host 1 (tether-b) connecting
# to host 0's veth address. Runs on each host, as netns-hosts' command:
#   scripts/netns-hosts --timeout 120 -- tests/netns/ucx_perftest_pair.sh <test> <bytes> <host|cuda> [iterations]
# e.g. ucp_put_lat 8 host, ucp_put_bw 1048576 cuda. The memory type goes to the client (-m): cuda puts from and into
# GPU memory. ucx_perftest comes from PATH (scripts/ucx-wheel puts the wheel's there); UCX_TLS and UCX_NET_DEVICES
# are taken from the environment (default tcp,cuda_copy,self and NETNS_DEV). With --split-gpus semantics of
# netns_job.sh: each host uses its half of the GPUs (CUDA_VISIBLE_DEVICES), so cuda memory is on different GPUs.
# Exit status: the side's ucx_perftest status; the client retries the connection for up to 10 s while the server
# starts. When the client ends (also when it fails), it leaves a file the server side watches (both hosts share the
# file system): the server is then stopped within 2 s rather than waiting for netns-hosts' --timeout.
set -uo pipefail
[ $# -ge 3 ] || { echo "usage: ucx_perftest_pair.sh <test> <bytes> <host|cuda> [iterations]" >&2; exit 2; }
test=$1 bytes=$2 mem=$3 iters=${4:-}
case $mem in host|cuda) ;; *) echo "ucx_perftest_pair: memory type must be host or cuda, got '$mem'" >&2; exit 2 ;; esac
: "${NETNS_HOST_INDEX:?run me through scripts/netns-hosts}"
command -v ucx_perftest >/dev/null 2>&1 || { echo "ucx_perftest_pair: no ucx_perftest on PATH" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
source <(sed -n '/^split_gpus()/,/^}/p' "$here/netns_job.sh")
split_gpus "$NETNS_HOST_INDEX"
export UCX_TLS=${UCX_TLS:-tcp,cuda_copy,self} UCX_NET_DEVICES=${UCX_NET_DEVICES:-$NETNS_DEV} UCX_WARN_UNUSED_ENV_VARS=n
readonly port=13337 done_file=${TMPDIR:-/tmp}/ucx_perftest_pair.$NETNS_NS_0.done
if [ "$NETNS_HOST_INDEX" = 0 ]; then
  echo "ucx_perftest_pair: server on $(hostname) ($NETNS_ADDR:$port), UCX_TLS=$UCX_TLS"
  ucx_perftest -p "$port" &
  server=$!
  while kill -0 "$server" 2>/dev/null; do
    if [ -e "$done_file" ]; then  # the client ended: a server still running after 2 s waits for nothing
      for i in $(seq 1 20); do kill -0 "$server" 2>/dev/null || break; sleep 0.1; done
      kill "$server" 2>/dev/null && echo "ucx_perftest_pair: the client ended; server stopped"
      break
    fi
    sleep 0.1
  done
  wait "$server"
  rc=$?
  rm -f "$done_file"
  exit "$rc"
fi
args=(-p "$port" -t "$test" -s "$bytes" ${iters:+-n "$iters"})
[ "$mem" = cuda ] && args+=(-m cuda)
echo "ucx_perftest_pair: client on $(hostname): ucx_perftest $NETNS_ADDR_0 ${args[*]} (UCX_TLS=$UCX_TLS)"
tmp=$(mktemp "${TMPDIR:-/tmp}/ucx_perftest_pair.XXXXXX")
trap 'rm -f "$tmp"; touch "$done_file"' EXIT
for try in $(seq 1 20); do
  ucx_perftest "$NETNS_ADDR_0" "${args[@]}" >"$tmp" 2>&1
  rc=$?
  [ "$rc" = 0 ] && break
  grep -qiE 'connection refused|failed to connect|unreachable' "$tmp" || break
  [ "$try" = 20 ] || sleep 0.5
done
cat "$tmp"
exit "$rc"
