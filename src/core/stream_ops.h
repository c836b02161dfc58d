// The stream-op layer (issue #6): the few primitives that stream-ordered communication is built from, enqueued on a
// stream (CUDA: cudaStream_t, nullptr = the legacy default stream; CPU emulation: a handle from createStream).
// core/stream.cpp compiles every tether_*_on_stream call and every prepared set (tether_prepare) into these.
//
// Implementations, chosen by factory (never by #ifdef in the core):
//  - createGpuStreamOps (core/stream/cuda/stream_ops_cuda.cpp): copies are cudaMemcpyAsync on the stream; writes and
//    waits are stream memory operations (cuStreamBatchMemOp: WRITE_VALUE_64/32, WAIT_VALUE_64 with GEQ/EQ/AND/NOR, and
//    a system-scope MEM_OP_BARRIER before release writes), several per call (waits as kernels in jobs with peers on
//    other hosts: GpuStreamOpsOptions::kernelWaits); ADD signals, AMOs, narrow stores, the
//    comparisons memops lack and proxy calls are one-thread kernels on the stream. Addresses are GPU addresses (HOST
//    segments through their registered aliases). The host-only build's version (core/stream/none) reports no GPU.
//  - createCpuStreamOps (core/stream/stream_ops_cpu.cpp): a CPU emulation for tests without a GPU. Each emulated stream
//    is a worker thread executing its queue in order: copies are memcpy + full fence, writes release stores, waits
//    acquire loads bounded by TETHER_TIMEOUT, AMOs CPU atomics, proxy calls the host-compiled device API with the CPU
//    handle. Addresses are CPU addresses (HOST and STATIC segments only). Not a user feature: tests install it on a
//    World with useStreamOpsForTesting (api.cpp).
//
// Contract every implementation keeps (what core/stream.cpp relies on):
//  - Stream order: each enqueued operation starts after the previous one on the same stream is complete, and its
//    effects (bytes copied, words written) are visible at system scope before the next one starts -- except where a
//    Write says otherwise below. Enqueueing never blocks on the stream's progress (CPU: unbounded queue).
//  - Write (release = true): ordered after every earlier operation of the stream, including their memory effects
//    (CUDA: a system-scope memory barrier precedes it); release = false: a plain store in stream order (p).
//  - Wait: the stream does not proceed until the condition holds on the 64-bit word (Geq is CYCLIC, as in CUDA:
//    (int64_t)(*addr - value) >= 0; And: (*addr & value) != 0; Nor: ~(*addr | value) != 0). CUDA memop waits cannot be
//    bounded (a wait that never holds stalls the stream); waitCmp (kernel) and the CPU emulation are bounded.
//  - Values are captured when enqueued (graph capture records them; replays repeat them).
//  - Errors: enqueue-time errors are returned; errors while the stream runs are sticky and reported by synchronize
//    (CPU) or as CUDA errors on the stream (a kernel that times out prints what it waited for and traps).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "base/status.h"
#include "core/op.h"
#include "tether/tether.h"
#include "transport/transport.h"

