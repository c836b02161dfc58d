// Realistic non-contiguous layouts for the datatype benchmark (issue #7): the DDTBench families (NAS LU and MG
// faces, MILC su3 z-down, WRF x/y vectors and a struct of subarrays, LAMMPS full/atomic, SPECFEM3D oc/cm/mt,
// FFT2D transpose), a COSMO-like 3-D halo, Stencil2D/3D subarray faces and an N-body particle struct and indexed
// exchange. Shapes follow the published descriptions of those codes' exchanges; sizes are ours (scale parameter).
//
// Each pattern gives a committed tether datatype, the count to pack, the bytes of memory its instances span (from
// `base`, which absorbs a negative lb), and the same layout as an explicit block list in packing order — built
// independently of the type constructors, so the benchmark checks our pack against a plain gather, and the
// per-block cudaMemcpyAsync row ("DT" in the HAND paper) can replay it. `copy2d`/`copy3d` describe the layout as a
// cudaMemcpy2D/3D when it is one.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "tether/datatype.h"

namespace tether_bench {

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
  std::string name, family, note;
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
// Takes ownership of `parts` (freed), returns the committed result.
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
// vector(count, blocklen, stride) of `elem`-byte basic type `b`, starting at byte `off` of a buffer of `span` bytes.
inline Pattern vectorPattern(const char* name, const char* family, const char* note, tether_basic_t b, int64_t elem,
                             int64_t count, int64_t blocklen, int64_t stride, int64_t off, int64_t span) {
  Pattern p;
  p.name = name;
  p.family = family;
  p.note = note;
  tether_type_t e = basic(b);
  TB_TRY(tether_type_vector(count, blocklen, stride, e, &p.type));
  freeAll({e});
  commit(p.type);
  p.base = off;
  p.span = span;
  for (int64_t i = 0; i < count; ++i) p.blocks.push_back({off + i * stride * elem, blocklen * elem});
  p.packed = sumBytes(p.blocks);
  p.copy2d = {true, off, blocklen * elem, count, stride * elem};
  return p;
}
}  // namespace detail

