// World: one tether runtime instance (the object behind tether_t). No global state: several Worlds may live in one
// process, each with its own bootstrap, heap and peer paths.
//
// Owns: Config snapshot, Bootstrap, topology record, GPU context (when this PE has a GPU), the symmetric heap and
// its allocators (core/symmetric_heap.h), the path table (one PeerPath per PE, a SegPath per segment
// kind), the control block (internal words at the start of the HOST heap: barrier counters, team sync words).
// Thread-safety: RMA, AMO, signal and wait calls may come from several threads; init, finalize and the collective
// calls (allocation, barrier, sync) must not race with each other on one World.
//
// Composition root: each job lives in a room, a member wired here -- SymmetricHeap heap_ (core/symmetric_heap.h), the
// path table, DeviceHandleCache handles_ (core/device_handle_cache.h), TypedRma typed_ (core/typed_rma.h),
// StreamRuntime streams_ (core/stream_runtime.h), Teams teams_ (core/teams.h), Collectives colls_
// (core/collectives.h) and the proxy (core/proxy.h); callers reach them through heap(), typed(), streams(), teams(),
// colls(). World keeps the config, bootstrap, topology and GPU
// context, the collective protocol (record exchange and lost collective state around every collective call) and the
// host RMA/AMO/wait/barrier calls.
// Destruction order: stream runtime, proxy, DEVICE heap, GPU context, HOST/STATIC segments (~World and finalize).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/config.h"
#include "base/status.h"
#include "bootstrap/bootstrap.h"
#include "core/collectives.h"
#include "core/device_handle_cache.h"
#include "core/messaging.h"
#include "core/proxy.h"
#include "core/stream_ops.h"
#include "core/stream_runtime.h"
#include "core/sync_schedule.h"
#include "core/symmetric_heap.h"
#include "core/teams.h"
#include "core/typed_rma.h"
#include "core/wakeups.h"
#include "heap/allocator.h"
#include "gpu/gpu.h"
#include "heap/shm_segment.h"
#include "tether/tether.h"
#include "topology/topology.h"
#include "transport/path_table.h"
#include "transport/transport.h"

struct tether_type_s;  // a datatype handle (tether/datatype.h)

namespace tether {

class World {
 public:
  // mpiComm: null, or tether_init_mpi's MPI communicator (the job comes from it, bootstrap.h mpiJob).
  static Status create(const tether_init_attr_t& attr, std::unique_ptr<World>* out, const void* mpiComm = nullptr);
  ~World();
  Status finalize();

  int myPe() const { return job_.rank; }
  int nPes() const { return job_.size; }
  int localPe() const { return localPe_; }
  int localSize() const { return localSize_; }
  double timeout() const { return timeout_; }
  bool forceProxy() const { return forceProxy_; }  // TETHER_FORCE_PROXY
  // The barrier schedule (core/sync_schedule.h) of members `pes` (world PEs) for member `me`, by the hosts the PEs
  // run on (TETHER_SYNC_BY_HOST): every member computes the same shape.
  SyncSchedule syncSchedule(const std::vector<int>& pes, int me, int maxWords) const;
  // A key naming the host of each of `pes` (world PEs): equal keys = one host (the lowest PE there).
  std::vector<int> hostsOf(const std::vector<int>& pes) const;
  const Config& config() const { return config_; }
  const SegPath& path(int pe, SegKind kind) const { return paths_.path(pe, kind); }
  // The path table (transport/path_table.h): quiet/fence over the paths in use, progress of their providers.
  const PathTable& paths() const { return paths_; }
  // The sleep words of this host's PEs (core/wakeups.h): wake a PE after a store it may wait for; wait on mine().
  const Wakeups& wakeups() const { return wakeups_; }
  GpuContext* gpu() const { return gpu_.get(); }
  // The symmetric heap (core/symmetric_heap.h): segments, allocators, GPU views.
  SymmetricHeap& heap() { return heap_; }
  const SymmetricHeap& heap() const { return heap_; }

