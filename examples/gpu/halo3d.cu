// A CoMD/LULESH-like multi-neighbour exchange on GPUs over tether's two-sided messaging (issue #20; docs/msg.md
// "Applications"): a periodic 3-D field over a px x py x pz grid of PEs, halos to the 6 face neighbours or to all 26
// neighbours (faces, edges, corners: LULESH's exchange), in the three execution models of tether/msg.h, each checked
// exactly against a serial run of the whole field computed on the host of every PE:
//
//   tetherrun -n 8 ./tether_halo3d --n 48 --iters 50 --warmup 5 --model all          (2x2x2, 26 neighbours)
//   tetherrun -n 2 ./tether_halo3d --grid 1x1x2 --neighbours 6 --model kernel        (x and y: self-sends)
//   (--model host | stream | stream-post | kernel | host-persist | stream-persist | kernel-persist | all: every one
//   in turn on the same problem)
//
// Problem, decomposition, halo table, update rule and check: halo3d_common.h. Each PE keeps two copies of its block
// with a one-cell ghost layer in GPU memory (cudaMalloc: messaging takes any buffer), one packed send buffer and two
// packed receive buffers (by step parity, for the reasons jacobi2d.cu gives: the stream and kernel models post the
// receives of step k + 1 while the GPU may still unpack those of step k). Every halo is a box of cells (a face plane,
// an edge line or a corner cell), packed and unpacked by our own kernels: ONE launch packs (or unpacks) every halo,
// a block row per halo, rather than one datatype-engine launch per halo (26 a step). --pack datatype has the host and
// stream models pack and unpack with the datatype engine instead (a committed 3-D tether_type_subarray per box,
// tether_type_pack_async / unpack_async on the stream; the kernel model keeps its own loops). The send buffer is
// single: every model completes the sends of step k before step k + 1 packs again.
//
// Every step has the seed's shape: post a receive from every neighbour, pack, send to every neighbour, compute the
// inner cells (they read no ghost), wait, unpack, compute the shell cells. Per model:
//  host    irecv xN (host) | pack (stream) | cudaStreamSynchronize | isend xN | inner cells (stream) | waitall (host)
//          | unpack, shell cells (stream).
//  stream  irecv xN (host) | pack, isend_on_stream xN, inner cells, waitall_on_stream (receives and sends), unpack,
//          shell cells, all on the stream | the host frees step k - 1's requests (tether_msg_waitall, which does not
//          wait for the stream) and never synchronises the stream inside the loop.
//  stream-post  the same with prepared sends: tether_send_prepare xN on the host, ONE tether_msg_post_all_on_stream.
//  kernel  irecv xN + wait descriptors, send_prepare xN + send/wait descriptors (host) | ONE cooperative kernel: pack,
//          msg_send xN (block 0), inner cells (every block), msg_wait on receives and sends (block 0), grid.sync,
//          unpack, grid.sync, shell cells | the host waits for step k - 1's kernel (event) and frees its requests.
// The persistent models (persist_common.h: a send and a receive per halo and step parity made once per run, tags by
// parity, receives started one step ahead in the stream and kernel models):
//  host-persist    startall (receives) | pack | cudaStreamSynchronize | startall (sends) | inner | waitall (host) |
//                  unpack, shell: three messaging calls a step.
//  stream-persist  pack, ONE startall_on_stream (the sends, the next step's receives), inner, ONE
//                  waitall_on_stream, unpack, shell, all on the stream: two messaging calls, no host wait in the loop.
//  kernel-persist  the kernel model's kernel with one descriptor per request for the whole run: block 0 starts the
//                  next step's receives at the kernel's beginning, the sends after the pack and waits for the round
//                  (msg_start / msg_wait with the round number): no messaging call on the host.
// N = 26 or 6; with 26 a step keeps 52 requests, two steps 104 of the 4096 stream-area words a PE has; the persistent
// models hold 4N requests (both parities) of them for a run.
//
// Timing (app_gpu.cuh): per step, the interval between CUDA events recorded on the stream at each step's start;
// step_us is the median over the timed steps, cpu_us the process CPU time (every thread, tether's progress thread
// included) over the timed loop per step. PE 0 prints the largest values over the PEs (table + one JSON line a model).
//
// Not run on a GPU yet: written and compiled on a machine without one; its halo logic runs in host memory in
// halo3d_cpu.cpp (ctests example_halo3d_cpu_*).
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <string>
#include <vector>

