// Stream-ordered communication benchmark (issue #6), 2 PEs under tetherrun, one GPU each, DEVICE segments.
// Rows (see bench/README.md "stream"):
//   put_on_stream        8 B tether_putmem_on_stream back to back: k enqueued, one synchronisation, per op = total / k
//   put_quiet_on_stream  8 B put + quiet_on_stream, k pairs back to back, one synchronisation (NVSHMEM perftest
//                        `latency --issue on_stream` shape), per pair
//   put_quiet_sync       8 B put + quiet_on_stream + cudaStreamSynchronize per op (latency as the host sees it)
//   put_bw, put_bw_bidir sizes --min-size .. --max-size (default 8 B .. 1 GiB): k puts + quiet_on_stream per batch;
//                        bidir = both PEs at once, total of both directions over the slower PE's time
//   put_signal_pingpong  putmem_signal_on_stream + signal_wait_until_on_stream ping-pong (8 B .. 1 MiB), one-way
//   barrier_all          barrier_all_on_stream, k back to back on both PEs, per barrier
//   prepared_pingpong    the put_signal ping-pong as a prepared set (tether_prepare, patched signal), one-way
//   prepared_put4        a prepared set of four 8 B puts posted k times, per post
//   fetch_add            atomic_fetch_add_on_stream back to back (per op) and with a synchronisation per op
//   halo                 HPGMG exchange_boundary style: pack kernel -> send -> interior kernel -> wait -> unpack
//                        kernel per iteration, CPU-synchronous / stream-ordered / kernel-initiated, with the CPU busy
//                        time of each (getrusage of the process and the main thread's CPU clock over the loop)
// The method is stream_rows.h's, shared with the NVSHMEM twin (bench/nvshmem/nvshmem_stream.cu): options, the no-GPU
// agreement, batch timing (each batch between host barriers; `us` = steady_clock from the first enqueue to the end of
// the synchronisation / ops, `gpu_us` = CUDA events on the stream around the same work / ops, `issue_us` = CPU time
// spent enqueueing / ops; statistics over batches), validation after every row outside the timed region, the
// STREAM_BENCH_TIMEOUT watchdog (a stalled batch exits 3 after printing the row's watched words), the tables, the
// JSON lines, and the rows both programs measure (put_on_stream, put_quiet_on_stream, put_quiet_sync, put_bw,
// put_bw_bidir, put_signal_pingpong, barrier_all). Exit: 0 ok, 1 wrong data, 2 failed call or bad usage, 3 stalled
// batch, 77 no GPU. This file holds tether's calls for those rows (TetherCalls, with prepared_pingpong as the
// ping-pong table's second row), tether's own rows (prepared_put4, fetch_add, the doorbell rows, the halo exchange,
// timed on its own below) and the start-up.
// --pattern ring | all-pairs (default pair, the above on exactly 2 PEs): n PEs, every PE issues at once, to next =
// (me + 1) % n or to all n - 1 others, into per-source slots each PE checks; rows put_on_stream, put_quiet_on_stream,
// put_quiet_sync, put_bw (per PE and aggregate), put_signal_pingpong (ring pass / all-pairs exchange) and barrier_all
// only (stream_rows.h; bench/README.md "Patterns").
#include <cuda_runtime.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "../cuda_check.h"
#include "harness.h"
#include "stream_rows.h"
#include "tether/device.cuh"
#include "tether/tether.h"

namespace tb = tether_bench;
namespace dev = tether::device;

