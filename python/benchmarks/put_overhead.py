"""Python overhead per small put (#23 goal: <= 1 us above the C call). Run on 2 PEs:
    tetherrun -n 2 python python/benchmarks/put_overhead.py [--size 8] [--iters 200000] [--reps 7]
PE 0 puts `size` bytes into PE 1's copy of a symmetric array (HOST segment: the shm peer on one host), blocking, in
a loop; PE 1 waits at the barrier. Rows: ns per put, median and best of --reps runs (on a busy machine the best run
is the one least disturbed by other processes; compare like with like):
    C loop           tether_put in a C loop inside the extension (same process, buffers, peer): the reference
    putmem           tether.putmem(dest_addr, src_addr, n, pe): raw addresses
    _tether.put      the extension's put on a SymmetricArray and a numpy array (no Python wrapper)
    tether.put       the public call: tether.put(a, src, pe) (a SymmetricArray, src a numpy array)
    tether.put view  tether.put(a[0:k], src, pe) including making the view in the loop
    empty loop       the Python for-loop alone (already inside every Python row)
"""
import argparse
import statistics
import time

import numpy as np

import tether
from tether import _tether


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=8)
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--reps", type=int, default=31)
    args = ap.parse_args()
    with tether.init() as w:
        me, n = tether.my_pe(), tether.n_pes()
        if n < 2:
            raise SystemExit("put_overhead: run on 2 PEs (tetherrun -n 2 ...)")
        k = max(args.size // 8, 1)
        a = tether.zeros(k, "uint64")
        src = np.arange(k, dtype="uint64")
        peer, iters = 1, args.iters
        rows = {}

        def timed(name, fn):
            runs = []
            for _ in range(args.reps):
                t0 = time.perf_counter()
                fn()
                runs.append((time.perf_counter() - t0) / iters * 1e9)
            rows[name] = (statistics.median(runs), min(runs))

        if me == 0:
            dest, s = a.address, src.ctypes.data
            nbytes = k * 8
            runs = [_tether._bench_put_loop(w, dest, s, nbytes, peer, iters) / iters * 1e9 for _ in range(args.reps)]
            rows["C loop"] = (statistics.median(runs), min(runs))

            def empty():
                for _ in range(iters):
                    pass

            def putmem():
                f = tether.putmem
                for _ in range(iters):
                    f(dest, s, nbytes, peer)

            def ext_put():
                f = _tether.put
                for _ in range(iters):
                    f(a, src, peer)

            def api_put():
                f = tether.put
                for _ in range(iters):
                    f(a, src, peer)

            def view_put():
                f = tether.put
                for _ in range(iters):
                    f(a[0:k], src, peer)

            for name, fn in (("putmem", putmem), ("_tether.put", ext_put), ("tether.put", api_put),
                             ("tether.put view", view_put), ("empty loop", empty)):
                timed(name, fn)
        tether.barrier()
        got = np.zeros(k, "uint64")
        tether.get(got, a, peer)
        assert (got == src).all()
        if me == 0:
            c = rows["C loop"][0]
            print("# %d B blocking put to PE %d (HOST segment), %d iterations x %d reps; ns per put" %
                  (k * 8, peer, iters, args.reps))
            cb = rows["C loop"][1]
            print("%-16s %10s %10s %15s %15s" % ("form", "median", "best", "above C median", "above C best"))
            for name, (med, best) in rows.items():
                ref = name in ("C loop", "empty loop")
                print("%-16s %10.0f %10.0f %15s %15s" % (name, med, best, "" if ref else "%+.0f" % (med - c),
                                                          "" if ref else "%+.0f" % (best - cb)))
        del got
        tether.barrier()
        a.free()


if __name__ == "__main__":
    main()