  // ---- heap (collective) -- core/world.cpp
  // kind: the integer value of the caller's tether_seg_kind_t, checked here (collectively) before it is used.
  Status allocate(const char* call, int kind, uint64_t align, uint64_t size, bool zero, void** out);
  Status reallocate(const char* call, void* ptr, uint64_t size, void** out);
  Status release(const char* call, void* ptr);
  void* ptr(const void* addr, int pe) const;
  // Collective: makes [addr, addr + bytes) of this process -- page-aligned, writable private memory such as the
  // program's global and static data -- the STATIC segment: contents are kept, the program goes on using the same
  // addresses, and byte k of it is symmetric with byte k of every PE's range (same size on every PE, checked). One
  // range per World; no thread may write the range during the call. Same-host PEs reach it like the HOST heap; a
  // network path would register the same range (the segment keeps addr and bytes).
  // found: the caller's own failure to determine the range (reported on every PE instead of the range checks).
  Status registerStatic(const char* call, void* addr, uint64_t bytes, const Status& found = Status::ok());

  // ---- checks: build the error message that names the call and the values
  Status checkPe(const char* call, int pe) const {
    return pe >= 0 && pe < job_.size ? Status::ok() : badPe(call, pe);
  }
  // [addr, addr + n) must lie in one of this PE's symmetric segments; *ref = its kind and offset.
  Status checkSymmetric(const char* call, const char* what, const void* addr, uint64_t n, SymRef* ref) const {
    return heap_.check(call, what, addr, n, ref);  // inline: the HOST heap first
  }
  RemoteAddr remote(int pe, SymRef ref) const {
    const SegPath& p = path(pe, ref.kind);
    char* ptr = p.base ? p.base + ref.offset : nullptr;
    return RemoteAddr{ptr, ref.offset, ref.kind,
                      ref.kind == SegKind::Device ? ptr : gpu_ ? heap_.hostGpuAlias(pe, ref) : nullptr, p.key};
  }

  // ---- RMA, AMO, signals -- core/rma.cpp
  // local: tether_put_local (Op::localCompletion).
  Status put(const char* call, void* dest, const void* src, size_t n, int pe, bool nbi, bool local = false);
  Status get(const char* call, void* dest, const void* src, size_t n, int pe, bool nbi);
  Status atomic(tether_amo_t op, tether_dtype_t type, void* dest, const void* value, const void* cond, void* fetched,
                int pe);
  Status putSignal(const char* call, void* dest, const void* src, size_t n, uint64_t* sig, uint64_t value,
                   tether_signal_op_t op, int pe, bool nbi);
  Status signalOp(uint64_t* sig, uint64_t value, tether_signal_op_t op, int pe);
  Status quiet();
  Status fence();

  // ---- non-contiguous RMA (tether_put_typed & co.) -- core/typed_rma.h
  TypedRma& typed() { return typed_; }

  // ---- waits and collectives -- core/sync.cpp
  enum class WaitMode { All, Any, Some };
  // One engine behind every wait_until / test form. values: 1 value, or n values when vector.
  Status waitOrTest(const char* call, WaitMode mode, bool block, void* ivars, size_t n, const int* status,
                    tether_dtype_t type, tether_cmp_t cmp, const void* values, bool vector, int* allResult,
                    size_t* indices, size_t* count);
  Status signalWaitUntil(uint64_t* sig, tether_cmp_t cmp, uint64_t value, uint64_t* seen);
  // _any forms scan from anyStart(ivars, n) and record what they return with anyReturned: repeated calls on the same
  // array return its satisfied entries in turn (not always the lowest), so a caller consuming each index once
  // progresses. _some returns every satisfied entry anyway.
  size_t anyStart(const void* ivars, size_t n);
  void anyReturned(const void* ivars, size_t index);
  // Collective (fails at once when collective state is lost, and loses it when it fails: see collectiveState).
  Status barrier(const char* call, bool quietFirst);

  // ---- failed state -- core/world.cpp
  // A collective that fails on this PE part-way (a timeout, a lost peer, this PE leaving before it synchronised)
  // leaves the PEs out of step: collective state is lost for good. Every later collective call on this World --
  // allocation, barrier, sync, static registration, finalize's closing barrier -- then fails at once with
  // "<call>: collective state lost: <first error>" and the first error's code, so each PE reports the same failure
  // instead of pairing a later call with a different one of its peers. A collective that fails the same way on every
  // PE after they agreed (mismatched or invalid arguments, heap exhaustion) keeps the state intact.
  // collectiveState: ok while intact. loseCollectiveState: records s (when it failed and is the first); returns s.
  Status collectiveState(const char* call) const;
  Status loseCollectiveState(const Status& s);

