#!/usr/bin/env bash
# Side by side, in one run: tether's remote put/get over its UCX provider vs UCX's own ucx_perftest (UCP API) on the
# same UCX transport, 2 processes on this host. Issue #19, first goal. See bench/ucx/README.md for what each column
# measures (the rows are NOT all the same operation: read it before quoting a ratio).
#
#   bench/ucx/compare.sh [machine-name]          (default: the short hostname)
#
# Writes bench/results/<machine>/ucx_compare.txt (table + commands + date + versions) and ucx_compare.jsonl.
# Environment (optional):
#   BUILD_DIR=build/host   tether build with the UCX provider (tether_bench_put_get, tether_bench_msg, tetherrun)
#   ROWS=rma           rma: one-sided rows (tether_bench_put_get vs ucp_put_lat / ucp_get / ucp_put_bw);
#                      msg: two-sided rows (issue #20: tether_bench_msg's latency and bw vs ucx_perftest tag_lat
#                      and tag_bw -O 64), written to ucx_compare_msg[_netns].{txt,jsonl}
#   SIZES="8 64 512 4096 16384 32768 262144 1048576"
#   TRANSPORTS="tcp shm"   tcp: UCX_TLS=tcp,self UCX_NET_DEVICES=lo for both, tether forced onto ucx (host=ucx);
#                          shm: ucx_perftest with UCX_TLS=sm,self vs tether's OWN shm path (no UCX at all);
#                          netns: the two "hosts" of scripts/netns-hosts (needs root): ucx_perftest's server in
#                          host 0, its client in host 1, tether 1 PE per host (one tetherrun each, --ranks/
#                          --rendezvous/--secret-file), both over UCX_TLS=tcp,self UCX_NET_DEVICES=<veth>.
#                          Written to ucx_compare_netns.{txt,jsonl} (run it alone: TRANSPORTS=netns).
#   LAT_ITERS=10000 BW_ITERS=2000   ucx_perftest -n at small sizes (scaled down above 64K)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
netns_host=
if [[ ${1:-} == --netns-host ]]; then  # internal: this script again, inside one netns host (see netns_run below)
  netns_host=1 raw=$2 secret=$3
  shift 3
fi
machine=${1:-$(hostname -s)}
build=${BUILD_DIR:-$root/build/host}
sizes=${SIZES:-8 64 512 4096 16384 32768 262144 1048576}
transports=${TRANSPORTS:-tcp shm}
lat_iters=${LAT_ITERS:-10000}
bw_iters=${BW_ITERS:-2000}
port=${PORT:-13450}
out=$root/bench/results/$machine
if [[ -z $netns_host ]]; then
  raw=$(mktemp -d)
  chmod 755 "$raw"
  trap 'rm -rf "$raw"' EXIT
fi
command -v ucx_perftest >/dev/null || { echo "compare.sh: ucx_perftest not found (apt-get install ucx-utils)" >&2; exit 3; }
rows=${ROWS:-rma}
maxsz=$(echo $sizes | tr ' ' '\n' | sort -n | tail -1)
minsz=$(echo $sizes | tr ' ' '\n' | sort -n | head -1)
perf_tests=()  # "TEST SIZE EXTRA..." in the order they run
case $rows in
  rma)
    bench=bench/tether_bench_put_get
    tether_args=(--ops put,get,put_nbi,get_nbi --min-size "$minsz" --max-size "$maxsz")
    for s in $sizes; do  # ucp_get: ucx_perftest's own get test, blocking (one outstanding); -O 64: bandwidth
      perf_tests+=("ucp_put_lat $s" "ucp_get $s" "ucp_put_bw $s" "ucp_get $s -O 64")
    done ;;
  msg)
    bench=bench/msg/tether_bench_msg
    tether_args=(--ops latency,bw --min-size "$minsz" --max-size "$maxsz")
    for s in $sizes; do perf_tests+=("tag_lat $s" "tag_bw $s -O 64"); done ;;
  *) echo "compare.sh: ROWS=$rows: rma or msg" >&2; exit 2 ;;
esac
[[ -x $build/$bench && -x $build/tools/tetherrun/tetherrun ]] ||
  { echo "compare.sh: build $(basename "$bench") and tetherrun in $build first" >&2; exit 3; }
mkdir -p "$out"

