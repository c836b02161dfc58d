#!/usr/bin/env python3
"""ctest bench_plot_compare: runs bench/plot_compare.py on bench/testdata/plot_compare_sample.jsonl (made-up values in
msg_compare.jsonl's shape, not a measurement) into a temporary folder and checks that it wrote
plot_compare_sample_latency.png and _bandwidth.png (PNG signature, not empty), and that a file with nothing to plot
fails with a one-line message rather than a traceback.

    plot_compare_test.py [PYTHON]

Exit 77 (ctest: skipped) when matplotlib is not importable by PYTHON (default: this interpreter); 1 on a failure.
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "plot_compare.py")
SAMPLE = os.path.join(HERE, "testdata", "plot_compare_sample.jsonl")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def main():
    py = sys.argv[1] if len(sys.argv) > 1 else sys.executable
    if subprocess.run([py, "-c", "import matplotlib"], capture_output=True).returncode != 0:
        print(f"SKIP: matplotlib is not importable by {py} (pip install matplotlib)")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "png")
        r = subprocess.run([py, SCRIPT, "--out", out, SAMPLE], capture_output=True, text=True)
        print(r.stdout + r.stderr, end="")
        if r.returncode != 0:
            fail(f"plot_compare.py exited {r.returncode}")
        for suffix in ("latency", "bandwidth"):
            png = os.path.join(out, f"plot_compare_sample_{suffix}.png")
            if not os.path.isfile(png):
                fail(f"{png} was not written")
            with open(png, "rb") as f:
                data = f.read()
            if not data.startswith(PNG_SIGNATURE) or len(data) < 1000:
                fail(f"{png} is not a PNG ({len(data)} bytes, starts {data[:8]!r})")
            print(f"ok: {os.path.basename(png)}: {len(data)} bytes")

        # a file with nothing to plot: exit 1, one line naming the file, no traceback
        empty = os.path.join(tmp, "one_size.jsonl")
        with open(empty, "w") as f:
            f.write('{"op": "barrier", "size": 0, "unit": "us", "tether": 2.0, "mpi": 2.1}\n')
        r = subprocess.run([py, SCRIPT, "--out", out, empty], capture_output=True, text=True)
        if r.returncode != 1 or "Traceback" in r.stderr or "nothing to plot" not in r.stderr:
            fail(f"a file with nothing to plot: exit {r.returncode}, stderr {r.stderr!r}")
        print("ok: nothing to plot: " + r.stderr.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
