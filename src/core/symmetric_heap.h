// SymmetricHeap: this PE's symmetric memory -- the HOST, DEVICE and STATIC segments of one World, their allocators
// and their GPU views.
//
// Owns: the HOST segment group (every same-host PE's HOST heap mapped here; kControlBytes of internal control words
// first) with its allocator; the DEVICE heap (when every PE has a GPU; kDeviceControlBytes of control words first)
// with its allocator; the STATIC segment (registerStatic: this PE's range in place, every same-host PE's copy in a
// window); the GPU registration of the HOST/STATIC views (one alias delta per same-host view) and its epoch; the job
// tag and secret naming the segments' fd-exchange sockets; the default segment kind (TETHER_DEFAULT_SEGMENT).
// Does NOT own the collective protocol: World runs every collective heap call (record exchange, lost collective
// state, closing barrier: core/world.cpp) and calls the local steps here; the steps that are collective themselves
// (DEVICE growth, STATIC creation) return a failure the World turns into lost collective state.
// Who calls it: World (start-up, allocation, the address checks of every call through World::checkSymmetric), and
// the rooms and services that need the segments: device handles (views), the stream planner (control blocks), the
// proxy (segment sizes), the path table set-up (peers' bases), all through World::heap().
// Thread-safety: the checks, views and reads may come from several threads; setUp, the allocation steps, growth,
// registerStatic and close run under the World's collective-call rule (not concurrently with each other).
// Lifetime: a member of World. setUp after the bootstrap, topology and GPU context exist; closeDevice() before the GPU
// context goes (DEVICE mappings), close() after it (the GPU context unregisters the host views it registered).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/status.h"
#include "bootstrap/bootstrap.h"
#include "gpu/gpu.h"
#include "heap/allocator.h"
#include "heap/shm_segment.h"
#include "topology/topology.h"
#include "transport/transport.h"

namespace tether {

// Bytes reserved at the start of every PE's HOST segment: the ControlBlock (core/world.h) in the first 64 KiB, then
// the team collectives' staging buffers (core/coll_layout.h: kCollStageOffset), token rings (kEagerOffset), the
// eager broadcast's staging buffers (kEagerStageOffset), the reductions' scratch (kCollScratchOffset) and the rooted
// reduce by host's scratch (kByHostScratchOffset); user allocations start here.
constexpr uint64_t kControlBytes =
    64 * 1024 + 64 * 2 * 2048 + 64 * (64 + 64 * 1024) + 64 * 64 * 1024 + 64 * 16 * 1024 + 64 * 32 * 1024;
// Internal words at the start of every PE's DEVICE segment: the device barrier (tether_device_barrier_t), zeroed at
// start-up, the stream barrier and the device team sync words (core/world.h) in the first 64 KiB, then the
// reductions' scratch (core/coll_layout.h: kDeviceCollScratchOffset). User allocations start after them.
constexpr uint64_t kDeviceControlBytes = 64 * 1024 + 64 * 16 * 1024;

// A checked symmetric address: which segment, and the offset in it.
struct SymRef {
  SegKind kind;
  uint64_t offset;
  SymRef plus(uint64_t bytes) const { return SymRef{kind, offset + bytes}; }  // n bytes further into the segment
};

class SymmetricHeap {
 public:
  // Start-up (collective over bootstrap): the HOST segments (registered with the GPU when there is one), and the
  // DEVICE heap when every PE has a GPU; then the default kind from TETHER_DEFAULT_SEGMENT (fails for "device"
  // without a DEVICE heap).
  Status setUp(const Config& config, const JobInfo& job, const Topology& topo, int localPe, int localSize,
               double timeout, Bootstrap& bootstrap, GpuContext* gpu);
  void closeDevice() { device_.reset(); }  // before the GPU context goes
  void close() {                           // after it
    host_.reset();
    static_.reset();  // unmaps the peers' copies; this PE's range stays in place (backed by its file)
  }

  // ---- address checks (World::checkSymmetric)
  // [addr, addr + n) inside the committed user part of this PE's HOST heap (no overflow possible: bounded by it).
  bool inHostHeap(const void* addr, uint64_t n, SymRef* ref) const {
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr), hb = hostBase_, end = hostEnd_;
    if (a < hb + kControlBytes || a >= end || n > end - a) return false;
    *ref = SymRef{SegKind::Host, a - hb};
    return true;
  }
  // This PE's address of ref (the inverse of check, unchecked); nullptr when its segment is absent here.
  char* local(SymRef ref) const {
    char* b = ref.kind == SegKind::Static   ? staticLocal_
              : ref.kind == SegKind::Device ? (device_ ? device_->myBase() : nullptr)
                                            : host_->myBase();
    return b ? b + ref.offset : nullptr;
  }
  // Every segment, with the error that names the call, the value and the segments' ranges.
  Status checkSlow(const char* call, const char* what, const void* addr, uint64_t n, SymRef* ref) const;
  Status check(const char* call, const char* what, const void* addr, uint64_t n, SymRef* ref) const {
    if (inHostHeap(addr, n, ref)) return Status::ok();  // the common case, inline
    return checkSlow(call, what, addr, n, ref);
  }
  // ptr must be the start of a live allocation of the HOST or DEVICE heap.
  Status liveRef(const char* call, const void* ptr, SymRef* ref) const;
  // TETHER_SEG_* (an int from the caller, checked here) to a segment kind.
  Status resolveKind(const char* call, int kind, SegKind* out) const;

