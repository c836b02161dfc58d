// Realistic non-contiguous layouts for the datatype benchmark (issue #7): the DDTBench families (NAS LU and MG
// faces, MILC su3 z-down, WRF x/y vectors and a struct of subarrays, LAMMPS full/atomic, SPECFEM3D oc/cm/mt,
// FFT2D transpose), a COSMO-like 3-D halo, Stencil2D/3D subarray faces and an N-body particle struct and indexed
// exchange. Shapes follow the published descriptions of those codes' exchanges; sizes are ours.
//
// Two sizes per layout (Size):
//  - small: a realistic per-exchange size (cubic domains, ~0.1-4 MB packed for the faces; `scale` multiplies the
//    linear extents);
//  - large: the same layout (same block sizes, same kind of strides, nesting and irregularity) sized so that the
//    pack is bandwidth-bound and far beyond the 60 MB L2: packed bytes 64-256 MiB where tether can commit the type,
//    source span <= 4 GiB. Faces get anisotropic domains (a thin extent across the face, large extents along it),
//    the particle/point codes more atoms. Irregular indexed layouts with <= 12-byte blocks are capped by tether's
//    commit bound (kMaxPieces = 4 Mi pieces per instance, docs/datatype.md "Size bound"): their large size has
//    about 4 M blocks, below 64 MiB packed (their read traffic, 32 B per block, still exceeds the L2 several times).
//
// Each pattern gives a committed tether datatype, the count to pack, the bytes of memory its instances span (from
// `base`, which absorbs a negative lb), and the same layout as an explicit block list in packing order — built
// independently of the type constructors, so the benchmark checks our pack against a plain gather, and the
// per-block cudaMemcpyAsync row ("DT" in the HAND paper) can replay it. `copy2d`/`copy3d` describe the layout as a
// cudaMemcpy2D/3D when it is one. Patterns are built one at a time (recipes()), so only one block list is alive:
// at most ~17 M blocks (16 B each) at large size.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "tether/datatype.h"

