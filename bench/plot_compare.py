#!/usr/bin/env python3
"""Draws the compare tables' JSON lines as PNG curves: each row family's value against message size, tether beside
the peer implementation (NVSHMEM, Open MPI, Open MPI's oshmem, ucx_perftest), with the ratio below.

    plot_compare.py [--out DIR] [--dpi N] INPUT...
    plot_compare.py [--out DIR] [--dpi N] --pair TETHER_JSONL NVSHMEM_JSONL

INPUT is one of
  - a compare table's JSON lines, both sides in each row: msg_compare*.jsonl (bench/msg/compare_msg.py, tether vs
    Open MPI), shmem_compare*.jsonl (bench/shmem/compare_report.py, tether vs oshmem), ucx_compare*.jsonl
    (bench/ucx/compare_report.py, tether vs ucx_perftest);
  - a table written by bench/device/compare_device.py or bench/stream/compare_stream.py (device_compare.txt,
    stream_compare.txt): its "# command:" line names the two JSON-lines files it joined (tether's and NVSHMEM's),
    which are read (looked for as written, from the repository root, then beside the table);
  - a folder: every *compare*.jsonl in it (not the .runs.jsonl raw runs) and every *compare*.txt of the kind above.
--pair plots the --json output of a tether benchmark and of its NVSHMEM twin (tether_bench_device and
tether_bench_nvshmem_device, or tether_bench_stream and tether_bench_nvshmem_stream) without a table.

Output, beside each input unless --out: <name>_latency.png (us against size, lower is better),
<name>_bandwidth.png (GB/s against size, higher is better) and <name>_rate.png (other units, e.g. Mmsg/s), each
holding one panel per row family (op, or row and scope) with both implementations as lines with markers on a log-2
size axis, and under it "tether advantage": peer us / tether us, or tether GB/s / peer GB/s (> 1: tether better).
Families with fewer than two sizes, one side only, or not against size (the device block sweeps) are left out and
named on stdout; sizes of 0 bytes cannot sit on a log axis and are left out too.

Exit 0; 1 when an input named on the command line had nothing to plot (each says why on stderr; the others are
still drawn) or nothing at all was drawn (a file found in a folder with nothing to plot is a note on stdout); 2 on
unreadable input or a bad command line; 3 without matplotlib.
"""
import argparse
import io
import math
import os
import shlex
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE, os.path.join(HERE, "device"), os.path.join(HERE, "stream")]
import compare_common  # noqa: E402
import compare_device  # noqa: E402
import compare_stream  # noqa: E402

TOOL = "plot_compare.py"
# unit -> (file suffix, axis label, lower is better)
CLASSES = {"us": ("latency", "latency (µs, lower is better)", True),
           "GB/s": ("bandwidth", "bandwidth (GB/s, higher is better)", False)}


def unit_class(unit):
    return CLASSES.get(unit, ("rate", f"{unit} (higher is better)", False))


class NoRows(Exception):
    """An input with nothing to plot; the message says why."""


class Plot:
    """What one input draws: families name -> {"unit", "tether": {size: value}, "peer": {size: value}}."""

    def __init__(self, source, stem, peer, info):
        self.source, self.stem, self.peer, self.info = source, stem, peer, info
        self.families = {}

    def add(self, family, unit, size, side, value):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or size is None:
            return
        self.families.setdefault(family, {"unit": unit, "tether": {}, "peer": {}})[side][size] = value

    def title(self):
        folder = os.path.basename(os.path.dirname(os.path.abspath(self.source)))
        return f"{folder}/{os.path.basename(self.source)}"


def describe_run(run, first):
    """One line naming the machine and date of a result (from its run record or its first row)."""
    parts = []
    machine = run.get("machine") or first.get("machine")
    if machine:
        parts.append(machine)
    if run.get("gpu"):
        parts.append(run["gpu"])
    date = run.get("date") or first.get("date")
    if date:
        parts.append(date)
    return ", ".join(parts)