#include "app_gpu.cuh"
#include "halo3d_common.h"
#include "tether/msg_device.cuh"

namespace {

using h3d::Buffers;
using h3d::cell_t;
using h3d::Decomp;
using h3d::Geom;
using h3d::Halo;
using h3d::kMaxHalos;
using j2d::Pending;

constexpr int kBlock = 256;  // threads per block of every kernel

// ---- kernels ------------------------------------------------------------------------------------------------------

// The static part of a halo as kernels see it (device memory, written once per run).
struct HaloBoxes {
  h3d::Box send, recv;
  int offset;  // in the packed buffers, in cells
  int count;
};

__device__ __forceinline__ void packRange(const Geom& g, const HaloBoxes& h, const cell_t* u, cell_t* send, int first,
                                          int stride) {
  for (int j = first; j < h.count; j += stride) send[h.offset + j] = u[g.boxCell(h.send, j)];
}
__device__ __forceinline__ void unpackRange(const Geom& g, const HaloBoxes& h, const cell_t* recv, cell_t* u,
                                            int first, int stride) {
  for (int j = first; j < h.count; j += stride) u[g.boxCell(h.recv, j)] = recv[h.offset + j];
}
__device__ __forceinline__ void innerRange(const Geom& g, const cell_t* u, cell_t* v, int first, int stride) {
  int x, y, z;
  for (int t = first; t < h3d::innerCells(g); t += stride) {
    h3d::innerCell(g, t, &x, &y, &z);
    h3d::updateCell(g, u, v, x, y, z);
  }
}
__device__ __forceinline__ void shellRange(const Geom& g, const cell_t* u, cell_t* v, int first, int stride) {
  int x, y, z;
  for (int t = first; t < h3d::shellCells(g); t += stride) {
    h3d::shellCell(g, t, &x, &y, &z);
    h3d::updateCell(g, u, v, x, y, z);
  }
}

__device__ __forceinline__ int threadRank() { return static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); }
__device__ __forceinline__ int threadCount() { return static_cast<int>(gridDim.x * blockDim.x); }

// Host and stream models. Pack / unpack: block row blockIdx.y handles halo blockIdx.y.
__global__ void packHalos(Geom g, const HaloBoxes* boxes, const cell_t* u, cell_t* send) {
  packRange(g, boxes[blockIdx.y], u, send, threadRank(), threadCount());
}
__global__ void unpackHalos(Geom g, const HaloBoxes* boxes, const cell_t* recv, cell_t* u) {
  unpackRange(g, boxes[blockIdx.y], recv, u, threadRank(), threadCount());
}
__global__ void computeInner(Geom g, const cell_t* u, cell_t* v) { innerRange(g, u, v, threadRank(), threadCount()); }
__global__ void computeShell(Geom g, const cell_t* u, cell_t* v) { shellRange(g, u, v, threadRank(), threadCount()); }

struct StepArgs {
  Geom g;
  const HaloBoxes* boxes;
  cell_t* u;  // read, and its ghosts written by the unpack
  cell_t* v;
  cell_t* send;
  const cell_t* recv;
  int nh;
  j2d::KernelMsgs msg[kMaxHalos];   // kernel: the halos' send and receive descriptors
  const j2d::PersistMsgs* persist;  // kernel-persist: the halos' descriptors (GPU memory); null: prepared messages
  j2d::RoundPlan plan;              // kernel-persist: this step's requests and starts
};

