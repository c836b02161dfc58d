// CollReach: how one PE's host collectives reach the members' memory (core/collectives.h, data phases): members'
// HOST bytes read in place where they are load/store mapped here, fetched otherwise -- gets to other hosts posted
// together (Gets: one round trip for a batch) --, DEVICE bytes by a blocking get, this PE's own DEVICE memory written
// by a local put; and the reductions over members' elements built on that (reduceSlice).
//
// Contracts
//  - Every range is a checked one (CollPlan's refs plus offsets inside them, the control area's words): no checks
//    here. Reads never write the source; a destination queued in a Gets is written only inside finish().
//  - reduceSlice combines in team order (member 0 op member 1 op ...), so every member of an allreduce computes the
//    same bits, and is correct when out overlaps this PE's own source elements (in place).
//  - It knows no World: the paths come in as Links (tests/unit's test_coll_reach drives it over a fake set of
//    members: which are mapped, what the batches were). Not thread-safe: collective calls on one team do not race.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "base/status.h"
#include "core/coll_plan.h"
#include "core/symmetric_heap.h"

namespace tether {

class CollReach {
 public:
  // One get of a batch: [ref.offset, + bytes) of PE pe's segment ref.kind into dst (CPU memory of this PE).
  struct Fetch {
    int pe;
    void* dst;
    SymRef ref;
    size_t bytes;
  };
  struct Links {
    // Where this PE reads PE pe's bytes at ref by loads (HOST/STATIC memory on a load/store path), or nullptr.
    std::function<char*(int pe, const SymRef& ref)> mapped;
    // One blocking get into dst (CPU or GPU memory of this PE).
    std::function<Status(int pe, void* dst, const SymRef& ref, size_t bytes)> get;
    // The gets of a batch posted together, all complete at return (the first error; no write into a dst after it).
    std::function<Status(const std::vector<Fetch>& batch)> getAll;
    // bytes from src (CPU memory) into this PE's own DEVICE memory at dst, complete at return (errors name call).
    std::function<Status(const char* call, void* dst, const void* src, size_t bytes)> putDevice;
  };
  // Members' chunks a reduction fetches together (one batch per window of members and chunk).
  static constexpr size_t kGetWindow = 4;
  // Elements' bytes a reduction combines per round of reads.
  static constexpr size_t kChunkBytes = 64 * 1024;

  void attach(Links links) { links_ = std::move(links); }

  // Copies into this PE's CPU memory, the gets batched: add() copies mapped bytes at once (memcpy), fetches DEVICE
  // bytes by a blocking get and queues the rest (HOST memory reached only by gets: another host, host=ucx), which
  // finish() fetches as one batch (Links::getAll). Errors carry call.
  class Gets {
   public:
    Gets(const CollReach& r, const char* call) : r_(r), call_(call) {}
    Status add(void* dst, int pe, const SymRef& ref, size_t bytes);
    Status finish();

   private:
    const CollReach& r_;
    const char* call_;
    std::vector<Fetch> queued_;
  };

  char* mapped(int pe, const SymRef& ref) const { return links_.mapped(pe, ref); }
  // One blocking get (nothing for bytes == 0).
  Status copyFrom(const char* call, void* dst, const SymRef& ref, size_t bytes, int pe) const;
  // bytes from src (CPU memory) into this PE's dst: a local put into DEVICE memory (dstDevice), else memcpy.
  Status writeLocal(const char* call, void* dst, const void* src, size_t bytes, bool dstDevice) const;
  // out[0, len) (elements of p's type) = p's op over the members' (world PEs pes, team order) src elements
  // [srcElem, srcElem + len), chunk by chunk. out is CPU memory, or (outDevice) this PE's own DEVICE memory. Members
  // whose HOST memory is mapped are read in place -- except the other member of a team of two, whose chunk is copied
  // first --, the others' chunks fetched kGetWindow members at a time (one Gets batch per window).
  Status reduceSlice(const char* call, const std::vector<int>& pes, int myPe, const CollPlan& p, size_t srcElem,
                     size_t len, char* out, bool outDevice) const;

 private:
  Links links_;
};

}  // namespace tether