namespace tether_bench {

enum class Size { small, large };
inline const char* sizeName(Size z) { return z == Size::small ? "small" : "large"; }

struct Block {
  int64_t offset, bytes;  // relative to the pattern's base address
};
struct Copy2D {
  bool ok = false;
  int64_t offset = 0, width = 0, height = 0, pitch = 0;  // bytes
};
struct Copy3D {
  bool ok = false;
  int64_t offset = 0, width = 0, height = 0, depth = 0, pitch = 0, slicePitch = 0;  // bytes
};

struct Pattern {
  std::string name, family, note, size;  // size: sizeName() of the size it was built at
  tether_type_t type = nullptr;  // committed; owned (freePattern)
  int64_t count = 1;
  int64_t base = 0;              // offset of the type's origin (address 0 of its type map) in the source buffer
  int64_t span = 0;              // bytes of source buffer needed
  int64_t packed = 0;            // packed bytes
  std::vector<Block> blocks;     // packing order
  Copy2D copy2d;
  Copy3D copy3d;
};

inline void freePattern(Pattern& p) { tether_type_free(&p.type); }

// How to build one layout at a size; `scale` multiplies the small size's linear extents (ignored for large).
struct Recipe {
  std::string name;
  std::function<Pattern(Size, int scale)> make;
};

namespace detail {
#define TB_TRY(x)                                                                         \
  do {                                                                                    \
    if ((x) != TETHER_SUCCESS) throw std::runtime_error(std::string(#x) + ": " + tether_type_last_error()); \
  } while (0)

inline tether_type_t basic(tether_basic_t b) {
  tether_type_t t = nullptr;
  TB_TRY(tether_type_basic(b, &t));
  return t;
}
// Commits `t` in place and returns it.
inline tether_type_t commit(tether_type_t t) {
  TB_TRY(tether_type_commit(t));
  return t;
}
inline void freeAll(std::initializer_list<tether_type_t> ts) {
  for (tether_type_t t : ts) tether_type_free(&t);
}
inline int64_t sumBytes(const std::vector<Block>& b) {
  int64_t s = 0;
  for (const Block& x : b) s += x.bytes;
  return s;
}
// Sorted random distinct indices in [0, n).
inline std::vector<int64_t> pick(int64_t n, int64_t k, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<char> used(static_cast<size_t>(n), 0);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(k));
  std::uniform_int_distribution<int64_t> d(0, n - 1);
  while (static_cast<int64_t>(out.size()) < k) {
    const int64_t i = d(rng);
    if (!used[static_cast<size_t>(i)]) {
      used[static_cast<size_t>(i)] = 1;
      out.push_back(i);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}
// An extent: the small size's value times scale, or the large size's value.
inline int64_t ext(Size z, int scale, int64_t small, int64_t large) { return z == Size::small ? small * scale : large; }

inline Pattern named(const char* name, const char* family, const char* note, Size z) {
  Pattern p;
  p.name = name;
  p.family = family;
  p.note = note;
  p.size = sizeName(z);
  return p;
}
// vector(count, blocklen, stride) of `elem`-byte basic type `b`, starting at byte `off` of a buffer of `span` bytes.
inline Pattern vectorPattern(Pattern p, tether_basic_t b, int64_t elem, int64_t count, int64_t blocklen,
                             int64_t stride, int64_t off, int64_t span) {
  tether_type_t e = basic(b);
  TB_TRY(tether_type_vector(count, blocklen, stride, e, &p.type));
  freeAll({e});
  commit(p.type);
  p.base = off;
  p.span = span;
  p.blocks.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) p.blocks.push_back({off + i * stride * elem, blocklen * elem});
  p.packed = sumBytes(p.blocks);
  p.copy2d = {true, off, blocklen * elem, count, stride * elem};
  return p;
}
// A C-order 3-D subarray of doubles: grid nz x ny x nx, sub-box sz x sy x sx at (oz, oy, ox).
inline Pattern subarray3(Pattern p, int64_t nz, int64_t ny, int64_t nx, int64_t sz, int64_t sy, int64_t sx,
                         int64_t oz, int64_t oy, int64_t ox) {
  tether_type_t d = basic(TETHER_BASIC_DOUBLE);
  const int64_t sizes[3] = {nz, ny, nx}, subs[3] = {sz, sy, sx}, starts[3] = {oz, oy, ox};
  TB_TRY(tether_type_subarray(3, sizes, subs, starts, TETHER_ORDER_C, d, &p.type));
  tether_type_free(&d);
  commit(p.type);
  p.span = nz * ny * nx * 8;
  p.blocks.reserve(static_cast<size_t>(sz * sy));
  for (int64_t z = 0; z < sz; ++z)
    for (int64_t y = 0; y < sy; ++y) p.blocks.push_back({((z + oz) * ny + y + oy) * nx * 8 + ox * 8, sx * 8});
  p.packed = sumBytes(p.blocks);
  p.copy3d = {true, (oz * ny + oy) * nx * 8 + ox * 8, sx * 8, sy, sz, nx * 8, ny * nx * 8};
  if (sz == 1) p.copy2d = {true, p.copy3d.offset, sx * 8, sy, nx * 8};
  return p;
}

// ---- NAS LU: u[nz][ny][nx][5] doubles; x face (x = 1): 40-byte blocks; y face (y = 1): nx*40-byte rows.
// Large: x face of a 2048 x 1024 x 32 domain; y face of 16384 z planes of 16 x 160 (same 6400 B rows).
inline Pattern nasLuX(Size z, int s) {
  const int64_t nx = ext(z, s, 160, 32), ny = ext(z, s, 160, 1024), nz = ext(z, s, 160, 2048), rec = 5 * 8;
  return vectorPattern(named("nas_lu_x", "NAS LU", "x face: 40 B blocks", z), TETHER_BASIC_DOUBLE, 8, nz * ny, 5,
                       nx * 5, rec, nx * ny * nz * rec);
}
inline Pattern nasLuY(Size z, int s) {
  const int64_t nx = ext(z, s, 160, 160), ny = ext(z, s, 160, 16), nz = ext(z, s, 160, 16384), rec = 5 * 8;
  return vectorPattern(named("nas_lu_y", "NAS LU", "y face: nx*40 B rows", z), TETHER_BASIC_DOUBLE, 8, nz, nx * 5,
                       ny * nx * 5, nx * rec, nx * ny * nz * rec);
}
// ---- NAS MG: v[nz][ny][nx] doubles; x face 8 B blocks, y face rows. Large: x face of 4096 x 2048 x 32; y face of
// 32768 z planes of 16 x 320 (same 2560 B rows).
inline Pattern nasMgX(Size z, int s) {
  const int64_t nx = ext(z, s, 320, 32), ny = ext(z, s, 320, 2048), nz = ext(z, s, 320, 4096);
  return vectorPattern(named("nas_mg_x", "NAS MG", "x face: 8 B blocks", z), TETHER_BASIC_DOUBLE, 8, nz * ny, 1, nx,
                       8, nx * ny * nz * 8);
}
inline Pattern nasMgY(Size z, int s) {
  const int64_t nx = ext(z, s, 320, 320), ny = ext(z, s, 320, 16), nz = ext(z, s, 320, 32768);
  return vectorPattern(named("nas_mg_y", "NAS MG", "y face: nx*8 B rows", z), TETHER_BASIC_DOUBLE, 8, nz, nx, ny * nx,
                       nx * 8, nx * ny * nz * 8);
}
// ---- MILC su3_zdown: lattice [T][Z][Y][X] of su3 vectors (3 complex floats = 24 B); the z = 0 plane's even
// sites (checkerboard): per (t, y) row, every other site. Nested hvector(t) of hvector(y) of vector(x/2).
// Large: a 2560 x 16 x 48 x 48 lattice (long T, thin Z).
inline Pattern milc(Size z, int s) {
  const int64_t X = ext(z, s, 48, 48), Y = ext(z, s, 48, 48), Z = ext(z, s, 48, 16), T = ext(z, s, 48, 2560),
                site = 24;
  Pattern p = named("milc_su3_zdown", "MILC", "z plane, even sites: 24 B blocks, nested vectors", z);
  tether_type_t f = basic(TETHER_BASIC_FLOAT), row, plane;
  TB_TRY(tether_type_vector(X / 2, 6, 12, f, &row));         // the even sites of one x row
  TB_TRY(tether_type_hvector(Y, 1, X * site, row, &plane));  // rows of the z = 0 plane
  TB_TRY(tether_type_hvector(T, 1, Z * Y * X * site, plane, &p.type));
  freeAll({f, row, plane});
  commit(p.type);
  p.span = T * Z * Y * X * site;
  p.blocks.reserve(static_cast<size_t>(T * Y * (X / 2)));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t y = 0; y < Y; ++y)
      for (int64_t x = 0; x < X / 2; ++x) p.blocks.push_back({t * Z * Y * X * site + y * X * site + x * 2 * site, site});
  p.packed = sumBytes(p.blocks);
  return p;
}
// ---- WRF: float fields [nz][ny][nx], halo width 3. x_vec: 12 B blocks; y_vec: 3 rows per z. Large: x halo of a
// 128 x 49152 x 64 field; y halo (and the subarray struct) of 16384 z planes of 16 x 512 (same 6144 B blocks).
inline Pattern wrfX(Size z, int s) {
  const int64_t nx = ext(z, s, 512, 64), ny = ext(z, s, 512, 49152), nz = ext(z, s, 128, 128);
  return vectorPattern(named("wrf_x_vec", "WRF", "x halo (3 floats): 12 B blocks", z), TETHER_BASIC_FLOAT, 4,
                       nz * ny, 3, nx, 0, nx * ny * nz * 4);
}
inline Pattern wrfY(Size z, int s) {
  const int64_t nx = ext(z, s, 512, 512), ny = ext(z, s, 512, 16), nz = ext(z, s, 128, 16384);
  return vectorPattern(named("wrf_y_vec", "WRF", "y halo (3 rows): 3*nx*4 B blocks", z), TETHER_BASIC_FLOAT, 4, nz,
                       3 * nx, nx * ny, 0, nx * ny * nz * 4);
}
// WRF subarray: a struct of the y-halo subarray of 4 fields (nz/4 planes each) that lie one after another.
inline Pattern wrfSa(Size z, int s) {
  const int64_t nx = ext(z, s, 512, 512), ny = ext(z, s, 512, 16), nz = ext(z, s, 128, 16384);
  Pattern p = named("wrf_sa", "WRF", "struct of 4 subarrays (y halo of 4 fields)", z);
  tether_type_t f = basic(TETHER_BASIC_FLOAT), sub;
  const int64_t sizes[3] = {nz / 4, ny, nx}, subs[3] = {nz / 4, 3, nx}, starts[3] = {0, 3, 0};
  TB_TRY(tether_type_subarray(3, sizes, subs, starts, TETHER_ORDER_C, f, &sub));
  const int64_t field = nz / 4 * ny * nx * 4;
  std::vector<int64_t> bl(4, 1), disp{0, field, 2 * field, 3 * field};
  std::vector<tether_type_t> ts(4, sub);
  TB_TRY(tether_type_struct(4, bl.data(), disp.data(), ts.data(), &p.type));
  freeAll({f, sub});
  commit(p.type);
  p.span = 4 * field;
  for (int64_t k = 0; k < 4; ++k)
    for (int64_t zz = 0; zz < nz / 4; ++zz) p.blocks.push_back({k * field + (zz * ny + 3) * nx * 4, 3 * nx * 4});
  p.packed = sumBytes(p.blocks);
  return p;
}
// ---- LAMMPS: per-atom arrays one after another; K = N/16 selected atoms (sorted random). full: x[3], v[3] double,
// tag, type, mask int, q double, molecule int; atomic: x[3] double, tag, type, mask int. Large: 9.6 M atoms (full,
// 7 fields) and 16 M atoms (atomic, 4 fields): each near tether's 4 Mi-piece commit bound.
inline Pattern lammps(Size z, int s, bool full) {
  const int64_t N = full ? ext(z, s, 4000000, 9600000) : ext(z, s, 4000000, 16000000), K = N / 16;
  const std::vector<int64_t> idx = pick(N, K, 0x1a33);
  struct Field {
    int64_t elems, elemBytes;
    tether_basic_t b;
  };
  std::vector<Field> fs = {{3, 8, TETHER_BASIC_DOUBLE}, {1, 4, TETHER_BASIC_INT}, {1, 4, TETHER_BASIC_INT},
                           {1, 4, TETHER_BASIC_INT}};
  if (full) {
    fs.insert(fs.begin() + 1, Field{3, 8, TETHER_BASIC_DOUBLE});
    fs.push_back({1, 8, TETHER_BASIC_DOUBLE});
    fs.push_back({1, 4, TETHER_BASIC_INT});
  }
  Pattern p = full ? named("lammps_full", "LAMMPS", "struct of 7 indexed_block fields, K = N/16 atoms", z)
                   : named("lammps_atomic", "LAMMPS", "struct of 4 indexed_block fields", z);
  std::vector<tether_type_t> parts;
  std::vector<int64_t> bl, disp, d(idx.size());
  p.blocks.reserve(idx.size() * fs.size());
  int64_t off = 0;
  for (const Field& f : fs) {
    tether_type_t e = basic(f.b), ib;
    for (size_t i = 0; i < idx.size(); ++i) d[i] = idx[i] * f.elems;
    TB_TRY(tether_type_indexed_block(K, f.elems, d.data(), e, &ib));
    tether_type_free(&e);
    parts.push_back(ib);
    bl.push_back(1);
    disp.push_back(off);
    for (int64_t i : idx) p.blocks.push_back({off + i * f.elems * f.elemBytes, f.elems * f.elemBytes});
    off += N * f.elems * f.elemBytes;
  }
  TB_TRY(tether_type_struct(static_cast<int64_t>(parts.size()), bl.data(), disp.data(), parts.data(), &p.type));
  for (tether_type_t& t : parts) tether_type_free(&t);
  commit(p.type);
  p.span = off;
  p.packed = sumBytes(p.blocks);
  return p;
}
// ---- SPECFEM3D: N floats, K = N/64 scattered points (one per 64 B slot, a quarter of the slots). oc: 1 float per
// point; cm: 3 floats; mt: indexed with variable lengths 1..16 floats. Large: N = 256 M (4 M points, near tether's
// commit bound).
inline int64_t specfemN(Size z, int s) { return ext(z, s, 32000000, 256000000); }
inline Pattern specfemBlock(Size z, int s, int comps) {
  const int64_t N = specfemN(z, s), K = N / 64;
  const std::vector<int64_t> idx = pick(N / 16, K, 0x5fec);
  Pattern p = comps == 1 ? named("specfem3d_oc", "SPECFEM3D", "indexed_block, 4 B blocks", z)
                         : named("specfem3d_cm", "SPECFEM3D", "indexed_block, 12 B blocks", z);
  tether_type_t f = basic(TETHER_BASIC_FLOAT);
  std::vector<int64_t> d(idx.size());
  for (size_t i = 0; i < idx.size(); ++i) d[i] = idx[i] * (comps == 1 ? 16 : 15);
  TB_TRY(tether_type_indexed_block(K, comps, d.data(), f, &p.type));
  tether_type_free(&f);
  commit(p.type);
  p.blocks.reserve(d.size());
  for (int64_t x : d) p.blocks.push_back({x * 4, comps * 4});
  p.span = N * 4;
  p.packed = sumBytes(p.blocks);
  return p;
}
inline Pattern specfemMt(Size z, int s) {
  const int64_t N = specfemN(z, s), K = N / 64;
  const std::vector<int64_t> idx = pick(N / 16, K, 0x5fec);
  Pattern p = named("specfem3d_mt", "SPECFEM3D", "indexed, blocks of 1..16 floats", z);
  std::mt19937_64 rng(0x3e7);
  std::uniform_int_distribution<int64_t> len(1, 16);
  std::vector<int64_t> bl(idx.size()), d(idx.size());
  p.blocks.reserve(idx.size());
  for (size_t i = 0; i < idx.size(); ++i) {
    bl[i] = len(rng);
    d[i] = idx[i] * 16;
    p.blocks.push_back({d[i] * 4, bl[i] * 4});
  }
  tether_type_t f = basic(TETHER_BASIC_FLOAT);
  TB_TRY(tether_type_indexed(K, bl.data(), d.data(), f, &p.type));
  tether_type_free(&f);
  commit(p.type);
  p.span = N * 4;
  p.packed = sumBytes(p.blocks);
  return p;
}
// ---- FFT2D: N x N complex doubles; pack the transpose (column by column): vector(N, 1, N) resized to one
// element, contiguous N. Large: N = 4096.
inline Pattern fft2d(Size z, int s) {
  const int64_t N = ext(z, s, 2048, 4096), e = 16;
  Pattern p = named("fft2d", "FFT2D", "transpose: 16 B blocks, stride N*16", z);
  tether_type_t c = basic(TETHER_BASIC_DOUBLE_COMPLEX), col, colr;
  TB_TRY(tether_type_vector(N, 1, N, c, &col));
  TB_TRY(tether_type_resized(col, 0, e, &colr));
  TB_TRY(tether_type_contiguous(N, colr, &p.type));
  freeAll({c, col, colr});
  commit(p.type);
  p.span = N * N * e;
  p.blocks.reserve(static_cast<size_t>(N * N));
  for (int64_t j = 0; j < N; ++j)
    for (int64_t i = 0; i < N; ++i) p.blocks.push_back({(i * N + j) * e, e});
  p.packed = sumBytes(p.blocks);
  return p;
}
// ---- COSMO-like halo (width 3) and Stencil faces: subarrays of double grids [nz][ny][nx]. Large: x-direction
// faces (8/24 B blocks) of grids thin in x (nx = 32), y-direction faces (rows) of many z planes thin in y, with the
// small size's row length.
inline Pattern cosmoE(Size z, int s) {
  const int64_t nz = ext(z, s, 256, 2048), ny = ext(z, s, 256, 2048), nx = ext(z, s, 256, 32);
  return subarray3(named("cosmo_halo_e", "COSMO", "east halo, width 3: 24 B blocks", z), nz, ny, nx, nz - 6, ny - 6,
                   3, 3, 3, nx - 6);
}
inline Pattern cosmoN(Size z, int s) {
  const int64_t nz = ext(z, s, 256, 16384), ny = ext(z, s, 256, 32), nx = ext(z, s, 256, 256);
  return subarray3(named("cosmo_halo_n", "COSMO", "north halo, width 3: rows", z), nz, ny, nx, nz - 6, 3, nx - 6, 3,
                   ny - 6, 3);
}
// Stencil2D: an ny x nx grid (one z plane). Large: the west column of 8 Mi + 2 rows of 32; the north row of a grid
// 8 Mi + 2 wide (one 64 MiB block).
inline Pattern stencil2dW(Size z, int s) {
  const int64_t ny = ext(z, s, 8192, (int64_t{1} << 23) + 2), nx = ext(z, s, 8192, 32);
  return subarray3(named("stencil2d_w", "Stencil2D", "west column: 8 B blocks", z), 1, ny, nx, 1, ny - 2, 1, 0, 1, 1);
}
inline Pattern stencil2dN(Size z, int s) {
  const int64_t ny = ext(z, s, 8192, 4), nx = ext(z, s, 8192, (int64_t{1} << 23) + 2);
  return subarray3(named("stencil2d_n", "Stencil2D", "north row: one block", z), 1, ny, nx, 1, 1, nx - 2, 0, 1, 1);
}
inline Pattern stencil3dX(Size z, int s) {
  const int64_t nz = ext(z, s, 384, 2050), ny = ext(z, s, 384, 4098), nx = ext(z, s, 384, 32);
  return subarray3(named("stencil3d_x", "Stencil3D", "x face: 8 B blocks", z), nz, ny, nx, nz - 2, ny - 2, 1, 1, 1,
                   1);
}
inline Pattern stencil3dY(Size z, int s) {
  const int64_t nz = ext(z, s, 384, 32770), ny = ext(z, s, 384, 16), nx = ext(z, s, 384, 384);
  return subarray3(named("stencil3d_y", "Stencil3D", "y face: rows", z), nz, ny, nx, nz - 2, 1, nx - 2, 1, 1, 1);
}
// ---- N-body: particle {double pos[3]; double vel[3]; float mass; int id;} (56 B). struct: pos + mass of every
// particle (resized to 56 B, count N); indexed: whole particles at K = N/8 random indices. Large: 8 M particles
// (struct), 16 M (indexed).
inline Pattern nbodyStruct(Size z, int s) {
  const int64_t N = ext(z, s, 4000000, 8000000), rec = 56;
  Pattern p = named("nbody_struct", "N-body", "struct {pos[3] double, mass float} of 56 B records", z);
  tether_type_t d = basic(TETHER_BASIC_DOUBLE), f = basic(TETHER_BASIC_FLOAT), st;
  const int64_t bl[2] = {3, 1}, disp[2] = {0, 48};
  const tether_type_t ts[2] = {d, f};
  TB_TRY(tether_type_struct(2, bl, disp, ts, &st));
  TB_TRY(tether_type_resized(st, 0, rec, &p.type));
  freeAll({d, f, st});
  p.count = N;
  commit(p.type);
  p.span = N * rec;
  p.blocks.reserve(static_cast<size_t>(2 * N));
  for (int64_t i = 0; i < N; ++i) {
    p.blocks.push_back({i * rec, 24});
    p.blocks.push_back({i * rec + 48, 4});
  }
  p.packed = sumBytes(p.blocks);
  return p;
}
inline Pattern nbodyIndexed(Size z, int s) {
  const int64_t N = ext(z, s, 4000000, 16000000), rec = 56, K = N / 8;
  Pattern q = named("nbody_indexed", "N-body", "indexed_block of whole 56 B particles, K = N/8", z);
  const std::vector<int64_t> idx = pick(N, K, 0xb0d1);
  tether_type_t d = basic(TETHER_BASIC_DOUBLE), f = basic(TETHER_BASIC_FLOAT), in = basic(TETHER_BASIC_INT), part, c;
  const int64_t pbl[4] = {3, 3, 1, 1}, pdisp[4] = {0, 24, 48, 52};
  const tether_type_t pts[4] = {d, d, f, in};
  TB_TRY(tether_type_struct(4, pbl, pdisp, pts, &part));
  TB_TRY(tether_type_resized(part, 0, rec, &c));
  TB_TRY(tether_type_indexed_block(K, 1, idx.data(), c, &q.type));
  freeAll({d, f, in, part, c});
  commit(q.type);
  q.span = N * rec;
  q.blocks.reserve(idx.size());
  for (int64_t i : idx) q.blocks.push_back({i * rec, rec});
  q.packed = sumBytes(q.blocks);
  return q;
}
}  // namespace detail

// Every layout, in table order; each recipe builds its pattern (type + block list) on demand, at either size.
inline std::vector<Recipe> recipes() {
  using namespace detail;
  return {
      {"nas_lu_x", nasLuX},
      {"nas_lu_y", nasLuY},
      {"nas_mg_x", nasMgX},
      {"nas_mg_y", nasMgY},
      {"milc_su3_zdown", milc},
      {"wrf_x_vec", wrfX},
      {"wrf_y_vec", wrfY},
      {"wrf_sa", wrfSa},
      {"lammps_full", [](Size z, int s) { return lammps(z, s, true); }},
      {"lammps_atomic", [](Size z, int s) { return lammps(z, s, false); }},
      {"specfem3d_oc", [](Size z, int s) { return specfemBlock(z, s, 1); }},
      {"specfem3d_cm", [](Size z, int s) { return specfemBlock(z, s, 3); }},
      {"specfem3d_mt", specfemMt},
      {"fft2d", fft2d},
      {"cosmo_halo_e", cosmoE},
      {"cosmo_halo_n", cosmoN},
      {"stencil2d_w", stencil2dW},
      {"stencil2d_n", stencil2dN},
      {"stencil3d_x", stencil3dX},
      {"stencil3d_y", stencil3dY},
      {"nbody_struct", nbodyStruct},
      {"nbody_indexed", nbodyIndexed},
  };
}
#undef TB_TRY

}  // namespace tether_bench
