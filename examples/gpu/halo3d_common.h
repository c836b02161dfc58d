// The parts of the 3-D multi-neighbour exchange (halo3d.cu; docs/msg.md "Applications") that do not touch a GPU: the
// periodic px x py x pz process grid, the block decomposition, the halo table (the 6 face neighbours, or all 26 of
// faces, edges and corners as LULESH exchanges, each with its tag and its send and receive box), the stencil, the
// serial reference and the exact check. Plain C++, also compiled by halo3d_cpu.cpp, which runs the exchange in host
// memory under tetherrun on machines without a GPU. Generic helpers (options, timings, report gathering, checked
// calls, the 1-D split) come from jacobi2d_common.h.
//
// The problem. A periodic n x n x n field of 64-bit unsigned integers. One step replaces every cell by
// mix(sum over the stencil's cells s of weight(s) * u[s]) mod 2^64, the stencil being the cell and its 6 face
// neighbours (--neighbours 6, a 7-point stencil) or its whole 3 x 3 x 3 neighbourhood (--neighbours 26): integer
// arithmetic, so the GPU, the host and the serial reference agree to the bit and the check is equality. The weights
// differ per direction and mix() is not linear, so a halo cell from the wrong neighbour, the wrong direction or the
// wrong step changes the result.
//
// The decomposition. PEs form a px x py x pz grid (x fastest: PE = (rz * py + ry) * px + rx), periodic in every
// dimension: the neighbour in direction (dx, dy, dz) is the PE at the coordinates plus (dx, dy, dz) modulo the grid.
// A dimension of one PE makes the PE its own neighbour both ways (a self-send); one of two PEs makes the other PE the
// neighbour both ways (the tags keep the two messages apart). PE (rx, ry, rz) owns the cells [o, o + l) in each
// dimension (jacobi's split: sizes differ by at most one). Its field is (lx + 2) x (ly + 2) x (lz + 2) cells, x
// fastest, with a one-cell ghost layer: local (x, y, z) with 1 <= x <= lx ... is its own cell, 0 and l + 1 ghosts.
#pragma once

#include <stdint.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "jacobi2d_common.h"

