#!/usr/bin/env python3
"""Side-by-side table of tether_bench_device and tether_bench_nvshmem_device (issue #5).

    compare_device.py DEVICE_JSONL NVSHMEM_DEVICE_JSONL [-o OUT.txt]

Both files are the --json output of the two programs (bench/device/device_rows.h writes both: a run record, then one
line per row). Rows are joined on (row, scope, bytes, blocks, kind), kind being "" for the size rows, "sweep" for the
block-sweep rows and "best" for the best-of-sweep row (joined on kind alone: each side names its own best block
count). Latency rows compare microseconds, bandwidth rows (put_bw, get_bw, put_bw_bidir) GB/s; "ratio" is >1 when
tether is faster (NVSHMEM us / tether us, or tether GB/s / NVSHMEM GB/s). Rows that only one side has are listed
with "-" on the other. Exit 0; 2 on unreadable input.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from compare_common import describe, emit, load_pair  # noqa: E402

BW_ROWS = {"put_bw", "get_bw", "put_bw_bidir"}


def is_row(rec):
    return "row" in rec


def metric(rec):
    """(field, is_bandwidth) of a row: gbps for the bandwidth rows (BW_ROWS), else us."""
    bw = rec["row"] in BW_ROWS
    return ("gbps" if bw else "us"), bw


def kind(rec):
    note = rec.get("note", "")
    if note.startswith("best of the sweep"):
        return "best"
    if note.startswith("block sweep"):
        return "sweep"
    return ""


def key(rec):
    k = kind(rec)
    return (rec["row"], rec["scope"], rec["bytes"], None if k == "best" else rec["blocks"], k)


def main():
    a, (trun, trows), (nrun, nrows) = load_pair(__doc__, "compare_device.py",
                                                 "device.jsonl (tether_bench_device --json)",
                                                 "nvshmem_device.jsonl (tether_bench_nvshmem_device --json)",
                                                 is_row)
    nmap = {}
    for r in nrows:
        nmap.setdefault(key(r), r)
    order, seen = [], set()
    for r in trows + nrows:  # tether's order first, then rows only NVSHMEM has
        k = key(r)
        if k not in seen:
            seen.add(k)
            order.append(k)
    tmap = {}
    for r in trows:
        tmap.setdefault(key(r), r)

    lines = [
        "# device API: tether vs NVSHMEM, same rows, same method (bench/device/device_rows.h)",
        describe("tether", trun, a.tether),
        describe("nvshmem", nrun, a.nvshmem),
        "# metric: us (lower is better) for latency rows, GB/s (higher is better) for put_bw/get_bw/put_bw_bidir;",
        "# ratio > 1: tether faster (nvshmem us / tether us, or tether GB/s / nvshmem GB/s)",
        f"{'row':<22} {'scope':<6} {'bytes':>12} {'blocks':>9} {'metric':>6} {'tether':>12} {'nvshmem':>12} "
        f"{'ratio':>7}  note",
    ]
    for k in order:
        t, n = tmap.get(k), nmap.get(k)
        any_rec = t or n
        field, bw = metric(any_rec)
        tv = t[field] if t else None
        nv = n[field] if n else None
        ratio = "-"
        if tv is not None and nv is not None and tv > 0 and nv > 0:
            ratio = f"{(tv / nv) if bw else (nv / tv):.2f}"
        if k[4] == "best":
            blocks = f"{t['blocks'] if t else '-'}/{n['blocks'] if n else '-'}"
        else:
            blocks = str(any_rec["blocks"])
        note = {"": "", "sweep": "block sweep", "best": "best of sweep (tether/nvshmem blocks)"}[k[4]]
        if t is None:
            note = (note + "; " if note else "") + "nvshmem only"
        elif n is None:
            note = (note + "; " if note else "") + "tether only"
        fmt = lambda v: "-" if v is None else f"{v:.3f}" if not bw else f"{v:.2f}"
        unit = "GB/s" if bw else "us"
        lines.append(f"{k[0]:<22} {k[1]:<6} {k[2]:>12} {blocks:>9} {unit:>6} {fmt(tv):>12} {fmt(nv):>12} "
                     f"{ratio:>7}  {note}".rstrip())
    emit(lines, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
