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
import argparse
import json
import sys

BW_ROWS = {"put_bw", "get_bw", "put_bw_bidir"}


def load(path):
    run, rows = {}, []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise SystemExit(f"compare_device.py: {path}:{n}: not JSON ({e})")
            if rec.get("record") == "run":
                run = rec
            elif "row" in rec:
                rows.append(rec)
    return run, rows


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


def describe(label, run, path):
    impl = run.get("impl", "tether (no impl field: recorded before it existed)" if label == "tether" else "?")
    where = run.get("host") or run.get("machine") or "?"
    parts = [f"{label}: {path}", f"impl {impl}", f"host {where}", f"date {run.get('date', '?')}"]
    if run.get("gpu"):
        parts.append(f"gpu {run['gpu']}")
    if run.get("impl_detail"):
        parts.append(run["impl_detail"])
    return "# " + "; ".join(parts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tether", help="device.jsonl (tether_bench_device --json)")
    ap.add_argument("nvshmem", help="nvshmem_device.jsonl (tether_bench_nvshmem_device --json)")
    ap.add_argument("-o", "--out", help="also write the table to this file")
    a = ap.parse_args()
    try:
        trun, trows = load(a.tether)
        nrun, nrows = load(a.nvshmem)
    except OSError as e:
        print(f"compare_device.py: {e}", file=sys.stderr)
        return 2
    for label, run in (("tether", trun), ("nvshmem", nrun)):
        impl = run.get("impl")
        if impl is not None and impl != label:
            print(f"compare_device.py: warning: the {label} file says impl {impl!r}", file=sys.stderr)

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
        bw = any_rec["row"] in BW_ROWS
        metric = "GB/s" if bw else "us"
        field = "gbps" if bw else "us"
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
        lines.append(f"{k[0]:<22} {k[1]:<6} {k[2]:>12} {blocks:>9} {metric:>6} {fmt(tv):>12} {fmt(nv):>12} "
                     f"{ratio:>7}  {note}".rstrip())
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
