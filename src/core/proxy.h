// Proxy: the host side of the device API's proxy path (issue #5). One per World, created with the first device handle
// that has a (PE, segment) it cannot reach by loads/stores (every PE but this one under TETHER_FORCE_PROXY=1).
//
// Rings. One descriptor ring per handle address space (CPU handles, GPU handles), made on first use: slots and the
// state word (completion counter, error) in pinned host memory mapped for the GPU (plain host memory for the CPU
// ring), the ticket counter in GPU memory for the GPU ring (GPU atomics on mapped host memory are not atomic with
// respect to other agents in general; only this GPU's threads take tickets). Layout and slot protocol: tether.h.
//
// Thread. One proxy thread, started with the first ring, polls every ring's next slot in ticket order and executes
// each descriptor with the World's host path to that (PE, segment) -- decoded into an Op and run by runOp (core/op.h),
// the execution behind tether_put/get/atomic/signal_op. Writes without a result (PUT, PUT_INLINE) are issued nbi and
// completed in batches; everything else runs blocking (complete on return), as before. The rules keep the ring's
// promises (tether.h, include/tether/device.cuh): descriptors take effect in ticket order, and `done` = t + 1 means
// every ticket <= t is complete at its target:
//  - a batch is a run of nbi writes on ONE transport context (ops, ctx); an nbi write on another context first
//    completes the batch (ops->quiet), and one to a PE the batch already wrote to is preceded by ops->fence (the
//    transport's per-target ordering, which the ring promised by executing one descriptor at a time);
//  - any other descriptor first completes the batch, except a SIGNAL / PUT_SIGNAL whose data and signal words take
//    the batch's context and whose PE is the only one the batch wrote to (the transport orders a signal after its
//    earlier puts to that PE: transport.h);
//  - done and the slots: a slot is handed back (freed, or its result published) as soon as its descriptor was issued
//    -- a PUT_INLINE's value is first copied into the ring's batch storage, which lives until the quiet, since the
//    transport may read it after its nbi put returned; a PUT's source is the producer's (a blocking put waits for
//    done, an nbi one keeps it unchanged until quiet). done advances only over completed tickets: at once after a
//    blocking descriptor when no batch is open, else when the batch is completed -- when the ring has no further
//    posted slot, before a descriptor that needs it (above), or after kBatch (64) nbi writes.
// GPU work is issued on a sibling GpuContext whose streams do not wait for the legacy default stream (a kernel that
// waits for the proxy is still running there). Idle policy: spin ~2000 polls, then yield ~2000 times, then sleep
// 50 us between polls: a ring that was idle for a while answers with up to ~50 us extra latency, and 8 PEs on 2 cores
// still progress. The providers (UCX's worker) are progressed while descriptors are served and once per idle sleep,
// not on every idle poll: an idle proxy does not fight the PE's own thread (a barrier, a wait) for the worker lock.
//
// Failures: a descriptor that cannot be executed (bad PE or op, range outside the segment, transport error; every
// check runs before the descriptor touches memory) is logged once with its reason, recorded in state->error (first
// one) and completed anyway, so the producer fails cleanly instead of hanging. A batch whose quiet fails records its
// first ticket (the log names the batch's ticket range). stop() (finalize, destructor) executes
// what is already posted, then joins the thread; it must run before the heaps are unmapped.
// Limits: atomics/signals on DEVICE words run on the GPU (the sibling context's host service, or a one-thread kernel
// with it off), so they need one free block slot on the GPU while the served kernel runs, and that kernel must
// already be loaded in the context (the GpuContext loads it when it is
// created: under CUDA's lazy loading a first launch from this thread could wait for the served kernel itself); a
// local buffer of a GPU handle must be GPU memory, cudaHostAlloc'd memory or this PE's symmetric memory (other
// registered host memory has a GPU alias the proxy cannot translate back).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/status.h"
#include "core/op.h"
#include "core/sibling_paths.h"
#include "gpu/gpu.h"
#include "tether/tether.h"
#include "transport/transport.h"