// The kernel model: a whole step in one kernel, launched cooperatively (every block resident) because its phases need
// grid-wide order: every pack before the sends start, every receive complete before any block unpacks, every unpack
// before the shell is computed (grid.sync between them). The messaging is done by block 0 alone (msg_send / msg_wait
// at block scope: one thread polls each completion word; the other blocks compute the inner cells meanwhile and then
// wait at the grid sync). Stores that a send carries are made visible at system scope by each storing thread
// (__threadfence_system) before the grid sync that precedes msg_send, whose release store then starts the copy. The
// same structure as jacobi2d.cu's kernel, which ran on an H200. kernel-persist (a.persist set) runs the same kernel
// with persistent requests: block 0 first starts the receives its RoundPlan names (their buffers are free: the
// previous kernel has ended), starts the step's sends where msg_send stands and waits for the step's round where
// msg_wait stands.
__global__ void kernelModelStep(tether_device_handle_t h, StepArgs a) {
  namespace cg = cooperative_groups;
  using tether::device::Scope;
  cg::grid_group grid = cg::this_grid();
  const int tid = threadRank(), nth = threadCount();
  if (blockIdx.x == 0 && a.persist) j2d::startReceives<Scope::Block>(h, a.persist, a.nh, a.plan);
  for (int i = 0; i < a.nh; ++i) packRange(a.g, a.boxes[i], a.u, a.send, tid, nth);
  __threadfence_system();
  grid.sync();
  if (blockIdx.x == 0 && a.persist) j2d::startSends<Scope::Block>(h, a.persist, a.nh, a.plan);
  if (blockIdx.x == 0 && !a.persist)
    for (int i = 0; i < a.nh; ++i) tether::device::msg_send<Scope::Block>(h, a.msg[i].send);
  innerRange(a.g, a.u, a.v, tid, nth);  // reads no ghost: overlaps the messages
  if (blockIdx.x == 0 && a.persist) j2d::waitRound<Scope::Block>(h, a.persist, a.nh, a.plan);
  if (blockIdx.x == 0 && !a.persist)
    for (int i = 0; i < a.nh; ++i) {
      tether::device::msg_wait<Scope::Block>(h, a.msg[i].received);
      tether::device::msg_wait<Scope::Block>(h, a.msg[i].sent);  // the next kernel packs into the send buffer again
    }
  grid.sync();
  for (int i = 0; i < a.nh; ++i) unpackRange(a.g, a.boxes[i], a.recv, a.u, tid, nth);
  grid.sync();
  shellRange(a.g, a.u, a.v, tid, nth);
}

// ---- per-PE state ---------------------------------------------------------------------------------------------

struct GpuState {
  Decomp d;
  Geom g;
  std::vector<Halo> halos;
  int maxCount = 0;  // cells of the largest halo
  bool datatype = false;  // --pack datatype: the host and stream models pack with the datatype engine
  h3d::HaloTypes types;
  cudaStream_t stream = nullptr;
  cell_t* field[2] = {};
  cell_t* sendBuf = nullptr;
  cell_t* recvBuf[2] = {};  // by step parity
  HaloBoxes* boxes = nullptr;
  tether_device_handle_t dh{};     // kernel models
  int coopBlocks = 0;              // kernel models: blocks of the cooperative launch
  cudaEvent_t kernelDone[2] = {};  // kernel model: after step k's kernel, by parity
  long calls = 0;                  // messaging calls of the steps (J2D_MSG)
  int total = 0;                   // persistent models: steps of the run
  j2d::PersistentExchange persist;       // persistent models: the requests
  j2d::PersistMsgs* devMsgs = nullptr;   // kernel-persist: their descriptors in GPU memory
  std::vector<tether_request_t> starts;  // stream-persist: one step's startall list

  Buffers buffers(int k) const { return Buffers{sendBuf, recvBuf[k & 1]}; }
};

void pack(const GpuState& g, int k);
void unpack(const GpuState& g, int k);