// All patterns at a scale: scale 1 packs roughly 0.1-4 MB per pattern over source spans of up to ~300 MB (so the
// large layouts do not fit in the 60 MB L2); scale s multiplies the problem's linear size where that is natural.
inline std::vector<Pattern> makePatterns(int scale) {
  using namespace detail;
  std::vector<Pattern> ps;
  const int64_t s = scale;

  // ---- NAS LU: u[nz][ny][nx][5] doubles; x face (x = 1): 40-byte blocks; y face (y = 1): nx*40-byte rows.
  {
    const int64_t nx = 160 * s, ny = 160 * s, nz = 160 * s, rec = 5 * 8, span = nx * ny * nz * rec;
    ps.push_back(vectorPattern("nas_lu_x", "NAS LU", "x face: 40 B blocks", TETHER_BASIC_DOUBLE, 8, nz * ny, 5,
                               nx * 5, rec, span));
    ps.push_back(vectorPattern("nas_lu_y", "NAS LU", "y face: nx*40 B rows", TETHER_BASIC_DOUBLE, 8, nz, nx * 5,
                               ny * nx * 5, nx * rec, span));
  }
  // ---- NAS MG: v[nz][ny][nx] doubles; x face 8 B blocks, y face rows.
  {
    const int64_t n = 320 * s, span = n * n * n * 8;
    ps.push_back(vectorPattern("nas_mg_x", "NAS MG", "x face: 8 B blocks", TETHER_BASIC_DOUBLE, 8, n * n, 1, n, 8,
                               span));
    ps.push_back(vectorPattern("nas_mg_y", "NAS MG", "y face: n*8 B rows", TETHER_BASIC_DOUBLE, 8, n, n, n * n,
                               n * 8, span));
  }
  // ---- MILC su3_zdown: lattice [T][Z][Y][X] of su3 vectors (3 complex floats = 24 B); the z = 0 plane's even
  // sites (checkerboard): per (t, y) row, every other site. Nested hvector(t) of hvector(y) of vector(x/2).
  {
    const int64_t X = 48 * s, Y = 48 * s, Z = 48 * s, T = 48 * s, site = 24;
    Pattern p;
    p.name = "milc_su3_zdown";
    p.family = "MILC";
    p.note = "z plane, even sites: 24 B blocks, nested vectors";
    tether_type_t f = basic(TETHER_BASIC_FLOAT), row, plane;
    TB_TRY(tether_type_vector(X / 2, 6, 12, f, &row));  // the even sites of one x row
    TB_TRY(tether_type_hvector(Y, 1, X * site, row, &plane));    // rows of the z = 0 plane
    TB_TRY(tether_type_hvector(T, 1, Z * Y * X * site, plane, &p.type));
    freeAll({f, row, plane});
    commit(p.type);
    p.span = T * Z * Y * X * site;
    for (int64_t t = 0; t < T; ++t)
      for (int64_t y = 0; y < Y; ++y)
        for (int64_t x = 0; x < X / 2; ++x) p.blocks.push_back({t * Z * Y * X * site + y * X * site + x * 2 * site, site});
    p.packed = sumBytes(p.blocks);
    ps.push_back(std::move(p));
  }
  // ---- WRF: float fields [nz][ny][nx], halo width 3. x_vec: 12 B blocks; y_vec: 3 rows per z.
  {
    const int64_t nx = 512 * s, ny = 512 * s, nz = 128 * s, span = nx * ny * nz * 4;
    ps.push_back(vectorPattern("wrf_x_vec", "WRF", "x halo (3 floats): 12 B blocks", TETHER_BASIC_FLOAT, 4,
                               nz * ny, 3, nx, 0, span));
    ps.push_back(vectorPattern("wrf_y_vec", "WRF", "y halo (3 rows): 3*nx*4 B blocks", TETHER_BASIC_FLOAT, 4, nz,
                               3 * nx, nx * ny, 0, span));
    // WRF subarray: a struct of the y-halo subarray of 4 fields that lie one after another.
    Pattern p;
    p.name = "wrf_sa";
    p.family = "WRF";
    p.note = "struct of 4 subarrays (y halo of 4 fields)";
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
      for (int64_t z = 0; z < nz / 4; ++z) p.blocks.push_back({k * field + (z * ny + 3) * nx * 4, 3 * nx * 4});
    p.packed = sumBytes(p.blocks);
    ps.push_back(std::move(p));
  }
  // ---- LAMMPS: per-atom arrays one after another; K selected atoms (sorted random). full: x[3], v[3] double,
  // tag, type, mask int, q double, molecule int; atomic: x[3] double, tag, type, mask int.
  {
    const int64_t N = 4000000 * s, K = N / 16;
    const std::vector<int64_t> idx = pick(N, K, 0x1a33);
    for (int full = 1; full >= 0; --full) {
      struct Field { int64_t elems, elemBytes; tether_basic_t b; };
      std::vector<Field> fs = {{3, 8, TETHER_BASIC_DOUBLE}, {1, 4, TETHER_BASIC_INT}, {1, 4, TETHER_BASIC_INT},
                               {1, 4, TETHER_BASIC_INT}};
      if (full) {
        fs.insert(fs.begin() + 1, Field{3, 8, TETHER_BASIC_DOUBLE});
        fs.push_back({1, 8, TETHER_BASIC_DOUBLE});
        fs.push_back({1, 4, TETHER_BASIC_INT});
      }
      Pattern p;
      p.name = full ? "lammps_full" : "lammps_atomic";
      p.family = "LAMMPS";
      p.note = full ? "struct of 7 indexed_block fields, K = N/16 atoms" : "struct of 4 indexed_block fields";
      std::vector<tether_type_t> parts;
      std::vector<int64_t> bl, disp;
      int64_t off = 0;
      for (const Field& f : fs) {
        tether_type_t e = basic(f.b), ib;
        std::vector<int64_t> d(idx.size());
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
      ps.push_back(std::move(p));
    }
  }
  // ---- SPECFEM3D: float arrays, K scattered points. oc: 1 float per point; cm: 3 floats; mt: indexed with
  // variable lengths 1..16 floats.
  {
    const int64_t N = 32000000 * s, K = N / 64;
    const std::vector<int64_t> idx = pick(N / 16, K, 0x5fec);
    for (int comps : {1, 3}) {
      Pattern p;
      p.name = comps == 1 ? "specfem3d_oc" : "specfem3d_cm";
      p.family = "SPECFEM3D";
      p.note = comps == 1 ? "indexed_block, 4 B blocks" : "indexed_block, 12 B blocks";
      tether_type_t f = basic(TETHER_BASIC_FLOAT);
      std::vector<int64_t> d(idx.size());
      for (size_t i = 0; i < idx.size(); ++i) d[i] = idx[i] * (comps == 1 ? 16 : 15);
      TB_TRY(tether_type_indexed_block(K, comps, d.data(), f, &p.type));
      tether_type_free(&f);
      commit(p.type);
      for (int64_t x : d) p.blocks.push_back({x * 4, comps * 4});
      p.span = N * 4;
      p.packed = sumBytes(p.blocks);
      ps.push_back(std::move(p));
    }
    Pattern p;
    p.name = "specfem3d_mt";
    p.family = "SPECFEM3D";
    p.note = "indexed, blocks of 1..16 floats";
    std::mt19937_64 rng(0x3e7);
    std::uniform_int_distribution<int64_t> len(1, 16);
    std::vector<int64_t> bl(idx.size()), d(idx.size());
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
    ps.push_back(std::move(p));
  }
  // ---- FFT2D: N x N complex doubles; pack the transpose (column by column): vector(N, 1, N) resized to one
  // element, contiguous N.
  {
    const int64_t N = 2048 * s, e = 16;
    Pattern p;
    p.name = "fft2d";
    p.family = "FFT2D";
    p.note = "transpose: 16 B blocks, stride N*16";
    tether_type_t c = basic(TETHER_BASIC_DOUBLE_COMPLEX), col, colr;
    TB_TRY(tether_type_vector(N, 1, N, c, &col));
    TB_TRY(tether_type_resized(col, 0, e, &colr));
    TB_TRY(tether_type_contiguous(N, colr, &p.type));
    freeAll({c, col, colr});
    commit(p.type);
    p.span = N * N * e;
    for (int64_t j = 0; j < N; ++j)
      for (int64_t i = 0; i < N; ++i) p.blocks.push_back({(i * N + j) * e, e});
    p.packed = sumBytes(p.blocks);
    ps.push_back(std::move(p));
  }
  // ---- COSMO-like halo and Stencil faces: subarrays of double grids.
  auto subarray3 = [&](const char* name, const char* family, const char* note, int64_t nz, int64_t ny, int64_t nx,
                       int64_t sz, int64_t sy, int64_t sx, int64_t oz, int64_t oy, int64_t ox) {
    Pattern p;
    p.name = name;
    p.family = family;
    p.note = note;
    tether_type_t d = basic(TETHER_BASIC_DOUBLE);
    const int64_t sizes[3] = {nz, ny, nx}, subs[3] = {sz, sy, sx}, starts[3] = {oz, oy, ox};
    TB_TRY(tether_type_subarray(3, sizes, subs, starts, TETHER_ORDER_C, d, &p.type));
    tether_type_free(&d);
    commit(p.type);
    p.span = nz * ny * nx * 8;
    for (int64_t z = 0; z < sz; ++z)
      for (int64_t y = 0; y < sy; ++y) p.blocks.push_back({((z + oz) * ny + y + oy) * nx * 8 + ox * 8, sx * 8});
    p.packed = sumBytes(p.blocks);
    p.copy3d = {true, (oz * ny + oy) * nx * 8 + ox * 8, sx * 8, sy, sz, nx * 8, ny * nx * 8};
    if (sz == 1) p.copy2d = {true, p.copy3d.offset, sx * 8, sy, nx * 8};
    return p;
  };
  {
    const int64_t n = 256 * s;
    ps.push_back(subarray3("cosmo_halo_e", "COSMO", "east halo, width 3: 24 B blocks", n, n, n, n - 6, n - 6, 3, 3, 3,
                           n - 6));
    ps.push_back(subarray3("cosmo_halo_n", "COSMO", "north halo, width 3: rows", n, n, n, n - 6, 3, n - 6, 3, n - 6,
                           3));
    const int64_t m = 8192 * s;
    ps.push_back(subarray3("stencil2d_w", "Stencil2D", "west column: 8 B blocks", 1, m, m, 1, m - 2, 1, 0, 1, 1));
    ps.push_back(subarray3("stencil2d_n", "Stencil2D", "north row: one block", 1, m, m, 1, 1, m - 2, 0, 1, 1));
    const int64_t k = 384 * s;
    ps.push_back(subarray3("stencil3d_x", "Stencil3D", "x face: 8 B blocks", k, k, k, k - 2, k - 2, 1, 1, 1, 1));
    ps.push_back(subarray3("stencil3d_y", "Stencil3D", "y face: rows", k, k, k, k - 2, 1, k - 2, 1, 1, 1));
  }
  // ---- N-body: particle {double pos[3]; double vel[3]; float mass; int id;} (56 B). struct: pos + mass of every
  // particle (resized to 56 B, count N); indexed: whole particles at K random indices.
  {
    const int64_t N = 4000000 * s, rec = 56;
    Pattern p;
    p.name = "nbody_struct";
    p.family = "N-body";
    p.note = "struct {pos[3] double, mass float} of 56 B records";
    tether_type_t d = basic(TETHER_BASIC_DOUBLE), f = basic(TETHER_BASIC_FLOAT), st, rs;
    const int64_t bl[2] = {3, 1}, disp[2] = {0, 48};
    const tether_type_t ts[2] = {d, f};
    TB_TRY(tether_type_struct(2, bl, disp, ts, &st));
    TB_TRY(tether_type_resized(st, 0, rec, &rs));
    p.type = rs;
    p.count = N;
    commit(p.type);
    p.span = N * rec;
    for (int64_t i = 0; i < N; ++i) {
      p.blocks.push_back({i * rec, 24});
      p.blocks.push_back({i * rec + 48, 4});
    }
    p.packed = sumBytes(p.blocks);
    ps.push_back(std::move(p));

    Pattern q;
    q.name = "nbody_indexed";
    q.family = "N-body";
    q.note = "indexed_block of whole 56 B particles, K = N/8";
    const int64_t K = N / 8;
    const std::vector<int64_t> idx = pick(N, K, 0xb0d1);
    tether_type_t part, c;
    const int64_t pbl[4] = {3, 3, 1, 1}, pdisp[4] = {0, 24, 48, 52};
    tether_type_t in = nullptr;
    TB_TRY(tether_type_basic(TETHER_BASIC_INT, &in));
    const tether_type_t pts[4] = {d, d, f, in};
    TB_TRY(tether_type_struct(4, pbl, pdisp, pts, &part));
    TB_TRY(tether_type_resized(part, 0, rec, &c));
    TB_TRY(tether_type_indexed_block(K, 1, idx.data(), c, &q.type));
    freeAll({d, f, st, in, part, c});
    commit(q.type);
    q.span = N * rec;
    for (int64_t i : idx) q.blocks.push_back({i * rec, rec});
    q.packed = sumBytes(q.blocks);
    ps.push_back(std::move(q));
  }
  return ps;
}
#undef TB_TRY

}  // namespace tether_bench
