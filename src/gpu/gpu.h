// The core's GPU layer: one GpuContext per World when this PE has a GPU. CUDA builds compile src/gpu/cuda/, host-only
// builds src/gpu/none/ (create() then reports "no GPU"); the core never tests for CUDA itself.
//
// Contracts
//  - Copies (copy) move bytes between any two memories the GPU can address (device memory of this GPU or a peer GPU
//    mapped here, HOST segments registered with registerHost, and pageable host memory) by copy engines on a small
//    pool of internal streams. Blocking copies are complete (visible to every GPU and CPU) on return; nbi copies are
//    complete at quiet(). Large copies may be split across streams.
//  - atomic()/signal() on GPU-addressable memory run in a kernel on this PE's GPU with system-scope atomics, so they
//    are atomic with respect to GPU atomics from any GPU on the same word (and to each other). signal() is ordered
//    after every copy issued before it (it synchronises the context's streams first, quiet()). Their kernels are loaded when the context
//    is created, so a first atomic()/signal() never waits for a kernel already running in the same CUDA context (lazy
//    loading may synchronise the context; the device API's proxy serves kernels that spin until it is done).
//  - Thread safety: all methods may be called from several threads; each makes this PE's device current first.
//  - CUDA IPC of user buffers (exportRegion / openRegion): below, at GpuContext.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/amo.h"
#include "base/config.h"
#include "base/status.h"

namespace tether {

class Bootstrap;

// A region of a GPU allocation of one process, as another process of the host opens it with legacy CUDA IPC
// (GpuContext::exportRegion fills it in the owner, openRegion maps it elsewhere). Plain bytes: it travels as it is
// (two-sided messaging sends it in a ring slot's payload).
struct GpuIpcRef {
  uint8_t handle[64];   // cudaIpcMemHandle_t of the allocation's base
  uint64_t bufferId;    // the allocation's id in the owner, unique over the owner's lifetime (a range freed and
                        // allocated again at the same address gets a new one: that is how a stale mapping is told)
  uint64_t offset;      // the region's start in the allocation
  uint64_t allocBytes;  // the allocation's size
};

struct DeviceHeapParams {
  int localIndex = 0;
  std::vector<int> localRanks;  // global ranks of the same-host PEs, by local index
  uint64_t initialBytes = 0;
  uint64_t maxBytes = 0;        // per-PE stride of the device window
  std::string jobTag, secret;
  double timeoutSeconds = 300;
  bool forceIpc = false;        // TETHER_DEVICE_IPC=1: legacy CUDA IPC instead of VMM + POSIX FDs
  // By local index: the GPU (ordinal in this process) that accesses that PE's DEVICE segment from here — this PE's
  // GPU on the p2p path, the owner's own GPU on the staged path (GPUs without peer access). Empty: this PE's GPU.
  std::vector<int> accessDevice;
};

// The DEVICE segments of all same-host PEs, mapped here so that a symmetric offset translates with one add.
class DeviceHeap {
 public:
  virtual ~DeviceHeap() = default;
  virtual char* base(int localIndex) const = 0;
  virtual char* myBase() const = 0;
  virtual uint64_t committed() const = 0;
  virtual uint64_t maxBytes() const = 0;
  virtual const char* mechanism() const = 0;  // "vmm" or "ipc"
  // Collective over the same-host PEs (all call it with the same newBytes); maps every PE's new memory here.
  virtual Status grow(uint64_t newBytes, Bootstrap& bootstrap) = 0;
};

// A stream of one GPU of this process (this PE's, or another GPU of the host that the staged path drives from here),
// made by GpuContext::createStream and owned by that context (valid until it is destroyed). Each method makes the
// stream's GPU current and this PE's GPU current again before it returns. Thread safety: all methods may be called
// from several threads; atomic()/signal() are serialised per stream.
class GpuStream {
 public:
  virtual ~GpuStream() = default;
  virtual int device() const = 0;
  // Enqueues a copy of n bytes between memories this stream's GPU can address (its own memory, memory mapped for
  // it, registered or pinned host memory) or pageable host memory. Complete after sync() or the context's quiet().
  virtual Status copyAsync(void* dst, const void* src, size_t n) = 0;
  virtual Status sync() = 0;  // waits for everything enqueued on this stream
  // A one-thread system-scope atomic / signal kernel on this stream's GPU, waited for (the same kernels as
  // GpuContext::atomic/signal). signal() does NOT wait for earlier copies: the caller orders it (quiet first).
  virtual Status atomic(void* target, const AmoArgs& a, uint64_t* fetched) = 0;
  virtual Status signal(void* target, uint64_t value, tether_signal_op_t op) = 0;
};

class GpuContext {
 public:
  // *out stays null (and the reason is logged at info) when this build or machine has no usable GPU, or when
  // TETHER_GPU=none. device: TETHER_GPU ("auto" = localPe modulo the visible GPUs, or an ordinal).
  static Status create(const Config& config, int localPe, std::unique_ptr<GpuContext>* out);
  virtual ~GpuContext() = default;