void setup(tether_t w, GpuState* g, bool kernelModel) {
  g->halos = h3d::haloTable(g->d);
  g->g = g->d.geom();
  // Non-blocking: tether's own GPU copies must never queue behind this stream's kernels (jacobi2d.cu).
  J2D_CUDA(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
  g->field[0] = j2d::gpuAlloc<cell_t>(g->d.cells());
  g->field[1] = j2d::gpuAlloc<cell_t>(g->d.cells());
  const size_t packed = h3d::haloCells(g->halos);
  g->sendBuf = j2d::gpuAlloc<cell_t>(packed);
  g->recvBuf[0] = j2d::gpuAlloc<cell_t>(packed);
  g->recvBuf[1] = j2d::gpuAlloc<cell_t>(packed);
  std::vector<HaloBoxes> boxes;
  for (const Halo& h : g->halos) {
    boxes.push_back(HaloBoxes{h.send, h.recv, static_cast<int>(h.offset), h.count()});
    g->maxCount = std::max(g->maxCount, h.count());
  }
  g->boxes = j2d::gpuAlloc<HaloBoxes>(boxes.size());
  j2d::copyToGpu(g->boxes, boxes.data(), boxes.size());
  // Load every kernel now (docs/msg.md "Load your kernels first"): a lazy module load at a first launch inside the
  // loop may synchronise the context, which then waits for a pending stream or kernel wait: a hang.
  cudaFuncAttributes attr;
  J2D_CUDA(cudaFuncGetAttributes(&attr, packHalos));
  J2D_CUDA(cudaFuncGetAttributes(&attr, unpackHalos));
  J2D_CUDA(cudaFuncGetAttributes(&attr, computeInner));
  J2D_CUDA(cudaFuncGetAttributes(&attr, computeShell));
  J2D_CUDA(cudaFuncGetAttributes(&attr, kernelModelStep));
  if (g->datatype) {
    // The engine's kernels, and each type's device metadata (built at its first GPU use), before any wait.
    g->types = h3d::haloTypes(g->d, g->halos);
    J2D_CHECK_TYPE(tether_type_gpu_calibrate(0, nullptr, 0));
    pack(*g, 0);
    unpack(*g, 0);
    J2D_CUDA(cudaStreamSynchronize(g->stream));
  }
  if (kernelModel) {
    J2D_CHECK(tether_device_handle(w, &g->dh));
    const long cells = static_cast<long>(g->d.l[0]) * g->d.l[1] * g->d.l[2];
    g->coopBlocks = j2d::cooperativeBlocks(kernelModelStep, kBlock, cells);
    for (cudaEvent_t& e : g->kernelDone)
      J2D_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming | cudaEventBlockingSync));
  }
}

void teardown(GpuState* g) {
  h3d::freeHaloTypes(&g->types);
  for (cudaEvent_t e : g->kernelDone)
    if (e) J2D_CUDA(cudaEventDestroy(e));
  for (void* p : {static_cast<void*>(g->field[0]), static_cast<void*>(g->field[1]), static_cast<void*>(g->sendBuf),
                  static_cast<void*>(g->recvBuf[0]), static_cast<void*>(g->recvBuf[1]), static_cast<void*>(g->boxes)})
    J2D_CUDA(cudaFree(p));
  J2D_CUDA(cudaStreamDestroy(g->stream));
}

// Both copies back to the initial values (ghosts poisoned). The stream is idle here.
void resetFields(const GpuState& g) {
  const std::vector<cell_t> init = h3d::initialField(g.d);
  for (cell_t* f : g.field) j2d::copyToGpu(f, init.data(), init.size());  // landed before g.stream's next kernel
}

// ---- the stream-ordered pieces of the host and stream models ------------------------------------------------------

unsigned blocksFor(long work) {
  return static_cast<unsigned>(std::max(1L, std::min(1024L, (work + kBlock - 1) / kBlock)));
}

void pack(const GpuState& g, int k) {
  for (size_t i = 0; g.datatype && i < g.halos.size(); ++i) {
    const Halo& h = g.halos[i];
    int64_t done = 0;
    J2D_CHECK_TYPE(tether_type_pack_async(g.types.send[i], 1, g.field[k & 1], 0, static_cast<int64_t>(h.bytes()),
                                          g.sendBuf + h.offset, &done, g.stream));
  }
  if (g.datatype) return;
  const dim3 grid(blocksFor(g.maxCount), static_cast<unsigned>(g.halos.size()));
  packHalos<<<grid, kBlock, 0, g.stream>>>(g.g, g.boxes, g.field[k & 1], g.sendBuf);
  J2D_CUDA(cudaGetLastError());
}
void unpack(const GpuState& g, int k) {
  for (size_t i = 0; g.datatype && i < g.halos.size(); ++i) {
    const Halo& h = g.halos[i];
    int64_t done = 0;
    J2D_CHECK_TYPE(tether_type_unpack_async(g.types.recv[i], 1, g.recvBuf[k & 1] + h.offset, 0,
                                            static_cast<int64_t>(h.bytes()), g.field[k & 1], &done, g.stream));
  }
  if (g.datatype) return;
  const dim3 grid(blocksFor(g.maxCount), static_cast<unsigned>(g.halos.size()));
  unpackHalos<<<grid, kBlock, 0, g.stream>>>(g.g, g.boxes, g.recvBuf[k & 1], g.field[k & 1]);
  J2D_CUDA(cudaGetLastError());
}
void inner(const GpuState& g, int k) {
  computeInner<<<blocksFor(h3d::innerCells(g.g)), kBlock, 0, g.stream>>>(g.g, g.field[k & 1], g.field[(k + 1) & 1]);
  J2D_CUDA(cudaGetLastError());
}
void shell(const GpuState& g, int k) {
  computeShell<<<blocksFor(h3d::shellCells(g.g)), kBlock, 0, g.stream>>>(g.g, g.field[k & 1], g.field[(k + 1) & 1]);
  J2D_CUDA(cudaGetLastError());
}