namespace {

using streambench::barrier;
using streambench::beginTable;
using streambench::checkBytes;
using streambench::checkWord;
using streambench::clearDev;
using streambench::fail;
using streambench::num;
using streambench::report;
using streambench::Result;
using streambench::syncStream;
using streambench::timeBatches;
using streambench::watchRow;

// ---- kernels ------------------------------------------------------------------------------------------------------

// Halo exchange. The domain is rows x kCols uint32 (row-major); column kCols-2 is the boundary this PE sends,
// column kCols-1 the ghost column it receives: the pack is a strided gather, the unpack a strided scatter. The
// boundary value of row r at iteration i is haloVal(pe, i, r) (set by the interior kernel of iteration i-1), so the
// unpack can check every received value. The interior kernel is the local work between send and wait.
constexpr int kCols = 8;
constexpr int kHaloThreads = 256;
__host__ __device__ __forceinline__ uint32_t haloVal(int pe, uint64_t i, size_t r) {
  return (static_cast<uint32_t>(pe) * 0x9E3779B9u) ^ (static_cast<uint32_t>(i) * 2654435761u) ^
         (static_cast<uint32_t>(r) * 40503u) ^ 0x5bd1e995u;
}
// Rows [*lo, *hi) of block b: contiguous chunks, so the kernel-initiated version sends one range per block.
__device__ __forceinline__ bool haloChunk(size_t rows, size_t* lo, size_t* hi) {
  const size_t chunk = (rows + gridDim.x - 1) / gridDim.x;
  *lo = chunk * blockIdx.x;
  *hi = *lo + chunk < rows ? *lo + chunk : rows;
  return *lo < *hi;
}
__global__ void haloSetBoundary(uint32_t* dom, size_t rows, int pe, uint64_t i) {
  for (size_t r = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; r < rows;
       r += static_cast<size_t>(gridDim.x) * blockDim.x)
    dom[r * kCols + kCols - 2] = haloVal(pe, i, r);
}
// Pack (gather the boundary column into send); Send: the block then puts its chunk into the peer's recv slot and
// adds 1 to the peer's signal (device API, kernel-initiated version).
template <bool Send>
__global__ void __launch_bounds__(kHaloThreads) haloPack(dev::Handle h, const uint32_t* dom, uint32_t* send,
                                                           size_t rows, uint32_t* recvSlot, uint64_t* sig, int peer) {
  size_t lo, hi;
  if (!haloChunk(rows, &lo, &hi)) return;
  for (size_t r = lo + threadIdx.x; r < hi; r += blockDim.x) send[r] = dom[r * kCols + kCols - 2];
  if (Send) {
    __syncthreads();
    dev::putmem_signal<dev::Scope::Block>(h, recvSlot + lo, send + lo, (hi - lo) * sizeof(uint32_t), sig, 1,
                                          dev::SignalOp::Add, peer);
  }
}
// Interior work: a few FMAs per element of `work`, and the next iteration's boundary column.
__global__ void haloInterior(float* work, size_t n, uint32_t* dom, size_t rows, int pe, uint64_t next) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t k = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; k < n; k += stride) {
    float v = work[k];
#pragma unroll
    for (int j = 0; j < 8; ++j) v = v * 0.999f + 0.001f;
    work[k] = v;
  }
  for (size_t r = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; r < rows; r += stride)
    dom[r * kCols + kCols - 2] = haloVal(pe, next, r);
}
// Unpack (scatter recv into the ghost column), checking each value against what the peer packed at iteration i.
// Wait: every block first waits until the signal reaches `expect` (kernel-initiated version).
template <bool Wait>
__global__ void __launch_bounds__(kHaloThreads) haloUnpack(dev::Handle h, uint32_t* dom, const uint32_t* recvSlot,
                                                             size_t rows, int peer, uint64_t i, uint64_t* sig,
                                                             uint64_t expect, unsigned long long* bad) {
  size_t lo, hi;
  if (!haloChunk(rows, &lo, &hi)) return;
  if (Wait) dev::signal_wait_until<dev::Scope::Block>(h, sig, dev::Cmp::GE, expect);
  for (size_t r = lo + threadIdx.x; r < hi; r += blockDim.x) {
    const uint32_t v = recvSlot[r];
    dom[r * kCols + kCols - 1] = v;
    if (v != haloVal(peer, i, r)) atomicAdd(bad, 1ull);
  }
}

// ---- context ------------------------------------------------------------------------------------------------------

double cpuProcessSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}
double cpuThreadSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// stream_rows.h's context (buf, words: DEVICE symmetric) and what only tether's rows use.
struct Ctx : streambench::Ctx {
  cudaStream_t comm = nullptr;  // halo, stream model: the send runs here, beside the interior kernel on s
  cudaEvent_t done = nullptr;   // blocking-sync event (the CPU sleeps on it)
  cudaEvent_t packed = nullptr, sent = nullptr;  // halo, stream model: s -> comm and comm -> s ordering
  uint64_t* fetched = nullptr;  // cudaMalloc, iters words: fetch_add results
  void* sv() const { return static_cast<void*>(s); }
};

// ---- rows ---------------------------------------------------------------------------------------------------------

// tether's calls for stream_rows.h's rows (put_on_stream .. barrier_all), and its ping-pong variant
// prepared_pingpong: the put_signal ping-pong as a prepared set (PE 0: put_signal then wait; PE 1: wait then
// put_signal; both signal values patched per post).
struct TetherCalls {
  tether_op_set_t set = nullptr;  // prepared_pingpong, during its batches
  static void* sv(streambench::Ctx& c) { return static_cast<void*>(c.s); }
  void put(streambench::Ctx& c, void* dest, const void* src, size_t nb, int pe) {
    TK(tether_putmem_on_stream(c.w, dest, src, nb, pe, sv(c)));
  }
  void quiet(streambench::Ctx& c) { TK(tether_quiet_on_stream(c.w, sv(c))); }
  void putSignal(streambench::Ctx& c, void* dest, const void* src, size_t nb, uint64_t* sig, uint64_t v, int pe) {
    TK(tether_putmem_signal_on_stream(c.w, dest, src, nb, sig, v, TETHER_SIGNAL_SET, pe, sv(c)));
  }
  void signalWait(streambench::Ctx& c, uint64_t* sig, uint64_t v) {
    TK(tether_signal_wait_until_on_stream(c.w, sig, TETHER_CMP_GE, v, sv(c)));
  }
  void barrierAll(streambench::Ctx& c) { TK(tether_barrier_all_on_stream(c.w, sv(c))); }

