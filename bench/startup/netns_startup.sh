#!/usr/bin/env bash
# netns_startup.sh: start-up time of one job split over the two "hosts" of scripts/netns-hosts (issue #19 goal: a
# 64-PE job across the two namespaces initialises in < 2 s). Each host starts its half with one tetherrun
# (--ranks/--rendezvous/--secret-file, the documented multi-host start), TETHER_GPU=none, UCX_TLS=tcp,self over the
# veth between the hosts (same-host PEs keep tether's shm path), and BENCH_LAUNCH_NS = the time just before its
# tetherrun starts. tether_bench_startup reports launch -> end of tether_init (max over PEs) and the first put to
# every peer.
#
#   bench/startup/netns_startup.sh [--log] [--reps R] NPES [build-dir]     (needs root, ip, unshare)
#
# --log: TETHER_LOG=$LOG_SPEC (default info) on every PE, each output line stamped (seconds since that host's launch) as it reaches
#        tetherrun: the phases of tether_init (bootstrap rendezvous, host discovery, heap, UCX worker and address
#        exchange, paths) can be read off; logging itself slows the job down, so time it without --log.
# Prints each run's table; with --reps > 1 also the median and the range of "launch->init done max".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

if [[ ${1:-} == --host ]]; then  # internal: inside one netns host
  secret=$2 log=$3 npes=$4 build=$5 json=$6
  half=$((npes / 2)) i=$NETNS_HOST_INDEX
  if [[ $i == 0 ]]; then range=0-$((half - 1)); else range=$half-$((npes - 1)); fi
  export TETHER_GPU=none UCX_TLS=tcp,self UCX_NET_DEVICES=$NETNS_DEV TETHER_TIMEOUT=60
  args=()
  [[ $i == 0 ]] && args=(--json "$json")
  cmd=("$build/tools/tetherrun/tetherrun" -n "$npes" --ranks "$range" --rendezvous "$NETNS_ADDR_0:29500"
       --secret-file "$secret" "$build/bench/startup/tether_bench_startup" "${args[@]}")
  if [[ $log == 1 ]]; then
    export TETHER_LOG=${LOG_SPEC:-info} BENCH_LAUNCH_NS=$(date +%s%N)
    "${cmd[@]}" 2>&1 | python3 -u -c '
import os, sys, time
t0 = int(os.environ["BENCH_LAUNCH_NS"]) / 1e9
for line in sys.stdin:
    sys.stdout.write("%8.3f %s" % (time.time() - t0, line))'
    exit "${PIPESTATUS[0]}"
  fi
  export BENCH_LAUNCH_NS=$(date +%s%N)
  exec "${cmd[@]}"
fi

log=0 reps=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --log) log=1; shift ;;
    --reps) reps=$2; shift 2 ;;
    *) break ;;
  esac
done
npes=${1:?usage: netns_startup.sh [--log] [--reps R] NPES [build-dir]}
build=$(cd "${2:-$root/build/b}" && pwd)
(( npes >= 2 && npes % 2 == 0 )) || { echo "netns_startup.sh: NPES must be even and >= 2" >&2; exit 2; }
[[ -x $build/bench/startup/tether_bench_startup ]] || { echo "netns_startup.sh: build tether_bench_startup in $build" >&2; exit 3; }
tmp=$(mktemp -d)
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$tmp/secret"
chmod 600 "$tmp/secret"
echo "# netns_startup.sh: $npes PEs ($((npes / 2)) per host), $(date -u +%FT%TZ), $(hostname) ($(nproc) CPUs), git $(git -C "$root" describe --always --dirty 2>/dev/null), load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$reps"); do
  "$root/scripts/netns-hosts" --timeout 120 -- "$here/netns_startup.sh" --host "$tmp/secret" "$log" "$npes" "$build" \
    "$tmp/run$r.jsonl" >"$tmp/out$r" 2>&1 || { cat "$tmp/out$r" >&2; exit 1; }
  if [[ $log == 1 ]]; then cat "$tmp/out$r"; else sed -n 's/^\[tether-a\] //p' "$tmp/out$r"; fi
  cat "$tmp/run$r.jsonl" >>"$tmp/all.jsonl"
done
python3 - "$tmp/all.jsonl" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
v = [r["launch_to_init_ms_max"] for r in rows]
i = [r["init_ms_max"] for r in rows]
print(f"# {len(v)} runs: launch->init done (max over PEs) median {statistics.median(v):.1f} ms, "
      f"range {min(v):.1f}-{max(v):.1f} ms; tether_init alone (max) median {statistics.median(i):.1f} ms")
for r in rows:
    print(json.dumps(r))
EOF