  // ---- allocation steps (World::allocate/reallocate/release run the collective protocol around them)
  Allocator& allocator(SegKind k) { return k == SegKind::Host ? *alloc_ : *devAlloc_; }
  char* base(SegKind k) const { return k == SegKind::Host ? host_->myBase() : device_->myBase(); }
  // Commits heap memory of kind up to its allocator's high-water mark and zeroes [zeroOffset, +zeroBytes) of this
  // PE's copy. *local: this PE's outcome (exchanged by the caller). Returns a failure of the collective DEVICE growth.
  Status commit(const char* call, SegKind kind, uint64_t zeroOffset, uint64_t zeroBytes, Status* local);
  // After every PE committed: the GPU views of the HOST segments follow their growth (the added range registered;
  // a view whose new range gets a GPU address that does not continue it is registered again as a whole).
  Status registerGrowth();

  // ---- STATIC segment (World::registerStatic runs the collective protocol around them)
  // This PE's own errors for [addr, addr + bytes) (one range per World, page-aligned, non-empty).
  Status staticArgs(const char* call, void* addr, uint64_t bytes) const;
  // Makes the range the STATIC segment (collective: every PE maps every same-host PE's copy) and registers its views
  // with the GPU.
  Status createStatic(const char* call, void* addr, uint64_t bytes);

  // ---- segments and views
  HostSegmentGroup* host() const { return host_.get(); }
  DeviceHeap* device() const { return device_.get(); }
  HostSegmentGroup* statics() const { return static_.get(); }
  char* staticLocal() const { return staticLocal_; }
  uint64_t staticBytes() const { return staticBytes_; }
  // Bytes of this PE's segment of kind k that exist now (committed; 0 when absent), control words included.
  uint64_t segmentBytes(SegKind k) const;
  // HOST bytes registered with the GPU (every same-host view), and the GPU - CPU address delta of local PE j's view
  // of HOST / STATIC (0 when not registered).
  uint64_t registered() const { return registered_; }
  intptr_t hostAlias(int j) const {
    return j >= 0 && static_cast<size_t>(j) < hostAlias_.size() ? hostAlias_[static_cast<size_t>(j)] : 0;
  }
  intptr_t staticAlias(int j) const {
    return j >= 0 && static_cast<size_t>(j) < staticAlias_.size() ? staticAlias_[static_cast<size_t>(j)] : 0;
  }
  bool hostAliased(int j) const { return registered_ && static_cast<size_t>(j) < hostAlias_.size(); }
  bool staticAliased(int j) const { return static_ && static_cast<size_t>(j) < staticAlias_.size(); }
  // GPU-usable address of byte ref.offset of PE pe's HOST or STATIC segment, or nullptr (no GPU, PE on another host,
  // or not registered).
  char* hostGpuAlias(int pe, SymRef ref) const;
  // Reads n bytes of this PE's own symmetric memory into host memory out (a DEVICE segment goes through the GPU: the
  // host service for up to GpuContext::kSmallCopyBytes, else a copy).
  Status readLocal(SymRef ref, void* out, size_t n) const;
  // Zeroes n bytes of this PE's own symmetric memory (a DEVICE segment through the GPU); [offset, +n) may lie in the
  // control block.
  Status zeroLocal(SymRef ref, size_t n);
  // Counts changes of the GPU views of HOST segments (a view registered again after growth): prepared stream plans
  // that translated addresses under an older count are rebuilt before use.
  uint64_t viewsEpoch() const { return viewsEpoch_.load(std::memory_order_acquire); }

 private:
  Status deviceAccess(const Config& config, std::vector<int>* out);
  Status registerHostViews(uint64_t committed);
  HostSegmentParams params(const char* name) const;  // this job's local ranks, socket tag, secret, timeout

  // Set by setUp (owned by the World, which outlives every use).
  const Topology* topo_ = nullptr;
  Bootstrap* bootstrap_ = nullptr;
  GpuContext* gpu_ = nullptr;
  int rank_ = 0, size_ = 1, localPe_ = 0, localSize_ = 1;
  double timeout_ = 300;

  uintptr_t hostBase_ = 0, hostEnd_ = 0;  // this PE's HOST heap: base and end of the committed part
  std::unique_ptr<HostSegmentGroup> host_;
  std::unique_ptr<Allocator> alloc_;
  std::unique_ptr<DeviceHeap> device_;
  std::unique_ptr<Allocator> devAlloc_;
  SegKind defaultKind_ = SegKind::Host;
  uint64_t registered_ = 0;           // HOST bytes registered with the GPU (every same-host view)
  std::vector<intptr_t> hostAlias_;   // by local index: GPU address - CPU address of that HOST view
  std::vector<std::vector<char*>> hostPieces_;  // by local index: starts of the ranges registered for that view
  std::string heapTag_, heapSecret_;  // name the fd-exchange sockets of this job's segments / authenticate fetches
  std::vector<int> localRanks_;       // global rank of each same-host PE, by local index
  std::unique_ptr<HostSegmentGroup> static_;
  char* staticLocal_ = nullptr;
  uint64_t staticBytes_ = 0;
  std::vector<intptr_t> staticAlias_;  // by local index: GPU address - CPU address of that STATIC view
  std::atomic<uint64_t> viewsEpoch_{0};
};

}  // namespace tether
