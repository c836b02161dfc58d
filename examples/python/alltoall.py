"""All-to-all of arrays: PE p sends block q of its send buffer to PE q, which stores it as its block p.
    tetherrun -n 2 python examples/python/alltoall.py [--cuda] [--block 1024]
One non-blocking put per peer into the peer's receive array, then barrier (which completes them). With torch the
buffers are torch tensors viewing the symmetric heap (zero-copy), else numpy arrays."""
import argparse

import numpy as np

import tether

try:
    import torch
except ImportError:
    torch = None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--block", type=int, default=1024, help="elements per block")
    ap.add_argument("--cuda", action="store_true", help="GPU memory (needs a CUDA build and torch)")
    args = ap.parse_args()
    device = "cuda" if args.cuda else "cpu"
    with tether.init():
        me, n, b = tether.my_pe(), tether.n_pes(), args.block
        recv = tether.zeros((n, b), "int64", device=device)
        if torch is not None:
            send = torch.arange(n * b, dtype=torch.int64, device=device).reshape(n, b) + me * 1000000
            if send.is_cuda:
                torch.cuda.synchronize()
        else:
            send = np.arange(n * b, dtype="int64").reshape(n, b) + me * 1000000
        for i in range(n):
            q = (me + i) % n  # start with a different peer on every PE
            tether.put_nbi(recv[me], send[q], q)  # my block q -> row `me` of PE q's recv
        tether.barrier()
        got = np.zeros((n, b), "int64")
        tether.get(got, recv, me)  # works for host and GPU memory alike
        expect = np.arange(n)[:, None] * 1000000 + me * b + np.arange(b)[None, :]
        ok = bool((got == expect).all())
        print("alltoall: PE %d of %d, %d x %d int64 on %s (%s): %s" %
              (me, n, n, b, device, "torch" if torch is not None else "numpy", "ok" if ok else "MISMATCH"))
        tether.barrier()
        recv.free()
        if not ok:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
