#!/usr/bin/env python3
"""Framework rows for the datatype benchmark (issue #7): CuPy's strided copies of the patterns of patterns.h that a
strided view (or a gather with an index array) expresses, at patterns.h's sizes (small and large; the extents here
must match patterns.h's).

pack   = view.copy(order="C")  (or cupy.take / fancy indexing for index lists)
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


def patterns(size, scale):
    """name -> (make_view(): (pack_fn, unpack_fn, packed_bytes), note) at `size` ("small" or "large"); the extents
    are patterns.h's (small: times `scale`)."""
    out = {}

    def ext(small, large):
        return small * scale if size == "small" else large

    def strided(name, shape, dtype, sl, note):
        def make():
            a = cp.arange(int(np.prod(shape)), dtype=np.uint32).astype(dtype).reshape(shape)
            v = a[sl]
            packed = v.copy(order="C")  # always a copy (ascontiguousarray returns a contiguous view itself)
            return (lambda: v.copy(order="C")), (lambda: v.__setitem__(Ellipsis, packed)), packed.nbytes
        out[name] = (make, note)

    # NAS LU u[nz][ny][nx][5], NAS MG v[nz][ny][nx]: x faces of grids thin in x, y faces of many z planes (large).
    nz, ny, nx = ext(160, 2048), ext(160, 1024), ext(160, 32)
    strided("nas_lu_x", (nz, ny, nx, 5), np.float64, np.s_[:, :, 1, :], "u[:, :, 1, :].copy()")
    nz, ny, nx = ext(160, 16384), ext(160, 16), ext(160, 160)
    strided("nas_lu_y", (nz, ny, nx, 5), np.float64, np.s_[:, 1, :, :], "u[:, 1, :, :].copy()")
    nz, ny, nx = ext(320, 4096), ext(320, 2048), ext(320, 32)
    strided("nas_mg_x", (nz, ny, nx), np.float64, np.s_[:, :, 1], "v[:, :, 1].copy()")
    nz, ny, nx = ext(320, 32768), ext(320, 16), ext(320, 320)
    strided("nas_mg_y", (nz, ny, nx), np.float64, np.s_[:, 1, :], "v[:, 1, :].copy()")
    t, z, y, x = ext(48, 2560), ext(48, 16), ext(48, 48), ext(48, 48)
    strided("milc_su3_zdown", (t, z, y, x // 2, 2, 6), np.float32, np.s_[:, 0, :, :, 0, :],
            "lat[:, 0, :, :, 0, :].copy()")
    nz, ny, nx = ext(128, 128), ext(512, 49152), ext(512, 64)
    strided("wrf_x_vec", (nz, ny, nx), np.float32, np.s_[:, :, 0:3], "f[:, :, 0:3].copy()")
    nz, ny, nx = ext(128, 16384), ext(512, 16), ext(512, 512)
    strided("wrf_y_vec", (nz, ny, nx), np.float32, np.s_[:, 0:3, :], "f[:, 0:3, :].copy()")
    nz, ny, nx = ext(256, 2048), ext(256, 2048), ext(256, 32)
    strided("cosmo_halo_e", (nz, ny, nx), np.float64, np.s_[3:nz - 3, 3:ny - 3, nx - 6:nx - 3], "subarray view")
    nz, ny, nx = ext(256, 16384), ext(256, 32), ext(256, 256)
    strided("cosmo_halo_n", (nz, ny, nx), np.float64, np.s_[3:nz - 3, ny - 6:ny - 3, 3:nx - 3], "subarray view")
    ny, nx = ext(8192, (1 << 23) + 2), ext(8192, 32)
    strided("stencil2d_w", (ny, nx), np.float64, np.s_[1:ny - 1, 1:2], "a[1:ny-1, 1:2].copy()")
    ny, nx = ext(8192, 4), ext(8192, (1 << 23) + 2)
    strided("stencil2d_n", (ny, nx), np.float64, np.s_[1:2, 1:nx - 1], "a[1:2, 1:nx-1].copy()")
    nz, ny, nx = ext(384, 2050), ext(384, 4098), ext(384, 32)
    strided("stencil3d_x", (nz, ny, nx), np.float64, np.s_[1:nz - 1, 1:ny - 1, 1:2], "subarray view")
    nz, ny, nx = ext(384, 32770), ext(384, 16), ext(384, 384)
    strided("stencil3d_y", (nz, ny, nx), np.float64, np.s_[1:nz - 1, 1:2, 1:nx - 1], "subarray view")

    # fft2d packs the transpose.
    n = ext(2048, 4096)

    def fft():
        a = cp.arange(n * n, dtype=np.uint32).astype(np.complex128).reshape(n, n)
        v = a.T
        packed = v.copy(order="C")
        return (lambda: v.copy(order="C")), (lambda: v.__setitem__(Ellipsis, packed)), packed.nbytes
    out["fft2d"] = (fft, "a.T.copy()")

    # SPECFEM3D oc / cm: gathers with index arrays (same indices as patterns.h is not required: same shape and count).
    N = ext(32000000, 256000000)

    def specfem(comps):
        def make():
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
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--sizes", default="small,large", help="comma list of small, large (patterns.h's sizes)")
    ap.add_argument("--scale", type=int, default=1, help="multiplies the small size's linear extents")
    ap.add_argument("--only", help="one pattern name")
    ap.add_argument("--json")
    args = ap.parse_args()
    sizes = args.sizes.split(",")
    if not sizes or any(z not in ("small", "large") for z in sizes) or args.scale < 1:
        ap.error("--sizes takes small and/or large; --scale >= 1")
    if args.only and args.only not in patterns("small", 1):
        ap.error(f"--only {args.only}: no such pattern here")
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    rows = []
    print(f"# cupy_rows.py: CuPy {cp.__version__} on {dev}, sizes {args.sizes} (small at scale {args.scale}), "
          f"best of {args.reps}")
    print(f"{'pattern':16s} {'size':5s} {'dir':6s} {'impl':10s} {'packed B':>12s} {'us':>11s} {'GB/s':>9s}  note")
    names = list(patterns("small", 1))  # table order: pattern by pattern, each at every size
    for name in names:
        if args.only and name != args.only:
            continue
        for size in sizes:
            make, note = patterns(size, args.scale)[name]
            pack, unpack, nbytes = make()
            for d, fn in (("pack", pack), ("unpack", unpack)):
                us = timed(fn, args.reps)
                r = {"pattern": name, "size": size, "dir": d, "impl": "cupy", "packed": int(nbytes),
                     "us": round(us, 3), "gbs": round(nbytes / (us * 1e3), 2), "note": note}
                rows.append(r)
                print(f"{name:16s} {size:5s} {d:6s} {'cupy':10s} {nbytes:12d} {us:11.2f} {r['gbs']:9.1f}  {note}",
                      flush=True)
            del pack, unpack  # the closures hold the arrays: drop them before the pool gives the memory back
            cp.get_default_memory_pool().free_all_blocks()
    if args.json:
        with open(args.json, "w") as f:
            now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            f.write(json.dumps({"run": "cupy_rows.py", "device": dev, "date": now,
                                "command": " ".join(["python3"] + sys.argv), "cupy": cp.__version__,
                                "sizes": args.sizes, "scale": args.scale}) + "\n")
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