  static constexpr const char* kVariantOp = "prepared_pingpong";
  static constexpr const char* kVariantNote = "one-way; set {put_signal, wait} posted per round trip";
  void variantBegin(streambench::Ctx& c, size_t nb, uint64_t* sig) {
    tether_op_desc_t ops[2];
    std::memset(ops, 0, sizeof ops);
    tether_op_desc_t& ps = ops[c.me == 0 ? 0 : 1];
    tether_op_desc_t& wt = ops[c.me == 0 ? 1 : 0];
    ps.kind = TETHER_OP_PUT_SIGNAL, ps.pe = c.peer, ps.dest = c.buf, ps.src = c.local, ps.nbytes = nb;
    ps.sig_addr = sig, ps.signal = 0, ps.sig_op = TETHER_SIGNAL_SET, ps.flags = TETHER_OP_PATCH_SIGNAL;
    wt.kind = TETHER_OP_SIGNAL_WAIT, wt.pe = c.me, wt.sig_addr = sig, wt.signal = 0, wt.cmp = TETHER_CMP_GE;
    wt.flags = TETHER_OP_PATCH_SIGNAL;
    TK(tether_prepare(c.w, ops, 2, &set));
  }
  void variantTrip(streambench::Ctx& c, uint64_t seq) {
    tether_post_patch_t patch{0, seq};
    TK(tether_post_on_stream(set, sv(c), &patch));
  }
  void variantEnd(streambench::Ctx&) {
    TK(tether_op_set_free(set));
    set = nullptr;
  }
};

void rowPrepared(Ctx& c) {
  if (!tb::wantsOp(c.o, "prepared_put4")) return;
  beginTable(c, "prepared set of four 8 B puts (tether_prepare once, tether_post_on_stream k times), PE 0 -> PE 1");
  tether_op_desc_t ops[4];
  std::memset(ops, 0, sizeof ops);
  for (int i = 0; i < 4; ++i) {
    ops[i].kind = TETHER_OP_PUT, ops[i].pe = c.peer, ops[i].dest = c.buf + 8 * i, ops[i].src = c.local + 8 * i;
    ops[i].nbytes = 8;
  }
  tether_op_set_t set = nullptr;
  TK(tether_prepare(c.w, ops, 4, &set));
  watchRow(c, "prepared_put4");
  if (c.me == 1) clearDev(c, c.buf, 32);
  const Result r = timeBatches(c, c.o.iters, c.me == 0, 1, false, [&](int n) {
    for (int i = 0; i < n; ++i) TK(tether_post_on_stream(set, c.sv(), nullptr));
  });
  TK(tether_op_set_free(set));
  if (c.me == 1) checkBytes(c, c.buf, 32, 0, "prepared_put4");
  report(c, "prepared_put4", 32, r, 0, "per post (4 puts)");
}

void rowAtomics(Ctx& c) {
  if (!tb::wantsOp(c.o, "fetch_add")) return;
  beginTable(c, "atomic_fetch_add_on_stream (uint64, +1) on PE 1's word, PE 0 issues");
  uint64_t* word = c.words + 64;
  for (int perOp = 0; perOp < 2; ++perOp) {
    const int k = perOp ? std::max(1, c.o.iters / 4) : c.o.iters;
    const char* op = perOp ? "fetch_add_sync" : "fetch_add";
    watchRow(c, op);
    clearDev(c, word, 8);
    barrier(c);
    const Result r = timeBatches(c, k, c.me == 0, 1, false, [&](int n) {
      for (int i = 0; i < n; ++i) {
        TK(tether_atomic_fetch_add_on_stream(c.w, word, 1, c.fetched + i, c.peer, c.sv()));
        if (perOp) syncStream(c);
      }
    });
    const uint64_t total = static_cast<uint64_t>(k) * static_cast<uint64_t>(c.o.warmup + c.o.batches);
    if (c.me == 1) checkWord(c, word, total, op, "final counter");
    if (c.me == 0) {  // the last batch fetched total - k, ..., total - 1
      std::vector<uint64_t> got(static_cast<size_t>(k));
      CK(cudaMemcpy(got.data(), c.fetched, got.size() * 8, cudaMemcpyDeviceToHost));
      for (int i = 0; i < k; ++i)
        if (got[static_cast<size_t>(i)] != total - static_cast<uint64_t>(k) + static_cast<uint64_t>(i)) {
          fail(c, op, 8, "fetched value " + std::to_string(i) + " of the last batch is " +
                             std::to_string(got[static_cast<size_t>(i)]));
          break;
        }
    }
    report(c, op, 8, r, 0, perOp ? "cudaStreamSynchronize per op (round trip)" : "back to back, one sync per batch");
  }
}