// ---- the models: one step each ------------------------------------------------------------------------------------

// The pieces of step k that app_gpu.cuh's host, stream and persistent models run: pack, inner cells (overlapping the
// messages), unpack + shell cells.
void packStep(const GpuState& g, int k) { pack(g, k); }
void overlapStep(const GpuState& g, int k) { inner(g, k); }
void finishStep(const GpuState& g, int k) {
  unpack(g, k);
  shell(g, k);
}

// The kernel's arguments of step k without messages.
StepArgs stepArgs(const GpuState& g, int k) {
  const Buffers b = g.buffers(k);
  StepArgs a{};
  a.g = g.g;
  a.boxes = g.boxes;
  a.u = g.field[k & 1];
  a.v = g.field[(k + 1) & 1];
  a.send = b.send;
  a.recv = b.recv;
  a.nh = static_cast<int>(g.halos.size());
  return a;
}

void kernelStep(tether_t w, GpuState& g, int k, Pending* pending) {
  j2d::kernelIteration(w, g, k, pending, kernelModelStep, kBlock, stepArgs(g, k),
                       [](StepArgs& a, size_t i, const j2d::KernelMsgs& m) { a.msg[i] = m; });
}

void kernelPersistStep(tether_t w, GpuState& g, int k, Pending*) {
  j2d::kernelPersistIteration(w, g, k, kernelModelStep, kBlock, stepArgs(g, k));
}

using Model = j2d::Model<GpuState>;

}  // namespace

int main(int argc, char** argv) {
  const h3d::Options o = h3d::parseOptions(argc, argv);
  const std::vector<Model> run =
      j2d::selectModels<GpuState>(o.base.model, argv[0], j2d::gpuModels<GpuState>(kernelStep, kernelPersistStep));
  tether_t w;
  J2D_CHECK(tether_init(&w));
  const int me = tether_my_pe(w);
  if (j2d::skipWithoutGpu(w)) return 77;
  GpuState g;
  g.d = h3d::decomposeWorld(w, o);
  g.datatype = o.datatype;
  J2D_CHECK(tether_msg_init(w, nullptr));
  bool kernelModel = false;
  for (const Model& m : run) kernelModel = kernelModel || m.step == kernelStep || m.step == kernelPersistStep;
  setup(w, &g, kernelModel);
  const std::vector<cell_t> reference = h3d::serialSteps(g.d.n, g.d.neighbours, o.base.warmup + o.base.iters);
  if (me == 0) h3d::printHeader();
  bool pass = true;
  for (size_t i = 0; i < run.size(); ++i) {
    J2D_CHECK(tether_barrier_all(w));
    const j2d::Result r = j2d::runModel(w, g, run[i], o.base, [&] { resetFields(g); },
                                        [&](const std::vector<cell_t>& result) {
                                          return static_cast<double>(h3d::badCells(g.d, result.data(), reference));
                                        });
    h3d::complain(w, g.d, run[i].name, static_cast<long>(r.maxErr));
    const bool kernelPacks = run[i].step == kernelStep || run[i].step == kernelPersistStep;
    const char* packer = g.datatype && !kernelPacks ? "datatype" : "box";
    pass = h3d::report(w, run[i].name, packer, static_cast<int>(i), g.d, r) && pass;
  }
  teardown(&g);
  J2D_CHECK(tether_msg_finalize(w));
  J2D_CHECK(tether_finalize(w));
  if (me == 0) std::printf("halo3d: %s\n", pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}
