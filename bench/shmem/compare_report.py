#!/usr/bin/env python3
"""Aggregates compare.sh's runs of osh_bench (tether vs the reference) into shmem_compare.txt / .jsonl.

Called by compare.sh with its settings in the environment; not meant to be run by hand. Per row (op, size) and
implementation the value is the median over the runs of each run's median; the ratio is ours / reference; the
verdict says whether ours is better (lower latency, higher GB/s or Mmsg/s) or worse by more than THRESHOLD.
"""
import glob
import json
import os
import statistics
from datetime import datetime, timezone

THRESHOLD = 0.05  # |ratio - 1| within 5%: "same"
IMPLS = ("tether", "oshmem")

env = os.environ
work, outdir = env["WORK"], env["OUTDIR"]

runs = {impl: {} for impl in IMPLS}  # impl -> (op, size) -> [values]
units, order, raw = {}, [], []
for impl in IMPLS:
    for path in sorted(glob.glob(os.path.join(work, f"{impl}.*.jsonl"))):
        rep = int(path.rsplit(".", 2)[-2])
        with open(path) as f:
            for line in f:
                rec = json.loads(line)
                key = (rec["op"], rec["size"])
                if key not in units:
                    units[key] = rec["unit"]
                    order.append(key)
                runs[impl].setdefault(key, []).append(rec["value"])
                rec["rep"] = rep
                raw.append(rec)


def header_of(impl):
    with open(os.path.join(work, f"{impl}.1.txt")) as f:
        return [l.rstrip("\n") for l in f if l.startswith("# osh_bench: impl") or l.startswith("# host")
                or l.startswith("# sizes")]


def fmt(v):
    return f"{v:.3f}" if v < 1000 else f"{v:.1f}"


rows = []
for key in order:
    op, size = key
    unit = units[key]
    ours_v, ref_v = runs["tether"].get(key), runs["oshmem"].get(key)
    if not ours_v or not ref_v:
        continue
    ours, ref = statistics.median(ours_v), statistics.median(ref_v)
    higher_better = unit in ("GB/s", "Mmsg/s")
    ratio = ours / ref if ref else float("inf")
    gain = ratio if higher_better else (1 / ratio if ratio else float("inf"))  # > 1: ours better
    if abs(ratio - 1) <= THRESHOLD:
        verdict = "same"
    else:
        verdict = "better" if gain > 1 else "worse"
    spread = lambda v, m: (max(v) - min(v)) / m * 100 if m else 0.0
    best = max if higher_better else min
    ours_best, ref_best = best(ours_v), best(ref_v)
    rows.append(dict(op=op, size=size, unit=unit, ours=ours, ref=ref, ratio=ratio, verdict=verdict,
                     ours_best=ours_best, ref_best=ref_best, best_ratio=ours_best / ref_best if ref_best else 0.0,
                     better_is="higher" if higher_better else "lower", ours_spread_pct=spread(ours_v, ours),
                     ref_spread_pct=spread(ref_v, ref), ours_runs=ours_v, ref_runs=ref_v,
                     factor=gain if gain >= 1 else 1 / gain))

date = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
result = env.get("RESULT", "shmem_compare")
txt = os.path.join(outdir, result + ".txt")
with open(txt, "w") as t:
    p = lambda s="": print(s, file=t)
    p("# shmem_compare: tether OpenSHMEM (ours) vs Open MPI oshmem (reference), same source bench/shmem/osh_bench.c")
    p(f"# machine: {env['MACHINE']} (hostname {env['HOSTNAME_']}, {env['CPU']}, {env['NPROC']} online CPUs)")
    p(f"# date: {date}")
    p(f"# command: {env['CMDLINE']}")
    p(f"# transport: {env.get('TRANSPORT_NOTE', '?')}; {env.get('NPES', '2')} PEs")
    p(f"# ours: {env['OUR_VER']}; compiled by {env['OUR_OSHCC']} {env['CFLAGS_']} ({env['CC_VER']})")
    p(f"#   run: {env['RUN_TETHER']} --json FILE {env['BENCH_ARGS_']}".rstrip())
    p(f"# reference: {env['OMPI_VER'] or 'Open MPI ?'} oshmem (spml ucx), UCX {env['UCX_VER']}; compiled by "
      f"{env['REF_OSHCC_']} {env['CFLAGS_']}")
    p(f"#   run: {env['RUN_OSHMEM']} --json FILE {env['BENCH_ARGS_']}".rstrip())
    for impl in IMPLS:
        for line in header_of(impl):
            p("#   " + line.lstrip("# "))
    p(f"# runs: {env['REPS']} per implementation, back to back, order alternating (ours first in odd runs)")
    p(f"# {env['LOAD_NOTE']}; after: {env['LOAD_AFTER']}")
    p(f"# 1-min load at the start of each run (it includes this benchmark's own 2 busy PEs of the runs before):")
    p(f"#   {env['LOADS']}")
    notes = os.path.join(work, "notes")
    if os.path.exists(notes):
        for line in open(notes):
            p(f"# note: {line.strip()}")
    p("# value: median over the runs of each run's median (osh_bench: median of 21 batches); spread = (max - min) / value")
    p("#   over the runs' medians. ratio = ours / reference. Latency (us): lower is better; GB/s, Mmsg/s: higher is")
    p(f"#   better. verdict: better / worse when the ratio is off 1 by more than {THRESHOLD:.0%}, else same; factor = how")
    p("#   many times better or worse. best: the best run's median of each (lowest latency, highest rate); noise on a")
    p("#   shared VM only ever slows a run down, so best/best is the ratio of the undisturbed costs.")
    p()
    p(f"{'op':<10} {'size':>8} {'unit':<7} {'ours':>10} {'spread':>7} {'reference':>10} {'spread':>7} "
      f"{'ours/ref':>9}  {'verdict':<16} {'ours best':>10} {'ref best':>10} {'best ratio':>10}")
    last_op = None
    for r in rows:
        if last_op is not None and r["op"] != last_op:
            p()
        last_op = r["op"]
        v = r["verdict"]
        if v != "same":
            v = f"{v} ({r['factor']:.2f}x)"
        p(f"{r['op']:<10} {r['size']:>8} {r['unit']:<7} {fmt(r['ours']):>10} {r['ours_spread_pct']:>6.0f}% "
          f"{fmt(r['ref']):>10} {r['ref_spread_pct']:>6.0f}% {r['ratio']:>9.3f}  {v:<16} {fmt(r['ours_best']):>10} "
          f"{fmt(r['ref_best']):>10} {r['best_ratio']:>10.3f}")
    p()
    counts = {k: sum(1 for r in rows if r["verdict"] == k) for k in ("better", "same", "worse")}
    p(f"# summary: {len(rows)} rows: ours better in {counts['better']}, same in {counts['same']}, "
      f"worse in {counts['worse']}")

with open(os.path.join(outdir, result + ".jsonl"), "w") as j:
    for r in rows:
        # "ours"/"ref" are the values (from the row); the implementations' names have keys of their own.
        rec = dict(machine=env["MACHINE"], date=date, ours_impl="tether", reference="oshmem")
        rec.update(r)
        j.write(json.dumps(rec) + "\n")
with open(os.path.join(outdir, result + ".runs.jsonl"), "w") as j:
    # First line: where, when and how these runs were made; then every run's raw rows.
    j.write(json.dumps(dict(record="run", machine=env["MACHINE"], date=date, command=env["CMDLINE"],
                            ours=env["RUN_TETHER"], reference=env["RUN_OSHMEM"])) + "\n")
    for rec in raw:
        j.write(json.dumps(rec) + "\n")
print(open(txt).read())
