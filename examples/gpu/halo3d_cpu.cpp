// The exchange of the GPU multi-neighbour example (halo3d.cu) in host memory, for machines without a GPU: the same
// process grid, halo table, tags, packed buffers (receive buffers by step parity) and box maps, and the cells
// computed through the kernel model's index maps. --pack datatype packs with subarray types through the datatype
// engine's host reference instead of the box loops. Checked against the serial run exactly as halo3d.cu checks; it
// prints the same table and JSON. Models (--model, default all: each in turn):
//   host            the CPU-synchronous exchange in the seed's shape: irecv from every neighbour, pack every halo,
//                   isend to every neighbour, inner cells, waitall, unpack, shell cells;
//   host-persist    the same with persistent requests (persist_common.h): three messaging calls a step;
//   kernel-persist  halo3d.cu's kernel-persist schedule with the device API compiled for the host (the host thread
//                   is the "kernel", tether_device_handle_cpu): no messaging call in the loop.
//   tetherrun -n 8 ./tether_halo3d_cpu --n 24 --iters 20            (2x2x2, 26 neighbours)
//   tetherrun -n 2 ./tether_halo3d_cpu --grid 1x1x2 --neighbours 6  (x and y: every PE its own neighbour)
// The stream models need a GPU (or the CPU stream emulation, which only tests reach).
#include <cstdio>
#include <string>
#include <vector>

#include "halo3d_common.h"
#include "persist_common.h"

namespace {

using h3d::cell_t;
using h3d::Halo;

struct HostState {
  h3d::Decomp d;
  h3d::Geom g;
  std::vector<Halo> halos;
  std::vector<cell_t> field[2], send, recv[2];
  bool datatype = false;  // --pack datatype: the engine's host reference (tether_type_pack / unpack) packs
  h3d::HaloTypes types;
  long calls = 0;                      // messaging calls of the steps (J2D_MSG)
  int total = 0;                       // steps of the run (persistent models)
  j2d::PersistentExchange persist;     // persistent models
  std::vector<j2d::PersistMsgs> msgs;  // kernel-persist: the descriptors
  tether_device_handle_t dh{};         // kernel-persist: the CPU device handle
  h3d::Buffers buffers(int k) { return h3d::Buffers{send.data(), recv[k & 1].data()}; }
};

// Packs every halo's send box of u into send (packing), or unpacks every halo from recv into its receive box of u.
void copyHalos(const HostState& s, bool packing, cell_t* u, const cell_t* recv, cell_t* send) {
  for (size_t i = 0; i < s.halos.size(); ++i) {
    const Halo& h = s.halos[i];
    const int64_t bytes = static_cast<int64_t>(h.bytes());
    int64_t done = 0;
    if (s.datatype && packing)
      J2D_CHECK_TYPE(tether_type_pack(s.types.send[i], 1, u, 0, bytes, send + h.offset, &done));
    else if (s.datatype)
      J2D_CHECK_TYPE(tether_type_unpack(s.types.recv[i], 1, recv + h.offset, 0, bytes, u, &done));
    for (int j = 0; !s.datatype && j < h.count(); ++j) {
      const size_t at = h.offset + static_cast<size_t>(j);
      if (packing)
        send[at] = u[s.g.boxCell(h.send, j)];
      else
        u[s.g.boxCell(h.recv, j)] = recv[at];
    }
  }
}

void inner(const HostState& s, const cell_t* u, cell_t* v) {
  int x = 0, y = 0, z = 0;
  for (int t = 0; t < h3d::innerCells(s.g); ++t) {
    h3d::innerCell(s.g, t, &x, &y, &z);
    h3d::updateCell(s.g, u, v, x, y, z);
  }
}
void shell(const HostState& s, const cell_t* u, cell_t* v) {
  int x = 0, y = 0, z = 0;
  for (int t = 0; t < h3d::shellCells(s.g); ++t) {
    h3d::shellCell(s.g, t, &x, &y, &z);
    h3d::updateCell(s.g, u, v, x, y, z);
  }
}

using Model = j2d::Model<HostState>;

void hostStep(tether_t w, HostState& s, int k, j2d::Pending*) {
  const h3d::Buffers b = s.buffers(k);
  const size_t nh = s.halos.size();
  cell_t* u = s.field[k & 1].data();
  cell_t* v = s.field[(k + 1) & 1].data();
  tether_request_t reqs[2 * h3d::kMaxHalos];
  j2d::postReceives(w, s.halos, b, reqs, &s.calls);
  copyHalos(s, true, u, nullptr, b.send);
  j2d::postSends(w, s.halos, b, reqs + nh, &s.calls);
  inner(s, u, v);
  J2D_MSG(&s.calls, tether_msg_waitall(w, 2 * nh, reqs, nullptr));
  copyHalos(s, false, u, b.recv, nullptr);
  shell(s, u, v);
}

void hostPersistStep(tether_t w, HostState& s, int k, j2d::Pending*) {
  const h3d::Buffers b = s.buffers(k);
  cell_t* u = s.field[k & 1].data();
  cell_t* v = s.field[(k + 1) & 1].data();
  j2d::persistentHostIteration(
      w, s.persist, k, &s.calls, [&] { copyHalos(s, true, u, nullptr, b.send); }, [&] { inner(s, u, v); },
      [&] {
        copyHalos(s, false, u, b.recv, nullptr);
        shell(s, u, v);
      });
}

// halo3d.cu's kernelPersistStep with the host thread as the kernel (Scope::Thread).
void kernelPersistStep(tether_t, HostState& s, int k, j2d::Pending*) {
  using tether::device::Scope;
  const h3d::Buffers b = s.buffers(k);
  const j2d::RoundPlan plan = j2d::roundPlan(k, s.total);
  const int nh = static_cast<int>(s.halos.size());
  cell_t* u = s.field[k & 1].data();
  cell_t* v = s.field[(k + 1) & 1].data();
  j2d::startReceives<Scope::Thread>(s.dh, s.msgs.data(), nh, plan);
  copyHalos(s, true, u, nullptr, b.send);
  j2d::startSends<Scope::Thread>(s.dh, s.msgs.data(), nh, plan);
  inner(s, u, v);
  j2d::waitRound<Scope::Thread>(s.dh, s.msgs.data(), nh, plan);
  copyHalos(s, false, u, b.recv, nullptr);
  shell(s, u, v);
}

}  // namespace