// ---- doorbell transfers -------------------------------------------------------------------------------------------
// Ping-pong driven by one warp of a kernel on each PE: PE 0 triggers round i then waits for the answer, PE 1 waits
// then answers. Doorbell: lane 0 rings this PE's doorbell (the copy engines send an armed put_signal); SM: the warp
// sends with the device API's warp-scope putmem_signal itself.
__global__ void pingPongKernel(dev::Handle h, bool doorbell, bool first, uint64_t* bell, uint64_t* sig, char* dest,
                               const char* src, size_t nb, int peer, uint64_t base, int n) {
  for (int i = 1; i <= n; ++i) {
    const uint64_t v = base + static_cast<uint64_t>(i);
    if (!first) dev::signal_wait_until(h, sig, dev::Cmp::GE, v);
    if (!doorbell) dev::putmem_signal<dev::Scope::Warp>(h, dest, src, nb, sig, v, dev::SignalOp::Set, peer);
    else if (threadIdx.x == 0) dev::ring_doorbell(h, bell, v);
    if (first) dev::signal_wait_until(h, sig, dev::Cmp::GE, v);
  }
}
__global__ void ringKernel(dev::Handle h, uint64_t* bell, uint64_t v) { dev::ring_doorbell(h, bell, v); }

// Arms releases base+1 .. base+n of a doorbell (signal patch i - 1 + base: the set's signal value is 1 + patch).
void armRange(tether_doorbell_t db, uint64_t base, int n) {
  for (int i = 1; i <= n; ++i) {
    const tether_post_patch_t patch{0, base + static_cast<uint64_t>(i) - 1};
    TK(tether_doorbell_arm(db, base + static_cast<uint64_t>(i), &patch));
  }
}