namespace h3d {

typedef uint64_t cell_t;

// ---- directions --------------------------------------------------------------------------------------------------

// Direction (dx, dy, dz), each in {-1, 0, 1}, as a code 0 .. 26 (13 is the cell itself). The message towards the
// neighbour in direction c carries tag c; the receive from the neighbour in direction c expects tag 26 - c (the
// opposite direction: that neighbour sent towards us). Distinct tags keep the messages apart where several directions
// lead to one PE (grids of 1 or 2 PEs in a dimension).
constexpr int kCodes = 27, kSelf = 13, kMaxHalos = 26;
J2D_HD inline int dirCode(int dx, int dy, int dz) { return (dz + 1) * 9 + (dy + 1) * 3 + (dx + 1); }
J2D_HD inline void dirOf(int code, int* dx, int* dy, int* dz) {
  *dx = code % 3 - 1;
  *dy = code / 3 % 3 - 1;
  *dz = code / 9 - 1;
}
inline int opposite(int code) { return kCodes - 1 - code; }
// A face direction: one of dx, dy, dz non-zero.
J2D_HD inline bool isFace(int code) {
  int dx, dy, dz;
  dirOf(code, &dx, &dy, &dz);
  return (dx != 0) + (dy != 0) + (dz != 0) == 1;
}
// Whether the stencil of --neighbours `neighbours` (6 or 26) reads direction `code`.
J2D_HD inline bool inStencil(int code, int neighbours) { return code == kSelf || neighbours == 26 || isFace(code); }

// ---- the update --------------------------------------------------------------------------------------------------

J2D_HD inline cell_t weight(int code) { return 2 * static_cast<cell_t>(code) + 3; }  // odd and distinct
J2D_HD inline cell_t mix(cell_t x) { return x ^ (x >> 29); }

// One cell's new value. get(dx, dy, dz) reads the old value of the cell at that offset.
template <class Get>
J2D_HD inline cell_t stencil(const Get& get, int neighbours) {
  cell_t sum = 0;
  for (int code = 0; code < kCodes; ++code)
    if (inStencil(code, neighbours)) {
      int dx, dy, dz;
      dirOf(code, &dx, &dy, &dz);
      sum += weight(code) * get(dx, dy, dz);
    }
  return mix(sum);
}

// Global cell (gx, gy, gz) at the start: a 64-bit hash of its index (splitmix64's finaliser).
inline cell_t initialValue(int gx, int gy, int gz, int n) {
  cell_t z = ((static_cast<cell_t>(gz) * static_cast<cell_t>(n) + static_cast<cell_t>(gy)) * static_cast<cell_t>(n) +
              static_cast<cell_t>(gx)) + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
// What ghost cells hold before the first exchange: a ghost that the stencil reads but no message filled spoils the
// result from the first step on.
constexpr cell_t kPoison = 0xdeadbeefdeadbeefull;

// ---- the decomposition -------------------------------------------------------------------------------------------

// The cells of a PE's field that one message leaves from or arrives in: a box of size[0] x size[1] x size[2] cells
// from `start` (local coordinates), in x-fastest order.
struct Box {
  int start[3], size[3];
  J2D_HD int count() const { return size[0] * size[1] * size[2]; }
};

// Geometry of a PE's field, as kernels and host loops need it.
struct Geom {
  int l[3];   // owned cells per dimension
  size_t sy;  // distance between y neighbours (lx + 2)
  size_t sz;  // distance between z neighbours ((lx + 2) * (ly + 2))
  int neighbours;
  J2D_HD size_t at(int x, int y, int z) const {
    return static_cast<size_t>(z) * sz + static_cast<size_t>(y) * sy + static_cast<size_t>(x);
  }
  // Element j of box b (x fastest), as a field offset.
  J2D_HD size_t boxCell(const Box& b, int j) const {
    return at(b.start[0] + j % b.size[0], b.start[1] + j / b.size[0] % b.size[1],
              b.start[2] + j / (b.size[0] * b.size[1]));
  }
};

// Reads the old field around one cell (stencil's get).
struct LocalGet {
  const cell_t* u;
  size_t i, sy, sz;
  J2D_HD cell_t operator()(int dx, int dy, int dz) const {
    return u[static_cast<size_t>(static_cast<ptrdiff_t>(i) + dz * static_cast<ptrdiff_t>(sz) +
                                 dy * static_cast<ptrdiff_t>(sy) + dx)];
  }
};

// The new value of owned cell (x, y, z) of v from u.
J2D_HD inline void updateCell(const Geom& g, const cell_t* u, cell_t* v, int x, int y, int z) {
  const size_t i = g.at(x, y, z);
  v[i] = stencil(LocalGet{u, i, g.sy, g.sz}, g.neighbours);
}

// The owned cells split the way the kernel models compute them: the inner cells (2 <= x <= lx - 1, likewise y, z),
// which read no ghost, and the shell next to the ghosts. innerCell / shellCell map t in [0, innerCells) /
// [0, shellCells) to a cell; together they name every owned cell once, also for blocks 1 or 2 cells thin. The shell is
// the planes z = 1 and z = lz, then, for each z in between, the 2-D ring of jacobi2d_common.h (rows y = 1 and ly,
// columns x = 1 and lx).
J2D_HD inline int innerCells(const Geom& g) { return j2d::innerCells(g.l[0], g.l[1]) * (g.l[2] > 2 ? g.l[2] - 2 : 0); }
J2D_HD inline void innerCell(const Geom& g, int t, int* x, int* y, int* z) {
  const int plane = j2d::innerCells(g.l[0], g.l[1]);
  *z = 2 + t / plane;
  j2d::innerCell(t % plane, g.l[0], y, x);
}
J2D_HD inline int shellCells(const Geom& g) { return g.l[0] * g.l[1] * g.l[2] - innerCells(g); }
J2D_HD inline void shellCell(const Geom& g, int t, int* x, int* y, int* z) {
  const int lx = g.l[0], ly = g.l[1], lz = g.l[2], plane = lx * ly;
  const int endPlanes = lz == 1 ? 1 : 2;
  if (t < endPlanes * plane) {
    *z = t < plane ? 1 : lz;
    *x = 1 + t % plane % lx;
    *y = 1 + t % plane / lx;
    return;
  }
  t -= endPlanes * plane;
  const int ring = j2d::ringCells(lx, ly);
  *z = 2 + t / ring;
  j2d::ringCell(t % ring, lx, ly, y, x);
}

// One message each way with one neighbour: `count` cells leave from box `send` towards the neighbour in direction
// `code` and arrive from it in box `recv` (the ghosts on that side). Every halo is packed into a contiguous send
// buffer and unpacked from a contiguous receive buffer, at cell `offset` of each (halos follow each other).
struct Halo {
  int code;  // where the neighbour is
  int peer;  // its PE
  Box send, recv;
  size_t offset;
  int count() const { return send.count(); }
  size_t bytes() const { return static_cast<size_t>(count()) * sizeof(cell_t); }
  int sendTag() const { return code; }
  int recvTag() const { return opposite(code); }
};

struct Decomp {
  int n = 0, neighbours = 26;
  int p[3] = {1, 1, 1};  // process grid
  int r[3] = {0, 0, 0};  // this PE's coordinates in it
  int o[3] = {0, 0, 0};  // first owned global cell per dimension
  int l[3] = {0, 0, 0};  // owned cells per dimension
  Geom geom() const {
    const size_t sy = static_cast<size_t>(l[0]) + 2;
    return Geom{{l[0], l[1], l[2]}, sy, sy * (static_cast<size_t>(l[1]) + 2), neighbours};
  }
  size_t cells() const { return geom().sz * (static_cast<size_t>(l[2]) + 2); }
  int pe(const int c[3]) const { return (c[2] * p[1] + c[1]) * p[0] + c[0]; }
  std::string grid() const {
    return std::to_string(p[0]) + "x" + std::to_string(p[1]) + "x" + std::to_string(p[2]);
  }
};

// px >= py >= pz with px * py * pz = npes, as even as the prime factors allow (MPI_Dims_create's rule): 1x1x1, 2x1x1,
// 3x1x1, 2x2x1, 3x2x1, 2x2x2, 3x2x2, ...
inline void chooseGrid(int npes, int p[3]) {
  p[0] = p[1] = p[2] = 1;
  std::vector<int> factors;
  for (int m = npes, f = 2; m > 1; f += (m % f != 0))
    if (m % f == 0) {
      factors.push_back(f);
      m /= f;
    }
  for (size_t i = factors.size(); i-- > 0;) {  // largest factor first, onto the smallest dimension
    int* smallest = &p[2];
    for (int k = 1; k >= 0; --k)
      if (p[k] < *smallest) smallest = &p[k];
    *smallest *= factors[i];
  }
  for (int a = 0; a < 2; ++a)  // sort descending
    for (int b = 0; b < 2 - a; ++b)
      if (p[b] < p[b + 1]) std::swap(p[b], p[b + 1]);
}

// PE pe's block of the n^3 field over grid p (p[0] * p[1] * p[2] PEs; n >= every p[i]).
inline Decomp decompose(int n, const int p[3], int neighbours, int pe) {
  Decomp d;
  d.n = n;
  d.neighbours = neighbours;
  for (int k = 0; k < 3; ++k) d.p[k] = p[k];
  d.r[0] = pe % p[0];
  d.r[1] = pe / p[0] % p[1];
  d.r[2] = pe / (p[0] * p[1]);
  for (int k = 0; k < 3; ++k) {
    const j2d::Span s = j2d::split(n, p[k], d.r[k]);
    d.o[k] = s.begin;
    d.l[k] = s.count;
  }
  return d;
}

// The halos of this PE, one per direction of the stencil, in code order.
inline std::vector<Halo> haloTable(const Decomp& d) {
  std::vector<Halo> t;
  size_t offset = 0;
  for (int code = 0; code < kCodes; ++code) {
    if (code == kSelf || !inStencil(code, d.neighbours)) continue;
    int dir[3], c[3];
    dirOf(code, &dir[0], &dir[1], &dir[2]);
    Halo h{};
    h.code = code;
    for (int k = 0; k < 3; ++k) {
      c[k] = (d.r[k] + dir[k] + d.p[k]) % d.p[k];
      // Along a dimension the direction crosses: the outermost owned layer on that side, and the ghost layer beyond
      // it; along the others: every owned cell.
      h.send.start[k] = dir[k] < 0 ? 1 : dir[k] > 0 ? d.l[k] : 1;
      h.recv.start[k] = dir[k] < 0 ? 0 : dir[k] > 0 ? d.l[k] + 1 : 1;
      h.send.size[k] = h.recv.size[k] = dir[k] == 0 ? d.l[k] : 1;
    }
    h.peer = d.pe(c);
    h.offset = offset;
    offset += static_cast<size_t>(h.count());
    t.push_back(h);
  }
  return t;
}
inline size_t haloCells(const std::vector<Halo>& t) {
  return t.empty() ? 0 : t.back().offset + static_cast<size_t>(t.back().count());
}

// Where one exchange's messages leave from and arrive in (j2d::postReceives / postSends find these): the packed
// send and receive buffers, any memory.
struct Buffers {
  cell_t* send;
  cell_t* recv;
};
inline cell_t* sendPtr(const Halo& h, const Buffers& b) { return b.send + h.offset; }
inline cell_t* recvPtr(const Halo& h, const Buffers& b) { return b.recv + h.offset; }

// The halos' boxes as committed datatypes (--pack datatype): per halo a 3-D subarray of the field (uint64 cells) for
// its send box and one for its receive box; packed in the type map's order, x fastest, the boxes' order. Freed by
// freeHaloTypes.
struct HaloTypes {
  std::vector<tether_type_t> send, recv;
};
inline tether_type_t boxType(const Decomp& d, const Box& b) {
  const int64_t sizes[3] = {d.l[2] + 2, d.l[1] + 2, d.l[0] + 2};  // C order: z slowest
  const int64_t subsizes[3] = {b.size[2], b.size[1], b.size[0]};
  const int64_t starts[3] = {b.start[2], b.start[1], b.start[0]};
  tether_type_t cell = nullptr, box = nullptr;
  J2D_CHECK_TYPE(tether_type_basic(TETHER_BASIC_UINT64, &cell));
  J2D_CHECK_TYPE(tether_type_subarray(3, sizes, subsizes, starts, TETHER_ORDER_C, cell, &box));
  J2D_CHECK_TYPE(tether_type_commit(box));
  J2D_CHECK_TYPE(tether_type_free(&cell));
  return box;
}
inline HaloTypes haloTypes(const Decomp& d, const std::vector<Halo>& halos) {
  HaloTypes t;
  for (const Halo& h : halos) {
    t.send.push_back(boxType(d, h.send));
    t.recv.push_back(boxType(d, h.recv));
  }
  return t;
}
inline void freeHaloTypes(HaloTypes* t) {
  for (std::vector<tether_type_t>* v : {&t->send, &t->recv})
    for (tether_type_t& x : *v) J2D_CHECK_TYPE(tether_type_free(&x));
}

// This PE's field at the start: owned cells from the global initial values, ghosts poisoned.
inline std::vector<cell_t> initialField(const Decomp& d) {
  const Geom g = d.geom();
  std::vector<cell_t> f(d.cells(), kPoison);
  for (int z = 1; z <= d.l[2]; ++z)
    for (int y = 1; y <= d.l[1]; ++y)
      for (int x = 1; x <= d.l[0]; ++x)
        f[g.at(x, y, z)] = initialValue(d.o[0] + x - 1, d.o[1] + y - 1, d.o[2] + z - 1, d.n);
  return f;
}

// Reads the periodic n^3 field around global cell (x, y, z) (the serial reference's get).
struct PeriodicGet {
  const cell_t* u;
  int n, x, y, z;
  J2D_HD cell_t operator()(int dx, int dy, int dz) const {
    const size_t nn = static_cast<size_t>(n);
    return u[(static_cast<size_t>((z + dz + n) % n) * nn + static_cast<size_t>((y + dy + n) % n)) * nn +
             static_cast<size_t>((x + dx + n) % n)];
  }
};

// The whole periodic n^3 field after `steps` serial steps (x fastest).
inline std::vector<cell_t> serialSteps(int n, int neighbours, int steps) {
  const size_t nn = static_cast<size_t>(n);
  std::vector<cell_t> u(nn * nn * nn), v(u.size());
  for (size_t i = 0; i < u.size(); ++i)
    u[i] = initialValue(static_cast<int>(i % nn), static_cast<int>(i / nn % nn), static_cast<int>(i / (nn * nn)), n);
  for (int s = 0; s < steps; ++s) {
    for (size_t i = 0; i < u.size(); ++i)
      v[i] = stencil(PeriodicGet{u.data(), n, static_cast<int>(i % nn), static_cast<int>(i / nn % nn),
                                 static_cast<int>(i / (nn * nn))},
                     neighbours);
    u.swap(v);
  }
  return u;
}

// How many of this PE's owned cells differ from the serial reference (serialSteps' field).
inline long badCells(const Decomp& d, const cell_t* field, const std::vector<cell_t>& reference) {
  const Geom g = d.geom();
  const size_t nn = static_cast<size_t>(d.n);
  long bad = 0;
  for (int z = 1; z <= d.l[2]; ++z)
    for (int y = 1; y <= d.l[1]; ++y)
      for (int x = 1; x <= d.l[0]; ++x) {
        const size_t gx = static_cast<size_t>(d.o[0] + x - 1), gy = static_cast<size_t>(d.o[1] + y - 1),
                     gz = static_cast<size_t>(d.o[2] + z - 1);
        bad += field[g.at(x, y, z)] != reference[(gz * nn + gy) * nn + gx];
      }
  return bad;
}

// ---- options and the report ----------------------------------------------------------------------------------

struct Options {
  j2d::Options base;     // --n (edge of the cube), --iters, --warmup, --model
  int grid[3] = {0, 0, 0};  // --grid PXxPYxPZ; 0: chooseGrid
  int neighbours = 26;      // --neighbours 6|26
  bool datatype = false;    // --pack datatype: the datatype engine packs (subarray types); --pack box: our loops
};

// halo3d's options: --grid and --neighbours here, the rest by j2d::parseOptions (defaults n = 48, 50 timed steps, 5
// warm-up steps). Exits 2 on a malformed command line.
inline Options parseOptions(int argc, char** argv) {
  Options o;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--grid" || a == "--neighbours" || a == "--pack") && i + 1 < argc) {
      const std::string v = argv[++i];
      bool ok = true;
      if (a == "--grid")
        ok = std::sscanf(v.c_str(), "%dx%dx%d", &o.grid[0], &o.grid[1], &o.grid[2]) == 3 && o.grid[0] > 0 &&
             o.grid[1] > 0 && o.grid[2] > 0;
      else if (a == "--neighbours")
        ok = (o.neighbours = std::atoi(v.c_str())) == 6 || o.neighbours == 26;
      else
        ok = (o.datatype = v == "datatype") || v == "box";
      if (!ok) {
        std::fprintf(stderr, "%s: bad %s '%s' (--grid PXxPYxPZ, --neighbours 6|26, --pack box|datatype)\n", argv[0],
                     a.c_str(), v.c_str());
        std::exit(2);
      }
      continue;
    }
    rest.push_back(argv[i]);
  }
  j2d::Options defaults;
  defaults.n = 48;
  defaults.iters = 50;
  defaults.warmup = 5;
  o.base = j2d::parseOptions(static_cast<int>(rest.size()), rest.data(), defaults,
                             " [--grid PXxPYxPZ] [--neighbours 6|26] [--pack box|datatype]");
  return o;
}