  virtual int device() const = 0;
  virtual std::string busId() const = 0;

  // Registers [p, p + n) (page-rounded) as mapped, portable pinned memory and returns in *deviceAlias the address a
  // GPU (kernels and copy engines) must use for p. It is not always p itself: a range registered in one process while
  // other processes map the same pages elsewhere can get a different device address, so GPU-side users take the alias.
  // The context unregisters every range it registered when it is destroyed.
  virtual Status registerHost(void* p, size_t n, char** deviceAlias) = 0;
  virtual Status unregisterHost(void* p) = 0;  // p: a pointer passed to registerHost
  virtual bool isDeviceMemory(const void* p) = 0;  // any GPU's memory (user buffers are classified with it)

  virtual Status copy(void* dst, const void* src, size_t n, bool nbi) = 0;
  // Waits for every copy enqueued on this context's streams: the pool (copy) and every stream createStream made.
  virtual Status quiet() = 0;
  // Waits for the work already queued on this process's legacy default stream of device() (a cudaMemcpy from
  // pageable memory returns before its DMA lands). The context's own streams wait for it implicitly, but a peer PE
  // reading this PE's GPU memory does not: a collective calls this before it tells the peers its buffers are ready.
  virtual Status settleDefaultStream() = 0;
  // A system-scope atomic / signal on a GPU-addressable word, waited for. signal() completes the context's earlier
  // copies first. Executed by the host service (gpu/cuda/host_service.h: a resident kernel answering a mailbox, a few
  // microseconds) when TETHER_HOST_SERVICE allows it, else by a one-thread kernel launch each (~10 us and more).
  virtual Status atomic(void* target, const AmoArgs& a, uint64_t* fetched) = 0;
  virtual Status signal(void* target, uint64_t value, tether_signal_op_t op) = 0;
  // Small copies through the host service: n <= kSmallCopyBytes bytes from host memory src (CPU-readable) to the
  // GPU-addressable dst (putSmall: complete on return, or with nbi at quiet(); src reusable at once either way), or
  // from the GPU-addressable src to host memory dst (getSmall, complete on return): a few microseconds instead of a
  // copy-engine copy and a stream synchronisation. Only while hostService() (else TETHER_ERR_UNSUPPORTED: the caller
  // copies instead; callers test hostService() first, before classifying their pointers). quiet() completes posted
  // puts; a signal() follows them without it.
  static constexpr size_t kSmallCopyBytes = 16;
  virtual bool hostService() const = 0;
  virtual Status putSmall(void* dst, const void* src, size_t n, bool nbi) = 0;
  virtual Status getSmall(void* dst, const void* src, size_t n) = 0;
  // Another PE of this host uses this GPU (the World tells it after the topology exchange). Under
  // TETHER_HOST_SERVICE=auto the host service is then not used: a resident kernel of one process makes the GPU
  // time-slice between the processes' contexts (one H200 shared by 2 PEs, 2026-12-02: the other PE's host
  // put_signal ping-pong on GPU words went from 181 to 264 us).
  virtual void noteGpuShared(int pe) = 0;