// doorbell_pingpong / sm_pingpong: one-way latency of a kernel-triggered put_signal, copy engines vs SMs (a warp).
// doorbell_put: bandwidth of armed puts released by one ring (PE 0 only; a self-signal after each put marks it done).
// Arms of the next batch are made after the batch is enqueued, off the GPU's critical path.
void rowDoorbell(Ctx& c, const dev::Handle& h) {
  const bool pp = tb::wantsOp(c.o, "doorbell_pingpong"), bw = tb::wantsOp(c.o, "doorbell_put");
  if (!pp && !bw) return;
  // Both ringing kernels are first launched while arms wait on the doorbell stream: loaded lazily, that launch may
  // synchronise the context and so wait for the arm it is to ring (tether.h, doorbells). Load them now.
  cudaFuncAttributes fa;
  CK(cudaFuncGetAttributes(&fa, pingPongKernel));
  CK(cudaFuncGetAttributes(&fa, ringKernel));
  uint64_t* bell = c.words + 128;
  uint64_t* sig = c.words + 136;
  uint64_t* done = c.words + 144;
  const int batches = c.o.warmup + c.o.batches;
  if (pp) {
    beginTable(c, "doorbell transfers: kernel-triggered put_signal ping-pong PE 0 <-> PE 1 (one warp of a kernel on "
                  "each PE, k round trips per batch); one-way = time / 2k; doorbell = rung, sent by copy engines; "
                  "sm = the device API's warp-scope putmem_signal from the same warp");
    for (int doorbell = 1; doorbell >= 0; --doorbell) {
      const char* op = doorbell ? "doorbell_pingpong" : "sm_pingpong";
      for (size_t nb : {size_t{8}, size_t{64} << 10}) {
        if (nb > c.o.maxSize) continue;
        const int k = std::max(1, c.o.iters / 10);
        clearDev(c, c.buf, nb);
        clearDev(c, bell, 8);
        clearDev(c, sig, 8);
        barrier(c);
        tether_op_desc_t op1;
        std::memset(&op1, 0, sizeof op1);
        op1.kind = TETHER_OP_PUT_SIGNAL, op1.pe = c.peer, op1.dest = c.buf, op1.src = c.local, op1.nbytes = nb;
        op1.sig_addr = sig, op1.signal = 1, op1.sig_op = TETHER_SIGNAL_SET, op1.flags = TETHER_OP_PATCH_SIGNAL;
        tether_op_set_t set = nullptr;
        tether_doorbell_t db = nullptr;
        if (doorbell) {
          TK(tether_prepare(c.w, &op1, 1, &set));
          TK(tether_doorbell_create(set, bell, &db));
          armRange(db, 0, k);
        }
        uint64_t base = 0;
        int calls = 0;
        watchRow(c, op, {{"doorbell word", bell}, {"signal word", sig}});
        const Result r = timeBatches(c, k, true, 2, false, [&](int n) {
          pingPongKernel<<<1, 32, 0, c.s>>>(h, doorbell != 0, c.me == 0, bell, sig, c.buf, c.local, nb, c.peer, base,
                                            n);
          base += static_cast<uint64_t>(n);
          if (doorbell && ++calls < batches) armRange(db, base, n);  // the next batch's releases
        });
        if (db) TK(tether_doorbell_free(db));
        if (set) TK(tether_op_set_free(set));
        checkBytes(c, c.buf, nb, c.peer, op);
        checkWord(c, sig, base, op, "final signal");
        report(c, op, nb, r, 0, doorbell ? "one-way; kernel rings, copy engines send" : "one-way; kernel sends");
      }
    }
  }
  if (bw) {
    beginTable(c, "doorbell transfers: k armed puts released by one ring from a kernel, PE 0 -> PE 1 (each put "
                  "followed by a self-signal in the set; the stream waits for the last)");
    for (size_t nb : {size_t{64} << 10, size_t{1} << 20, size_t{16} << 20, size_t{256} << 20, size_t{1} << 30}) {
      if (nb > c.o.maxSize) continue;
      const int k = std::max(1, nb >= (size_t{16} << 20) ? c.o.iters / 100 : c.o.iters / 10);
      clearDev(c, bell, 8);
      clearDev(c, done, 8);
      barrier(c);
      tether_op_desc_t ops[2];
      std::memset(ops, 0, sizeof ops);
      ops[0].kind = TETHER_OP_PUT, ops[0].pe = c.peer, ops[0].dest = c.buf, ops[0].src = c.local, ops[0].nbytes = nb;
      ops[1].kind = TETHER_OP_SIGNAL, ops[1].pe = c.me, ops[1].sig_addr = done, ops[1].signal = 1;
      ops[1].sig_op = TETHER_SIGNAL_SET, ops[1].flags = TETHER_OP_PATCH_SIGNAL;
      tether_op_set_t set = nullptr;
      tether_doorbell_t db = nullptr;
      if (c.me == 0) {
        TK(tether_prepare(c.w, ops, 2, &set));
        TK(tether_doorbell_create(set, bell, &db));
        armRange(db, 0, k);
      }
      uint64_t base = 0;
      int calls = 0;
      watchRow(c, "doorbell_put", {{"doorbell word", bell}, {"completion word", done}});
      const Result r = timeBatches(c, k, c.me == 0, 1, false, [&](int n) {
        ringKernel<<<1, 1, 0, c.s>>>(h, bell, base + static_cast<uint64_t>(n));
        TK(tether_signal_wait_until_on_stream(c.w, done, TETHER_CMP_GE, base + static_cast<uint64_t>(n), c.sv()));
        base += static_cast<uint64_t>(n);
        if (++calls < batches) armRange(db, base, n);
      });
      if (db) TK(tether_doorbell_free(db));
      if (set) TK(tether_op_set_free(set));
      barrier(c);
      if (c.me == 1) checkBytes(c, c.buf, nb, c.peer, "doorbell_put");
      else checkWord(c, done, base, "doorbell_put", "completion word");
      report(c, "doorbell_put", nb, r, static_cast<double>(nb), "per put; copy engines, released by one ring");
    }
  }
}

// ---- halo exchange --------------------------------------------------------------------------------------------------

enum class Model { CpuSync, Stream, Kernel };
const char* modelName(Model m) { return m == Model::CpuSync ? "cpu_sync" : (m == Model::Stream ? "stream" : "kernel"); }

struct Halo {
  size_t maxBytes = 0, workElems = size_t{4} << 20;  // interior: 4 Mi floats (16 MiB)
  uint32_t* recv = nullptr;                           // DEVICE symmetric: 2 slots of maxBytes
  uint32_t* send = nullptr;                           // cudaMalloc, maxBytes
  uint32_t* dom = nullptr;                            // cudaMalloc, rows x kCols
  float* work = nullptr;                              // cudaMalloc, workElems
  dev::Handle h{};
};

struct HaloResult {
  double iterUs = 0, cpuUs = 0, threadCpuUs = 0;
};

