// Deterministic symmetric allocator: a pure function of the call sequence. Every PE runs the same sequence of
// allocate/release/resize calls and so gets the same offsets, which is what makes the heap symmetric.
//
// Manages offsets in [start, limit). First fit by address over a free list kept as a sorted map; neighbours are
// coalesced on release. highWater() is the end of the highest live block; the owner commits memory up to it.
// Not thread-safe (collective allocation calls are serialised by the caller).
#pragma once

#include <cstdint>
#include <map>

#include "base/status.h"

namespace tether {

class Allocator {
 public:
  Allocator(uint64_t start, uint64_t limit);

  // align: power of two. size 0 is served as 1 byte so every allocation has a distinct offset.
  // Fails with TETHER_ERR_NO_MEMORY (naming size, limit and bytes in use) when no free range fits.
  Status allocate(uint64_t size, uint64_t align, uint64_t* offset);
  // Fails with TETHER_ERR_INVALID_ARG when offset is not the start of a live block.
  Status release(uint64_t offset);
  // Grows or shrinks the live block at offset in place when the following free range allows it; *inPlace says
  // whether it did. When it did not, nothing changed and the caller allocates + copies + releases.
  Status resizeInPlace(uint64_t offset, uint64_t newSize, bool* inPlace);

  bool isLive(uint64_t offset) const { return live_.count(offset) != 0; }
  uint64_t blockSize(uint64_t offset) const;  // 0 if not live
  uint64_t highWater() const;
  uint64_t bytesInUse() const { return inUse_; }
  uint64_t start() const { return start_; }
  uint64_t limit() const { return limit_; }

 private:
  void insertFree(uint64_t off, uint64_t size);
  uint64_t start_, limit_;
  std::map<uint64_t, uint64_t> free_;  // offset -> size
  std::map<uint64_t, uint64_t> live_;  // offset -> size
  uint64_t inUse_ = 0;
};

}  // namespace tether