// This PE's block over every PE of w. Exits 2 when --grid does not multiply to the PE count or n is smaller than the
// grid in some dimension.
inline Decomp decomposeWorld(tether_t w, const Options& o) {
  const int npes = tether_n_pes(w);
  int p[3] = {o.grid[0], o.grid[1], o.grid[2]};
  if (!p[0]) chooseGrid(npes, p);
  if (p[0] * p[1] * p[2] != npes || o.base.n < p[0] || o.base.n < p[1] || o.base.n < p[2]) {
    std::fprintf(stderr, "grid %dx%dx%d does not fit %d PEs and n = %d (n >= every dimension)\n", p[0], p[1], p[2],
                 npes, o.base.n);
    std::exit(2);
  }
  return decompose(o.base.n, p, o.neighbours, tether_my_pe(w));
}

inline void printHeader() {
  std::printf("%-18s %5s %9s %4s %3s %-8s %12s %12s %10s %10s  %s\n", "model", "pes", "grid", "n", "nbr", "pack",
              "step_us", "cpu_us", "host_calls", "bad_cells", "check");
}

// One model's result: mine.maxErr carries this PE's count of wrong cells; `pack` says who packed the halos ("box":
// our loops or kernels, "datatype": the datatype engine). PE 0 prints a table row and one JSON line with the largest
// count and timings over the PEs; returns whether every PE passed (on PE 0; elsewhere its own verdict).
inline bool report(tether_t w, const char* model, const char* pack, int slot, const Decomp& d,
                   const j2d::Result& mine) {
  const j2d::Result all = j2d::gatherWorst(w, slot, mine);
  const bool pass = all.maxErr == 0;
  if (tether_my_pe(w) != 0) return pass;
  const int npes = tether_n_pes(w);
  const long bad = static_cast<long>(all.maxErr);
  std::printf("%-18s %5d %9s %4d %3d %-8s %12.2f %12.2f %10.1f %10ld  %s\n", model, npes, d.grid().c_str(), d.n,
              d.neighbours, pack, all.iterUs, all.cpuUs, all.calls, bad, pass ? "PASS" : "FAIL");
  std::printf("{\"bench\":\"halo3d\",\"model\":\"%s\",\"pes\":%d,\"grid\":\"%s\",\"n\":%d,\"neighbours\":%d,"
              "\"pack\":\"%s\",\"step_us\":%.3f,\"cpu_us\":%.3f,\"host_calls\":%.1f,\"bad_cells\":%ld,\"pass\":%s}\n",
              model, npes, d.grid().c_str(), d.n, d.neighbours, pack, all.iterUs, all.cpuUs, all.calls, bad,
              pass ? "true" : "false");
  std::fflush(stdout);
  return pass;
}

// Prints the PE's own failure to stderr (every PE, so the log names the blocks that went wrong).
inline void complain(tether_t w, const Decomp& d, const char* model, long bad) {
  if (bad)
    std::fprintf(stderr, "PE %d (block %d,%d,%d of %s), model %s: %ld of its cells differ from the serial run: FAIL\n",
                 tether_my_pe(w), d.r[0], d.r[1], d.r[2], d.grid().c_str(), model, bad);
}

}  // namespace h3d
