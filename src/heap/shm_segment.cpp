#include "heap/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/log.h"
#include "base/unix_socket.h"
#include "bootstrap/bootstrap.h"

namespace tether {
namespace {

constexpr uint64_t kStrideAlign = 2ull << 20;

uint64_t roundUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

HostSegmentGroup::~HostSegmentGroup() {
  if (window_) ::munmap(window_, windowBytes_);
  if (memfd_ >= 0) ::close(memfd_);
}

Status HostSegmentGroup::create(const HostSegmentParams& p, Bootstrap& bootstrap,
                                std::unique_ptr<HostSegmentGroup>* out) {
  std::unique_ptr<HostSegmentGroup> g(new HostSegmentGroup());
  g->params_ = p;
  const int localSize = static_cast<int>(p.localRanks.size());
  const int me = p.localRanks[static_cast<size_t>(p.localIndex)];
  if (p.adopt && p.initialBytes != p.maxBytes)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "adopting a range: its size (%llu) must be both the initial and the maximum size",
                static_cast<unsigned long long>(p.initialBytes));
  if (p.initialBytes > p.maxBytes)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "TETHER_HEAP_SIZE (%llu bytes) is larger than TETHER_HEAP_MAX (%llu bytes)",
                static_cast<unsigned long long>(p.initialBytes), static_cast<unsigned long long>(p.maxBytes));
  g->stride_ = roundUp(p.maxBytes, kStrideAlign);
  if (g->stride_ > (1ull << 46) / static_cast<uint64_t>(localSize))
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "TETHER_HEAP_MAX=%llu bytes x %d same-host PEs exceeds the address space",
                static_cast<unsigned long long>(p.maxBytes), localSize);
  g->windowBytes_ = g->stride_ * static_cast<uint64_t>(localSize);

  TETHER_TRY(g->reserveWindow(p.localIndex));

  g->memfd_ = ::memfd_create(("tether-" + p.name + "-" + std::to_string(me)).c_str(), MFD_CLOEXEC);
  if (g->memfd_ < 0) return errnoStatus("memfd_create(" + p.name + ")", errno);
  if (::ftruncate(g->memfd_, static_cast<off_t>(p.initialBytes)) != 0)
    return errnoStatus("ftruncate(" + p.name + ", " + std::to_string(p.initialBytes) + ")", errno);
  g->committed_ = p.initialBytes;
  if (p.adopt) {
    TETHER_TRY(g->adoptRange(p.adopt, p.initialBytes));
    g->backed_ = p.initialBytes;
  } else if (p.backAll) {
    TETHER_TRY(g->back(p.initialBytes));
  }

  FdExchange fx;
  TETHER_TRY(fx.listen(p.jobTag, p.name, me, localSize));
  TETHER_TRY(bootstrap.barrier());  // every same-host PE is listening
  std::vector<int> fds;
  TETHER_TRY(fx.exchange(p.localIndex, p.localRanks, p.secret, g->memfd_, p.timeoutSeconds, &fds));
  for (int j = 0; j < localSize; ++j) {
    const bool mine = j == p.localIndex;
    const int fd = mine ? g->memfd_ : fds[static_cast<size_t>(j)];
    void* m = ::mmap(g->base(j), g->stride_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
    int err = errno;
    if (!mine) ::close(fd);  // the mapping keeps the memory alive
    if (m == MAP_FAILED)
      return errnoStatus("mapping the " + p.name + " segment of PE " + std::to_string(p.localRanks[static_cast<size_t>(j)]), err);
  }
  TETHER_LOG_INFO(LogSys::Heap, "host %s: %llu bytes committed (%llu backed by memory), up to %llu, %d same-host PEs "
                  "mapped at %p (+%llu each)",
                  p.name.c_str(), static_cast<unsigned long long>(g->committed_),
                  static_cast<unsigned long long>(g->backed_), static_cast<unsigned long long>(p.maxBytes),
                  localSize, static_cast<void*>(g->window_), static_cast<unsigned long long>(g->stride_));
  *out = std::move(g);
  return Status::ok();
}

