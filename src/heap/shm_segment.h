// HOST segment group: this PE's host symmetric heap and its mappings of every same-host PE's heap.
//
// Layout: one reserved virtual-address window of localSize * stride bytes; local PE j's memfd is mapped (shared) at
// window + j * stride, for the whole stride, whatever its current size. So a symmetric address translates to local
// PE j with one add: peer = window + j * stride + (addr - mine). The file behind each mapping only ever grows
// (ftruncate by its owner); a peer never touches bytes beyond the collectively agreed size, so the mapping beyond
// end-of-file is never accessed.
//
// Adopting an existing range (params.adopt): instead of starting empty, this PE's file starts as a copy of
// [adopt, adopt + initialBytes) of its own address space and is then mapped over that range (MAP_FIXED|MAP_SHARED),
// so the program keeps using the same addresses while same-host peers reach the same bytes through their windows.
// This is how global and static variables become symmetric. The range must be page-aligned, writable, private
// memory of this process (e.g. the program's .data/.bss), and no thread may write it during create(); an adopted
// group never grows. After create() the range stays backed by the shared file for the life of the process (also
// after the group is destroyed), and a fork()ed child shares it with the parent.
//
// Memory behind the file: ftruncate only sizes the file (no memory). Unless params.backAll, memory is allocated
// (fallocate) as the caller reports use: back(bytes) before the first use of [0, bytes) (the owner calls it with the
// allocator's high-water mark), so a large committed size costs nothing until allocations reach it, and running out
// of memory is an error at allocation time instead of a SIGBUS at first touch. backAll backs every committed byte at
// once (create, grow): GPU registration pins the whole committed range anyway, and must see pages that exist.
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
  std::string name = "heap";         // names the memfd and the fd-exchange sockets; unique among the job's groups
  void* adopt = nullptr;             // page-aligned range of initialBytes to adopt (maxBytes must equal initialBytes)
  std::string jobTag;                // unique per job (names the fd-exchange sockets)
  std::string secret;                // presented by PEs fetching this PE's descriptor
  double timeoutSeconds = 300;
  bool backAll = false;              // back every committed byte at once (see above) instead of following back()
};

class HostSegmentGroup {
 public:
  ~HostSegmentGroup();
  // Collective over all PEs of `bootstrap` (uses its barrier between steps).
  static Status create(const HostSegmentParams& params, Bootstrap& bootstrap, std::unique_ptr<HostSegmentGroup>* out);

  char* base(int localIndex) const { return window_ + static_cast<uint64_t>(localIndex) * stride_; }
  char* myBase() const { return base(params_.localIndex); }
  uint64_t stride() const { return stride_; }
  // myBase() is a multiple of this (the largest power of two <= stride) on every PE, so any alignment an allocation
  // of the segment can satisfy is honoured at the same offset everywhere.
  uint64_t baseAlign() const { return uint64_t{1} << (63 - __builtin_clzll(stride_)); }
  uint64_t committed() const { return committed_; }
  // Grows this PE's file to newBytes (<= maxBytes). Every same-host PE must call it with the same value.
  Status grow(uint64_t newBytes);
  // Local: makes sure memory backs [0, bytes) of this PE's file (bytes <= committed()); allocates ahead by half of
  // what is backed (2 MiB steps) so a run of small allocations does not call fallocate each time.
  Status back(uint64_t bytes);
  uint64_t backed() const { return backed_; }

 private:
  HostSegmentGroup() = default;
  Status populate(uint64_t from, uint64_t to);
  Status adoptRange(void* addr, uint64_t bytes);
  Status reserveWindow(int localIndex);
  HostSegmentParams params_;
  char* window_ = nullptr;
  uint64_t windowBytes_ = 0;
  uint64_t stride_ = 0;
  uint64_t committed_ = 0;
  uint64_t backed_ = 0;
  int memfd_ = -1;
};

}  // namespace tether