// One run of n iterations (1..n) of one model with halo bytes `bytes`; returns PE-local wall and CPU time per
// iteration. Both PEs run it. Double buffering by iteration parity keeps a put from overwriting a slot the peer has not
// unpacked: the put of iteration i+1 follows (in stream or CPU order) this PE's wait for the peer's iteration i, which
// the peer sent after unpacking i-1 from the same slot.
HaloResult haloRun(Ctx& c, Halo& H, Model m, size_t bytes, int n) {
  const size_t rows = bytes / sizeof(uint32_t);
  const int blocks = static_cast<int>(std::min<size_t>(128, (rows + kHaloThreads - 1) / kHaloThreads));
  const size_t chunk = (rows + static_cast<size_t>(blocks) - 1) / static_cast<size_t>(blocks);
  const uint64_t senders = (rows + chunk - 1) / chunk;  // blocks with rows (each adds 1 per iteration: kernel model)
  uint64_t* sig = c.words + (m == Model::Kernel ? 16 : 8);
  clearDev(c, sig, 8);
  haloSetBoundary<<<blocks, kHaloThreads, 0, c.s>>>(H.dom, rows, c.me, 1);
  CK(cudaGetLastError());
  syncStream(c);
  barrier(c);
  const double w0 = tb::nowSeconds(), p0 = cpuProcessSeconds(), th0 = cpuThreadSeconds();
  for (int i = 1; i <= n; ++i) {
    const uint64_t iu = static_cast<uint64_t>(i);
    uint32_t* slot = H.recv + static_cast<size_t>(i & 1) * (H.maxBytes / sizeof(uint32_t));
    const uint64_t expect = m == Model::Kernel ? iu * senders : iu;
    if (m == Model::Kernel)
      haloPack<true><<<blocks, kHaloThreads, 0, c.s>>>(H.h, H.dom, H.send, rows, slot, sig, c.peer);
    else
      haloPack<false><<<blocks, kHaloThreads, 0, c.s>>>(H.h, H.dom, H.send, rows, slot, sig, c.peer);
    CK(cudaGetLastError());
    if (m == Model::CpuSync) {
      syncStream(c);
      TK(tether_put_signal(c.w, slot, H.send, bytes, sig, iu, TETHER_SIGNAL_SET, c.peer));
    } else if (m == Model::Stream) {
      // The send goes on a second stream after the pack, so the interior kernel overlaps it (as the CPU-synchronous
      // model overlaps the interior with its host wait); the unpack and the next pack wait for the send.
      CK(cudaEventRecord(c.packed, c.s));
      CK(cudaStreamWaitEvent(c.comm, c.packed, 0));
      TK(tether_putmem_signal_on_stream(c.w, slot, H.send, bytes, sig, iu, TETHER_SIGNAL_SET, c.peer,
                                        static_cast<void*>(c.comm)));
      CK(cudaEventRecord(c.sent, c.comm));
    }
    haloInterior<<<264, 256, 0, c.s>>>(H.work, H.workElems, H.dom, rows, c.me, iu + 1);
    CK(cudaGetLastError());
    if (m == Model::CpuSync) TK(tether_signal_wait_until(c.w, sig, TETHER_CMP_GE, iu, nullptr));
    if (m == Model::Stream) {
      CK(cudaStreamWaitEvent(c.s, c.sent, 0));  // H.send is free again before the next pack
      TK(tether_signal_wait_until_on_stream(c.w, sig, TETHER_CMP_GE, iu, c.sv()));
    }
    if (m == Model::Kernel)
      haloUnpack<true><<<blocks, kHaloThreads, 0, c.s>>>(H.h, H.dom, slot, rows, c.peer, iu, sig, expect, c.bad);
    else
      haloUnpack<false><<<blocks, kHaloThreads, 0, c.s>>>(H.h, H.dom, slot, rows, c.peer, iu, sig, expect, c.bad);
    CK(cudaGetLastError());
  }
  CK(cudaEventRecord(c.done, c.s));
  CK(cudaEventSynchronize(c.done));  // blocking sync: the CPU sleeps until the stream is done
  HaloResult r;
  r.iterUs = (tb::nowSeconds() - w0) * 1e6 / n;
  r.cpuUs = (cpuProcessSeconds() - p0) * 1e6 / n;
  r.threadCpuUs = (cpuThreadSeconds() - th0) * 1e6 / n;
  barrier(c);
  return r;
}