// Reserves the window so that this PE's own segment starts at a multiple of baseAlign() (the largest power of two
// <= stride): an allocation offset aligned to A <= baseAlign() is then an A-aligned address on every PE, which is
// what lets shmem_align / tether_align honour any alignment that fits in the heap with one symmetric offset.
// Over-reserves by baseAlign() and unmaps the unused head and tail.
Status HostSegmentGroup::reserveWindow(int localIndex) {
  const uint64_t align = baseAlign();
  const uint64_t bytes = windowBytes_ + align;
  void* w = ::mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (w == MAP_FAILED) return errnoStatus("reserving " + std::to_string(bytes) + " bytes of address space "
                                          "for the host heap (lower TETHER_HEAP_MAX)", errno);
  const uint64_t raw = reinterpret_cast<uintptr_t>(w);
  const uint64_t mine = static_cast<uint64_t>(localIndex) * stride_;
  const uint64_t start = roundUp(raw + mine, align) - mine;  // in [raw, raw + align)
  if (start > raw) ::munmap(w, start - raw);
  if (raw + bytes > start + windowBytes_)
    ::munmap(reinterpret_cast<void*>(start + windowBytes_), raw + bytes - (start + windowBytes_));
  window_ = reinterpret_cast<char*>(start);
  return Status::ok();
}

Status HostSegmentGroup::adoptRange(void* addr, uint64_t bytes) {
  // Copy the bytes into the file (which allocates every page of it), then put the file in place of the original pages: from here on the program's own
  // accesses and the peers' windows see one copy.
  const char* src = static_cast<const char*>(addr);
  for (uint64_t done = 0; done < bytes;) {
    // The raw system call, not pwrite(): sanitizers intercept pwrite and would flag the redzones they put between
    // the program's globals, which this copy must carry over as they are.
    ssize_t w = ::syscall(SYS_pwrite64, memfd_, src + done, bytes - done, static_cast<off_t>(done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return errnoStatus("copying " + std::to_string(bytes) + " bytes at " + strprintf("%p", addr) +
                                   " into the " + params_.name + " file", errno);
    done += static_cast<uint64_t>(w);
  }
  void* m = ::mmap(addr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, memfd_, 0);
  if (m == MAP_FAILED)
    return errnoStatus("mapping the " + params_.name + " file over " + strprintf("%p", addr), errno);
  return Status::ok();
}

Status HostSegmentGroup::back(uint64_t bytes) {
  if (bytes <= backed_) return Status::ok();
  if (bytes > committed_)
    TETHER_FAIL(TETHER_ERR_INTERNAL, "host %s: backing %llu bytes, beyond the committed %llu", params_.name.c_str(),
                static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(committed_));
  const uint64_t target = std::min(committed_, roundUp(std::max(bytes, backed_ + backed_ / 2), kStrideAlign));
  TETHER_TRY(populate(backed_, target));
  TETHER_LOG_DEBUG(LogSys::Heap, "host %s: %llu of %llu committed bytes backed by memory", params_.name.c_str(),
                   static_cast<unsigned long long>(target), static_cast<unsigned long long>(committed_));
  backed_ = target;
  return Status::ok();
}

Status HostSegmentGroup::populate(uint64_t from, uint64_t to) {
  // Back the range with memory now: pages a GPU registers must exist (registration of never-touched file pages is
  // not reliably shared on every kernel/sandbox), and running out of memory becomes an error here instead of a
  // SIGBUS at the first touch.
  int r;
  do r = ::fallocate(memfd_, 0, static_cast<off_t>(from), static_cast<off_t>(to - from));
  while (r != 0 && errno == EINTR);
  if (r != 0 && errno != EOPNOTSUPP)
    return errnoStatus("allocating " + std::to_string(to - from) + " bytes for the host heap", errno);
  return Status::ok();
}

Status HostSegmentGroup::grow(uint64_t newBytes) {
  if (newBytes <= committed_) return Status::ok();
  if (params_.adopt)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "the %s segment adopts a fixed range of %llu bytes and cannot grow",
                params_.name.c_str(), static_cast<unsigned long long>(committed_));
  if (newBytes > params_.maxBytes)
    TETHER_FAIL(TETHER_ERR_NO_MEMORY, "host heap cannot grow to %llu bytes: TETHER_HEAP_MAX is %llu bytes",
                static_cast<unsigned long long>(newBytes), static_cast<unsigned long long>(params_.maxBytes));
  if (::ftruncate(memfd_, static_cast<off_t>(newBytes)) != 0)
    return errnoStatus("growing the host heap to " + std::to_string(newBytes) + " bytes", errno);
  TETHER_LOG_INFO(LogSys::Heap, "host heap grown from %llu to %llu bytes", static_cast<unsigned long long>(committed_),
                  static_cast<unsigned long long>(newBytes));
  committed_ = newBytes;
  return params_.backAll ? back(newBytes) : Status::ok();
}

}  // namespace tether
