#!/usr/bin/env python3
"""ctest bench_compare_coll: runs bench/coll/compare_coll.py on two small made-up JSON-lines files (the shapes of
tether_bench_coll's and tether_bench_nvshmem_coll's --json output, not a measurement) in a temporary folder, with and
without the NVSHMEM file and with -o, and checks concrete cells of the table: times, bus bandwidths, the vs_nccl and
vs_nvshmem ratios, "-" where a side is missing, the summary lines, the PE-count warning, the -o file equal to stdout,
exit 2 for a missing input file and a malformed line's message.

    compare_coll_test.py

Exit 0 with "compare_coll_test: OK"; 1 (an AssertionError) on a failure.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "compare_coll.py")
HEAD = ["bytes", "tether_us", "nccl_us", "nvshmem_us", "tether_busbw", "nccl_busbw", "nvshmem_busbw", "vs_nccl",
        "vs_nvshmem"]


def row(op, impl, model, nbytes, us, busbw=None, npes=2):
    r = {"record": "row", "bench": "coll", "op": op, "impl": impl, "model": model, "dtype": "float", "bytes": nbytes,
         "count": nbytes // 4, "iters": 100, "value": us, "unit": "us", "time_us": us, "time_us_max": us * 1.1}
    if busbw is not None:
        r.update(algbw_GBps=busbw / 2, busbw_GBps=busbw, bus_factor=2.0 * (npes - 1) / npes)
    r.update(npes=npes, pes=npes, gpu="NVIDIA H200", host="testhost", date="2025-01-01T00:00:00Z")
    return r


def write(path, run, rows):
    with open(path, "w") as f:
        for rec in [run] + rows:
            f.write(json.dumps(rec) + "\n")


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def tables(stdout):
    """{(op, model): {bytes: {column: cell}}} of a table, and its summary lines."""
    groups, cur, summary = {}, None, []
    for line in stdout.splitlines():
        if line.startswith("# summary "):
            summary.append(line)
        elif line.startswith("# ") and ", " in line and len(line.split()) == 3 and not line.startswith("# PEs"):
            op, model = line[2:].split(", ")
            cur = groups.setdefault((op, model), {})
        elif line.split() == HEAD:
            assert cur is not None, f"column header before a group title: {stdout}"
        elif line and not line.startswith("#"):
            cells = line.split()
            assert len(cells) == len(HEAD), f"row with {len(cells)} cells: {line!r}"
            cur[int(cells[0])] = dict(zip(HEAD, cells))
    return groups, summary


def main():
    with tempfile.TemporaryDirectory() as tmp:
        coll = os.path.join(tmp, "coll.jsonl")
        nvsh = os.path.join(tmp, "nvshmem_coll.jsonl")
        nvsh4 = os.path.join(tmp, "nvshmem_coll_4pe.jsonl")
        out = os.path.join(tmp, "coll_compare.txt")
        write(coll, {"record": "run", "impl": "tether", "gpu": "NVIDIA H200", "host": "testhost",
                     "date": "2025-01-01T00:00:00Z"},
              [row("allreduce", "tether", "stream", 1024, 10.0, busbw=0.15),
               row("allreduce", "nccl", "stream", 1024, 15.0, busbw=0.10),
               row("allreduce", "tether", "stream", 8, 8.0, busbw=0.001),
               row("allreduce", "nccl", "stream", 8, 6.0, busbw=0.00133),
               row("allreduce", "tether", "host", 1024, 20.0, busbw=0.05),
               row("allreduce", "nccl", "host", 1024, 25.0, busbw=0.04),
               row("device_allreduce", "tether", "device", 8, 4.0),
               row("broadcast", "tether", "stream", 4096, 5.0, busbw=0.8)])  # tether only
        nrows = [row("allreduce", "nvshmem", "stream", 1024, 30.0, busbw=0.05),
                 row("allreduce", "nvshmem", "stream", 8, 2.0, busbw=0.004),
                 row("device_allreduce", "nvshmem", "device", 8, 6.0),
                 row("alltoall", "nvshmem", "stream", 2048, 12.5, busbw=0.08)]  # nvshmem only
        write(nvsh, {"record": "run", "impl": "nvshmem", "gpu": "NVIDIA H200", "host": "testhost",
                     "date": "2025-01-01T00:00:00Z"}, nrows)

        # both files, with -o
        r = run(coll, nvsh, "-o", out)
        print(r.stdout, end="")
        assert r.returncode == 0, f"exit {r.returncode}: {r.stderr}"
        assert r.stderr == "", f"unexpected stderr: {r.stderr!r}"
        with open(out) as f:
            assert f.read() == r.stdout, "the -o file differs from stdout"
        lines = r.stdout.splitlines()
        assert lines[0].startswith("# team collectives"), lines[0]
        assert lines[1].startswith("# command: python3 "), lines[1]
        assert any(line.startswith(f"# tether: {coll}; impl tether; host testhost") for line in lines)
        assert any(line.startswith(f"# nvshmem: {nvsh}; impl nvshmem") for line in lines)
        assert "# PEs: 2 (tether/nccl file), 2 (nvshmem file)" in lines
        assert not any("warning" in line for line in lines)
        assert any("vs_nccl = nccl_us / tether_us" in line for line in lines)
        g, summary = tables(r.stdout)
        assert list(g) == [("allreduce", "stream"), ("allreduce", "host"), ("device_allreduce", "device"),
                           ("broadcast", "stream"), ("alltoall", "stream")], list(g)
        ar = g[("allreduce", "stream")]
        assert list(ar) == [8, 1024], "sizes not ascending"
        assert ar[1024] == {"bytes": "1024", "tether_us": "10.000", "nccl_us": "15.000", "nvshmem_us": "30.000",
                            "tether_busbw": "0.15", "nccl_busbw": "0.10", "nvshmem_busbw": "0.05",
                            "vs_nccl": "1.50", "vs_nvshmem": "3.00"}, ar[1024]
        assert ar[8]["vs_nccl"] == "0.75" and ar[8]["vs_nvshmem"] == "0.25", ar[8]
        host = g[("allreduce", "host")][1024]
        assert host["vs_nccl"] == "1.25" and host["nvshmem_us"] == "-" and host["vs_nvshmem"] == "-", host
        dev = g[("device_allreduce", "device")][8]
        assert dev == {"bytes": "8", "tether_us": "4.000", "nccl_us": "-", "nvshmem_us": "6.000",
                       "tether_busbw": "-", "nccl_busbw": "-", "nvshmem_busbw": "-",
                       "vs_nccl": "-", "vs_nvshmem": "1.50"}, dev
        bc = g[("broadcast", "stream")][4096]
        assert bc["tether_us"] == "5.000" and bc["tether_busbw"] == "0.80", bc
        assert [bc[c] for c in HEAD[2:4] + HEAD[5:]] == ["-"] * 6, bc
        a2a = g[("alltoall", "stream")][2048]
        assert a2a["tether_us"] == "-" and a2a["nvshmem_us"] == "12.500" and a2a["nvshmem_busbw"] == "0.08", a2a
        assert a2a["vs_nccl"] == "-" and a2a["vs_nvshmem"] == "-", a2a
        assert summary == [
            "# summary allreduce/stream: vs_nccl min 0.75 max 1.50 over 2 sizes; vs_nvshmem min 0.25 max 3.00 "
            "over 2 sizes",
            "# summary allreduce/host: vs_nccl min 1.25 max 1.25 over 1 size",
            "# summary device_allreduce/device: vs_nvshmem min 1.50 max 1.50 over 1 size",
        ], summary

        # without the NVSHMEM file: its columns are "-", nvshmem-only groups absent
        r = run(coll)
        assert r.returncode == 0, f"exit {r.returncode}: {r.stderr}"
        assert "# nvshmem: no file given; the nvshmem columns are -" in r.stdout.splitlines()
        g, summary = tables(r.stdout)
        assert ("alltoall", "stream") not in g, list(g)
        ar = g[("allreduce", "stream")][1024]
        assert ar["vs_nccl"] == "1.50" and ar["nvshmem_us"] == "-" and ar["nvshmem_busbw"] == "-", ar
        assert ar["vs_nvshmem"] == "-", ar
        assert g[("device_allreduce", "device")][8]["nvshmem_us"] == "-"
        assert not any("vs_nvshmem" in s for s in summary), summary
        assert "# summary device_allreduce/device" not in "\n".join(summary), summary

        # different PE counts: a warning line in the header, still joined
        write(nvsh4, {"record": "run", "impl": "nvshmem"},
              [dict(x, npes=4, pes=4) for x in nrows])
        r = run(coll, nvsh4)
        assert r.returncode == 0, f"exit {r.returncode}: {r.stderr}"
        assert any(line.startswith("# warning: the two files were run at different PE counts (2 vs 4)")
                   for line in r.stdout.splitlines()), r.stdout
        assert tables(r.stdout)[0][("allreduce", "stream")][1024]["vs_nvshmem"] == "3.00"

        # a file whose run record names another impl: a warning on stderr, exit 0
        r = run(nvsh, coll)
        assert r.returncode == 0 and "warning" in r.stderr, (r.returncode, r.stderr)

        # unreadable input: exit 2, no traceback
        for args in ([os.path.join(tmp, "missing.jsonl")], [coll, os.path.join(tmp, "missing.jsonl")]):
            r = run(*args)
            assert r.returncode == 2, f"missing input {args}: exit {r.returncode}"
            assert "Traceback" not in r.stderr and "missing.jsonl" in r.stderr, r.stderr

        # a malformed line: load's message naming file and line, no traceback
        bad = os.path.join(tmp, "bad.jsonl")
        with open(bad, "w") as f:
            f.write('{"record": "run", "impl": "tether"}\n{not json\n')
        r = run(bad)
        assert r.returncode != 0 and f"{bad}:2: not JSON" in r.stderr and "Traceback" not in r.stderr, r.stderr

    print("compare_coll_test: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
