#include "heap/allocator.h"

namespace tether {

Allocator::Allocator(uint64_t start, uint64_t limit) : start_(start), limit_(limit) {
  if (limit > start) free_[start] = limit - start;
}

void Allocator::insertFree(uint64_t off, uint64_t size) {
  if (size == 0) return;
  auto next = free_.lower_bound(off);
  if (next != free_.end() && off + size == next->first) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == off) {
      prev->second += size;
      return;
    }
  }
  free_[off] = size;
}

Status Allocator::allocate(uint64_t size, uint64_t align, uint64_t* offset) {
  if (align == 0 || (align & (align - 1)) != 0)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "alignment %llu is not a power of two", static_cast<unsigned long long>(align));
  if (size == 0) size = 1;
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    uint64_t off = it->first, len = it->second;
    uint64_t aligned = (off + align - 1) & ~(align - 1);
    if (aligned < off || aligned - off > len || len - (aligned - off) < size) continue;
    free_.erase(it);
    insertFree(off, aligned - off);
    insertFree(aligned + size, off + len - (aligned + size));
    live_[aligned] = size;
    inUse_ += size;
    *offset = aligned;
    return Status::ok();
  }
  TETHER_FAIL(TETHER_ERR_NO_MEMORY,
              "symmetric heap exhausted: %llu bytes (alignment %llu) requested, %llu of %llu bytes in use "
              "(raise TETHER_HEAP_MAX)",
              static_cast<unsigned long long>(size), static_cast<unsigned long long>(align),
              static_cast<unsigned long long>(inUse_), static_cast<unsigned long long>(limit_ - start_));
}

Status Allocator::release(uint64_t offset) {
  auto it = live_.find(offset);
  if (it == live_.end())
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "heap offset 0x%llx is not the start of a live allocation",
                static_cast<unsigned long long>(offset));
  inUse_ -= it->second;
  insertFree(it->first, it->second);
  live_.erase(it);
  return Status::ok();
}

Status Allocator::resizeInPlace(uint64_t offset, uint64_t newSize, bool* inPlace) {
  *inPlace = false;
  auto it = live_.find(offset);
  if (it == live_.end())
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "heap offset 0x%llx is not the start of a live allocation",
                static_cast<unsigned long long>(offset));
  if (newSize == 0) newSize = 1;
  uint64_t old = it->second;
  if (newSize <= old) {
    insertFree(offset + newSize, old - newSize);
    it->second = newSize;
    inUse_ -= old - newSize;
    *inPlace = true;
    return Status::ok();
  }
  auto next = free_.find(offset + old);
  if (next == free_.end() || next->second < newSize - old) return Status::ok();
  uint64_t nextLen = next->second;
  free_.erase(next);
  insertFree(offset + newSize, nextLen - (newSize - old));
  it->second = newSize;
  inUse_ += newSize - old;
  *inPlace = true;
  return Status::ok();
}

uint64_t Allocator::blockSize(uint64_t offset) const {
  auto it = live_.find(offset);
  return it == live_.end() ? 0 : it->second;
}

uint64_t Allocator::highWater() const {
  if (live_.empty()) return start_;
  auto last = std::prev(live_.end());
  return last->first + last->second;
}

}  // namespace tether