namespace tether {

class GpuContext;

enum class StreamCond : uint8_t { Geq, Eq, And, Nor };

constexpr size_t kWordsPerCall = 64;  // StreamOps::increment / waitReach: words (pairs) per CUDA kernel

// One element of a batch of memory operations.
struct StreamMemOp {
  enum Kind : uint8_t { Write, Wait, Barrier } kind = Barrier;
  StreamCond cond = StreamCond::Geq;  // Wait
  bool release = true;                // Write: ordered after the stream's earlier memory effects
  uint8_t width = 8;                  // Write: 4 or 8 bytes; Wait: 8
  void* addr = nullptr;
  uint64_t value = 0;
};

// Proxy calls: an operation record (core/op.h: Put, Get, P, PutSignal, Signal, Amo) executed on the stream through
// the proxy ring, for a (PE, segment) the stream cannot address (remote peers; every other PE under
// TETHER_FORCE_PROXY=1). Addresses are symmetric addresses as the program names them (dest, sig) and local buffers
// (src of a put, dest of a get, fetched); Amo's width is nbytes, its operand value; viaRing sends RMWs to the ring
// even where the PE is reachable. Executed with the device API's blocking forms and followed by its quiet: complete
// (and visible) before the next stream operation starts. The CUDA version is a one-thread kernel taking the handle
// and the Op by value: tickets are taken when the kernel runs, so it stays correct under graph replay and when
// several streams post (core/stream/stream_proxy_call.h runs it).

// A team collective on a stream (tether_team_*_on_stream): run by the device API's team collectives on the team's
// device view (core/stream/stream_coll_call.h), checked by the caller (core/collectives.cpp): dest/src are symmetric
// addresses as the program names them, addressable by this layer (CPU: HOST/STATIC), reductions only where every
// member is load/store reachable, elem one of the C types below. Complete (every member's part of it, and visible)
// before the stream's next operation starts: it ends with the team's device sync. blocks > 1 asks for a grid of that
// many blocks (a cooperative launch, the device form at Scope::Grid; the GPU layer clamps it to what can be resident
// at once; the CPU emulation runs one thread whatever it says); every member must ask for the same shape of work
// (same algo), not necessarily the same number of blocks. threads: the block's threads when blocks is 1 (1 ..
// kCollBlockThreads; a grid's blocks have kCollBlockThreads); in-place reductions need the same on every member (their
// per-chunk team syncs depend on the group's size), so callers derive it from agreed values.
constexpr unsigned kCollBlockThreads = 512;  // GPU: most threads per block of a stream collective
struct StreamCollCall {
  enum Kind : uint8_t { Sync, Broadcast, Reduce, Allreduce, Allgather, ReduceScatter, Alltoall } kind = Sync;
  enum Elem : uint8_t { I8, I16, I32, I64, U8, U16, U32, U64, F32, F64, F16, BF16 } elem = U8;
  int op = TETHER_RED_SUM;  // tether_red_op_t (reductions)
  int root = 0;             // broadcast, reduce
  void* dest = nullptr;
  const void* src = nullptr;
  size_t count = 0;      // elements (per member block for allgather, reduce_scatter, alltoall)
  size_t elemBytes = 1;  // bytes per element
  enum Algo : uint8_t { Auto, OneShot, TwoShot } algo = Auto;  // allreduce: tether::device::ReduceAlgo's values
  unsigned blocks = 1;   // GPU: blocks (above 1: one cooperative grid of kCollBlockThreads threads per block)
  unsigned threads = 32;  // GPU: threads of the block when blocks is 1 (a Sync needs no more than a warp)
};

class StreamOps {
 public:
  virtual ~StreamOps() = default;
  virtual const char* name() const = 0;
  // true: addresses are GPU addresses of this PE's GPU; false: CPU addresses (emulation over host segments).
  virtual bool gpuAddresses() const = 0;
  // true: this layer's RMWs (amo, ADD signals) on host memory are atomic with the CPU's atomics on it (CUDA: the GPU
  // has host-native atomics; the CPU emulation: yes unless built to say no). false: the planner sends RMWs on HOST and
  // STATIC words through the proxy (CPU atomics) instead.
  virtual bool hostAtomics() const = 0;
  // *out: stream is being captured into a CUDA graph (its work will be replayed, repeating the values enqueued now:
  // core/stream.cpp then takes the stream barriers' replayable form). The CPU emulation never captures.
  virtual Status capturing(void* stream, bool* out) {
    (void)stream;
    *out = false;
    return Status::ok();
  }

