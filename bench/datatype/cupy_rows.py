#!/usr/bin/env python3
"""Framework rows for the datatype benchmark (issue #7): CuPy's strided copies of the patterns of patterns.h that a
strided view (or a gather with an index array) expresses, at scale 1 (sizes must match patterns.h).

pack   = cupy.ascontiguousarray(view)  (or cupy.take / fancy indexing for index lists)
unpack = view[...] = packed            (or an index assignment)
Times: CUDA events around the call, best of --reps after a warm-up. These rows are timed only (their correctness is
CuPy's). Writes JSON lines (first line a run record) to --json, a table to stdout.
"""
import argparse
import datetime
import json
import sys

import numpy as np

try:
    import cupy as cp
except ImportError:  # pragma: no cover - depends on the machine
    print("cupy_rows.py: CuPy is not installed: no framework rows", file=sys.stderr)
    sys.exit(77)


def timed(fn, reps):
    s, e = cp.cuda.Event(), cp.cuda.Event()
    best = 1e30
    for r in range(reps + 1):
        s.record()
        fn()
        e.record()
        e.synchronize()
        if r:
            best = min(best, cp.cuda.get_elapsed_time(s, e) * 1e3)
    return best


def pick(n, k, seed):
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n, size=k, replace=False))


def patterns():
    """name -> (make_view(): (pack_fn, unpack_fn, packed_bytes), note)."""
    out = {}

    def strided(name, shape, dtype, sl, note):
        def make():
            a = cp.arange(int(np.prod(shape)), dtype=np.uint32).astype(dtype).reshape(shape)
            v = a[sl]
            packed = cp.ascontiguousarray(v)
            return (lambda: cp.ascontiguousarray(v)), (lambda: v.__setitem__(Ellipsis, packed)), packed.nbytes
        out[name] = (make, note)

    n = 160
    strided("nas_lu_x", (n, n, n, 5), np.float64, np.s_[:, :, 1, :], "ascontiguousarray(u[:, :, 1, :])")
    strided("nas_lu_y", (n, n, n, 5), np.float64, np.s_[:, 1, :, :], "ascontiguousarray(u[:, 1, :, :])")
    n = 320
    strided("nas_mg_x", (n, n, n), np.float64, np.s_[:, :, 1], "ascontiguousarray(v[:, :, 1])")
    strided("nas_mg_y", (n, n, n), np.float64, np.s_[:, 1, :], "ascontiguousarray(v[:, 1, :])")
    n = 48
    strided("milc_su3_zdown", (n, n, n, n // 2, 2, 6), np.float32, np.s_[:, 0, :, :, 0, :],
            "ascontiguousarray(lat[:, 0, :, :, 0, :])")
    strided("wrf_x_vec", (128, 512, 512), np.float32, np.s_[:, :, 0:3], "ascontiguousarray(f[:, :, 0:3])")
    strided("wrf_y_vec", (128, 512, 512), np.float32, np.s_[:, 0:3, :], "ascontiguousarray(f[:, 0:3, :])")
    n = 256
    strided("cosmo_halo_e", (n, n, n), np.float64, np.s_[3:n - 3, 3:n - 3, n - 6:n - 3], "subarray view")
    strided("cosmo_halo_n", (n, n, n), np.float64, np.s_[3:n - 3, n - 6:n - 3, 3:n - 3], "subarray view")
    m = 8192
    strided("stencil2d_w", (m, m), np.float64, np.s_[1:m - 1, 1:2], "ascontiguousarray(a[1:m-1, 1:2])")
    strided("stencil2d_n", (m, m), np.float64, np.s_[1:2, 1:m - 1], "ascontiguousarray(a[1:2, 1:m-1])")
    k = 384
    strided("stencil3d_x", (k, k, k), np.float64, np.s_[1:k - 1, 1:k - 1, 1:2], "subarray view")
    strided("stencil3d_y", (k, k, k), np.float64, np.s_[1:k - 1, 1:2, 1:k - 1], "subarray view")

    # fft2d packs the transpose.
    def fft():
        a = cp.arange(2048 * 2048, dtype=np.uint32).astype(np.complex128).reshape(2048, 2048)
        v = a.T
        packed = cp.ascontiguousarray(v)
        return (lambda: cp.ascontiguousarray(v)), (lambda: v.__setitem__(Ellipsis, packed)), packed.nbytes
    out["fft2d"] = (fft, "ascontiguousarray(a.T)")

    # SPECFEM3D oc / cm: gathers with index arrays (same indices as patterns.h is not required: same shape and count).
    def specfem(comps):
        def make():
            N = 32000000
            K = N // 64
            idx = cp.asarray(pick(N // 16, K, 0x5fec)) * (16 if comps == 1 else 15)
            x = cp.arange(N, dtype=np.float32)
            if comps == 1:
                packed = x[idx]
                return (lambda: x[idx]), (lambda: x.__setitem__(idx, packed)), packed.nbytes
            ii = (idx[:, None] + cp.arange(3)[None, :]).ravel()
            packed = x[ii]
            return (lambda: x[ii]), (lambda: x.__setitem__(ii, packed)), packed.nbytes
        return make
    out["specfem3d_oc"] = (specfem(1), "x[idx] gather")
    out["specfem3d_cm"] = (specfem(3), "x[idx3] gather of 3-float blocks")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json")
    args = ap.parse_args()
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    rows = []
    print(f"# cupy_rows.py: CuPy {cp.__version__} on {dev}, best of {args.reps}")
    print(f"{'pattern':16s} {'dir':6s} {'impl':10s} {'packed B':>12s} {'us':>11s} {'GB/s':>9s}  note")
    for name, (make, note) in patterns().items():
        pack, unpack, nbytes = make()
        for d, fn in (("pack", pack), ("unpack", unpack)):
            us = timed(fn, args.reps)
            r = {"pattern": name, "dir": d, "impl": "cupy", "packed": int(nbytes), "us": round(us, 3),
                 "gbs": round(nbytes / (us * 1e3), 2), "note": note}
            rows.append(r)
            print(f"{name:16s} {d:6s} {'cupy':10s} {nbytes:12d} {us:11.2f} {r['gbs']:9.1f}  {note}", flush=True)
        cp.get_default_memory_pool().free_all_blocks()
    if args.json:
        with open(args.json, "w") as f:
            now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            f.write(json.dumps({"run": "cupy_rows.py", "device": dev, "date": now, "cupy": cp.__version__}) + "\n")
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