void rowHalo(Ctx& c, Halo& H) {
  if (!tb::wantsOp(c.o, "halo")) return;
  if (c.me == 0) {
    std::printf("\n# halo exchange (HPGMG exchange_boundary style), both PEs, one stream each (the stream model sends "
                "on a second one, beside the interior kernel): pack kernel (strided "
                "gather) -> send (put_signal) -> interior kernel (%zu MiB) -> wait -> unpack kernel (strided scatter, "
                "checked); %d iterations per run, median of %d runs after a warm-up run; PE 0's times\n",
                H.workElems * 4 >> 20, c.o.iters, std::max(1, std::min(c.o.batches, 5)));
    std::printf("#   cpu_sync: host put_signal / signal_wait_until, cudaStreamSynchronize after the pack; stream: "
                "_on_stream calls, all iterations enqueued; kernel: device API put_signal (ADD per block) in the pack "
                "kernel, signal_wait_until in the unpack kernel. Every run ends with a blocking-sync event.\n");
    std::printf("#   cpu_us = process CPU (getrusage, all threads) per iteration; thread_us = main thread's CPU clock; "
                "busy = cpu_us / iter_us; dtime, dcpu = change vs cpu_sync at the same size\n");
    std::printf("%-10s %10s %10s %10s %10s %7s %8s %8s %7s\n", "model", "bytes", "iter_us", "cpu_us", "thread_us",
                "busy%", "dtime%", "dcpu%", "iters");
  }
  const int reps = std::max(1, std::min(c.o.batches, 5));
  std::vector<size_t> sizes;
  for (size_t nb : {size_t{8} << 10, size_t{64} << 10, size_t{1} << 20})
    if (nb <= H.maxBytes && (!c.o.quick || nb == (size_t{8} << 10))) sizes.push_back(nb);
  for (size_t nb : sizes) {
    double baseIter = 0, baseCpu = 0;
    for (Model m : {Model::CpuSync, Model::Stream, Model::Kernel}) {
      CK(cudaMemsetAsync(c.bad, 0, sizeof(unsigned long long), c.s));
      syncStream(c);
      haloRun(c, H, m, nb, std::max(2, c.o.iters / 10));  // warm-up run
      std::vector<double> it, cpu, th;
      for (int k = 0; k < reps; ++k) {
        const HaloResult r = haloRun(c, H, m, nb, c.o.iters);
        it.push_back(r.iterUs), cpu.push_back(r.cpuUs), th.push_back(r.threadCpuUs);
      }
      unsigned long long wrong = 0;
      CK(cudaMemcpy(&wrong, c.bad, sizeof wrong, cudaMemcpyDeviceToHost));
      if (wrong) fail(c, "halo", nb, std::string(modelName(m)) + ": " + std::to_string(wrong) + " ghost values wrong");
      // The runs' medians (each statistic on its own).
      const tb::Stats si = tb::computeStats(it), sc = tb::computeStats(cpu), st = tb::computeStats(th);
      if (m == Model::CpuSync) baseIter = si.median, baseCpu = sc.median;
      const double busy = si.median > 0 ? 100.0 * sc.median / si.median : 0;
      const double dt = baseIter > 0 ? 100.0 * (si.median - baseIter) / baseIter : 0;
      const double dc = baseCpu > 0 ? 100.0 * (sc.median - baseCpu) / baseCpu : 0;
      if (c.me != 0) continue;
      std::printf("%-10s %10zu %10.2f %10.2f %10.2f %7.1f %8.1f %8.1f %7d\n", modelName(m), nb, si.median, sc.median,
                  st.median, busy, dt, dc, c.o.iters * reps);
      std::fflush(stdout);
      if (c.json)
        std::fprintf(c.json,
                     "{\"record\":\"row\",\"bench\":\"stream\",\"impl\":\"tether\",\"op\":\"halo\",\"model\":\"%s\","
                     "\"path\":%s,\"kinds\":\"D->D\",\"bytes\":%zu,\"iters\":%d,\"runs\":%d,\"iter_us_median\":%s,"
                     "\"iter_us_min\":%s,\"cpu_us_per_iter\":%s,\"thread_cpu_us_per_iter\":%s,\"cpu_busy_pct\":%s,"
                     "\"time_vs_cpu_sync_pct\":%s,\"cpu_vs_cpu_sync_pct\":%s,\"interior_bytes\":%zu,\"pes\":2,"
                     "\"host\":%s,\"date\":%s}\n",
                     modelName(m), tb::jsonString(c.path).c_str(), nb, c.o.iters, reps, num(si.median).c_str(),
                     num(si.min).c_str(), num(sc.median).c_str(), num(st.median).c_str(), num(busy).c_str(),
                     num(dt).c_str(), num(dc).c_str(), H.workElems * 4, tb::jsonString(c.info.host).c_str(),
                     tb::jsonString(c.info.date).c_str());
    }
  }
}

const char* kExtraUsage =
    "tether_bench_stream: stream-ordered operations (issue #6), 2 PEs, one GPU each; --max-size defaults to 1G here\n"
    "  rows (--ops): put_on_stream, put_quiet_on_stream, put_quiet_sync, put_bw, put_bw_bidir, put_signal_pingpong,\n"
    "  prepared_pingpong, barrier_all, prepared_put4, fetch_add, doorbell_pingpong, doorbell_put, halo\n"
    "  --pattern P: pair (default; exactly 2 PEs), ring (every PE at once to next = (me + 1) % n) or all-pairs (every\n"
    "  PE at once to all n - 1 others per op); ring and all-pairs run put_on_stream, put_quiet_on_stream,\n"
    "  put_quiet_sync, put_bw, put_signal_pingpong (ring pass / exchange) and barrier_all only\n"
    "  heap: TETHER_DEVICE_HEAP_SIZE >= max-size + 4M (e.g. 2G for the 1G rows; all-pairs: n x max-size + 4M)\n"
    "  exit: 0 ok, 1 wrong data, 2 failed call or bad usage, 77 no GPU\n";

}  // namespace

