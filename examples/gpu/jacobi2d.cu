// 2-D Jacobi on GPUs with the halo exchange over tether's two-sided messaging (issue #20; docs/msg.md
// "Applications"), in the three execution models of tether/msg.h, each checked against a serial Jacobi of the whole
// grid computed on the host of every PE:
//
//   tetherrun -n 4 ./tether_jacobi2d --n 1024 --iters 100 --warmup 10 --model all
//   (--model host | stream | stream-post | kernel | host-persist | stream-persist | kernel-persist | all: every one
//   in turn on the same problem)
//
// Problem, decomposition, halo table and check: jacobi2d_common.h (px x py PEs; 2 PEs split along x, so the strided
// column halo is exchanged; 4 PEs exchange rows and columns). Each PE keeps two iterates of its block with a one-cell
// halo in GPU memory (cudaMalloc: messaging takes any buffer, the symmetric heap is not needed). Rows travel straight
// from and into the field; a column is packed by the datatype engine (a committed tether_type_vector of doubles,
// tether_type_pack_async / unpack_async on the solver's stream) into a contiguous send buffer and unpacked from a
// contiguous receive buffer -- except in the kernel model, whose one kernel packs and unpacks the columns itself.
//
// Iteration k reads field[k % 2] and writes field[(k + 1) % 2]. Receive buffers (column buffers and, through the field
// parity, the halo rows) alternate with k % 2, which is what lets the stream and kernel models post the receives of
// iteration k + 1 while the GPU may still be reading those of iteration k: a neighbour's message of iteration k + 1
// leaves only after the neighbour has received our message of iteration k, which we send after our iteration k - 1
// finished with the buffers of parity (k + 1) % 2. Send buffers are single: every model makes the sends of iteration
// k complete before iteration k + 1 rewrites them (and before iteration k + 1 overwrites the rows sent from the field).
//
// The models, per iteration:
//  host    irecv x4 (host) | pack (stream) | cudaStreamSynchronize | isend x4 | waitall | unpack + compute (stream).
//  stream  irecv x4 (host) | pack, isend_on_stream x4, waitall_on_stream (sends and receives), unpack, compute (all on
//          the stream) | the host frees iteration k - 1's requests (tether_msg_waitall, which does not wait for the
//          stream). The host never synchronises the stream inside the loop.
//  stream-post  the same with prepared sends: tether_send_prepare x4 on the host, ONE tether_msg_post_all_on_stream.
//  kernel  irecv x4 + wait descriptors, send_prepare x4 + send/wait descriptors (host) | ONE cooperative kernel: pack,
//          msg_send x4, inner cells, msg_wait on the receives and sends, unpack, edge cells | the host waits for
//          iteration k - 1's kernel (event) and frees its requests (a descriptor must not outlive its request).
// The persistent models (persist_common.h: requests per halo and parity made once per run, tags by parity,
// receives started one iteration ahead in the stream and kernel models):
//  host-persist    startall (receives) | pack (stream) | cudaStreamSynchronize | startall (sends) | waitall |
//                  unpack + compute (stream): three messaging calls.
//  stream-persist  pack, ONE startall_on_stream (the sends, the next iteration's receives), ONE waitall_on_stream,
//                  unpack, compute, all on the stream: two messaging calls, no host wait in the loop.
//  kernel-persist  the kernel model's kernel with one descriptor per request for the whole run: block 0 starts the
//                  next iteration's receives at the kernel's beginning, the sends after the pack, and waits for the
//                  round (msg_start / msg_wait with the round number): no messaging call on the host at all.
//
// Timing: per iteration, the interval between CUDA events recorded on the solver's stream at the iteration's start
// (GPU timeline: it includes every host wait that delays the stream); iter_us is the median over the timed
// iterations, cpu_us the process CPU time (every thread, tether's progress thread included) over the timed loop
// divided by the iterations. PE 0 prints the worst value over the PEs (table + one JSON line per model).
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <string>
#include <vector>

#include "app_gpu.cuh"
#include "jacobi2d_common.h"
#include "tether/msg_device.cuh"

