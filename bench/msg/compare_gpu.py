#!/usr/bin/env python3
"""Side-by-side table of msg_bench's GPU runs (tether_bench_msg_gpu, tether_bench_msg_nccl, tether_bench_msg_mpi_gpu):
one column per (impl, model), per buffer pairing (mem), row (op) and size, the ratio of tether's best model to NCCL's
best, and issue #20's goal rows checked.

    compare_gpu.py RUN.jsonl [RUN.jsonl ...] -o PREFIX       (writes PREFIX.txt and PREFIX.jsonl; the table to stdout)

Each input is one run's --json file (one object per row: impl, model, mem, op, size, value, unit, ...). Values are
the runs' medians as they are (one run per implementation: scripts/gpu-check's msg step). ratio = how many times
tether's best model is better than NCCL's best at that row (latency: NCCL us / tether us; GB/s: tether / NCCL), so
> 1 means tether ahead. Goal rows are marked '<- goal' in the table. Goals (2 x H200 over NVLink, D-D unless said): 8 B one-way latency <= 3 us in the stream model,
<= 2 us in the kernel model, <= 5 us from the host (device buffers); 1 GiB bw >= 390 GB/s; 1 GiB bibw >= 760 GB/s
(both directions together). A goal row is MET / MISSED / not measured.
"""
import argparse
import json
import sys

GOALS = [  # (op, size, mem, model or None = any tether model (the best), bound, "<=" / ">=", what)
    ("latency", 8, "D-D", "stream", 3.0, "<=", "8 B latency, stream model"),
    ("latency", 8, "D-D", "kernel", 2.0, "<=", "8 B latency, kernel model"),
    ("latency", 8, "D-D", "host", 5.0, "<=", "8 B latency, host calls on device buffers"),
    ("bw", 1 << 30, "D-D", None, 390.0, ">=", "1 GiB bw (best tether model)"),
    ("bibw", 1 << 30, "D-D", None, 760.0, ">=", "1 GiB bibw, both directions (best tether model)"),
]
ORDER = {"host": 0, "stream": 1, "kernel": 2}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("-o", "--out", required=True, help="output prefix (PREFIX.txt, PREFIX.jsonl)")
    a = ap.parse_args()
    rows, cols, units, pairs = {}, set(), {}, {}
    for path in a.runs:
        for line in open(path):
            if not line.strip():
                continue
            r = json.loads(line)
            col = (r["impl"], r.get("model", "host"))
            key = (r.get("mem", "H-H"), r["op"], r["size"])
            cols.add(col)
            units[key[1]] = r["unit"]
            pairs[r["impl"]] = r.get("pairs", 1)
            rows.setdefault(key, {})[col] = r["value"]
    impl_rank = {"tether": 0, "nccl": 1, "mpi": 2}
    cols = sorted(cols, key=lambda c: (impl_rank.get(c[0], 9), ORDER.get(c[1], 9), c))
    lower = lambda op: units.get(op) == "us"

    def best(vals, impl, op):
        v = [x for (i, _), x in vals.items() if i == impl]
        return (min(v) if lower(op) else max(v)) if v else None

    out, lines = [], [
        "# msg_gpu_compare: two-sided messaging on GPUs, one msg_bench source over tether, NCCL and MPI "
        "(bench/msg/compare_gpu.py)",
        "# inputs: " + " ".join(a.runs),
        "# pairs per run: " + ", ".join(f"{k} {v}" for k, v in sorted(pairs.items())) +
        " (more than 1: every pair at once, rank 0's pair reported)",
        "# value: each run's median; latency = one-way us (lower is better), bw / bibw = GB/s, 1e9 B/s (higher is "
        "better; bibw counts both directions)",
        "# ratio: tether's best model vs NCCL's best model at the row, > 1 = tether ahead (x times)",
    ]
    head = f"{'size':>11} " + " ".join(f"{i + '/' + m:>14}" for i, m in cols) + f" {'ratio':>8}"
    section = None
    for key in sorted(rows, key=lambda k: (["D-D", "H-D", "H-H"].index(k[0]) if k[0] in ("D-D", "H-D", "H-H") else 9,
                                           ["latency", "bw", "bibw"].index(k[1]) if k[1] in ("latency", "bw", "bibw")
                                           else 9, k[2])):
        mem, op, size = key
        vals = rows[key]
        if (mem, op) != section:
            section = (mem, op)
            lines += ["", f"## {mem} {op} ({units[op]})", head]
        t, n = best(vals, "tether", op), best(vals, "nccl", op)
        ratio = None
        if t and n:
            ratio = n / t if lower(op) else t / n
        cells = " ".join(f"{vals[c]:>14.3f}" if c in vals else f"{'-':>14}" for c in cols)
        goal = "  <- goal (below)" if any(g[:3] == (op, size, mem) for g in GOALS) else ""
        lines.append((f"{size:>11} {cells} {ratio:>8.2f}" if ratio else f"{size:>11} {cells} {'-':>8}") + goal)
        out.append(dict(mem=mem, op=op, size=size, unit=units[op],
                        values={f"{i}/{m}": v for (i, m), v in vals.items()}, ratio_tether_vs_nccl=ratio))

    lines.append("")
    goal_out = []
    for op, size, mem, model, bound, cmp, what in GOALS:
        vals = rows.get((mem, op, size), {})
        if model:
            v = vals.get(("tether", model))
        else:
            v = best(vals, "tether", op)
        n = best(vals, "nccl", op)
        if v is None:
            verdict = "not measured"
        else:
            ok = v <= bound if cmp == "<=" else v >= bound
            verdict = f"{'MET' if ok else 'MISSED'} ({v:.3f} {units[op]})"
        nccl = f"; NCCL best {n:.3f}" if n is not None else "; NCCL not measured"
        lines.append(f"# goal {what} ({mem}) {cmp} {bound:g} {units.get(op, '')}: {verdict}{nccl}")
        goal_out.append(dict(goal=what, op=op, size=size, mem=mem, model=model, bound=bound, cmp=cmp, value=v,
                             nccl=n, verdict=verdict.split(" ")[0] if v is not None else "not measured"))
    text = "\n".join(lines) + "\n"
    with open(a.out + ".txt", "w") as f:
        f.write(text)
    with open(a.out + ".jsonl", "w") as f:
        for r in out + goal_out:
            f.write(json.dumps(r) + "\n")
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
