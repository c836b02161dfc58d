// Proxy: the host side of the device API's proxy path (issue #5). One per World, created with the first device handle
// that has a (PE, segment) it cannot reach by loads/stores (every PE but this one under TETHER_FORCE_PROXY=1).
//
// Rings. One descriptor ring per handle address space (CPU handles, GPU handles), made on first use: slots and the
// state word (completion counter, error) in pinned host memory mapped for the GPU (plain host memory for the CPU
// ring), the ticket counter in GPU memory for the GPU ring (GPU atomics on mapped host memory are not atomic with
// respect to other agents in general; only this GPU's threads take tickets). Layout and slot protocol: tether.h.
//
// Thread. One proxy thread, started with the first ring, polls every ring's next slot in ticket order and executes
// each descriptor to completion with the World's host path to that (PE, segment) -- decoded into an Op and run by
// runOp (core/op.h), the execution behind tether_put/get/atomic/signal_op -- before the next one, so descriptors
// complete in ticket order; then it frees the slot (or, for fetching ones, publishes the result) and advances `done`
// (release, after a full fence). GPU work is issued on a sibling GpuContext whose streams do not wait for the legacy
// default stream (a kernel that waits for the proxy is still running there). Idle policy: spin ~2000 polls, then
// yield ~2000 times, then sleep 50 us between polls: a ring that was idle for a while answers with up to ~50 us
// extra latency, and 8 PEs on 2 cores still progress.
//
// Failures: a descriptor that cannot be executed (bad PE or op, range outside the segment, transport error; every
// check runs before the descriptor touches memory) is logged once with its reason, recorded in state->error (first
// one) and completed anyway, so the producer fails cleanly instead of hanging. stop() (finalize, destructor) executes
// what is already posted, then joins the thread; it must run before the heaps are unmapped.
// Limits: atomics/signals on DEVICE words run a one-thread kernel, so they need one free block slot on the GPU while
// the served kernel runs, and that kernel must already be loaded in the context (the GpuContext loads it when it is
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
#include "gpu/gpu.h"
#include "tether/tether.h"
#include "transport/staged/staged.h"
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

class Proxy final : private PathCtx {
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
  struct Ring {
    tether_proxy_desc_t* slots = nullptr;  // CPU address
    tether_proxy_state_t* state = nullptr;
    ProxyRingView view;                    // handle's address space
    uint64_t next = 0;                     // next ticket to execute (proxy thread only)
    bool gpu = false;
    std::vector<ProxyWindow> windows;      // guarded by mu_
    std::vector<tether_proxy_desc_t> hostSlots;  // CPU ring: slots, state and ticket in plain host memory
    tether_proxy_state_t hostState{};
    uint64_t hostTicket = 0;
  };
  explicit Proxy(World& world) : world_(world) {}
  void run();
  bool serve(Ring& r);                  // executes the next descriptor if posted; true if it did
  Status execute(Ring& r, ProxyOp& d, uint64_t* result);  // d: decodeProxyDesc (core/op.h)
  // The (PE, segment kind, offset, n bytes) a descriptor names, checked against the World (and a path exists).
  Status target(const char* what, int pe, unsigned kind, uint64_t offset, uint64_t n, SymRef* ref);
  void* ctx(const SegPath& p) override;  // PathCtx: the sibling context for the World's GPU work
  const void* localAddr(Ring& r, uint64_t addr);

  World& world_;
  uint64_t slots_ = 0;
  std::unique_ptr<GpuContext> gpu_;  // sibling of the World's context (non-blocking streams), when there is a GPU
  std::vector<std::unique_ptr<StagedGpu>> staged_;  // staged paths over gpu_, by target GPU
  std::mutex mu_;                    // rings_ creation, windows
  std::unique_ptr<Ring> rings_[2];   // [0] CPU, [1] GPU
  std::atomic<int> nRings_{0};       // rings published to the thread (index order of creation in order_)
  Ring* order_[2] = {nullptr, nullptr};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace tether