namespace {

using j2d::Buffers;
using j2d::Decomp;
using j2d::Halo;
using j2d::kDirs;
using j2d::Pending;

constexpr int kBlock = 256;  // threads per block of the kernel model's kernel

// ---- kernels ------------------------------------------------------------------------------------------------------

__device__ __forceinline__ void updateCell(const double* u, double* v, size_t pitch, int r, int c) {
  const size_t i = static_cast<size_t>(r) * pitch + static_cast<size_t>(c);
  v[i] = j2d::stencil(u[i - pitch], u[i + pitch], u[i - 1], u[i + 1]);
}

// Host and stream models: every owned cell of v from u (one thread per cell, 2-D grid).
__global__ void computeAll(const double* u, double* v, size_t pitch, int lx, int ly) {
  const int c = 1 + static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int r = 1 + static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (r <= ly && c <= lx) updateCell(u, v, pitch, r, c);
}

// One halo as the kernel model's kernel sees it. Strided halos have packFrom/unpackTo (the first owned / halo cell of
// the column, cells a pitch apart) and contiguous buffers; row halos have null packFrom/unpackTo (the messages use
// the field's rows directly).
struct DevHalo {
  const double* packFrom;
  double* unpackTo;
  double* sendBuf;
  const double* recvBuf;
  int count;
  j2d::KernelMsgs msg;  // its send's and receive's descriptors
};

struct StepArgs {
  const double* u;
  double* v;
  size_t pitch;
  int lx, ly, nh;
  DevHalo halo[kDirs];
  const j2d::PersistMsgs* persist;  // kernel-persist: the halos' descriptors (GPU memory); null: prepared messages
  j2d::RoundPlan plan;              // kernel-persist: this iteration's requests and starts
};

// The kernel model: a whole iteration in one kernel, launched cooperatively (every block resident) because its
// phases need grid-wide order: all column packs before the sends start, all receives complete before any block
// unpacks, all unpacks before the edge cells are computed. Cross-block ordering therefore uses grid.sync(); the
// messaging itself is done by block 0 alone (msg_send / msg_wait at block scope), so one thread polls each completion
// word and every other block simply waits at the next grid.sync(). Stores that a send carries are made visible at
// system scope by each storing thread (__threadfence_system) before the grid sync that precedes msg_send, whose
// release store then starts the copy. kernel-persist (a.persist set) runs the same kernel with persistent requests:
// block 0 first starts the receives its RoundPlan names (their buffers are free: the previous kernel has ended),
// starts the iteration's sends where msg_send stands and waits for the iteration's round where msg_wait stands.
__global__ void kernelModelStep(tether_device_handle_t h, StepArgs a) {
  namespace cg = cooperative_groups;
  using tether::device::Scope;
  cg::grid_group grid = cg::this_grid();
  const int tid = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int nth = static_cast<int>(gridDim.x * blockDim.x);
  if (blockIdx.x == 0 && a.persist) j2d::startReceives<Scope::Block>(h, a.persist, a.nh, a.plan);
  for (int i = 0; i < a.nh; ++i) {
    const DevHalo& hl = a.halo[i];
    if (hl.packFrom)
      for (int j = tid; j < hl.count; j += nth) hl.sendBuf[j] = hl.packFrom[static_cast<size_t>(j) * a.pitch];
  }
  __threadfence_system();
  grid.sync();
  if (blockIdx.x == 0 && a.persist) j2d::startSends<Scope::Block>(h, a.persist, a.nh, a.plan);
  if (blockIdx.x == 0 && !a.persist)
    for (int i = 0; i < a.nh; ++i) tether::device::msg_send<Scope::Block>(h, a.halo[i].msg.send);
  int r = 0, c = 0;
  for (int t = tid; t < j2d::innerCells(a.lx, a.ly); t += nth) {  // needs no halo: overlaps the messages
    j2d::innerCell(t, a.lx, &r, &c);
    updateCell(a.u, a.v, a.pitch, r, c);
  }
  if (blockIdx.x == 0 && a.persist) j2d::waitRound<Scope::Block>(h, a.persist, a.nh, a.plan);
  if (blockIdx.x == 0 && !a.persist)
    for (int i = 0; i < a.nh; ++i) {
      tether::device::msg_wait<Scope::Block>(h, a.halo[i].msg.received);
      tether::device::msg_wait<Scope::Block>(h, a.halo[i].msg.sent);  // the next kernel rewrites the send buffers
    }
  grid.sync();
  for (int i = 0; i < a.nh; ++i) {
    const DevHalo& hl = a.halo[i];
    if (hl.unpackTo)
      for (int j = tid; j < hl.count; j += nth) hl.unpackTo[static_cast<size_t>(j) * a.pitch] = hl.recvBuf[j];
  }
  grid.sync();
  for (int t = tid; t < j2d::ringCells(a.lx, a.ly); t += nth) {
    j2d::ringCell(t, a.lx, a.ly, &r, &c);
    updateCell(a.u, a.v, a.pitch, r, c);
  }
}

// ---- per-PE state ---------------------------------------------------------------------------------------------

struct GpuState {
  Decomp d;
  std::vector<Halo> halos;
  tether_type_t column = nullptr;  // one column of the field (ly doubles a pitch apart), committed
  cudaStream_t stream = nullptr;
  double* field[2] = {};
  double* sendBuf[kDirs] = {};     // strided halos only
  double* recvBuf[2][kDirs] = {};  // strided halos only, by iteration parity
  tether_device_handle_t dh{};     // kernel models
  int coopBlocks = 0;              // kernel models: blocks of the cooperative launch
  cudaEvent_t kernelDone[2] = {};  // kernel model: after iteration k's kernel, by parity
  long calls = 0;                  // messaging calls of the steps (J2D_MSG)
  int total = 0;                   // persistent models: iterations of the run
  j2d::PersistentExchange persist;       // persistent models: the requests
  j2d::PersistMsgs* devMsgs = nullptr;   // kernel-persist: their descriptors in GPU memory
  std::vector<tether_request_t> starts;  // stream-persist: one iteration's startall list

