"""Shared by bench/device/compare_device.py and bench/stream/compare_stream.py (reading also by bench/plot_compare.py):
reading a benchmark's --json output (a run record, then one record per row), the argument pair (tether's file,
NVSHMEM's file), the header line naming each side's run, and writing the table."""
import argparse
import json
import sys


def load(path, tool, is_row):
    """(run record, [row records]) of a JSON-lines file; is_row(record) picks the rows. Exits on a malformed line."""
    run, rows = {}, []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise SystemExit(f"{tool}: {path}:{n}: not JSON ({e})")
            if rec.get("record") == "run":
                run = rec
            elif is_row(rec):
                rows.append(rec)
    return run, rows


def load_pair(doc, tool, tether_help, nvshmem_help, is_row):
    """Parses the command line (tether file, NVSHMEM file, -o OUT) and loads both files: (args, (run, rows) x 2).
    Unreadable input: prints the error and exits 2. A file whose run record names another impl gets a warning."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("tether", help=tether_help)
    ap.add_argument("nvshmem", help=nvshmem_help)
    ap.add_argument("-o", "--out", help="also write the table to this file")
    a = ap.parse_args()
    try:
        t = load(a.tether, tool, is_row)
        n = load(a.nvshmem, tool, is_row)
    except OSError as e:
        print(f"{tool}: {e}", file=sys.stderr)
        sys.exit(2)
    for label, (run, _) in (("tether", t), ("nvshmem", n)):
        impl = run.get("impl")
        if impl is not None and impl != label:
            print(f"{tool}: warning: the {label} file says impl {impl!r}", file=sys.stderr)
    return a, t, n


def describe(label, run, path):
    impl = run.get("impl", "tether (no impl field: recorded before it existed)" if label == "tether" else "?")
    where = run.get("host") or run.get("machine") or "?"
    parts = [f"{label}: {path}", f"impl {impl}", f"host {where}", f"date {run.get('date', '?')}"]
    if run.get("gpu"):
        parts.append(f"gpu {run['gpu']}")
    if run.get("impl_detail"):
        parts.append(run["impl_detail"])
    return "# " + "; ".join(parts)


def emit(lines, out):
    """Prints the table (its command as the second line) and, with out, writes it there too."""
    lines = lines[:1] + ["# command: " + " ".join(["python3"] + sys.argv)] + lines[1:]
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if out:
        with open(out, "w") as f:
            f.write(text)