def read_jsonl(path):
    """A compare table's JSON lines with both sides in each row (msg, shmem, ucx)."""
    run, rows = compare_common.load(path, TOOL, lambda r: r.get("record", "row") == "row")
    if not rows:
        raise NoRows("no rows in it")
    r0 = rows[0]
    stem = os.path.basename(path)[: -len(".jsonl")] if path.endswith(".jsonl") else os.path.basename(path)
    if "impl" in r0 and "value" in r0:
        raise NoRows("raw per-run rows (a .runs.jsonl); plot the aggregated .jsonl beside it")
    if "impl" in r0 or run.get("impl"):
        raise NoRows("one implementation's rows only; plot the pair (--pair TETHER_JSONL NVSHMEM_JSONL) or the "
                     "compare table (.txt) made from them")
    info = describe_run(run, r0)
    if "mpi" in r0 and "tether" in r0:  # bench/msg/compare_msg.py
        p = Plot(path, stem, "Open MPI", info)
        for r in rows:
            p.add(r["op"], r["unit"], r["size"], "tether", r.get("tether"))
            p.add(r["op"], r["unit"], r["size"], "peer", r.get("mpi"))
    elif "ref" in r0 and "reference" in r0:  # bench/shmem/compare_report.py
        ref = r0["reference"]
        p = Plot(path, stem, "Open MPI oshmem" if ref == "oshmem" else ref, info)
        for r in rows:
            # "ours" is tether's value ("ours_impl" names it; older files lack that key)
            p.add(r["op"], r["unit"], r["size"], "tether", r.get("ours"))
            p.add(r["op"], r["unit"], r["size"], "peer", r.get("ref"))
    elif "ucx_perftest" in r0:  # bench/ucx/compare_report.py: metric "put lat (us)", "put bw (GB/s)"
        p = Plot(path, stem, "ucx_perftest", info)
        for r in rows:
            metric = r.get("metric", "?")
            unit = metric[metric.rfind("(") + 1:-1] if metric.endswith(")") else "?"
            family = f"{r.get('transport', '?')}: {metric[:metric.rfind('(')].strip()}"
            p.add(family, unit, r.get("bytes"), "tether", r.get("tether"))
            p.add(family, unit, r.get("bytes"), "peer", r.get("ucx_perftest"))
    else:
        raise NoRows("not a compare table's JSON lines (msg_compare, shmem_compare or ucx_compare rows)")
    return p


def read_pair(tpath, npath, stem, source):
    """tether's and NVSHMEM's --json output of the device or stream benchmark, joined as the tables join them."""
    sides = []
    for path in (tpath, npath):
        sides.append(compare_common.load(path, TOOL, lambda r: compare_device.is_row(r) or compare_stream.is_row(r)))
    (trun, trows), (nrun, nrows) = sides
    if not trows or not nrows:
        raise NoRows(f"no device or stream rows in {tpath if not trows else npath}")
    info = describe_run(trun, trows[0])
    if nrun.get("date") and nrun.get("date") != trun.get("date"):
        info += f" (NVSHMEM's run {nrun['date']})"
    p = Plot(source, stem, "NVSHMEM", info)
    skipped = 0
    if compare_device.is_row(trows[0]):
        for side, rows in (("tether", trows), ("peer", nrows)):
            for r in rows:
                if compare_device.kind(r):  # block sweeps and their best: against blocks, not size
                    skipped += 1
                    continue
                field, bw = compare_device.metric(r)
                p.add(f"{r['row']} ({r['scope']})", "GB/s" if bw else "us", r["bytes"], side, r.get(field))
        if skipped:
            p.info += f"; block-sweep rows not shown ({skipped} of both sides)"
    else:
        key = compare_stream.row_key(trows + nrows)
        for side, rows in (("tether", trows), ("peer", nrows)):
            for r in rows:
                field, bw = compare_stream.metric(r)
                name, size = key(r)
                p.add(name, "GB/s" if bw else "us", size, side, r.get(field))
    return p


def resolve(path, near):
    """A path from a table's command line: as written, from the repository root, then beside the table."""
    for c in (path, os.path.join(ROOT, path), os.path.join(os.path.dirname(near), os.path.basename(path))):
        if os.path.isfile(c):
            return c
    return None


def read_table(path):
    """A compare_device.py / compare_stream.py table: the two files its command line names."""
    with open(path) as f:
        command = next((l[len("# command:"):] for l in f if l.startswith("# command:")), None)
    words = shlex.split(command) if command else []
    at = next((i for i, w in enumerate(words) if w.endswith(("compare_device.py", "compare_stream.py"))), None)
    if at is None or len(words) < at + 3:
        raise NoRows("not a table of bench/device/compare_device.py or bench/stream/compare_stream.py (no "
                     "'# command:' line naming the JSON lines it joined)")
    named = words[at + 1:at + 3]
    found = [resolve(w, path) for w in named]
    missing = [w for w, f in zip(named, found) if f is None]
    if missing:
        raise NoRows("the JSON lines it was made from are not here: " + ", ".join(missing))
    stem = os.path.splitext(os.path.basename(path))[0]
    return read_pair(found[0], found[1], stem, path)