  // Primitives for a caller that picks the GPU itself (the staged provider, transport/staged/):
  //  - deviceByBusId: the ordinal in this process of the GPU with that PCI bus id;
  //  - deviceOf: the GPU whose memory p is (device or managed memory), or -1 (host memory, unknown pointers);
  //  - createStream: a new stream on GPU `dev` of this process (blocking like the pool, non-blocking in a sibling),
  //    with the atomic/signal kernels loaded in dev's context; owned by this context, which quiet() covers;
  //  - allocPinned: portable pinned host memory (staging a copy between two GPUs that cannot address each other's
  //    memory: one copy engine writes it, the other reads it); freed with the context.
  virtual Status deviceByBusId(const std::string& busId, int* dev) = 0;
  virtual int deviceOf(const void* p) = 0;
  virtual Status createStream(int dev, GpuStream** out) = 0;
  virtual Status allocPinned(size_t n, void** out) = 0;
  virtual Status memset(void* dst, int value, size_t n) = 0;  // blocking
  // Plain GPU memory of this PE's GPU for internal tables (the device handle's peer table); freed with the context.
  virtual Status allocDevice(size_t n, void** out) = 0;
  // Runs f with the calling thread's CUDA graph capture mode relaxed (cudaThreadExchangeStreamCaptureMode), so the
  // library's own allocations and copies in f run now while the thread captures a stream (in the thread-local or
  // global mode they fail as unsafe calls: the first stream barrier or team collective captured makes the device
  // handle's peer table); none of it becomes part of the graph. No GPU: f().
  virtual Status outsideCapture(const std::function<Status()>& f) { return f(); }
  // Zeroed pinned host memory mapped for this GPU (the device API's proxy ring): *host for CPU threads, *device for
  // kernels. Freed with the context.
  virtual Status allocHostMapped(size_t n, void** host, void** device) = 0;
  // A second context on the same GPU for a thread that serves kernels while they run (the device API's proxy): its
  // internal streams do NOT synchronise with the legacy default stream, so its copies and atomic kernels make
  // progress while a kernel the proxy serves is still running there. Otherwise the same contracts.
  virtual Status createSibling(std::unique_ptr<GpuContext>* out) = 0;

  virtual Status createDeviceHeap(const DeviceHeapParams& params, Bootstrap& bootstrap,
                                  std::unique_ptr<DeviceHeap>* out) = 0;

  // Legacy CUDA IPC of user buffers between processes of one host (two-sided messaging's direct rendezvous):
  //  - exportRegion: *out names [p, p + n), which must lie in one cudaMalloc allocation of this process (any of its
  //    GPUs). Memory legacy IPC cannot share -- managed memory, stream-ordered pools (cudaMallocAsync), VMM memory
  //    (cuMemCreate), host memory, a range running past its allocation's end -- fails with TETHER_ERR_UNSUPPORTED
  //    and a message naming the kind of memory and no address (a caller may log each reason once); a CUDA failure
  //    with TETHER_ERR_CUDA. Handles are cached by (allocation base, buffer id), the 64 most recently used.
  //  - openRegion: maps the allocation that ref names, exported by another process that the caller calls `owner`
  //    (any key: two-sided messaging uses the PE), into this GPU's context (cudaIpcOpenMemHandle, peer access
  //    enabled lazily) and returns in *mapped its base here: the region is at *mapped + ref.offset. Mappings are
  //    cached by (owner, ref.bufferId), at most 64 per owner, and closed only when the context ends (closing one
  //    waits for every pending wait of the context); a 65th buffer of one owner fails with TETHER_ERR_NO_MEMORY and
  //    nothing changes, and so does, with TETHER_ERR_UNSUPPORTED, a buffer that the owner allocated over the range of
  //    one it freed while it is still mapped here (cudaErrorAlreadyMapped): the owner's other buffers still open.
  //    *mapped stays valid until the context's end. Fails with TETHER_ERR_CUDA when CUDA refuses:
  //    a handle of this same process (cudaIpcOpenMemHandle cannot open those: a self-send copies from the address
  //    instead), GPUs without peer access, IPC not permitted (some containers). The context closes every mapping it
  //    holds when it is destroyed.
  //  Lifetime: a cached mapping outlives the sends that used it and may outlive the owner's allocation. CUDA calls
  //  freeing an exported allocation before every importer closes it undefined behaviour; cached mappings rely on
  //  what drivers do in practice, as the IPC caches of MPI libraries do (a stale mapping is never read again: a new
  //  allocation has a new buffer id). TETHER_MSG_IPC=0 turns the messaging use off.
  virtual Status exportRegion(const void* p, size_t n, GpuIpcRef* out) = 0;
  virtual Status openRegion(uint64_t owner, const GpuIpcRef& ref, char** mapped) = 0;
};

}  // namespace tether
