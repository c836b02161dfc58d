// The GPU-side driver code that the messaging applications (jacobi2d.cu, halo3d.cu; docs/msg.md "Applications")
// share: the CUDA error check and allocation, the skip without a GPU, the freeing of the requests an iteration leaves
// one iteration late, the host and stream models' iterations (the application gives its pack, overlapping work and
// finish as callables), the kernel model's prepared messages, cooperative launch and request freeing, the persistent
// models' iterations and set-up (persist_common.h), and the timed run of one model (CUDA events on the application's
// stream, process CPU time, messaging calls per iteration). An application's state has `halos`, `stream`,
// `buffers(k)`, `field[2]`, `d.cells()`, `calls` (J2D_MSG's counter) and, for the persistent models, `persist`,
// `total`, `devMsgs` and `starts`; its halo and buffer types have sendPtr / recvPtr next to them (jacobi2d_common.h,
// halo3d_common.h). The model table and --model selection are in jacobi2d_common.h (shared with the CPU twins).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include "jacobi2d_common.h"
#include "persist_common.h"
#include "tether/msg_device.cuh"

#define J2D_CUDA(call)                                                                                \
  do {                                                                                                \
    const cudaError_t e_ = (call);                                                                    \
    if (e_ != cudaSuccess) j2d::die(__FILE__, __LINE__, #call, "CUDA error", cudaGetErrorString(e_)); \
  } while (0)

namespace j2d {

template <class T>
T* gpuAlloc(size_t elements) {
  void* p = nullptr;
  J2D_CUDA(cudaMalloc(&p, elements * sizeof(T)));
  return static_cast<T*>(p);
}

// Host memory into GPU memory, landed when this returns. A cudaMemcpy from pageable memory may return before its DMA
// lands (CUDA runtime API, "API synchronization behavior"), and the applications' streams are non-blocking (not
// ordered after the legacy default stream that DMA runs on): a kernel on them could still read the old contents --
// e.g. a model's first step reading the previous model's final field instead of the reset one.
template <class T>
void copyToGpu(T* dev, const T* host, size_t elements) {
  J2D_CUDA(cudaMemcpy(dev, host, elements * sizeof(T), cudaMemcpyHostToDevice));
  J2D_CUDA(cudaStreamSynchronize(cudaStreamLegacy));
}

template <class T>
std::vector<T> copyToHost(const T* dev, size_t elements) {
  std::vector<T> h(elements);
  J2D_CUDA(cudaMemcpy(h.data(), dev, elements * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

// When this process sees no GPU: PE 0 says SKIP, the PE finalizes and the caller should exit 77 (ctest's SKIP).
inline bool skipWithoutGpu(tether_t w) {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0) return false;
  if (tether_my_pe(w) == 0) std::printf("SKIP: no GPU visible\n");
  J2D_CHECK(tether_finalize(w));
  return true;
}

// Completes and frees the requests p holds (tether_msg_waitall); calls: J2D_MSG's counter.
inline void freeRequests(tether_t w, Pending* p, long* calls) {
  if (p->n) J2D_MSG(calls, tether_msg_waitall(w, p->n, p->reqs, nullptr));
  p->n = 0;
}

// The sends of a stream-model iteration, from sendPtr(halo, b) (found next to the halo type). prepared = false: each
// starts on the stream with tether_isend_on_stream after the work that fill() enqueues (the pack). prepared = true
// (model "stream-post"): the host prepares them before fill() (tether_send_prepare: bookkeeping only, the buffer may
// still be written) and ONE tether_msg_post_all_on_stream starts them after it (libmp's mp_isend_post_all_on_stream).
template <class HaloT, class BuffersT, class Fill>
void streamSends(tether_t w, const std::vector<HaloT>& halos, const BuffersT& b, cudaStream_t stream, bool prepared,
                 tether_request_t* sends, long* calls, Fill fill) {
  const size_t nh = halos.size();
  for (size_t i = 0; prepared && i < nh; ++i) {
    const HaloT& h = halos[i];
    J2D_MSG(calls, tether_send_prepare(w, sendPtr(h, b), h.bytes(), h.peer, h.sendTag(), &sends[i]));
  }
  fill();
  if (prepared) J2D_MSG(calls, tether_msg_post_all_on_stream(w, nh, sends, stream));
  for (size_t i = 0; !prepared && i < nh; ++i) {
    const HaloT& h = halos[i];
    J2D_MSG(calls, tether_isend_on_stream(w, sendPtr(h, b), h.bytes(), h.peer, h.sendTag(), stream, &sends[i]));
  }
}

// The host model's iteration k on state g (g.halos, g.stream, g.buffers(k)): receives posted; pack() enqueued; the
// stream synchronised (the packed halos, and the halo cells the previous iteration computed); the sends started from
// the host; overlap() enqueued (work that needs no halo, e.g. inner cells); every request waited for on the host;
// finish() enqueued (unpack and the rest).
template <class State, class Pack, class Overlap, class Finish>
void hostIteration(tether_t w, State& g, int k, Pack pack, Overlap overlap, Finish finish) {
  const auto b = g.buffers(k);
  const size_t nh = g.halos.size();
  tether_request_t reqs[Pending::kMax];
  postReceives(w, g.halos, b, reqs, &g.calls);
  pack();
  J2D_CUDA(cudaStreamSynchronize(g.stream));
  postSends(w, g.halos, b, reqs + nh, &g.calls);
  overlap();
  J2D_MSG(&g.calls, tether_msg_waitall(w, 2 * nh, reqs, nullptr));
  finish();
}

// The stream model's iteration k (prepared = true: "stream-post"), all on g.stream but the receives: receives posted
// from the host; pack() and the sends (streamSends); overlap(); ONE tether_msg_waitall_on_stream over receives
// (finish() needs the halo) and sends (the next iteration rewrites their buffers); finish(). The host never waits for
// the stream: it frees iteration k - 1's requests (tether_msg_waitall, which does not wait for the stream).
template <class State, class Pack, class Overlap, class Finish>
void streamIteration(tether_t w, State& g, int k, Pending* pending, bool prepared, Pack pack, Overlap overlap,
                     Finish finish) {
  const auto b = g.buffers(k);
  const size_t nh = g.halos.size();
  Pending& p = pending[k & 1];
  postReceives(w, g.halos, b, p.reqs, &g.calls);
  streamSends(w, g.halos, b, g.stream, prepared, p.reqs + nh, &g.calls, pack);
  p.n = 2 * nh;
  overlap();
  J2D_MSG(&g.calls, tether_msg_waitall_on_stream(w, p.n, p.reqs, g.stream));
  finish();
  freeRequests(w, &pending[(k + 1) & 1], &g.calls);
}

// host-persist, iteration k (persist_common.h's persistentHostIteration): the stream is synchronised after pack().
template <class State, class Pack, class Overlap, class Finish>
void hostPersistIteration(tether_t w, State& g, int k, Pack pack, Overlap overlap, Finish finish) {
  persistentHostIteration(
      w, g.persist, k, &g.calls,
      [&] {
        pack();
        J2D_CUDA(cudaStreamSynchronize(g.stream));
      },
      overlap, finish);
}

// stream-persist, iteration k, all on g.stream: pack(); ONE tether_msg_startall_on_stream of the iteration's sends and
// the receives roundPlan starts (those of the next iteration; at k == 0 also its own); overlap(); ONE
// tether_msg_waitall_on_stream of the iteration's receives and sends; finish(). Two messaging calls; the host never
// waits in the loop (the end of the run completes the requests for the host: freePersistent).
template <class State, class Pack, class Overlap, class Finish>
void streamPersistIteration(tether_t w, State& g, int k, Pack pack, Overlap overlap, Finish finish) {
  const RoundPlan plan = roundPlan(k, g.total);
  pack();
  streamStarts(g.persist, plan, &g.starts);
  J2D_MSG(&g.calls, tether_msg_startall_on_stream(w, g.starts.size(), g.starts.data(), g.stream));
  overlap();
  std::vector<tether_request_t>& mine = g.persist.reqs[plan.parity];
  J2D_MSG(&g.calls, tether_msg_waitall_on_stream(w, mine.size(), mine.data(), g.stream));
  finish();
}

// kernel-persist's begin and the persistent models' end on the GPU (Model::begin / end; beginPersist is
// persist_common.h's): kernel-persist also takes the descriptors once and copies them to g.devMsgs (GPU memory, read
// by every iteration's kernel). End: after the stream is through, complete and free the requests.
template <class State>
void beginKernelPersistGpu(tether_t w, State& g, int total) {
  beginPersist(w, g, total);
  const std::vector<PersistMsgs> m = persistMsgs(w, g.persist);
  g.devMsgs = gpuAlloc<PersistMsgs>(std::max<size_t>(m.size(), 1));
  if (!m.empty()) copyToGpu(g.devMsgs, m.data(), m.size());
}
template <class State>
void endPersistGpu(tether_t w, State& g) {
  freePersistent(w, &g.persist);
  if (g.devMsgs) J2D_CUDA(cudaFree(g.devMsgs));
  g.devMsgs = nullptr;
}

// The kernel model's messages of one halo of one iteration, as its kernel takes them.
struct KernelMsgs {
  tether_msg_send_desc_t send;      // starts the halo's prepared send
  tether_msg_wait_desc_t sent;      // that send is complete (its buffer may be rewritten)
  tether_msg_wait_desc_t received;  // the halo's receive (request recv) is complete
};

// Prepares halo h's send of this iteration (from sendPtr(h, b), request *send) and takes the descriptors of it and
// of the halo's posted receive `recv`.
template <class HaloT, class BuffersT>
KernelMsgs prepareKernelMsgs(tether_t w, const HaloT& h, const BuffersT& b, tether_request_t* send,
                             tether_request_t recv, long* calls) {
  KernelMsgs m{};
  J2D_MSG(calls, tether_send_prepare(w, sendPtr(h, b), h.bytes(), h.peer, h.sendTag(), send));
  J2D_MSG(calls, tether_msg_send_desc(w, *send, &m.send));
  J2D_MSG(calls, tether_msg_wait_desc(w, *send, &m.sent));
  J2D_MSG(calls, tether_msg_wait_desc(w, recv, &m.received));
  return m;
}

// The kernel model's launch of iteration k's kernel (cooperative: `blocks` blocks of `threads`, on `stream`, taking the
// device handle and the step's arguments), an event after it, then iteration k - 1's requests freed -- its kernel may
// still poll their descriptors until it ends, so the host waits for that kernel's event first (it is one kernel
// behind: the GPU already has iteration k's queued). done[2]: events by parity.
// pending == nullptr: kernel-persist, whose descriptors live as long as the run and need no freeing.
template <class Args>
void launchKernelStep(tether_t w, void (*kernel)(tether_device_handle_t, Args), int blocks, int threads,
                      cudaStream_t stream, const tether_device_handle_t& dh, const Args& args, cudaEvent_t* done, int k,
                      Pending* pending, long* calls) {
  const dim3 grid(static_cast<unsigned>(blocks)), block(static_cast<unsigned>(threads));
  J2D_CUDA(tether::device::launch_cooperative(kernel, grid, block, 0, stream, dh, args));
  if (!pending) return;
  J2D_CUDA(cudaEventRecord(done[k & 1], stream));
  Pending& prev = pending[(k + 1) & 1];
  if (prev.n) {
    J2D_CUDA(cudaEventSynchronize(done[(k + 1) & 1]));
    freeRequests(w, &prev, calls);
  }
}

// The steps of the models whose GPU work is stream work, from the application's pieces of iteration k, found by
// argument-dependent lookup next to its State: packStep(g, k) (pack the halos), overlapStep(g, k) (work that needs
// no halo) and finishStep(g, k) (unpack and the rest), each enqueued on g.stream.
template <class State>
void hostStep(tether_t w, State& g, int k, Pending*) {
  hostIteration(w, g, k, [&] { packStep(g, k); }, [&] { overlapStep(g, k); }, [&] { finishStep(g, k); });
}
template <class State, bool kPrepared>
void streamStep(tether_t w, State& g, int k, Pending* pending) {
  streamIteration(w, g, k, pending, kPrepared, [&] { packStep(g, k); }, [&] { overlapStep(g, k); },
                  [&] { finishStep(g, k); });
}
template <class State>
void hostPersistStep(tether_t w, State& g, int k, Pending*) {
  hostPersistIteration(w, g, k, [&] { packStep(g, k); }, [&] { overlapStep(g, k); }, [&] { finishStep(g, k); });
}
template <class State>
void streamPersistStep(tether_t w, State& g, int k, Pending*) {
  streamPersistIteration(w, g, k, [&] { packStep(g, k); }, [&] { overlapStep(g, k); }, [&] { finishStep(g, k); });
}

// The kernel model's step k: the receives posted, each halo's send prepared and its descriptors put into the kernel's
// arguments `a` by setMsgs(a, i, msgs), then launchKernelStep (threads per block).
template <class State, class Args, class SetMsgs>
void kernelIteration(tether_t w, State& g, int k, Pending* pending, void (*kernel)(tether_device_handle_t, Args),
                     int threads, Args a, SetMsgs setMsgs) {
  const auto b = g.buffers(k);
  const size_t nh = g.halos.size();
  Pending& p = pending[k & 1];
  postReceives(w, g.halos, b, p.reqs, &g.calls);
  for (size_t i = 0; i < nh; ++i)
    setMsgs(a, i, prepareKernelMsgs(w, g.halos[i], b, &p.reqs[nh + i], p.reqs[i], &g.calls));
  p.n = 2 * nh;
  launchKernelStep(w, kernel, g.coopBlocks, threads, g.stream, g.dh, a, g.kernelDone, k, pending, &g.calls);
}

// kernel-persist's step k: the kernel's arguments `a` get the descriptors (a.persist) and the round plan (a.plan);
// no messaging call.
template <class State, class Args>
void kernelPersistIteration(tether_t w, State& g, int k, void (*kernel)(tether_device_handle_t, Args), int threads,
                            Args a) {
  a.persist = g.devMsgs;
  a.plan = roundPlan(k, g.total);
  launchKernelStep(w, kernel, g.coopBlocks, threads, g.stream, g.dh, a, g.kernelDone, k, nullptr, &g.calls);
}

// The models of both applications, in the order --model all runs them; the application gives its kernel models'
// steps. The persistent models (persist_common.h) make their requests in begin and complete and free them in end,
// outside the timed loop.
template <class State>
std::vector<Model<State>> gpuModels(void (*kernel)(tether_t, State&, int, Pending*),
                                    void (*kernelPersist)(tether_t, State&, int, Pending*)) {
  return {{"host", hostStep<State>, nullptr, nullptr},
          {"stream", streamStep<State, false>, nullptr, nullptr},
          {"stream-post", streamStep<State, true>, nullptr, nullptr},
          {"kernel", kernel, nullptr, nullptr},
          {"host-persist", hostPersistStep<State>, beginPersist<State>, endPersistGpu<State>},
          {"stream-persist", streamPersistStep<State>, beginPersist<State>, endPersistGpu<State>},
          {"kernel-persist", kernelPersist, beginKernelPersistGpu<State>, endPersistGpu<State>}};
}

// Blocks of a cooperative launch of `kernel` with `threads` threads a block: at most one per SM (a cooperative grid
// must be resident at once, and PEs may share the GPU), at most what `work` items need, at least 1. Dies when the GPU
// has no cooperative launch.
template <class Kernel>
int cooperativeBlocks(Kernel kernel, int threads, long work) {
  int dev = 0, coop = 0, sms = 0, perSm = 0;
  J2D_CUDA(cudaGetDevice(&dev));
  J2D_CUDA(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
  if (!coop) die(__FILE__, __LINE__, "cudaDevAttrCooperativeLaunch", "the kernel model needs cooperative launch",
                 "this GPU has none");
  J2D_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  J2D_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, threads, 0));
  long blocks = std::min<long>(sms, static_cast<long>(perSm) * sms);
  blocks = std::min(blocks, (work + threads - 1) / threads);
  return static_cast<int>(std::max(1L, blocks));
}

// Runs step(k) for k = 0 .. warmup + iters - 1 and times the last iters: per iteration, the interval between CUDA
// events recorded on `stream` at the iteration's start (the GPU's timeline: it includes every host wait that delays
// the stream), the process CPU time over the timed loop (every thread, tether's progress thread included) up to the
// end of the stream and the freeing of both iterations' pending requests, and the messaging calls the timed steps
// made (*calls: J2D_MSG's counter; the freeing after the loop is not counted).
template <class Step>
Timing timeIterations(tether_t w, cudaStream_t stream, int warmup, int iters, Pending* pending, long* calls,
                      Step step) {
  std::vector<cudaEvent_t> marks(static_cast<size_t>(iters) + 1);
  for (cudaEvent_t& e : marks) J2D_CUDA(cudaEventCreate(&e));
  const int total = warmup + iters;
  double cpu0 = 0;
  long calls0 = 0;
  for (int k = 0; k < total; ++k) {
    if (k == warmup) cpu0 = cpuTimeUs(), calls0 = *calls;
    if (k >= warmup) J2D_CUDA(cudaEventRecord(marks[static_cast<size_t>(k - warmup)], stream));
    step(k);
  }
  const double callsPerStep = static_cast<double>(*calls - calls0) / iters;
  J2D_CUDA(cudaEventRecord(marks.back(), stream));
  J2D_CUDA(cudaStreamSynchronize(stream));  // first: the kernel model's last kernel uses its requests' descriptors
  freeRequests(w, &pending[0], calls);
  freeRequests(w, &pending[1], calls);
  const double cpuUs = (cpuTimeUs() - cpu0) / iters;
  std::vector<double> us;
  for (size_t t = 0; t + 1 < marks.size(); ++t) {
    float ms = 0;
    J2D_CUDA(cudaEventElapsedTime(&ms, marks[t], marks[t + 1]));
    us.push_back(1000.0 * ms);
  }
  for (cudaEvent_t e : marks) J2D_CUDA(cudaEventDestroy(e));
  return Timing{median(us), cpuUs, callsPerStep};
}

// Runs warmup + iters iterations of model m on state g from the start (reset() puts the fields back; m.begin before,
// m.end after, untimed) and times the last iters (timeIterations on g.stream); returns this PE's timings and
// error(result), result being the iterate g.field[(warmup + iters) % 2] copied to the host (g.d.cells() elements).
template <class State, class Reset, class Error>
Result runModel(tether_t w, State& g, const Model<State>& m, const Options& o, Reset reset, Error error) {
  reset();
  if (m.begin) m.begin(w, g, o.warmup + o.iters);
  Pending pending[2];
  const Timing t = timeIterations(w, g.stream, o.warmup, o.iters, pending, &g.calls,
                                  [&](int k) { m.step(w, g, k, pending); });
  if (m.end) m.end(w, g);
  return Result{error(copyToHost(g.field[(o.warmup + o.iters) & 1], g.d.cells())), t.iterUs, t.cpuUs, t.calls};
}

}  // namespace j2d
