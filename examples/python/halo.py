"""Halo exchange of a 2-D field split by rows over the PEs (a 1-D decomposition with periodic neighbours).
    tetherrun -n 2 python examples/python/halo.py [--cuda] [--steps 10]
Each PE owns rows [1, ny] of a (ny + 2) x nx symmetric array; rows 0 and ny + 1 are halos. Every step a PE puts its
first owned row into the upper neighbour's bottom halo and its last owned row into the lower neighbour's top halo,
with put_signal so the receiver waits for exactly its two halos, then relaxes (Jacobi). The field lives in the
symmetric heap; torch tensors (when torch is installed) or numpy arrays are zero-copy views of it."""
import argparse

import numpy as np

import tether

try:
    import torch
except ImportError:
    torch = None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nx", type=int, default=64)
    ap.add_argument("--ny", type=int, default=16)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--cuda", action="store_true", help="GPU memory (needs a CUDA build and torch)")
    args = ap.parse_args()
    device = "cuda" if args.cuda else "cpu"
    with tether.init():
        me, n = tether.my_pe(), tether.n_pes()
        up, down = (me - 1) % n, (me + 1) % n
        nx, ny = args.nx, args.ny
        field = tether.zeros((ny + 2, nx), "float64", device=device)
        flags = tether.zeros(2, "uint64", device=device)  # [0]: top halo arrived, [1]: bottom halo arrived
        if torch is not None:
            f = torch.from_dlpack(field)
        else:
            f = np.from_dlpack(field)
        f[1:ny + 1] = me  # each PE starts with its own number
        for step in range(1, args.steps + 1):
            if torch is not None and f.is_cuda:
                torch.cuda.synchronize()  # the relaxation kernel wrote the rows we send
            # my first owned row -> upper neighbour's bottom halo; my last owned row -> lower neighbour's top halo
            tether.put_signal(field[ny + 1], f[1], flags[1], step, up)
            tether.put_signal(field[0], f[ny], flags[0], step, down)
            tether.signal_wait_until(flags[0], ">=", step)
            tether.signal_wait_until(flags[1], ">=", step)
            # Jacobi along y (the halos make it periodic across PEs); everyone must have sent before we overwrite
            # our owned rows, which the barrier ensures
            new = (f[0:ny] + f[2:ny + 2]) / 2
            tether.barrier()
            f[1:ny + 1] = new
        total = np.zeros(1)
        local = float(f[1:ny + 1].sum())
        sums = tether.zeros(n, "float64")
        tether.put(sums[me:me + 1], np.array([local]), 0)
        tether.barrier()
        if me == 0:
            s = sums.numpy()
            total[0] = s.sum()
            expect = nx * ny * sum(range(n))  # Jacobi with periodic halos keeps the total
            print("halo: %d PEs, %d steps on %s: total %.6g (expected %.6g) %s" %
                  (n, args.steps, device, total[0], expect, "ok" if abs(total[0] - expect) < 1e-6 * max(expect, 1) else "MISMATCH"))
            del s
        del f
        tether.barrier()
        sums.free()
        flags.free()
        field.free()


if __name__ == "__main__":
    main()
