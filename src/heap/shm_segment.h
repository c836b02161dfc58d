// HOST segment group: this PE's host symmetric heap and its mappings of every same-host PE's heap.
//
// Layout: one reserved virtual-address window of localSize * stride bytes; local PE j's memfd is mapped (shared) at
// window + j * stride, for the whole stride, whatever its current size. So a symmetric address translates to local
// PE j with one add: peer = window + j * stride + (addr - mine). The file behind each mapping only ever grows
// (ftruncate by its owner); a peer never touches bytes beyond the collectively agreed size, so the mapping beyond
// end-of-file is never accessed.
//
// Contract: create() and grow() are collective over the same-host PEs; the caller synchronises after grow() before
// any PE uses the new bytes. Not thread-safe; owned by one World.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace tether {

class Bootstrap;

struct HostSegmentParams {
  int localIndex = 0;                // this PE's index among the same-host PEs
  std::vector<int> localRanks;       // global rank of each same-host PE, by local index
  uint64_t initialBytes = 0;         // committed size at creation
  uint64_t maxBytes = 0;             // stride; the heap never grows beyond it
  std::string jobTag;                // unique per job (names the fd-exchange sockets)
  std::string secret;                // presented by PEs fetching this PE's descriptor
  double timeoutSeconds = 300;
};

class HostSegmentGroup {
 public:
  ~HostSegmentGroup();
  // Collective over all PEs of `bootstrap` (uses its barrier between steps).
  static Status create(const HostSegmentParams& params, Bootstrap& bootstrap, std::unique_ptr<HostSegmentGroup>* out);

  char* base(int localIndex) const { return window_ + static_cast<uint64_t>(localIndex) * stride_; }
  char* myBase() const { return base(params_.localIndex); }
  uint64_t stride() const { return stride_; }
  uint64_t committed() const { return committed_; }
  // Grows this PE's file to newBytes (<= maxBytes). Every same-host PE must call it with the same value.
  Status grow(uint64_t newBytes);

 private:
  HostSegmentGroup() = default;
  Status populate(uint64_t from, uint64_t to);
  HostSegmentParams params_;
  char* window_ = nullptr;
  uint64_t windowBytes_ = 0;
  uint64_t stride_ = 0;
  uint64_t committed_ = 0;
  int memfd_ = -1;
};

}  // namespace tether
