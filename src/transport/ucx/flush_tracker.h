// Which of the ucx provider's operations a flush must still complete (ucp/ucx_ucp.cpp's file comment says where it
// is used). Pure bookkeeping, lock-free and thread-safe, no UCX: unit-tested on its own (tests/unit/test_ucx_flush).
//
// Every operation that completes only at a flush (nbi put, nbi get) takes a number once it is posted (issued()). A
// flush covers the numbers taken before it began: the caller reads mark() first, flushes, then reports the mark
// (workerFlushed / peerFlushed). An operation numbered after the mark stays uncovered, which is conservative: it may
// have been posted before the flush began, never the other way round. nbi puts also record their number per PE, so a
// one-way signal to that PE can tell whether an earlier put to it is still uncovered (peerFlushNeeded).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace tether {

class FlushTracker {
 public:
  // npes: the PEs puts can target (pe in [0, npes)). Called before any operation.
  void reset(size_t npes) {
    npes_ = npes;
    lastPut_.reset(new std::atomic<uint64_t>[npes]());
    peerFlushed_.reset(new std::atomic<uint64_t>[npes]());
  }
  // An operation completing at a flush was posted; pe >= 0 (below npes): an nbi put to that PE.
  void issued(int pe) {
    const uint64_t n = seq_.fetch_add(1, std::memory_order_acq_rel) + 1;
    if (pe >= 0 && static_cast<size_t>(pe) < npes_) raiseTo(lastPut_[pe], n);
  }
  // What a flush that begins now covers.
  uint64_t mark() const { return seq_.load(std::memory_order_acquire); }
  // Whether some operation numbered up to `mark` is not covered by a completed worker flush.
  bool workerFlushNeeded(uint64_t mark) const { return mark > workerFlushed_.load(std::memory_order_acquire); }
  // A worker flush that began at `mark` completed (every PE's operations up to it are done).
  void workerFlushed(uint64_t mark) { raiseTo(workerFlushed_, mark); }
  // Whether an nbi put to pe is not covered by a completed worker flush or flush of pe's endpoint.
  bool peerFlushNeeded(int pe) const {
    if (pe < 0 || static_cast<size_t>(pe) >= npes_) return false;
    const uint64_t last = lastPut_[pe].load(std::memory_order_acquire);
    return last > workerFlushed_.load(std::memory_order_acquire) &&
           last > peerFlushed_[pe].load(std::memory_order_acquire);
  }
  // A flush of pe's endpoint that began at `mark` completed (pe's operations up to it are done).
  void peerFlushed(int pe, uint64_t mark) {
    if (pe >= 0 && static_cast<size_t>(pe) < npes_) raiseTo(peerFlushed_[pe], mark);
  }

 private:
  static void raiseTo(std::atomic<uint64_t>& a, uint64_t v) {
    uint64_t cur = a.load(std::memory_order_acquire);
    while (cur < v && !a.compare_exchange_weak(cur, v, std::memory_order_acq_rel)) {
    }
  }

  size_t npes_ = 0;
  std::atomic<uint64_t> seq_{0};            // numbers taken so far
  std::atomic<uint64_t> workerFlushed_{0};  // a worker flush completed every number up to this
  std::unique_ptr<std::atomic<uint64_t>[]> lastPut_;      // per PE: the number of its latest nbi put (0: none)
  std::unique_ptr<std::atomic<uint64_t>[]> peerFlushed_;  // per PE: an endpoint flush completed up to this
};

}  // namespace tether