  // ---- device API -- core/device_handle.cpp
  // Fills the device handle (tether.h) for kernels of this PE's GPU (forGpu) or for CPU threads of this process.
  // withRing: give the handle a proxy ring even when every PE is load/store reachable (the stream planner sends
  // host-memory RMWs through the proxy on GPUs without host-native atomics); the flags still say which PEs need it.
  Status deviceHandle(bool forGpu, tether_device_handle_t* out, bool withRing = false);

  // ---- stream-ordered operations (#6) -- core/stream.cpp
  // The stream-op layer and stream barrier epochs (core/stream_runtime.h).
  StreamRuntime& streams() { return streams_; }

  // ---- teams (#21) -- core/teams.h, core/collectives.h
  Teams& teams() { return teams_; }
  Collectives& colls() { return colls_; }

  // ---- two-sided messaging (#20) -- core/messaging.h
  // The room from tether_msg_init to tether_msg_finalize (null outside); finalize drops it without a collective.
  std::unique_ptr<Messaging>& messaging() { return msg_; }

 private:
  World() = default;
  Status init(const tether_init_attr_t& attr, const void* mpiComm);
  Status discoverHosts();
  Status discoverTopology();
  void noteSharedGpu();  // tells the GPU context when another PE of this host uses the same GPU
  Status buildDeviceHandle(bool forGpu, tether_device_handle_t* out, bool withRing);  // deviceHandle's work
  Status setUpPaths();  // the path table over this World's heaps (transport/path_table.h)
  // Exchanges (seq, op, a, b, localError) with every PE; fails identically on every PE when any PE had a local
  // error or the records differ. Doubles as the entry barrier of the collective call.
  Status collectiveCheckWithError(const char* call, uint64_t op, uint64_t a, uint64_t b, const char* aName,
                                  const char* bName, const Status& localError);
  // Commits heap memory up to the allocator's high-water mark, zeroes [zeroOffset, +zeroBytes) of this PE's copy,
  // then exchanges every PE's outcome (the closing barrier of the collective call).
  // (heap_.commit, then the exchange.)
  Status commitAndSync(const char* call, SegKind kind, uint64_t zeroOffset, uint64_t zeroBytes);
  Status barrierRounds(const char* call, bool quietFirst);  // barrier() without the collective-state rules
  Status ownerGpu(void** ctx);  // *ctx: ownerGpu_, made on first use
  Status badPe(const char* call, int pe) const;