int main(int argc, char** argv) {
  const h3d::Options o = h3d::parseOptions(argc, argv);
  const std::vector<Model> run = j2d::selectModels<HostState>(
      o.base.model, argv[0],
      j2d::cpuModels<HostState>(hostStep, hostPersistStep, kernelPersistStep));
  tether_t w;
  J2D_CHECK(tether_init(&w));
  const int me = tether_my_pe(w);
  HostState s;
  s.d = h3d::decomposeWorld(w, o);
  s.g = s.d.geom();
  J2D_CHECK(tether_msg_init(w, nullptr));
  s.halos = h3d::haloTable(s.d);
  s.datatype = o.datatype;
  if (s.datatype) s.types = h3d::haloTypes(s.d, s.halos);
  J2D_CHECK(tether_device_handle_cpu(w, &s.dh));
  s.send.assign(h3d::haloCells(s.halos), 0);
  s.recv[0] = s.recv[1] = s.send;
  const int total = o.base.warmup + o.base.iters;
  const std::vector<cell_t> reference = h3d::serialSteps(s.d.n, s.d.neighbours, total);
  if (me == 0) h3d::printHeader();
  bool pass = true;
  for (size_t i = 0; i < run.size(); ++i) {
    const Model& m = run[i];
    const j2d::Timing t =
        j2d::runHostModel(w, s, m, o.base, [&] { s.field[0] = s.field[1] = h3d::initialField(s.d); });
    const long bad = h3d::badCells(s.d, s.field[total & 1].data(), reference);
    const std::string name = std::string(m.name) + "-cpu";
    h3d::complain(w, s.d, name.c_str(), bad);
    const j2d::Result mine{static_cast<double>(bad), t.iterUs, t.cpuUs, t.calls};
    pass = h3d::report(w, name.c_str(), s.datatype ? "datatype" : "box", static_cast<int>(i), s.d, mine) && pass;
  }
  h3d::freeHaloTypes(&s.types);
  J2D_CHECK(tether_msg_finalize(w));
  J2D_CHECK(tether_finalize(w));
  if (me == 0) std::printf("halo3d_cpu: %s\n", pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}
