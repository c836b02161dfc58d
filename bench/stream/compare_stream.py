#!/usr/bin/env python3
"""Side-by-side table of tether_bench_stream and tether_bench_nvshmem_stream (issue #6).

    compare_stream.py STREAM_JSONL NVSHMEM_STREAM_JSONL [-o OUT.txt]

Both files are the --json output of the two programs (same method: bench/stream/stream_rows.h): a run record, then
one line per row. Rows are joined on (op, bytes); an op timed in several models (the halo rows: cpu_sync, stream,
kernel) has the model joined to its name.
Rows with a bandwidth (put_bw, put_bw_bidir) compare GB/s, the halo rows the median microseconds per iteration, the
others the median microseconds per operation; "ratio" is > 1 when tether is faster. Rows that only one side has (tether's
prepared sets, stream atomics, doorbells, halo) are listed with "-" on the other. Exit 0; 2 on unreadable input.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from compare_common import describe, emit, load_pair  # noqa: E402


def is_row(rec):
    return rec.get("record") == "row" and "op" in rec


def row_key(rows):
    """The join key of a row, (name, bytes), for these rows: an op timed in several models (the halo rows: cpu_sync,
    stream, kernel) has the model joined to its name."""
    models = {}
    for r in rows:
        models.setdefault(r["op"], set()).add(r.get("model"))
    return lambda r: (r["op"] + ("/" + r["model"] if len(models[r["op"]]) > 1 else ""), r["bytes"])


def metric(rec):
    """(field, is_bandwidth) of a row: bw_GBps where it has a bandwidth; else the halo rows' whole iteration
    (iter_us_median) or one operation (lat_us_median)."""
    if rec.get("bw_GBps") is not None:
        return "bw_GBps", True
    return ("lat_us_median" if "lat_us_median" in rec else "iter_us_median"), False


def main():
    a, (trun, trows), (nrun, nrows) = load_pair(__doc__, "compare_stream.py",
                                                 "stream.jsonl (tether_bench_stream --json)",
                                                 "nvshmem_stream.jsonl (tether_bench_nvshmem_stream --json)",
                                                 is_row)
    key = row_key(trows + nrows)
    tmap, nmap, order = {}, {}, []
    for rows, m in ((trows, tmap), (nrows, nmap)):
        for r in rows:
            if key(r) not in tmap and key(r) not in nmap:
                order.append(key(r))
            m.setdefault(key(r), r)
    lines = [
        "# stream-ordered operations: tether vs NVSHMEM, same rows, same method (bench/stream/stream_rows.h)",
        describe("tether", trun, a.tether),
        describe("nvshmem", nrun, a.nvshmem),
        "# metric: median us per operation (lower is better), or GB/s (higher is better) for put_bw/put_bw_bidir;",
        "# ratio > 1: tether faster",
        f"{'op':<22} {'bytes':>12} {'metric':>6} {'tether':>12} {'nvshmem':>12} {'ratio':>7}  note",
    ]
    for k in order:
        t, n = tmap.get(k), nmap.get(k)
        r0 = t or n
        field, bw = metric(r0)
        tv = t.get(field) if t else None
        nv = n.get(field) if n else None
        ratio = "-"
        if tv and nv:
            ratio = f"{(tv / nv) if bw else (nv / tv):.2f}"
        note = "nvshmem only" if t is None else "tether only" if n is None else ""
        fmt = lambda v: "-" if v is None else (f"{v:.2f}" if bw else f"{v:.3f}")
        lines.append(f"{k[0]:<22} {k[1]:>12} {'GB/s' if bw else 'us':>6} {fmt(tv):>12} {fmt(nv):>12} {ratio:>7}  "
                     f"{note}".rstrip())
    emit(lines, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