  virtual Status copy(void* stream, void* dst, const void* src, size_t n) = 0;
  // In-order batch of writes, waits and barriers (CUDA: one cuStreamBatchMemOp per <= 256 entries).
  virtual Status memOps(void* stream, const StreamMemOp* ops, size_t n) = 0;
  // Narrow store of width 1 or 2 bytes (memops have no such width: a kernel on CUDA). In stream order, not a release.
  virtual Status store(void* stream, void* addr, uint64_t value, unsigned width) = 0;
  // Signal on a 64-bit word: SET is a release write, ADD a release atomic add (CUDA: kernel).
  virtual Status signal(void* stream, uint64_t* addr, uint64_t value, tether_signal_op_t op) = 0;
  // Atomic on a 4/8-byte word (atomic with respect to the host path's and the device API's AMOs on that word; on host
  // memory only where hostAtomics(): the planner does not send other host-memory RMWs here);
  // the old value goes to fetched (width bytes; GPU or pinned memory for CUDA) when fetched is not null.
  virtual Status amo(void* stream, void* target, const AmoArgs& a, void* fetched) = 0;
  // Wait for any tether comparison on a 64-bit word (as int64 when isSigned, else uint64), bounded by timeoutNs
  // (0: unbounded).
  virtual Status waitCmp(void* stream, const uint64_t* addr, tether_cmp_t cmp, uint64_t value, bool isSigned,
                         uint64_t timeoutNs) = 0;
  // Round counters (persistent messaging, core/messaging.cpp): each of words[0..n) += 1, in index order, after the
  // stream's earlier work and its memory effects (release); a plain read-modify-write (not atomic against other
  // writers of the words: the caller keeps each word single-writer). Values are not captured: a graph replay adds 1
  // again (CUDA: one kernel per kWordsPerCall words, the addresses in its parameters).
  virtual Status increment(void* stream, uint64_t* const* words, size_t n) = 0;
  // The stream's later work waits until *reach[i] >= *target[i] (cyclic GEQ) for every i, the targets read (acquire)
  // when the wait begins, the reach words polled with acquire loads. Bounded by timeoutNs (0: unbounded). A graph
  // replay reads the targets again (CUDA: one polling kernel per kWordsPerCall pairs).
  virtual Status waitReach(void* stream, const uint64_t* const* reach, const uint64_t* const* target, size_t n,
                           uint64_t timeoutNs) = 0;
  // Runs call (a proxy call, above) through the handle's proxy ring (handle in this ops' address space).
  virtual Status proxy(void* stream, const tether_device_handle_t& handle, const Op& call) = 0;
  // Runs a team collective (StreamCollCall above) with the handle and the team's device view (both in this ops'
  // address space).
  virtual Status coll(void* stream, const tether_device_handle_t& handle, const tether_device_team_t& team,
                      const StreamCollCall& call) = 0;
  // The stream's later work starts only once everything enqueued on `other` before this call is complete; the host
  // does not wait (CUDA: an event recorded on other and waited for by stream; other nullptr = the legacy default
  // stream. CPU: a marker on other that stream's next operation waits for, bounded by the timeout, failing if other
  // failed first).
  virtual Status follow(void* stream, void* other) = 0;
  // Runs fn on a CPU thread in stream order, its memory effects visible before the next operation starts (CUDA:
  // cudaLaunchHostFunc). fn must not call CUDA or wait on any stream; it cannot fail.
  virtual Status hostCall(void* stream, std::function<void()> fn) = 0;

  // Streams for tests and benchmarks (CUDA: cudaStreamCreateWithFlags non-blocking; CPU: a worker thread).
  virtual Status createStream(void** out) = 0;
  virtual Status destroyStream(void* stream) = 0;
  // Waits for everything enqueued so far; returns the stream's first failure (sticky), if any.
  virtual Status synchronize(void* stream) = 0;
};

// Options of the CUDA stream-op layer.
struct GpuStreamOpsOptions {
  // Waits run as one-thread kernels polling the word instead of memop waits. Needed where the word (or data a wait
  // orders) can be released by GPU work of this same process on another stream: peers on other hosts reach this PE's
  // GPU memory through this PE itself (owner-executed signals and atomics as kernels on a sibling stream, UCX's
  // cuda_copy of arriving data). Seen on 4xH100 (CUDA 13, 2026-11-26, gpu_netns_stream_4pe): while a memop wait of
  // this process was pending, its kernels and copies on other streams did not run, and the job hung; with kernel
  // waits it passed (a polling kernel holds no hardware queue).
  bool kernelWaits = false;
};
// CUDA stream-op layer on this PE's GPU (gpu/cuda); the host-only build's version reports TETHER_ERR_UNSUPPORTED.
Status createGpuStreamOps(GpuContext& gpu, const GpuStreamOpsOptions& opts, std::unique_ptr<StreamOps>* out);
// CPU emulation (see above); waits are bounded by timeoutSeconds (<= 0: unbounded).
// hostAtomics: what hostAtomics() reports (false: tests of the proxy route taken without host-native atomics).
// capturing: what capturing() reports for every stream (true: tests of the forms the library takes under a CUDA graph
// capture; the emulation records nothing and runs the work once).
std::unique_ptr<StreamOps> createCpuStreamOps(double timeoutSeconds, bool hostAtomics = true, bool capturing = false);
// Test hook (api.cpp; tests link tether_static): the World behind `world` uses `ops` for its stream operations.
// Call before the first stream operation, on every PE.
Status useStreamOpsForTesting(tether_t world, std::unique_ptr<StreamOps> ops);

}  // namespace tether