int main(int argc, char** argv) {
  Ctx c;
  c.program = "tether_bench_stream";
  c.impl = "tether";
  c.memory = "DEVICE segments";
  int rc = 0;
  std::vector<char*> args(argv, argv + argc);
  std::string perr;
  if (!tb::takePatternOption(&args, &c.pattern, &perr)) {
    std::fprintf(stderr, "%s: %s\n", c.program, perr.c_str());
    return 2;
  }
  if (!streambench::parseArgs(c, static_cast<int>(args.size()), args.data(), kExtraUsage, &rc)) return rc;
  c.o.argv.assign(argv, argv + argc);  // the command line as given (--pattern included)
  if (!streambench::startPes(c)) return 2;
  if (!streambench::startGpu(c)) return 77;  // no GPU on some PE: every PE skips
  // Symmetric buffers first (all DEVICE), then local ones.
  void* p = nullptr;
  // all-pairs: one slot of max-size per source PE
  const size_t bufBytes = c.o.maxSize * (c.pattern == tb::Traffic::AllPairs ? static_cast<size_t>(c.npes) : 1);
  TK(tether_malloc_kind(c.w, TETHER_SEG_DEVICE, 4096, bufBytes, &p));
  c.buf = static_cast<char*>(p);
  TK(tether_malloc_kind(c.w, TETHER_SEG_DEVICE, 4096, 4096, &p));
  c.words = static_cast<uint64_t*>(p);
  Halo H;
  H.maxBytes = c.o.quick ? (size_t{8} << 10) : (size_t{1} << 20);
  TK(tether_malloc_kind(c.w, TETHER_SEG_DEVICE, 4096, 2 * H.maxBytes, &p));
  H.recv = static_cast<uint32_t*>(p);
  TK(tether_device_handle(c.w, &H.h));  // after the last allocation (see tether.h on the handle's lifetime)
  c.path = tether_ptr(c.w, c.buf, c.peer) ? "p2p" : "proxy";
  CK(cudaStreamCreateWithFlags(&c.s, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&c.comm, cudaStreamNonBlocking));
  CK(cudaEventCreateWithFlags(&c.packed, cudaEventDisableTiming));
  CK(cudaEventCreateWithFlags(&c.sent, cudaEventDisableTiming));
  CK(cudaEventCreate(&c.e0));
  CK(cudaEventCreate(&c.e1));
  CK(cudaEventCreateWithFlags(&c.done, cudaEventBlockingSync | cudaEventDisableTiming));
  c.rows = true;  // only batches are watched here (the probe is made when the watchdog fires)
  streambench::startWatchdog(c);  // armed for each batch (STREAM_BENCH_TIMEOUT)
  CK(cudaMalloc(&c.local, c.o.maxSize));
  CK(cudaMalloc(&c.fetched, sizeof(uint64_t) * static_cast<size_t>(c.o.iters)));
  CK(cudaMalloc(&c.bad, sizeof(unsigned long long)));
  CK(cudaMalloc(&H.send, H.maxBytes));
  CK(cudaMalloc(&H.dom, H.maxBytes * kCols));
  CK(cudaMalloc(&H.work, H.workElems * sizeof(float)));
  CK(cudaMemset(H.work, 0, H.workElems * sizeof(float)));
  CK(cudaMemset(H.dom, 0, H.maxBytes * kCols));
  streambench::fillLocal(c);
  CK(cudaDeviceSynchronize());
  streambench::openJson(c);
  barrier(c);
  streambench::printHeader(c);

  TetherCalls calls;
  streambench::rowPutLatency(c, calls);
  streambench::rowBandwidth(c, calls);
  streambench::rowPingPong(c, calls);  // put_signal_pingpong, prepared_pingpong
  streambench::rowBarrier(c, calls);
  if (!streambench::patterned(c)) {  // tether's own rows: pair only
    rowPrepared(c);
    rowAtomics(c);
    rowDoorbell(c, H.h);
    rowHalo(c, H);
  }

  const bool ok = streambench::vote(c);
  CK(cudaStreamSynchronize(c.s));
  CK(cudaEventDestroy(c.done));
  CK(cudaEventDestroy(c.packed));
  CK(cudaEventDestroy(c.sent));
  CK(cudaStreamDestroy(c.comm));
  for (void* q : {static_cast<void*>(c.fetched), static_cast<void*>(H.send), static_cast<void*>(H.dom),
                  static_cast<void*>(H.work)})
    CK(cudaFree(q));
  streambench::freeCuda(c);
  TK(tether_finalize(c.w));
  return ok ? 0 : 1;
}
