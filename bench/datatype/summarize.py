#!/usr/bin/env python3
"""One line per (pattern, size, direction) from tether_bench_datatype's and cupy_rows.py's JSON lines (issue #7):
tether's automatic choice against the best other row (per-block cudaMemcpyAsync "dt", cudaMemcpy2D/3D, a hand-written
kernel "hand", CuPy), as time and as % of the roofline, with the issue's target for the block size (>= 85 % at >= 32 B
blocks, >= 70 % below). Column "hand %roof": the hand-written kernel's % of the roofline, where the layout has one
(what the simplest kernel written for that face reaches on this GPU). Column "%sect": tether's % of the roofline that
counts the 32 B sectors the blocks touch at their addresses (row roofline_sectors; informational: a block straddling
a sector boundary costs two sectors, which the issue's formula does not count; the targets use the issue's formula).
Column "%fetch64": the same with 64 B granules, the L2's DRAM fetch for an isolated block (row roofline_fetch64).

usage: summarize.py datatype.jsonl [datatype_cupy.jsonl] [-o FILE]
"""
import argparse
import json
import sys


def load(path):
    rows, run = [], None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            if "run" in r:
                run = r
            else:
                rows.append(r)
    return run, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tether")
    ap.add_argument("cupy", nargs="?")
    ap.add_argument("-o", "--output")
    a = ap.parse_args()
    run, rows = load(a.tether)
    if a.cupy:
        rows += load(a.cupy)[1]
    by = {}
    for r in rows:
        by.setdefault((r["pattern"], r.get("size", "small"), r["dir"]), {})[r["impl"]] = r
    out = open(a.output, "w") if a.output else sys.stdout
    out.write("# command: python3 bench/datatype/summarize.py %s\n" % " ".join(sys.argv[1:]))
    if run:
        out.write("# from %s (%s, %s)%s\n" % (a.tether, run.get("device"), run.get("date"),
                                              " and " + a.cupy if a.cupy else ""))
    out.write("# pattern          size  dir    mean blk  tether us  %roof  target  best other (us)          "
              "tether/other  met  hand %roof  %sect  %fetch64\n")
    def share(bound, row, width):  # bound's time as % of row's, right-aligned in width columns ("-": no rows)
        have = bound and row and row["us"] > 0
        return "%*.1f%%" % (width - 1, 100.0 * bound["us"] / row["us"]) if have else "%*s" % (width, "-")

    met = total = 0
    for (pat, size, d), impls in by.items():
        t, roof = impls.get("tether"), impls.get("roofline")
        if not t or not roof or t["packed"] == 0:
            continue
        others = [(v["us"], k) for k, v in impls.items()
                  if k != "tether" and not k.startswith(("t:", "roofline")) and v["us"] > 0]
        best = min(others) if others else None
        pct = 100.0 * roof["us"] / t["us"]
        target = 85.0 if t["mean_block"] >= 32 else 70.0
        ok = pct >= target and (best is None or t["us"] < best[0])
        met += ok
        total += 1
        other = "%-8s %10.2f" % (best[1], best[0]) if best else "%-19s" % "-"
        ratio = "%12.2f" % (t["us"] / best[0]) if best else "%12s" % "-"
        out.write("%-18s %-5s %-6s %9.1f %10.2f %5.1f%% %5.0f%%   %-23s %s  %-3s %s %s %s\n" %
                  (pat, size, d, t["mean_block"], t["us"], pct, target, other, ratio, "yes" if ok else "no",
                   share(roof, impls.get("hand"), 10), share(impls.get("roofline_sectors"), t, 7),
                   share(impls.get("roofline_fetch64"), t, 9)))
    out.write("# %d of %d rows meet both targets (%% of roofline and faster than every other row)\n" % (met, total))


if __name__ == "__main__":
    main()
