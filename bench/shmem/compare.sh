#!/usr/bin/env bash
# Side-by-side OpenSHMEM benchmark: bench/shmem/osh_bench.c built with tether's oshcc and with a reference
# implementation's oshcc (default: Debian's Open MPI, /usr/bin/oshcc + oshrun), run at 2 PEs on this machine,
# alternating the two builds for ROUNDS rounds; each row reports the median over rounds of each run's median.
# Writes bench/results/<machine>/shmem_compare.txt (ratio table) and shmem_compare.jsonl (every run's rows).
# Usage: bench/shmem/compare.sh [machine-name] (default cpu-2core-vm); env ROUNDS (3), REF_OSHCC, REF_OSHRUN.
set -euo pipefail
cd "$(dirname "$0")/../.."
machine=${1:-cpu-2core-vm}
rounds=${ROUNDS:-3}
ref_cc=${REF_OSHCC:-/usr/bin/oshcc}
ref_run=${REF_OSHRUN:-/usr/bin/oshrun}
if [ ! -x "$ref_cc" ] || [ ! -x "$ref_run" ]; then
  echo "compare.sh: no reference OpenSHMEM at $ref_cc / $ref_run." >&2
  echo "  On Debian/Ubuntu: apt-get install openmpi-bin libopenmpi-dev   (or set REF_OSHCC / REF_OSHRUN)" >&2
  exit 1
fi
cmake --preset host >/dev/null
cmake --build --preset host --target tether_osh_bench tetherrun >/dev/null
work=build/host/bench/shmem
"$ref_cc" -O2 -std=c11 bench/shmem/osh_bench.c -o "$work/osh_bench_ref"
ours=(build/host/tools/tetherrun/tetherrun -n 2 "$work/tether_osh_bench")
# Open MPI 4.1's osc/rdma component crashes in MPI_Finalize on this kind of machine (a memory hook into an unloaded
# component); osc is MPI one-sided, unused by OpenSHMEM, so it is excluded. Root needs --allow-run-as-root.
ref=("$ref_run" -np 2 --oversubscribe --mca osc ^rdma $( [ "$(id -u)" = 0 ] && echo --allow-run-as-root ) "$work/osh_bench_ref")
res=bench/results/$machine
mkdir -p "$res"
: >"$work/all.jsonl"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) = 1 ]; then order="ours ref"; else order="ref ours"; fi
  for who in $order; do
    if [ "$who" = ours ]; then "${ours[@]}" --json "$work/run.jsonl" >/dev/null
    else "${ref[@]}" --json "$work/run.jsonl" >/dev/null; fi
    sed "s/^{/{\"who\":\"$who\",\"round\":$r,/" "$work/run.jsonl" >>"$work/all.jsonl"
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
cp "$work/all.jsonl" "$res/shmem_compare.jsonl"
{
  echo "# OpenSHMEM side by side: tether vs $("$ref_run" --version 2>&1 | head -1) — osh_bench.c, 2 PEs"
  echo "# machine: $machine ($(nproc) cores, $(uname -r)); date: $(date -u +%Y-%m-%d); commit $(git rev-parse --short HEAD)"
  echo "# command: bench/shmem/compare.sh $machine (ROUNDS=$rounds); ours: ${ours[*]}; reference: ${ref[*]}"
  echo "# load average (1/5/15 min) before: $load_before, after: $load_after"
  echo "# value = median over rounds of each run's median trial; ratio = tether / reference"
  python3 - "$work/all.jsonl" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    o = json.loads(line)
    rows.setdefault((o["op"], o["size"], o["unit"]), {}).setdefault(o["who"], []).append(o["median"])
print(f"{'op':<14}{'size':>10}  {'tether':>10}  {'reference':>10}  {'unit':<7}{'ratio':>7}  verdict")
for (op, size, unit), v in rows.items():
    a, b = statistics.median(v["ours"]), statistics.median(v["ref"])
    lower = unit == "us"
    ratio = a / b if b else float("inf")
    better = (a <= b) if lower else (a >= b)
    print(f"{op:<14}{size:>10}  {a:>10.3f}  {b:>10.3f}  {unit:<7}{ratio:>7.2f}  {'tether better or equal' if better else 'tether WORSE'}")
PY
} >"$res/shmem_compare.txt"
cat "$res/shmem_compare.txt"
