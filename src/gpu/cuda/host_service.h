// The host service of one GPU context: a resident kernel (one block of TETHER_HOST_SERVICE_POLLERS warps, 2 by
// default, polling in turn; one executes at a time) that executes the host path's atomics, signals and small copies
// on GPU words (issue #22). Without it each of them is a one-thread kernel launch plus a stream
// synchronisation (~12 us for an atomic on one H200); with it the host writes a 64-byte slot of a ring in host-mapped
// pinned memory and waits for the kernel's answer there (a few PCIe round trips).
//
// Lifetime of the kernel: not started until the first request ("start on first need"); it returns by itself once it
// has had no request for TETHER_HOST_SERVICE_IDLE, so an idle program gets its SM back and a cudaDeviceSynchronize or
// cudaFree of the program waits at most that long for it; the next request starts it again. It runs on a
// non-blocking stream of its own, so work on the legacy default stream neither waits for it nor holds it up.
// Protocol (kernels.h, ServiceSlot/ServiceState): tickets from 1; the host fills slot ticket % kServiceSlots, every
// word tagged with the ticket; the kernel serves tickets strictly in order, stores the result and then done
// (release), and on its way out stores its launch epoch to exited. A request posted while the kernel is leaving is
// seen by the waiting host (exited == this launch's epoch, done short of the ticket): it waits for the stream and
// starts a new kernel at done + 1, so every ticket is executed exactly once.
//
// Contract: calls are serialised per service (one mutex); every call but a posted put waits for its answer;
// requests execute in posting order. The caller orders a signal after its earlier copy-engine copies
// (GpuContext::signal completes them first) and drains posted puts at quiet. Waits are bounded by TETHER_TIMEOUT:
// on expiry (the kernel cannot get an SM, e.g. a kernel of the program holds them all) the call fails with
// TETHER_ERR_TIMEOUT, the request may still execute later, and every later call fails at once naming that first
// timeout (the ring's state is no longer known). Not used by the staged path's streams of other GPUs (one-thread
// kernels there).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "base/amo.h"
#include "base/status.h"
#include "gpu/cuda/kernels.h"

namespace tether {

class HostService {
 public:
  // device: the GPU of the calling context (current when create is called); idleNs > 0; pollers: warps of the
  // kernel polling the ring in turn (1-32, TETHER_HOST_SERVICE_POLLERS).
  static Status create(int device, uint64_t idleNs, unsigned pollers, double timeoutSeconds,
                       std::unique_ptr<HostService>* out);
  // Stops a running kernel (a stop request) and waits for its stream, at most TETHER_TIMEOUT.
  ~HostService();
  HostService(const HostService&) = delete;
  HostService& operator=(const HostService&) = delete;

  Status amo(void* target, const AmoArgs& a, uint64_t* fetched);
  Status signal(void* target, uint64_t value, bool add);
  // n <= gpukernels::kServiceBytes bytes from host memory src to GPU-addressable dst: complete when the call returns
  // (wait) or at the next drain() (src is copied into the slot: reusable at once); requests execute in posting order,
  // so a later signal() follows a posted put without a drain.
  Status put(void* dst, const void* src, size_t n, bool wait);
  // n <= gpukernels::kServiceBytes bytes from GPU-addressable src to host memory dst, complete when the call returns.
  Status get(void* dst, const void* src, size_t n);
  // Waits until every request posted so far has executed.
  Status drain();

 private:
  HostService() = default;
  // Writes one request into its slot (first waiting for the slot's previous ticket) and starts a kernel if none runs
  // (mu_ held, except in the destructor); *ticketOut: its ticket.
  Status post(uint32_t head, void* target, uint64_t value, uint64_t cond, uint64_t* ticketOut);
  Status call(uint32_t head, void* target, uint64_t value, uint64_t cond, uint64_t* ticketOut);  // post + await
  Status launch();  // a new kernel from done + 1 (mu_ held)
  Status awaitTicket(uint64_t ticket);

  int device_ = -1;
  uint64_t idleNs_ = 0;
  unsigned pollers_ = 1;
  double timeoutSeconds_ = 0;
  cudaStream_t stream_ = nullptr;
  void* block_ = nullptr;               // one cudaHostAlloc: the ring, then the state
  gpukernels::ServiceSlot* slots_ = nullptr;        // host view
  gpukernels::ServiceState* state_ = nullptr;       // host view
  const gpukernels::ServiceSlot* devSlots_ = nullptr;  // device aliases of the same memory
  gpukernels::ServiceState* devState_ = nullptr;
  std::mutex mu_;
  uint64_t posted_ = 0;      // last ticket posted
  uint64_t epoch_ = 0;       // epoch of the last launch
  bool running_ = false;     // a kernel was launched and has not been seen to exit
  std::string failed_;       // set by the first timeout: every later call fails with it
};

}  // namespace tether