def inputs_of(folder):
    """The plottable inputs of a folder: *compare*.jsonl (not .runs.jsonl) and the device/stream compare tables."""
    out = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if "compare" not in name or not os.path.isfile(path):
            continue
        if name.endswith(".jsonl") and not name.endswith(".runs.jsonl"):
            out.append(path)
        elif name.endswith(".txt"):
            with open(path) as f:
                head = f.read(4096)
            if "compare_device.py" in head or "compare_stream.py" in head:
                out.append(path)
    return out


def size_label(v, _pos=None):
    v = int(round(v))
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if v >= scale and v % scale == 0:
            return f"{v // scale}{unit}"
    return str(v)


def draw(p, out_dir, dpi):
    """Writes p's PNGs (one per unit class); returns [(path, panel names)] and the families left out."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter, NullLocator

    groups, left_out = {}, []
    for name, fam in p.families.items():
        pts = {s: {z: v for z, v in fam[s].items() if z > 0 and v > 0} for s in ("tether", "peer")}
        if len(pts["tether"]) < 2 and len(pts["peer"]) < 2:
            left_out.append(f"{name} (fewer than 2 sizes)")
        elif not pts["tether"] or not pts["peer"]:
            left_out.append(f"{name} ({'tether' if pts['tether'] else p.peer} only)")
        else:
            groups.setdefault(unit_class(fam["unit"]), []).append((name, fam["unit"], pts))
    written = []
    for (suffix, label, lower), fams in groups.items():
        ncols = 2 if len(fams) in (2, 4) else min(3, len(fams))
        nrows = math.ceil(len(fams) / ncols)
        height = 3.4 * nrows + 0.8
        fig = plt.figure(figsize=(max(4.2 * ncols, 7.0), height))
        outer = fig.add_gridspec(nrows, ncols, hspace=0.3, wspace=0.3, top=1 - 0.7 / height, bottom=0.5 / height,
                                 left=0.07 if ncols > 1 else 0.1, right=0.98)
        for i, (name, unit, pts) in enumerate(fams):
            inner = outer[i // ncols, i % ncols].subgridspec(2, 1, height_ratios=[3, 1], hspace=0.08)
            ax = fig.add_subplot(inner[0])
            rax = fig.add_subplot(inner[1], sharex=ax)
            for side, fmt, color, who in (("tether", "o-", "C0", "tether"), ("peer", "s--", "C1", p.peer)):
                xs = sorted(pts[side])
                ax.plot(xs, [pts[side][x] for x in xs], fmt, color=color, ms=3.5, lw=1.2, label=who)
            common = sorted(set(pts["tether"]) & set(pts["peer"]))
            adv = [(pts["peer"][x] / pts["tether"][x]) if lower else (pts["tether"][x] / pts["peer"][x])
                   for x in common]
            rax.axhline(1, color="0.5", lw=0.8, ls=":")
            lo, hi = min(adv + [1.0]), max(adv + [1.0])
            if common:
                rax.plot(common, adv, "o-", color="C2", ms=2.5, lw=1)
            if hi / lo > 4:  # ratios over a wide range: log axis, ticks at 1, 2, 5 x 10^n
                rax.set_yscale("log")
                rax.set_ylim(lo / 1.25, hi * 1.25)
                subs = (1.0, 2.0, 5.0) if hi / lo < 30 else (1.0,)
                rax.yaxis.set_major_locator(LogLocator(base=10, subs=subs, numticks=6))
                rax.yaxis.set_minor_locator(NullLocator())
            else:
                pad = (hi - lo) * 0.15 or 0.1
                rax.set_ylim(max(lo - pad, 0), hi + pad)
                rax.yaxis.set_major_locator(MaxNLocator(nbins=3))
            rax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            values = [v for s in ("tether", "peer") for v in pts[s].values()]
            plain = FuncFormatter(lambda v, _: f"{v:g}")
            ax.yaxis.set_major_formatter(plain)
            # less than about a decade and a half: the 2 and 5 ticks are labelled too
            ax.yaxis.set_minor_formatter(plain if max(values) / min(values) < 30 else NullFormatter())
            ax.yaxis.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0), numticks=12))
            ax.xaxis.set_major_locator(LogLocator(base=2, numticks=8))
            ax.xaxis.set_minor_locator(NullLocator())
            ax.xaxis.set_major_formatter(FuncFormatter(size_label))  # shared with rax, which shows it
            ax.tick_params(labelbottom=False)
            ax.set_title(name, fontsize=9)
            ax.set_ylabel("µs" if unit == "us" else unit, fontsize=8)
            rax.set_ylabel("tether adv.", fontsize=7)
            rax.set_xlabel("message size (bytes)", fontsize=8)
            for a in (ax, rax):
                a.tick_params(labelsize=7)
                a.grid(True, which="major", lw=0.4, alpha=0.5)
            ax.legend(fontsize=7, loc="best")
        fig.suptitle(f"{p.title()}: {label}, tether vs {p.peer}\n{p.info}".rstrip(), fontsize=10)
        how = f"{p.peer} time / tether time" if lower else f"tether / {p.peer}"
        fig.text(0.99, 0.005, f"tether adv. = {how} (> 1: tether better)", ha="right", va="bottom", fontsize=7,
                 color="0.35")
        path = os.path.join(out_dir, f"{p.stem}_{suffix}.png")
        save(fig, path, dpi)
        plt.close(fig)
        written.append((path, [f[0] for f in fams]))
    return written, left_out


def save(fig, path, dpi):
    """PNG at dpi, reduced to a 32-colour palette where Pillow is there (line plots: a third of the size)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    try:
        from PIL import Image
        buf.seek(0)
        Image.open(buf).convert("RGB").quantize(colors=32).save(path, optimize=True)
    except ImportError:
        with open(path, "wb") as f:
            f.write(buf.getvalue())


