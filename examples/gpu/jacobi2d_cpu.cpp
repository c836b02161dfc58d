// The halo logic of the GPU Jacobi example (jacobi2d.cu) in host memory, for machines without a GPU: the same
// decomposition, halo table, tags, receive-buffer parity and datatype-packed columns (tether_type_pack/unpack, the
// host reference of the engine that jacobi2d.cu drives on the GPU), and the cells computed in the kernel model's
// order (inner cells, then the edge ring). The result is checked against the serial Jacobi exactly as jacobi2d.cu
// checks it; it prints the same table and JSON. Models (--model, default all: each in turn):
//   host            irecv x4, pack, isend x4, waitall, unpack, compute (the CPU-synchronous exchange);
//   host-persist    the same with persistent requests (persist_common.h): startall of the receives, pack, startall
//                   of the sends, waitall: three messaging calls an iteration;
//   kernel-persist  jacobi2d.cu's kernel-persist schedule with the device API compiled for the host (the host thread
//                   is the "kernel", tether_device_handle_cpu): msg_start / msg_wait on descriptors taken once, no
//                   messaging call in the loop (the progress thread moves the messages).
//   tetherrun -n 4 ./tether_jacobi2d_cpu --n 64 --iters 20
// The stream models need a GPU (or the CPU stream emulation, which only tests reach).
#include <cstdio>
#include <string>
#include <vector>

#include "jacobi2d_common.h"
#include "persist_common.h"

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
  long calls = 0;                       // messaging calls of the steps (J2D_MSG)
  int total = 0;                        // iterations of the run (persistent models)
  j2d::PersistentExchange persist;      // persistent models
  std::vector<j2d::PersistMsgs> msgs;   // kernel-persist: the descriptors
  tether_device_handle_t dh{};          // kernel-persist: the CPU device handle

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

// The inner cells (they need no halo) and the ring of edge cells, through the same index maps as the kernel
// models' kernels.
void computeInner(const Decomp& d, const double* u, double* v) {
  int r = 0, c = 0;
  for (int t = 0; t < j2d::innerCells(d.lx, d.ly); ++t) {
    j2d::innerCell(t, d.lx, &r, &c);
    update(d, u, v, r, c);
  }
}
void computeRing(const Decomp& d, const double* u, double* v) {
  int r = 0, c = 0;
  for (int t = 0; t < j2d::ringCells(d.lx, d.ly); ++t) {
    j2d::ringCell(t, d.lx, d.ly, &r, &c);
    update(d, u, v, r, c);
  }
}

using Model = j2d::Model<HostState>;

void hostStep(tether_t w, HostState& s, int k, j2d::Pending*) {
  const Buffers b = s.buffers(k);
  const size_t nh = s.halos.size();
  tether_request_t reqs[2 * j2d::kDirs];
  j2d::postReceives(w, s.halos, b, reqs, &s.calls);
  packColumns(s, b);
  j2d::postSends(w, s.halos, b, reqs + nh, &s.calls);
  J2D_MSG(&s.calls, tether_msg_waitall(w, 2 * nh, reqs, nullptr));
  unpackColumns(s, b);
  computeInner(s.d, s.field[k & 1].data(), s.field[(k + 1) & 1].data());
  computeRing(s.d, s.field[k & 1].data(), s.field[(k + 1) & 1].data());
}

void hostPersistStep(tether_t w, HostState& s, int k, j2d::Pending*) {
  const Buffers b = s.buffers(k);
  const double* u = s.field[k & 1].data();
  double* v = s.field[(k + 1) & 1].data();
  j2d::persistentHostIteration(
      w, s.persist, k, &s.calls, [&] { packColumns(s, b); }, [&] { computeInner(s.d, u, v); },
      [&] {
        unpackColumns(s, b);
        computeRing(s.d, u, v);
      });
}

// jacobi2d.cu's kernelPersistStep with the host thread as the kernel (Scope::Thread).
void kernelPersistStep(tether_t, HostState& s, int k, j2d::Pending*) {
  using tether::device::Scope;
  const Buffers b = s.buffers(k);
  const j2d::RoundPlan plan = j2d::roundPlan(k, s.total);
  const int nh = static_cast<int>(s.halos.size());
  const double* u = s.field[k & 1].data();
  double* v = s.field[(k + 1) & 1].data();
  j2d::startReceives<Scope::Thread>(s.dh, s.msgs.data(), nh, plan);
  packColumns(s, b);
  j2d::startSends<Scope::Thread>(s.dh, s.msgs.data(), nh, plan);
  computeInner(s.d, u, v);
  j2d::waitRound<Scope::Thread>(s.dh, s.msgs.data(), nh, plan);
  unpackColumns(s, b);
  computeRing(s.d, u, v);
}

}  // namespace

int main(int argc, char** argv) {
  const j2d::Options o = j2d::parseOptions(argc, argv);
  const std::vector<Model> run = j2d::selectModels<HostState>(
      o.model, argv[0],
      j2d::cpuModels<HostState>(hostStep, hostPersistStep, kernelPersistStep));
  tether_t w;
  J2D_CHECK(tether_init(&w));
  const int me = tether_my_pe(w);
  HostState s;
  s.d = j2d::decomposeWorld(w, o.n);
  J2D_CHECK(tether_msg_init(w, nullptr));
  s.halos = j2d::haloTable(s.d);
  s.column = j2d::columnType(s.d);
  J2D_CHECK(tether_device_handle_cpu(w, &s.dh));
  for (int dir = 0; dir < j2d::kDirs; ++dir) {
    s.sendBuf[dir].assign(static_cast<size_t>(s.d.ly), 0.0);
    s.recvBuf[0][dir] = s.recvBuf[1][dir] = s.sendBuf[dir];
  }
  const int total = o.warmup + o.iters;
  const std::vector<double> reference = j2d::serialJacobi(o.n, total);
  if (me == 0) j2d::printHeader();
  bool pass = true;
  for (size_t i = 0; i < run.size(); ++i) {
    const Model& m = run[i];
    const j2d::Timing t = j2d::runHostModel(w, s, m, o, [&] { s.field[0] = s.field[1] = j2d::initialField(s.d); });
    const j2d::Result mine{j2d::maxError(s.d, s.field[total & 1].data(), reference), t.iterUs, t.cpuUs, t.calls};
    const std::string name = std::string(m.name) + "-cpu";
    pass = j2d::report(w, name.c_str(), static_cast<int>(i), s.d, mine) && pass;
    if (!(mine.maxErr <= j2d::kTolerance))
      std::fprintf(stderr, "PE %d (block %d,%d), model %s: max error %.3g against the serial Jacobi: FAIL\n", me,
                   s.d.rx, s.d.ry, name.c_str(), mine.maxErr);
  }
  J2D_CHECK_TYPE(tether_type_free(&s.column));
  J2D_CHECK(tether_msg_finalize(w));
  J2D_CHECK(tether_finalize(w));
  if (me == 0) std::printf("jacobi2d_cpu: %s\n", pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}
