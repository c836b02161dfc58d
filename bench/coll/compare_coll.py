#!/usr/bin/env python3
"""Side-by-side table of tether_bench_coll (tether and NCCL) and tether_bench_nvshmem_coll (NVSHMEM) collectives.

    compare_coll.py COLL_JSONL [NVSHMEM_COLL_JSONL] [-o OUT.txt]

COLL_JSONL is tether_bench_coll's --json output (tether and NCCL rows of one run), NVSHMEM_COLL_JSONL
tether_bench_nvshmem_coll's (NVSHMEM rows); without it the NVSHMEM columns are "-". Each file is a run record, then
one line per row. A row's column comes from its own "impl" field (tether, nccl, nvshmem; other impls are left out
with a warning; the "model" field says stream, host or device), not from the file it is in. Rows are joined on
(op, model, bytes) and listed per (op, model) group, groups in first-seen order (COLL_JSONL first), sizes ascending; where two rows of one
impl share a key the first counts.
Columns: time = time_us, mean microseconds per call over the PEs (lower is better); busbw = busbw_GBps, nccl-tests'
bus bandwidth (higher is better; "-" for the device rows, which have none); vs_nccl = nccl_us / tether_us and
vs_nvshmem = nvshmem_us / tether_us, > 1 when tether is faster. A value a side lacks is "-". The last lines give, per
group with a tether row and a peer, the smallest and largest ratio. Files run at different PE counts are still joined,
with a warning line in the header. Exit 0; 2 on unreadable input; a malformed line exits with its file and line.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from compare_common import describe, emit, load  # noqa: E402

TOOL = "compare_coll.py"
IMPLS = ("tether", "nccl", "nvshmem")
PEERS = ("nccl", "nvshmem")


def is_row(rec):
    return (rec.get("record") == "row" and rec.get("bench", "coll") == "coll" and "op" in rec and "bytes" in rec
            and "impl" in rec)


def impl_of(rec):
    """The column of a row: its impl when it is one of IMPLS, else None."""
    return rec["impl"] if rec["impl"] in IMPLS else None


def pe_counts(rows):
    """The PE counts of these rows ("npes", else "pes"), as text: "8", "2,4" or "?" when none says."""
    counts = sorted({r.get("npes", r.get("pes")) for r in rows} - {None})
    return ",".join(str(n) for n in counts) or "?"


def positive(rec, field):
    v = rec.get(field) if rec else None
    return v if isinstance(v, (int, float)) and v > 0 else None


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("coll", help="coll.jsonl (tether_bench_coll --json: tether and NCCL rows)")
    ap.add_argument("nvshmem", nargs="?", help="nvshmem_coll.jsonl (tether_bench_nvshmem_coll --json: NVSHMEM rows); "
                                               "without it the NVSHMEM columns are -")
    ap.add_argument("-o", "--out", help="also write the table to this file")
    return ap.parse_args()


def main():
    a = parse_args()
    try:
        crun, crows = load(a.coll, TOOL, is_row)
        nrun, nrows = load(a.nvshmem, TOOL, is_row) if a.nvshmem else ({}, [])
    except OSError as e:
        print(f"{TOOL}: {e}", file=sys.stderr)
        sys.exit(2)
    for path, run, want in ((a.coll, crun, "tether"), (a.nvshmem, nrun, "nvshmem")):
        impl = run.get("impl")
        if path and impl is not None and impl != want:
            print(f"{TOOL}: warning: {path} says impl {impl!r} (expected {want!r})", file=sys.stderr)

    # (op, model) -> {bytes -> {impl -> row}}, groups in first-seen order (dicts keep insertion order)
    groups, unknown = {}, set()
    for r in crows + nrows:
        impl = impl_of(r)
        if impl is None:
            unknown.add(r["impl"])
            continue
        sizes = groups.setdefault((r["op"], r.get("model", "?")), {})
        sizes.setdefault(r["bytes"], {}).setdefault(impl, r)
    for impl in sorted(unknown):
        print(f"{TOOL}: warning: rows of impl {impl!r} left out (not one of {', '.join(IMPLS)})", file=sys.stderr)

    lines = ["# team collectives: tether vs NCCL (tether_bench_coll) and NVSHMEM (tether_bench_nvshmem_coll)",
             describe("tether", crun, a.coll)]
    if a.nvshmem:
        lines.append(describe("nvshmem", nrun, a.nvshmem))
        cpes, npes = pe_counts(crows), pe_counts(nrows)
        lines.append(f"# PEs: {cpes} (tether/nccl file), {npes} (nvshmem file)")
        if cpes != npes:
            lines.append(f"# warning: the two files were run at different PE counts ({cpes} vs {npes}); "
                         "joined anyway, so the nvshmem columns are another run's shape")
    else:
        lines.append("# nvshmem: no file given; the nvshmem columns are -")
        lines.append(f"# PEs: {pe_counts(crows)}")
    lines += ["# time: mean us per call over PEs (lower is better); busbw: nccl-tests bus bandwidth GB/s (higher is "
              "better);",
              "# vs_nccl = nccl_us / tether_us and vs_nvshmem = nvshmem_us / tether_us: > 1 means tether faster"]
    head = (f"{'bytes':>12} {'tether_us':>12} {'nccl_us':>12} {'nvshmem_us':>12} {'tether_busbw':>13} "
            f"{'nccl_busbw':>13} {'nvshmem_busbw':>13} {'vs_nccl':>8} {'vs_nvshmem':>10}")
    fmt = lambda v, d: "-" if v is None else f"{v:.{d}f}"  # noqa: E731
    summary = []
    for (op, model), sizes in groups.items():
        lines += ["", f"# {op}, {model}", head]
        ratios = {p: [] for p in PEERS}
        for nbytes in sorted(sizes):
            by = sizes[nbytes]
            us = {i: positive(by.get(i), "time_us") for i in IMPLS}
            bw = {i: None if model == "device" else positive(by.get(i), "busbw_GBps") for i in IMPLS}
            vs = {}
            for p in PEERS:
                vs[p] = us[p] / us["tether"] if us[p] and us["tether"] else None
                if vs[p] is not None:
                    ratios[p].append(vs[p])
            lines.append(f"{nbytes:>12} {fmt(us['tether'], 3):>12} {fmt(us['nccl'], 3):>12} "
                         f"{fmt(us['nvshmem'], 3):>12} {fmt(bw['tether'], 2):>13} {fmt(bw['nccl'], 2):>13} "
                         f"{fmt(bw['nvshmem'], 2):>13} {fmt(vs['nccl'], 2):>8} {fmt(vs['nvshmem'], 2):>10}")
        parts = [f"vs_{p} min {min(v):.2f} max {max(v):.2f} over {len(v)} size{'s' if len(v) > 1 else ''}"
                 for p, v in ratios.items() if v]
        if parts:
            summary.append(f"# summary {op}/{model}: " + "; ".join(parts))
    if summary:
        lines += [""] + summary
    emit(lines, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