  Buffers buffers(int k) const {
    Buffers b{field[k & 1], {}, {}};
    for (int dir = 0; dir < kDirs; ++dir) {
      b.sendBuf[dir] = sendBuf[dir];
      b.recvBuf[dir] = recvBuf[k & 1][dir];
    }
    return b;
  }
};

// Blocks of the kernel model's cooperative launch (at most one per SM, at most what the block's cells need).
int cooperativeBlocks(const Decomp& d) {
  return j2d::cooperativeBlocks(kernelModelStep, kBlock, static_cast<long>(d.lx) * d.ly);
}

double* gpuAlloc(size_t doubles) { return j2d::gpuAlloc<double>(doubles); }

void setup(tether_t w, GpuState* g, bool kernelModel) {
  g->halos = j2d::haloTable(g->d);
  g->column = j2d::columnType(g->d);
  // Non-blocking: tether's own GPU copies (the legacy default stream included) must never queue behind this stream's
  // kernels -- the kernel model's kernel waits inside for bytes that such copies bring.
  J2D_CUDA(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
  g->field[0] = gpuAlloc(g->d.cells());
  g->field[1] = gpuAlloc(g->d.cells());
  for (const Halo& h : g->halos)
    if (h.strided) {
      g->sendBuf[h.dir] = gpuAlloc(static_cast<size_t>(h.count));
      g->recvBuf[0][h.dir] = gpuAlloc(static_cast<size_t>(h.count));
      g->recvBuf[1][h.dir] = gpuAlloc(static_cast<size_t>(h.count));
    }
  // Load every kernel now (the datatype engine's and ours): a lazy module load at a first launch inside the timed
  // loop may synchronise the context (tether.h, tether_doorbell_create), stalling behind a stream that waits for a
  // message.
  J2D_CHECK_TYPE(tether_type_gpu_calibrate(0, nullptr, 0));
  cudaFuncAttributes attr;
  J2D_CUDA(cudaFuncGetAttributes(&attr, computeAll));
  J2D_CUDA(cudaFuncGetAttributes(&attr, kernelModelStep));
  if (kernelModel) {
    J2D_CHECK(tether_device_handle(w, &g->dh));
    g->coopBlocks = cooperativeBlocks(g->d);
    for (cudaEvent_t& e : g->kernelDone)
      J2D_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming | cudaEventBlockingSync));
  }
}

void teardown(GpuState* g) {
  for (cudaEvent_t e : g->kernelDone)
    if (e) J2D_CUDA(cudaEventDestroy(e));
  for (int dir = 0; dir < kDirs; ++dir)
    for (double* p : {g->sendBuf[dir], g->recvBuf[0][dir], g->recvBuf[1][dir]})
      if (p) J2D_CUDA(cudaFree(p));
  J2D_CUDA(cudaFree(g->field[0]));
  J2D_CUDA(cudaFree(g->field[1]));
  J2D_CUDA(cudaStreamDestroy(g->stream));
  J2D_CHECK_TYPE(tether_type_free(&g->column));
}

// Both iterates back to the initial values (boundary halo cells included). The stream is idle here.
void resetFields(const GpuState& g) {
  const std::vector<double> init = j2d::initialField(g.d);
  for (double* f : g.field) j2d::copyToGpu(f, init.data(), init.size());  // landed before g.stream's next kernel
}

// ---- the exchange and compute steps shared by the host and stream models ------------------------------------------

void packColumns(const GpuState& g, const Buffers& b) {
  for (const Halo& h : g.halos)
    if (h.strided) {
      int64_t done = 0;
      J2D_CHECK_TYPE(tether_type_pack_async(g.column, 1, b.field + h.sendAt, 0, static_cast<int64_t>(h.bytes()),
                                            b.sendBuf[h.dir], &done, g.stream));
    }
}

void unpackColumns(const GpuState& g, const Buffers& b) {
  for (const Halo& h : g.halos)
    if (h.strided) {
      int64_t done = 0;
      J2D_CHECK_TYPE(tether_type_unpack_async(g.column, 1, b.recvBuf[h.dir], 0, static_cast<int64_t>(h.bytes()),
                                              b.field + h.recvAt, &done, g.stream));
    }
}

