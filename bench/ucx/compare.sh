#!/usr/bin/env bash
# Side by side, in one run: tether's remote put/get over its UCX provider vs UCX's own ucx_perftest (UCP API) on the
# same UCX transport, 2 processes on this host. Issue #19, first goal. See bench/ucx/README.md for what each column
# measures (the rows are NOT all the same operation: read it before quoting a ratio).
#
#   bench/ucx/compare.sh [machine-name]          (default: the short hostname)
#
# Writes bench/results/<machine>/ucx_compare.txt (table + commands + date + versions) and ucx_compare.jsonl.
# Environment (optional):
#   BUILD_DIR=build/host   tether build with the UCX provider (tether_bench_put_get, tetherrun)
#   SIZES="8 64 512 4096 32768 262144 1048576"
#   TRANSPORTS="tcp shm"   tcp: UCX_TLS=tcp,self UCX_NET_DEVICES=lo for both, tether forced onto ucx (host=ucx);
#                          shm: ucx_perftest with UCX_TLS=sm,self vs tether's OWN shm path (no UCX at all)
#   LAT_ITERS=10000 BW_ITERS=2000   ucx_perftest -n at small sizes (scaled down above 64K)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
machine=${1:-$(hostname -s)}
build=${BUILD_DIR:-$root/build/host}
sizes=${SIZES:-8 64 512 4096 32768 262144 1048576}
transports=${TRANSPORTS:-tcp shm}
lat_iters=${LAT_ITERS:-10000}
bw_iters=${BW_ITERS:-2000}
port=${PORT:-13450}
out=$root/bench/results/$machine
raw=$(mktemp -d)
trap 'rm -rf "$raw"' EXIT
command -v ucx_perftest >/dev/null || { echo "compare.sh: ucx_perftest not found (apt-get install ucx-utils)" >&2; exit 3; }
[[ -x $build/bench/tether_bench_put_get && -x $build/tools/tetherrun/tetherrun ]] ||
  { echo "compare.sh: build tether_bench_put_get and tetherrun in $build first" >&2; exit 3; }
mkdir -p "$out"

ucx_env() {  # transport -> env assignments for ucx_perftest
  case $1 in tcp) echo "UCX_TLS=tcp,self UCX_NET_DEVICES=lo" ;; shm) echo "UCX_TLS=sm,self" ;; esac
}
tether_env() {  # transport -> env assignments for tether
  case $1 in
    tcp) echo "TETHER_PATHS=host=ucx UCX_TLS=tcp,self UCX_NET_DEVICES=lo TETHER_GPU=none" ;;
    shm) echo "TETHER_GPU=none" ;;
  esac
}
# perftest TRANSPORT TEST SIZE EXTRA... : one server + one client on 127.0.0.1; appends "tr test size extra|csv".
perftest() {
  local tr=$1 t=$2 s=$3; shift 3
  local n=$lat_iters; [[ $t == ucp_put_bw || $* == *-O* ]] && n=$bw_iters
  (( s > 65536 )) && n=$(( n * 65536 / s > 100 ? n * 65536 / s : 100 ))
  port=$((port + 1))
  env $(ucx_env "$tr") ucx_perftest -p "$port" >/dev/null 2>&1 &
  local srv=$!
  sleep 0.3
  local line
  line=$(env $(ucx_env "$tr") timeout 120 ucx_perftest 127.0.0.1 -p "$port" -t "$t" -s "$s" -n "$n" -w $((n / 10)) \
         "$@" -v 2>/dev/null | tail -1) || line="failed"
  wait "$srv" 2>/dev/null || true
  echo "$(ucx_env "$tr") ucx_perftest 127.0.0.1 -t $t -s $s -n $n -w $((n / 10)) $* -v" >>"$raw/commands"
  echo "$tr|$t$([[ $* ]] && echo " $*")|$s|$line" >>"$raw/perftest"
}

maxsz=$(echo $sizes | tr ' ' '\n' | sort -n | tail -1)
minsz=$(echo $sizes | tr ' ' '\n' | sort -n | head -1)
for tr in $transports; do
  for s in $sizes; do
    perftest "$tr" ucp_put_lat "$s"
    perftest "$tr" ucp_get "$s"            # ucx_perftest's own get test, blocking (one outstanding)
    perftest "$tr" ucp_put_bw "$s"
    perftest "$tr" ucp_get "$s" -O 64      # 64 outstanding gets: bandwidth
  done
  cmd="$(tether_env "$tr") $build/tools/tetherrun/tetherrun -n 2 $build/bench/tether_bench_put_get \
--ops put,get,put_nbi,get_nbi --min-size $minsz --max-size $maxsz --json $raw/tether_$tr.jsonl"
  echo "${cmd/$raw\//}" >>"$raw/commands"
  env $(tether_env "$tr") "$build/tools/tetherrun/tetherrun" -n 2 "$build/bench/tether_bench_put_get" \
    --ops put,get,put_nbi,get_nbi --min-size "$minsz" --max-size "$maxsz" --json "$raw/tether_$tr.jsonl" \
    >"$raw/tether_$tr.txt" 2>&1 || { cat "$raw/tether_$tr.txt" >&2; exit 1; }
done

python3 "$here/compare_report.py" "$raw" "$out" "bench/ucx/compare.sh $*" "$sizes"
cat "$out/ucx_compare.txt"