namespace tether {

class World;
struct SegPath;
struct SymRef;
struct ProxyOp;

// What a handle needs from a ring, in the handle's address space.
struct ProxyRingView {
  tether_proxy_desc_t* ring = nullptr;
  tether_proxy_state_t* state = nullptr;
  uint64_t* ticket = nullptr;
  uint64_t slots = 0;
};

// A local range of the handle's address space that the proxy must translate back to CPU addresses (the GPU aliases
// of this PE's HOST and STATIC views).
struct ProxyWindow {
  uint64_t handleAddr = 0, cpuAddr = 0, bytes = 0;
};

class Proxy final {
 public:
  // slots: TETHER_PROXY_SLOTS (checked here). world must outlive the Proxy.
  static Status create(World& world, int64_t slots, std::unique_ptr<Proxy>* out);
  static Status checkSlots(int64_t slots);  // TETHER_PROXY_SLOTS: a power of two in [2, 2^20]
  ~Proxy();
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  // The ring for CPU (forGpu false) or GPU handles, created (and the thread started) on first use. windows: local
  // ranges of that address space to translate (GPU ring; replaced on every call, since HOST aliases move on growth).
  Status ring(bool forGpu, const std::vector<ProxyWindow>& windows, ProxyRingView* out);
  // Host-side completion (tether_quiet, barriers): waits, bounded by timeoutSeconds, until every ticket taken so far
  // in every ring is complete -- device operations a finished kernel (or CPU thread) posted are then complete.
  Status drain(double timeoutSeconds);
  // Executes every descriptor already posted, then stops the thread. Idempotent.
  Status stop();

 private:
  static constexpr uint32_t kBatch = 64;
  static constexpr int kManyPes = -2;  // nbi writes issued before the batch is completed and done published
  // The open batch of a ring: nbi writes since done was last published (proxy thread only).
  struct Batch {
    const TransportOps* ops = nullptr;  // the one transport context the batch's writes use
    void* ctx = nullptr;
    int pe = -1;                        // the PE they all wrote to, or kManyPes
    uint64_t first = 0;                 // ticket of the first write
    uint32_t writes = 0;                // nbi writes issued (0: no batch)
    uint64_t inlineBytes[kBatch] = {};  // PUT_INLINE values, alive until the quiet
  };
  struct Ring {
    tether_proxy_desc_t* slots = nullptr;  // CPU address
    tether_proxy_state_t* state = nullptr;
    ProxyRingView view;                    // handle's address space
    uint64_t next = 0;                     // next ticket to execute (proxy thread only)
    uint64_t published = 0;                // done as last published (proxy thread only)
    Batch batch;                           // proxy thread only
    bool gpu = false;
    std::vector<ProxyWindow> windows;      // guarded by mu_
    std::vector<tether_proxy_desc_t> hostSlots;  // CPU ring: slots, state and ticket in plain host memory
    tether_proxy_state_t hostState{};
    uint64_t hostTicket = 0;
  };
  explicit Proxy(World& world) : world_(world) {}
  void run();
  bool serve(Ring& r);                  // executes the next descriptor if posted; true if it did
  Status execute(Ring& r, uint64_t t, ProxyOp& d, uint64_t* result);  // d: decodeProxyDesc (core/op.h)
  // Issues a checked descriptor: PUT / PUT_INLINE into the ring's batch (nbi), anything else blocking, after
  // completing the batch where the ordering rules above need it.
  Status issue(Ring& r, uint64_t t, ProxyOp& d, const SymRef& ref, const SymRef& sigRef, uint64_t* result);
  // Completes the ring's open batch (closeBatch), then publishes done = r.next.
  void complete(Ring& r);
  // ops->quiet of the open batch, which is then closed; a failure is recorded against its first ticket (fail).
  void closeBatch(Ring& r);
  void fail(Ring& r, uint64_t ticket, const Status& s, const char* what);
  // The (PE, segment kind, offset, n bytes) a descriptor names, checked against the World (and a path exists).
  Status target(const char* what, int pe, unsigned kind, uint64_t offset, uint64_t n, SymRef* ref);
  const void* localAddr(Ring& r, uint64_t addr);

  World& world_;
  uint64_t slots_ = 0;
  std::unique_ptr<SiblingPaths> paths_;  // the World's paths with GPU work on a sibling context (non-blocking streams)
  GpuContext* gpu_ = nullptr;            // that sibling, when there is a GPU
  std::mutex mu_;                    // rings_ creation, windows
  std::unique_ptr<Ring> rings_[2];   // [0] CPU, [1] GPU
  std::atomic<int> nRings_{0};       // rings published to the thread (index order of creation in order_)
  Ring* order_[2] = {nullptr, nullptr};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace tether