ucx_env() {  # transport -> env assignments for ucx_perftest
  case $1 in
    tcp) echo "UCX_TLS=tcp,self UCX_NET_DEVICES=lo" ;;
    shm) echo "UCX_TLS=sm,self" ;;
    netns) echo "UCX_TLS=tcp,self UCX_NET_DEVICES=${NETNS_DEV:-tnet0}" ;;
  esac
}
tether_env() {  # transport -> env assignments for tether
  case $1 in
    tcp) echo "TETHER_PATHS=host=ucx UCX_TLS=tcp,self UCX_NET_DEVICES=lo TETHER_GPU=none" ;;
    shm) echo "TETHER_GPU=none" ;;
    netns) echo "TETHER_PATHS=host=ucx UCX_TLS=tcp,self UCX_NET_DEVICES=${NETNS_DEV:-tnet0} TETHER_GPU=none" ;;
  esac
}
perf_iters() {  # TEST SIZE EXTRA... -> -n for ucx_perftest
  local t=$1 s=$2; shift 2
  local n=$lat_iters; [[ $t == *_bw || $* == *-O* ]] && n=$bw_iters
  (( s > 65536 )) && n=$(( n * 65536 / s > 100 ? n * 65536 / s : 100 ))
  echo "$n"
}
# perftest TRANSPORT TEST SIZE EXTRA... : one server + one client on 127.0.0.1; appends "tr test size extra|csv".
perftest() {
  local tr=$1 t=$2 s=$3; shift 3
  local n; n=$(perf_iters "$t" "$s" "$@")
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

# Inside a netns host (NETNS_HOST_INDEX 0 or 1): host 0 runs one ucx_perftest server per test (each serves one
# client, then exits) and tether's rank 0; host 1 runs the clients against host 0's veth address, retrying each
# until its server listens (bounded), then tether's rank 1. Host 1 writes the perftest rows and commands.
if [[ -n $netns_host ]]; then
  i=$NETNS_HOST_INDEX
  for k in "${!perf_tests[@]}"; do
    read -r -a a <<<"${perf_tests[$k]}"
    p=$((port + 1 + k))
    n=$(perf_iters "${a[@]}")
    if [[ $i == 0 ]]; then
      env $(ucx_env netns) timeout 120 ucx_perftest -p "$p" >/dev/null 2>&1 || echo "server for ${a[*]} failed" >&2
      continue
    fi
    line=failed
    for try in $(seq 1 100); do  # the server of this test starts once the previous test ended there
      if line=$(env $(ucx_env netns) timeout 120 ucx_perftest "$NETNS_ADDR_0" -p "$p" -t "${a[0]}" -s "${a[1]}" \
                  -n "$n" -w $((n / 10)) "${a[@]:2}" -v 2>/dev/null | tail -1) && [[ $line == *,* ]]; then break; fi
      line=failed
      sleep 0.1
    done
    echo "$(ucx_env netns) ucx_perftest $NETNS_ADDR_0 -t ${a[0]} -s ${a[1]} -n $n -w $((n / 10)) ${a[*]:2} -v" \
      >>"$raw/commands"
    echo "netns|${a[0]}$([[ ${#a[@]} -gt 2 ]] && echo " ${a[*]:2}")|${a[1]}|$line" >>"$raw/perftest"
  done
  ranks=$i json=()
  [[ $i == 0 ]] && json=(--json "$raw/tether_netns.jsonl")
  [[ $i == 1 ]] && echo "$(tether_env netns) tetherrun -n 2 --ranks <host index> --rendezvous $NETNS_ADDR_0:29500 \
--secret-file <f> $(basename "$bench") ${tether_args[*]} --json tether_netns.jsonl  (one per host)" >>"$raw/commands"
  env $(tether_env netns) "$build/tools/tetherrun/tetherrun" -n 2 --ranks "$ranks" \
    --rendezvous "$NETNS_ADDR_0:29500" --secret-file "$secret" "$build/$bench" \
    "${tether_args[@]}" "${json[@]}" >"$raw/tether_netns.$i.txt" 2>&1 || { cat "$raw/tether_netns.$i.txt" >&2; exit 1; }
  exit 0
fi

for tr in $transports; do
  if [[ $tr == netns ]]; then
    od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$raw/secret"
    chmod 600 "$raw/secret"
    "$root/scripts/netns-hosts" --timeout 1200 -- "$here/compare.sh" --netns-host "$raw" "$raw/secret" "$machine" \
      >"$raw/netns.log" 2>&1 || { cat "$raw/netns.log" >&2; exit 1; }
    continue
  fi
  for t in "${perf_tests[@]}"; do
    read -r -a a <<<"$t"
    perftest "$tr" "${a[@]}"
  done
  cmd="$(tether_env "$tr") $build/tools/tetherrun/tetherrun -n 2 $build/$bench ${tether_args[*]} \
--json $raw/tether_$tr.jsonl"
  echo "${cmd/$raw\//}" >>"$raw/commands"
  env $(tether_env "$tr") "$build/tools/tetherrun/tetherrun" -n 2 "$build/$bench" "${tether_args[@]}" \
    --json "$raw/tether_$tr.jsonl" >"$raw/tether_$tr.txt" 2>&1 || { cat "$raw/tether_$tr.txt" >&2; exit 1; }
done

name=ucx_compare; [[ $rows == msg ]] && name=ucx_compare_msg
python3 "$here/compare_report.py" "$raw" "$out" "ROWS=$rows TRANSPORTS=\"$transports\" bench/ucx/compare.sh $*" \
  "$sizes" "$rows"
[[ " $transports " == *" netns "* ]] && cat "$out/${name}_netns.txt"
[[ " $transports " == *" tcp "* || " $transports " == *" shm "* ]] && cat "$out/$name.txt"
true
