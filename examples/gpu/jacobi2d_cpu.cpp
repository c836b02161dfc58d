// The halo logic of the GPU Jacobi example (jacobi2d.cu) in host memory, for machines without a GPU: the same
// decomposition, halo table, tags, receive-buffer parity and datatype-packed columns (tether_type_pack/unpack, the
// host reference of the engine that jacobi2d.cu drives on the GPU), with the CPU-synchronous exchange (irecv, pack,
// isend, waitall, unpack) and the cells computed in the kernel model's order (inner cells, then the edge ring). The
// result is checked against the serial Jacobi exactly as jacobi2d.cu checks it; it prints the same table and JSON.
//   tetherrun -n 4 ./tether_jacobi2d_cpu --n 64 --iters 20
// Only --model host (or all, the same here) exists: the stream and kernel models need a GPU.
#include <cstdio>
#include <vector>

#include "jacobi2d_common.h"

namespace {

using j2d::Buffers;
using j2d::Decomp;
using j2d::Halo;

// Host state of one PE: two iterates, and per strided halo a send buffer and two receive buffers (by iteration
// parity, as in jacobi2d.cu, so that this check covers the indexing the GPU code uses).
struct HostState {
  Decomp d;
  std::vector<Halo> halos;
  tether_type_t column = nullptr;
  std::vector<double> field[2];
  std::vector<double> sendBuf[j2d::kDirs], recvBuf[2][j2d::kDirs];

  Buffers buffers(int k) {
    Buffers b{field[k & 1].data(), {}, {}};
    for (int dir = 0; dir < j2d::kDirs; ++dir) {
      b.sendBuf[dir] = sendBuf[dir].data();
      b.recvBuf[dir] = recvBuf[k & 1][dir].data();
    }
    return b;
  }
};

void packColumns(const HostState& s, const Buffers& b) {
  for (const Halo& h : s.halos)
    if (h.strided) {
      int64_t done = 0;
      J2D_CHECK_TYPE(tether_type_pack(s.column, 1, b.field + h.sendAt, 0, static_cast<int64_t>(h.bytes()),
                                      b.sendBuf[h.dir], &done));
    }
}

void unpackColumns(const HostState& s, const Buffers& b) {
  for (const Halo& h : s.halos)
    if (h.strided) {
      int64_t done = 0;
      J2D_CHECK_TYPE(tether_type_unpack(s.column, 1, b.recvBuf[h.dir], 0, static_cast<int64_t>(h.bytes()),
                                        b.field + h.recvAt, &done));
    }
}

void update(const Decomp& d, const double* u, double* v, int r, int c) {
  v[d.at(r, c)] = j2d::stencil(u[d.at(r - 1, c)], u[d.at(r + 1, c)], u[d.at(r, c - 1)], u[d.at(r, c + 1)]);
}

// Inner cells, then the ring, through the same index maps as the kernel model's kernel.
void compute(const Decomp& d, const double* u, double* v) {
  int r = 0, c = 0;
  for (int t = 0; t < j2d::innerCells(d.lx, d.ly); ++t) {
    j2d::innerCell(t, d.lx, &r, &c);
    update(d, u, v, r, c);
  }
  for (int t = 0; t < j2d::ringCells(d.lx, d.ly); ++t) {
    j2d::ringCell(t, d.lx, d.ly, &r, &c);
    update(d, u, v, r, c);
  }
}

void iterate(tether_t w, HostState& s, int k) {
  const Buffers b = s.buffers(k);
  const size_t nh = s.halos.size();
  tether_request_t reqs[2 * j2d::kDirs];
  j2d::postReceives(w, s.halos, b, reqs);
  packColumns(s, b);
  j2d::postSends(w, s.halos, b, reqs + nh);
  J2D_CHECK(tether_msg_waitall(w, 2 * nh, reqs, nullptr));
  unpackColumns(s, b);
  compute(s.d, s.field[k & 1].data(), s.field[(k + 1) & 1].data());
}

}  // namespace

int main(int argc, char** argv) {
  const j2d::Options o = j2d::parseOptions(argc, argv);
  if (o.model != "host" && o.model != "all") {
    std::fprintf(stderr, "%s: only --model host (or all) runs without a GPU; got '%s'\n", argv[0], o.model.c_str());
    return 2;
  }
  tether_t w;
  J2D_CHECK(tether_init(&w));
  const int me = tether_my_pe(w);
  HostState s;
  s.d = j2d::decomposeWorld(w, o.n);
  J2D_CHECK(tether_msg_init(w, nullptr));
  s.halos = j2d::haloTable(s.d);
  s.column = j2d::columnType(s.d);
  s.field[0] = s.field[1] = j2d::initialField(s.d);
  for (int dir = 0; dir < j2d::kDirs; ++dir) {
    s.sendBuf[dir].assign(static_cast<size_t>(s.d.ly), 0.0);
    s.recvBuf[0][dir] = s.recvBuf[1][dir] = s.sendBuf[dir];
  }
  const int total = o.warmup + o.iters;
  const j2d::Timing t = j2d::timeHostIterations(o.warmup, o.iters, [&](int k) { iterate(w, s, k); });
  const std::vector<double> reference = j2d::serialJacobi(o.n, total);
  const j2d::Result mine{j2d::maxError(s.d, s.field[total & 1].data(), reference), t.iterUs, t.cpuUs};
  if (me == 0) j2d::printHeader();
  const bool pass = j2d::report(w, "host-cpu", 0, s.d, mine);
  if (!(mine.maxErr <= j2d::kTolerance))
    std::fprintf(stderr, "PE %d (block %d,%d): max error %.3g against the serial Jacobi: FAIL\n", me, s.d.rx, s.d.ry,
                 mine.maxErr);
  J2D_CHECK_TYPE(tether_type_free(&s.column));
  J2D_CHECK(tether_msg_finalize(w));
  J2D_CHECK(tether_finalize(w));
  if (me == 0) std::printf("jacobi2d_cpu: %s\n", pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}
