// World: one tether runtime instance (the object behind tether_t). No global state: several Worlds may live in one
// process, each with its own bootstrap, heap and peer paths.
//
// Owns: Config snapshot, Bootstrap, topology record, HOST segment group + deterministic allocator, one PeerPath per
// PE, the control block (internal words at the start of the heap: barrier counters).
// Thread-safety: RMA, AMO, signal and wait calls may come from several threads; init, finalize and the collective
// calls (allocation, barrier, sync) must not race with each other on one World.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/config.h"
#include "base/status.h"
#include "bootstrap/bootstrap.h"
#include "heap/allocator.h"
#include "heap/shm_segment.h"
#include "tether/tether.h"
#include "transport/transport.h"

namespace tether {

struct PeerPath {
  PathKind kind = PathKind::None;
  const TransportOps* ops = nullptr;
  void* ctx = nullptr;
  char* base = nullptr;  // the peer's heap base as mapped here, or nullptr on non-load/store paths
  std::string reason;
};

class World {
 public:
  static Status create(const tether_init_attr_t& attr, std::unique_ptr<World>* out);
  ~World();
  Status finalize();

  int myPe() const { return job_.rank; }
  int nPes() const { return job_.size; }
  int localPe() const { return localPe_; }
  int localSize() const { return localSize_; }
  double timeout() const { return timeout_; }
  const PeerPath& path(int pe) const { return paths_[static_cast<size_t>(pe)]; }

  // ---- heap (collective) -- core/world.cpp
  Status allocate(const char* call, tether_seg_kind_t kind, uint64_t align, uint64_t size, bool zero, void** out);
  Status reallocate(const char* call, void* ptr, uint64_t size, void** out);
  Status release(const char* call, void* ptr);
  void* ptr(const void* addr, int pe) const;

  // ---- checks: build the error message that names the call and the values
  Status checkPe(const char* call, int pe) const;
  // [addr, addr + n) must lie in this PE's symmetric heap; *offset = addr - heap base.
  Status checkSymmetric(const char* call, const char* what, const void* addr, uint64_t n, uint64_t* offset) const;
  RemoteAddr remote(int pe, uint64_t offset) const {
    const PeerPath& p = path(pe);
    return RemoteAddr{p.base ? p.base + offset : nullptr, offset};
  }

  // ---- RMA, AMO, signals -- core/rma.cpp
  Status put(const char* call, void* dest, const void* src, size_t n, int pe, bool nbi);
  Status get(const char* call, void* dest, const void* src, size_t n, int pe, bool nbi);
  Status atomic(tether_amo_t op, tether_dtype_t type, void* dest, const void* value, const void* cond, void* fetched,
                int pe);
  Status putSignal(const char* call, void* dest, const void* src, size_t n, uint64_t* sig, uint64_t value,
                   tether_signal_op_t op, int pe, bool nbi);
  Status signalOp(uint64_t* sig, uint64_t value, tether_signal_op_t op, int pe);
  Status quiet();
  Status fence();

  // ---- waits and collectives -- core/sync.cpp
  enum class WaitMode { All, Any, Some };
  // One engine behind every wait_until / test form. values: 1 value, or n values when vector.
  Status waitOrTest(const char* call, WaitMode mode, bool block, void* ivars, size_t n, const int* status,
                    tether_dtype_t type, tether_cmp_t cmp, const void* values, bool vector, int* allResult,
                    size_t* indices, size_t* count);
  Status signalWaitUntil(uint64_t* sig, tether_cmp_t cmp, uint64_t value, uint64_t* seen);
  Status barrier(const char* call, bool quietFirst);

 private:
  World() = default;
  Status init(const tether_init_attr_t& attr);
  Status discoverTopology();
  static uint64_t nowTag();
  // Exchanges (seq, op, a, b, localError) with every PE; fails identically on every PE when any PE had a local
  // error or the records differ. Doubles as the entry barrier of the collective call.
  Status collectiveCheckWithError(const char* call, uint64_t op, uint64_t a, uint64_t b, const char* aName,
                                  const char* bName, const Status& localError);
  // Commits heap memory up to the allocator's high-water mark, zeroes [zeroOffset, +zeroBytes) of this PE's copy,
  // then exchanges every PE's outcome (the closing barrier of the collective call).
  Status commitAndSync(const char* call, uint64_t zeroOffset, uint64_t zeroBytes);
  Status liveOffset(const char* call, const void* ptr, uint64_t* off) const;

  Config config_;
  JobInfo job_;
  double timeout_ = 300;
  std::unique_ptr<Bootstrap> bootstrap_;
  std::vector<PeInfo> pes_;
  int localPe_ = 0, localSize_ = 1;
  std::unique_ptr<HostSegmentGroup> host_;
  std::unique_ptr<Allocator> alloc_;
  uint64_t growChunk_ = 0;
  std::vector<PeerPath> paths_;
  std::vector<std::pair<const TransportOps*, void*>> opsInUse_;  // distinct (ops, ctx) over all paths (quiet/fence visit each once)
  uint64_t allocSeq_ = 0;
  uint64_t barrierEpoch_ = 0;
  bool finalized_ = false;
};

// Internal words at the start of every PE's host heap (before the first user allocation).
struct ControlBlock {
  static constexpr int kMaxRounds = 32;  // dissemination rounds: enough for 2^32 PEs
  struct alignas(64) Slot {
    uint64_t value;
  };
  Slot barrier[kMaxRounds];
};
constexpr uint64_t kControlBytes = 64 * 1024;  // reserved; user allocations start here
static_assert(sizeof(ControlBlock) <= kControlBytes, "control block too large");

}  // namespace tether