void computeOnStream(const GpuState& g, int k) {
  const dim3 block(32, 8);
  const dim3 grid((static_cast<unsigned>(g.d.lx) + 31) / 32, (static_cast<unsigned>(g.d.ly) + 7) / 8);
  computeAll<<<grid, block, 0, g.stream>>>(g.field[k & 1], g.field[(k + 1) & 1], g.d.pitch(), g.d.lx, g.d.ly);
  J2D_CUDA(cudaGetLastError());
}

// ---- the models: one iteration each --------------------------------------------------------------------------------

// The pieces of iteration k that app_gpu.cuh's host, stream and persistent models run: pack the columns, (no overlap),
// unpack + compute.
void packStep(const GpuState& g, int k) { packColumns(g, g.buffers(k)); }
void overlapStep(const GpuState&, int) {}
void finishStep(const GpuState& g, int k) {
  unpackColumns(g, g.buffers(k));
  computeOnStream(g, k);
}

// The kernel's view of halo i of iteration k, with the descriptors of its prepared send and its receive.
DevHalo devHalo(const Buffers& b, const Halo& h, const j2d::KernelMsgs& msg) {
  DevHalo dh{};
  dh.msg = msg;
  dh.count = h.count;
  if (h.strided) {
    dh.packFrom = b.field + h.sendAt;
    dh.unpackTo = b.field + h.recvAt;
    dh.sendBuf = b.sendBuf[h.dir];
    dh.recvBuf = b.recvBuf[h.dir];
  }
  return dh;
}

// The kernel's arguments of iteration k without messages.
StepArgs stepArgs(const GpuState& g, int k) {
  StepArgs a{};
  a.u = g.field[k & 1];
  a.v = g.field[(k + 1) & 1];
  a.pitch = g.d.pitch();
  a.lx = g.d.lx;
  a.ly = g.d.ly;
  a.nh = static_cast<int>(g.halos.size());
  return a;
}

void kernelStep(tether_t w, GpuState& g, int k, Pending* pending) {
  const Buffers b = g.buffers(k);
  j2d::kernelIteration(w, g, k, pending, kernelModelStep, kBlock, stepArgs(g, k),
                       [&](StepArgs& a, size_t i, const j2d::KernelMsgs& m) { a.halo[i] = devHalo(b, g.halos[i], m); });
}

void kernelPersistStep(tether_t w, GpuState& g, int k, Pending*) {
  const Buffers b = g.buffers(k);
  StepArgs a = stepArgs(g, k);
  for (size_t i = 0; i < g.halos.size(); ++i) a.halo[i] = devHalo(b, g.halos[i], j2d::KernelMsgs{});
  j2d::kernelPersistIteration(w, g, k, kernelModelStep, kBlock, a);
}

using Model = j2d::Model<GpuState>;

}  // namespace

int main(int argc, char** argv) {
  const j2d::Options o = j2d::parseOptions(argc, argv);
  const std::vector<Model> run =
      j2d::selectModels<GpuState>(o.model, argv[0], j2d::gpuModels<GpuState>(kernelStep, kernelPersistStep));
  tether_t w;
  J2D_CHECK(tether_init(&w));
  const int me = tether_my_pe(w);
  if (j2d::skipWithoutGpu(w)) return 77;
  GpuState g;
  g.d = j2d::decomposeWorld(w, o.n);
  J2D_CHECK(tether_msg_init(w, nullptr));
  bool kernelModel = false;
  for (const Model& m : run) kernelModel = kernelModel || m.step == kernelStep || m.step == kernelPersistStep;
  setup(w, &g, kernelModel);
  const std::vector<double> reference = j2d::serialJacobi(o.n, o.warmup + o.iters);
  if (me == 0) j2d::printHeader();
  bool pass = true;
  for (size_t i = 0; i < run.size(); ++i) {
    J2D_CHECK(tether_barrier_all(w));
    const j2d::Result r =
        j2d::runModel(w, g, run[i], o, [&] { resetFields(g); },
                      [&](const std::vector<double>& result) { return j2d::maxError(g.d, result.data(), reference); });
    if (!(r.maxErr <= j2d::kTolerance))
      std::fprintf(stderr, "PE %d (block %d,%d), model %s: max error %.3g against the serial Jacobi: FAIL\n", me,
                   g.d.rx, g.d.ry, run[i].name, r.maxErr);
    pass = j2d::report(w, run[i].name, static_cast<int>(i), g.d, r) && pass;
  }
  teardown(&g);
  J2D_CHECK(tether_msg_finalize(w));
  J2D_CHECK(tether_finalize(w));
  if (me == 0) std::printf("jacobi2d: %s\n", pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}
