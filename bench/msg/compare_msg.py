#!/usr/bin/env python3
"""Aggregates bench/msg/compare.sh's runs of msg_bench (tether vs MPI) into <prefix>.txt / .jsonl / .runs.jsonl.

    compare_msg.py WORK REPS PREFIX

WORK holds header (the '#' lines compare.sh wrote) and <impl>.<rep>.jsonl for impl tether and mpi. Per row (op, size)
and implementation the value is the median over the runs of each run's median; ratio = tether / MPI; verdict: tether
better or worse (lower latency, higher GB/s) by more than THRESHOLD, else same.
"""
import glob
import json
import os
import statistics
import sys

THRESHOLD = 0.05
IMPLS = ("tether", "mpi")


def main():
    work, reps, prefix = sys.argv[1], sys.argv[2], sys.argv[3]
    raw = []  # every run's rows, with their run number
    for impl in IMPLS:
        for path in sorted(glob.glob(os.path.join(work, f"{impl}.*.jsonl"))):
            rep = int(path.rsplit(".", 2)[-2])
            raw += [dict(json.loads(line), rep=rep) for line in open(path) if line.strip()]
    vals, units = {impl: {} for impl in IMPLS}, {}  # impl -> (op, size) -> [run medians]; (op, size) -> unit
    for rec in raw:
        key = (rec["op"], rec["size"])
        units.setdefault(key, rec["unit"])
        vals[rec["impl"]].setdefault(key, []).append(rec["value"])
    order = list(units)  # first-seen order: the benchmark's row order

    out = []
    for key in order:
        t, m = vals["tether"].get(key), vals["mpi"].get(key)
        if not t or not m:
            continue
        higher = units[key] == "GB/s"
        tv, mv = statistics.median(t), statistics.median(m)
        best = max if higher else min
        ratio = tv / mv if mv else float("inf")
        gain = ratio if higher else (1 / ratio if ratio else float("inf"))  # > 1: tether better
        verdict = "same" if abs(ratio - 1) <= THRESHOLD else ("better" if gain > 1 else "worse")
        out.append(dict(op=key[0], size=key[1], unit=units[key], better_is="higher" if higher else "lower",
                        tether=tv, mpi=mv, ratio=ratio, verdict=verdict, factor=max(gain, 1 / gain),
                        tether_spread_pct=(max(t) - min(t)) / tv * 100 if tv else 0.0,
                        mpi_spread_pct=(max(m) - min(m)) / mv * 100 if mv else 0.0,
                        tether_best=best(t), mpi_best=best(m), best_ratio=best(t) / best(m) if best(m) else 0.0,
                        tether_runs=t, mpi_runs=m))

    header = open(os.path.join(work, "header")).read().rstrip("\n").split("\n")
    lines = header + [
        f"# value: median over the {reps} runs of each run's median (msg_bench: median of its batches); spread =",
        "#   (max - min) / value over the runs' medians. ratio = tether / MPI. latency (us, one-way): lower is better;",
        f"#   bw, bibw (GB/s = 1e9 B/s): higher is better. verdict: better / worse when the ratio is off 1 by more than",
        f"#   {THRESHOLD:.0%}, else same; (Nx) = how many times. best: the best run's median of each (noise on a shared",
        "#   VM only slows a run down, so best/best is the ratio of the undisturbed costs).",
        "",
        f"{'op':<8} {'size':>8} {'unit':<5} {'tether':>10} {'spread':>7} {'MPI':>10} {'spread':>7} {'tether/MPI':>10}  "
        f"{'verdict':<16} {'tether best':>11} {'MPI best':>10} {'best ratio':>10}",
    ]
    fmt = lambda v: f"{v:.3f}" if v < 1000 else f"{v:.1f}"
    for i, r in enumerate(out):
        if i and r["op"] != out[i - 1]["op"]:
            lines.append("")
        v = r["verdict"] if r["verdict"] == "same" else f"{r['verdict']} ({r['factor']:.2f}x)"
        lines.append(f"{r['op']:<8} {r['size']:>8} {r['unit']:<5} {fmt(r['tether']):>10} {r['tether_spread_pct']:>6.0f}% "
                     f"{fmt(r['mpi']):>10} {r['mpi_spread_pct']:>6.0f}% {r['ratio']:>10.3f}  {v:<16} "
                     f"{fmt(r['tether_best']):>11} {fmt(r['mpi_best']):>10} {r['best_ratio']:>10.3f}")
    count = {k: sum(r["verdict"] == k for r in out) for k in ("better", "same", "worse")}
    lines += ["", f"# summary: {len(out)} rows: tether better in {count['better']}, same in {count['same']}, "
                  f"worse in {count['worse']}"]
    text = "\n".join(lines) + "\n"
    with open(prefix + ".txt", "w") as f:
        f.write(text)
    with open(prefix + ".jsonl", "w") as f:
        for r in out:
            f.write(json.dumps(r) + "\n")
    with open(prefix + ".runs.jsonl", "w") as f:
        for rec in raw:
            f.write(json.dumps(rec) + "\n")
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