  Config config_;
  JobInfo job_;
  double timeout_ = 300;
  std::unique_ptr<Bootstrap> bootstrap_;
  Topology topo_;
  int localPe_ = 0, localSize_ = 1;
  std::vector<int> hostKey_;      // per PE: the lowest PE on its host (discoverHosts)
  bool syncByHost_ = false;       // TETHER_SYNC_BY_HOST (auto: by host)
  SyncSchedule barrierSchedule_;  // tether_barrier_all's steps over every PE (core/sync.cpp)
  SymmetricHeap heap_;  // before gpu_: the GPU context goes first (~World and finalize close the DEVICE heap before it)
  std::unique_ptr<GpuContext> gpu_;
  // Sibling of gpu_ (non-blocking streams) for peers' owner-executed atomics and signals on this PE's DEVICE words
  // (transport/ucx): made at init in jobs with network peers, released before the DEVICE heap like the proxy's.
  std::mutex ownerGpuMu_;
  std::unique_ptr<GpuContext> ownerGpu_;
  Wakeups wakeups_;  // this host's PEs' sleep words (core/wakeups.h), set up with the paths
  PathTable paths_;  // one PeerPath per PE, the providers (and staged contexts) behind them
  DeviceHandleCache handles_;  // device-handle peer tables (core/device_handle_cache.h)
  std::mutex proxyMu_;         // creation of proxy_ and the rings of device handles
  TypedRma typed_{*this};     // non-contiguous RMA (core/typed_rma.h)
  Teams teams_{*this};        // teams and their sync words (core/teams.h)
  Collectives colls_{*this};  // the team data collectives (core/collectives.h)
  std::unique_ptr<Messaging> msg_;  // two-sided messaging (core/messaging.h), between tether_msg_init and _finalize
  uint64_t allocSeq_ = 0;
  uint64_t barrierEpoch_ = 0;
  // Fairness of the _any waits (core/sync.cpp anyStart): per ivars array, the index after the one last returned;
  // kAnyCursors slots chosen by address (a collision only restarts that array's rotation).
  struct AnyCursor {
    const void* ivars = nullptr;
    size_t next = 0;
  };
  static constexpr size_t kAnyCursors = 64;
  std::mutex anyMu_;
  AnyCursor anyCursors_[kAnyCursors];
  bool finalized_ = false;
  Status lost_;  // the first error that lost collective state (ok while intact); collective calls only
  bool forceProxy_ = false;  // TETHER_FORCE_PROXY: device handles reach every other PE through the proxy
  // Device API proxy (core/proxy.h), created with the first handle that needs it (under proxyMu_). Declared last:
  // destroyed first, so its thread stops before the heaps and GPU context it uses go away.
  std::unique_ptr<Proxy> proxy_;
  std::atomic<Proxy*> liveProxy_{nullptr};  // proxy_ once created, for quiet() without proxyMu_; null after stop
  // Stream runtime (#6). Declared after proxy_: destroyed before it (an emulated stream may still be posting to it).
  StreamRuntime streams_;
};

// Internal words at the start of every PE's host heap (before the first user allocation).
struct ControlBlock {
  static constexpr int kMaxRounds = 32;  // dissemination rounds: enough for 2^32 PEs
  struct alignas(64) Slot {
    uint64_t value;
  };
  Slot barrier[kMaxRounds];
  tether_device_barrier_t devBarrier;  // the device barrier's words when there is no DEVICE heap (CPU handle too)
  tether_device_barrier_t streamBarrier;  // barrier_all_on_stream's round words (#6) when they live in HOST memory
  tether_device_barrier_t streamReset[2];  // the same for stream barriers with resets (BarrierForm::Resets), two sets
  alignas(64) uint64_t teams[kTeamSlots][kTeamSyncWords];  // each team slot's sync words (core/teams.h)
  alignas(64) uint64_t coll[kTeamSlots][kCollWords];       // each team slot's data-collective words (core/collectives.h)
  alignas(64) uint64_t devTeams[kTeamSlots][kDeviceTeamWords];  // device team sync words (HOST copy, collectives.h)
  SleepWord wake;  // this PE's sleep word (core/wakeups.h): its host waits sleep on it, writers on this host wake it
};
static_assert(sizeof(ControlBlock) <= kCollStageOffset, "control block too large");
static_assert(kCollStageOffset + kTeamSlots * 2 * kCollStageBytes <= kEagerOffset, "staging buffers");
static_assert(kEagerOffset + kTeamSlots * kEagerTeamBytes <= kEagerStageOffset, "token rings");
static_assert(kEagerStageOffset + kTeamSlots * kEagerStageTeamBytes <= kCollScratchOffset, "eager staging buffers");
static_assert(kCollScratchOffset + kTeamSlots * kCollScratchBytes <= kByHostScratchOffset, "reduction scratch");
static_assert(kByHostScratchOffset + kTeamSlots * kByHostScratchBytes <= kControlBytes, "by-host scratch");
// The DEVICE control block (kDeviceControlBytes, core/symmetric_heap.h): the device barrier (tether_device_barrier_t)
// at its start, zeroed at start-up; the device team sync words at kDeviceTeamSyncOffset and the reductions' scratch at
// kDeviceCollScratchOffset (core/coll_layout.h).
// barrier_all_on_stream's round words (a tether_device_barrier_t) in the DEVICE control block, after the device barrier.
constexpr uint64_t kDeviceStreamBarrierOffset = 4096;
// The two word sets of stream barriers with resets (BarrierForm::Resets, core/stream_runtime.h), after the team sync
// words; zeroed at start-up with the rest below kDeviceCollScratchOffset (World::init).
constexpr uint64_t kDeviceStreamResetOffset = 24576;
static_assert(sizeof(tether_device_barrier_t) <= kDeviceStreamBarrierOffset &&
              kDeviceStreamBarrierOffset + sizeof(tether_device_barrier_t) <= kDeviceTeamSyncOffset &&
              kDeviceTeamSyncOffset + kTeamSlots * kDeviceTeamWords * sizeof(uint64_t) <= kDeviceStreamResetOffset &&
              kDeviceStreamResetOffset + 2 * sizeof(tether_device_barrier_t) <= kDeviceCollScratchOffset &&
              kDeviceCollScratchOffset + kTeamSlots * kCollScratchBytes <= kDeviceControlBytes,
              "device control block layout");

}  // namespace tether