def main():
    first, rest = __doc__.split("\n\n", 1)
    ap = argparse.ArgumentParser(description=first.replace("\n", " "), epilog=rest,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="*", metavar="INPUT", help="compare JSON lines, compare table (.txt) or folder")
    ap.add_argument("--pair", nargs=2, metavar=("TETHER_JSONL", "NVSHMEM_JSONL"),
                    help="tether's and NVSHMEM's --json output of the device or stream benchmark")
    ap.add_argument("--out", metavar="DIR", help="write the PNGs here (default: beside each input)")
    ap.add_argument("--dpi", type=int, default=100, help="resolution (default 100)")
    a = ap.parse_args()
    if not a.inputs and not a.pair:
        ap.error("give at least one INPUT or --pair")
    try:
        import matplotlib  # noqa: F401
    except ImportError as e:
        print(f"{TOOL}: needs matplotlib (pip install matplotlib): {e}", file=sys.stderr)
        return 3
    if a.out:
        os.makedirs(a.out, exist_ok=True)

    jobs = []  # (source, how to read it, explicit: whether the user named it)
    for inp in a.inputs:
        if os.path.isdir(inp):
            found = inputs_of(inp)
            if not found:
                print(f"{TOOL}: {inp}: no *compare*.jsonl or device/stream compare table in it", file=sys.stderr)
                return 1
            jobs += [(f, None, False) for f in found]
        elif os.path.exists(inp):
            jobs.append((inp, None, True))
        else:
            print(f"{TOOL}: {inp}: no such file or folder", file=sys.stderr)
            return 2
    if a.pair:
        stem = "_vs_".join(os.path.splitext(os.path.basename(x))[0] for x in a.pair)
        jobs.append((a.pair[0], lambda: read_pair(a.pair[0], a.pair[1], stem, a.pair[0]), True))

    rc, drawn = 0, 0
    for source, reader, named in jobs:
        try:
            if reader is None:
                p = read_table(source) if source.endswith(".txt") else read_jsonl(source)
            else:
                p = reader()
            written, left_out = draw(p, a.out or os.path.dirname(source) or ".", a.dpi)
            if not written:
                raise NoRows("no row family with both sides at two or more sizes" +
                             (" (left out: " + "; ".join(left_out) + ")" if left_out else ""))
        except NoRows as e:
            if named:
                print(f"{TOOL}: {source}: nothing to plot: {e}", file=sys.stderr)
                rc = 1
            else:  # found in a folder: a note
                print(f"  {source}: nothing to plot: {e}")
            continue
        except (OSError, UnicodeDecodeError) as e:
            print(f"{TOOL}: {source}: {e}", file=sys.stderr)
            return 2
        except SystemExit as e:  # compare_common.load on a line that is not JSON: its message names the line
            print(e, file=sys.stderr)
            return 2
        except (KeyError, TypeError, ValueError) as e:
            print(f"{TOOL}: {source}: unexpected row shape ({type(e).__name__}: {e})", file=sys.stderr)
            rc = 1
            continue
        drawn += 1
        for path, names in written:
            print(f"wrote {path}: {', '.join(names)}")
        if left_out:
            print(f"  {source}: left out: {'; '.join(left_out)}")
    if not drawn and rc == 0:
        print(f"{TOOL}: nothing to plot in {', '.join(a.inputs)}", file=sys.stderr)
        rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
