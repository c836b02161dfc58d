// SymmetricHeap (core/symmetric_heap.h): segments, allocators and GPU views of one World's symmetric memory.
#include "core/symmetric_heap.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <random>

#include "base/enum_arg.h"
#include "base/log.h"

namespace tether {
namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kGrowAlign = 2ull << 20;

uint64_t roundUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

uint64_t nowTag() { return static_cast<uint64_t>(getpid()) << 16 ^ static_cast<uint64_t>(time(nullptr)); }

}  // namespace

Status SymmetricHeap::setUp(const Config& config, const JobInfo& job, const Topology& topo, int localPe,
                            int localSize, double timeout, Bootstrap& bootstrap, GpuContext* gpu) {
  topo_ = &topo;
  bootstrap_ = &bootstrap;
  gpu_ = gpu;
  rank_ = job.rank;
  size_ = job.size;
  localPe_ = localPe;
  localSize_ = localSize;
  timeout_ = timeout;

  // Heaps: a per-job tag from rank 0 names the fd-exchange sockets.
  uint64_t tag = 0;
  if (rank_ == 0) tag = std::random_device{}() ^ (static_cast<uint64_t>(std::random_device{}()) << 32) ^ nowTag();
  TETHER_TRY(bootstrap.broadcast(&tag, sizeof tag, 0));
  for (int r = 0; r < size_; ++r)
    if (topo.sameHost(r, rank_)) localRanks_.push_back(r);
  char tagText[32];
  std::snprintf(tagText, sizeof tagText, "%016llx", static_cast<unsigned long long>(tag));
  heapTag_ = tagText;
  heapSecret_ = job.secret.empty() ? std::string(tagText) : job.secret;

  HostSegmentParams hp = params("heap");
  hp.maxBytes = roundUp(std::max<uint64_t>(config.size("TETHER_HEAP_MAX"), kControlBytes + kPage), kPage);
  hp.initialBytes = std::min(hp.maxBytes, roundUp(std::max<uint64_t>(config.size("TETHER_HEAP_SIZE"),
                                                                     kControlBytes + kPage), kPage));
  hp.backAll = gpu_ != nullptr;  // registration pins the committed range: back it all; else memory follows use
  TETHER_TRY(HostSegmentGroup::create(hp, bootstrap, &host_).withContext("tether_init: host heap"));
  TETHER_TRY(host_->back(kControlBytes).withContext("tether_init: host heap"));
  hostBase_ = reinterpret_cast<uintptr_t>(host_->myBase());
  hostEnd_ = hostBase_ + host_->committed();
  alloc_.reset(new Allocator(kControlBytes, hp.maxBytes));
  if (gpu_) TETHER_TRY(registerHostViews(host_->committed()).withContext("tether_init"));

  // DEVICE heap only when every PE has a GPU (the heap is symmetric: all or none).
  int32_t hasGpu = gpu_ ? 1 : 0;
  std::vector<int32_t> gpus(static_cast<size_t>(size_));
  TETHER_TRY(bootstrap.allgather(&hasGpu, gpus.data(), sizeof hasGpu).withContext("tether_init"));
  bool allGpu = std::all_of(gpus.begin(), gpus.end(), [](int32_t g) { return g != 0; });
  if (gpu_ && !allGpu)
    TETHER_LOG_WARN(LogSys::Heap, "some PEs have no GPU: DEVICE segments are disabled on every PE");
  if (allGpu) {
    DeviceHeapParams dp;
    dp.localIndex = localPe_;
    dp.localRanks = localRanks_;
    dp.maxBytes = roundUp(config.size("TETHER_DEVICE_HEAP_MAX"), kGrowAlign);
    dp.initialBytes = std::min(dp.maxBytes, roundUp(std::max<uint64_t>(config.size("TETHER_DEVICE_HEAP_SIZE"),
                                                                       kGrowAlign), kGrowAlign));
    dp.jobTag = tagText;
    dp.secret = heapSecret_;
    dp.timeoutSeconds = timeout_;
    dp.forceIpc = config.flag("TETHER_DEVICE_IPC");
    TETHER_TRY(deviceAccess(config, &dp.accessDevice).withContext("tether_init"));
    TETHER_TRY(gpu_->createDeviceHeap(dp, bootstrap, &device_).withContext("tether_init: device heap"));
    devAlloc_.reset(new Allocator(kDeviceControlBytes, device_->maxBytes()));
    TETHER_LOG_INFO(LogSys::Heap, "DEVICE heap (%s): %llu bytes committed on GPU %d, up to %llu",
                    device_->mechanism(), static_cast<unsigned long long>(device_->committed()), gpu_->device(),
                    static_cast<unsigned long long>(device_->maxBytes()));
  }

  const std::string def = config.str("TETHER_DEFAULT_SEGMENT");
  if (def == "device" && !device_)
    TETHER_FAIL(TETHER_ERR_UNSUPPORTED, "tether_init: TETHER_DEFAULT_SEGMENT=device but %s",
                gpu_ ? "not every PE has a GPU" : "this PE has no GPU context");
  defaultKind_ = (def == "device" || (def == "auto" && device_)) ? SegKind::Device : SegKind::Host;
  return Status::ok();
}

Status SymmetricHeap::deviceAccess(const Config& config, std::vector<int>* out) {
  // Which GPU of this process reaches each same-host PE's DEVICE segment: this PE's GPU (p2p), or the owner's GPU
  // itself (staged: no peer access, or forced by TETHER_PATHS).
  PathOverrides ov;
  TETHER_TRY(PathOverrides::parse(config.str("TETHER_PATHS"), &ov));
  out->assign(localRanks_.size(), gpu_->device());
  for (size_t j = 0; j < localRanks_.size(); ++j) {
    PathChoice c;
    TETHER_TRY(choosePath(*topo_, rank_, localRanks_[j], SegKind::Device, ov, &c));
    if (c.kind == PathKind::Staged)
      TETHER_TRY(gpu_->deviceByBusId(topo_->pes[static_cast<size_t>(localRanks_[j])].gpu.busId, &(*out)[j])
                     .withContext("GPU of PE " + std::to_string(localRanks_[j])));
  }
  return Status::ok();
}

Status SymmetricHeap::registerHostViews(uint64_t committed) {
  // Every same-host PE's HOST segment, as mapped here, is GPU-addressable (pinned, mapped) with ONE GPU - CPU delta
  // over [0, committed), so one add serves the whole view; copy engines and kernels use that alias. After growth the
  // added range is registered on its own and kept when its alias continues the view's delta (then nothing registered
  // before changes and nothing waits: cudaHostUnregister returns only once every pending stream wait of the GPU
  // context has ended, bench/results/h100/wait_hold_2026-12-07.txt, and a collective tether_malloc may run while a
  // stream of this PE waits for what the thread does next). Otherwise the view is registered again as one range,
  // after in-flight copies end, and prepared stream plans translate again (viewsEpoch).
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  hostAlias_.resize(static_cast<size_t>(localSize_), 0);
  hostPieces_.resize(static_cast<size_t>(localSize_));
  bool moved = false;
  for (int j = 0; j < localSize_; ++j) {
    char* cpu = host_->base(j);
    std::vector<char*>& pieces = hostPieces_[static_cast<size_t>(j)];
    if (registered_ && reinterpret_cast<uintptr_t>(cpu + registered_) % page == 0) {
      char* gpu = nullptr;
      TETHER_TRY(gpu_->registerHost(cpu + registered_, committed - registered_, &gpu));
      pieces.push_back(cpu + registered_);
      if (gpu - (cpu + registered_) == hostAlias_[static_cast<size_t>(j)]) {
        TETHER_LOG_DEBUG(LogSys::Heap, "HOST view of local PE %d: [%llu, %llu) registered, its alias continues", j,
                         static_cast<unsigned long long>(registered_), static_cast<unsigned long long>(committed));
        continue;
      }
      TETHER_LOG_INFO(LogSys::Heap, "HOST view of local PE %d grew to %llu bytes: the added range's GPU address does "
                      "not continue the view's, so it is registered again as a whole", j,
                      static_cast<unsigned long long>(committed));
    }
    if (registered_ && !moved) TETHER_TRY(gpu_->quiet());  // copies in flight may use the old registration
    moved = moved || registered_ != 0;
    for (char* piece : pieces) TETHER_TRY(gpu_->unregisterHost(piece));
    pieces.clear();
    char* gpu = nullptr;
    TETHER_TRY(gpu_->registerHost(cpu, committed, &gpu));
    pieces.push_back(cpu);
    hostAlias_[static_cast<size_t>(j)] = gpu - cpu;
    TETHER_LOG_DEBUG(LogSys::Heap, "HOST view of local PE %d at %p (+%llu bytes) registered; GPU alias %p", j,
                     static_cast<void*>(cpu), static_cast<unsigned long long>(committed), static_cast<void*>(gpu));
  }
  registered_ = committed;
  if (moved) viewsEpoch_.fetch_add(1, std::memory_order_release);
  return Status::ok();
}

char* SymmetricHeap::hostGpuAlias(int pe, SymRef ref) const {
  // Only same-host PEs' segments are mapped (and registered) here: a network peer's localIndex numbers the PEs of
  // ITS host, so it would name a same-host PE's view (this PE's own, for the first PE of the other host).
  if (!gpu_ || !topo_->sameHost(pe, rank_)) return nullptr;
  const int j = topo_->pes[static_cast<size_t>(pe)].localIndex;
  if (ref.kind == SegKind::Static)
    return static_ && ref.offset < staticBytes_ ? static_->base(j) + ref.offset + staticAlias_[static_cast<size_t>(j)]
                                                : nullptr;
  if (ref.offset >= registered_) return nullptr;
  return host_->base(j) + ref.offset + hostAlias_[static_cast<size_t>(j)];
}

HostSegmentParams SymmetricHeap::params(const char* name) const {
  HostSegmentParams p;
  p.name = name;
  p.localIndex = localPe_;
  p.localRanks = localRanks_;
  p.jobTag = heapTag_;
  p.secret = heapSecret_;
  p.timeoutSeconds = timeout_;
  return p;
}

Status SymmetricHeap::staticArgs(const char* call, void* addr, uint64_t bytes) const {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  if (static_)
    return Status(TETHER_ERR_INVALID_ARG, strprintf("%s: this instance already has a STATIC segment (%p, %llu bytes); "
                                                    "one range per instance", call, static_cast<void*>(staticLocal_),
                                                    static_cast<unsigned long long>(staticBytes_)));
  if (!addr || bytes == 0 || reinterpret_cast<uintptr_t>(addr) % page || bytes % page)
    return Status(TETHER_ERR_INVALID_ARG, strprintf("%s: the range %p + %llu bytes must be non-empty and page-aligned "
                                                    "(%llu-byte pages)", call, addr,
                                                    static_cast<unsigned long long>(bytes),
                                                    static_cast<unsigned long long>(page)));
  return Status::ok();
}

Status SymmetricHeap::createStatic(const char* call, void* addr, uint64_t bytes) {
  HostSegmentParams sp = params("static");
  sp.initialBytes = sp.maxBytes = bytes;
  sp.adopt = addr;
  TETHER_TRY(HostSegmentGroup::create(sp, *bootstrap_, &static_).withContext(call));
  staticLocal_ = static_cast<char*>(addr);
  staticBytes_ = bytes;
  if (gpu_) {
    TETHER_TRY(gpu_->quiet().withContext(call));
    staticAlias_.assign(static_cast<size_t>(localSize_), 0);
    for (int j = 0; j < localSize_; ++j) {
      char* gpu = nullptr;
      TETHER_TRY(gpu_->registerHost(static_->base(j), bytes, &gpu).withContext(call));
      staticAlias_[static_cast<size_t>(j)] = gpu - static_->base(j);
    }
  }
  return Status::ok();
}

Status SymmetricHeap::checkSlow(const char* call, const char* what, const void* addr, uint64_t n, SymRef* ref) const {
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  if (a + n < a)
    TETHER_FAIL(TETHER_ERR_OVERFLOW, "%s: %s %p + %llu bytes overflows the address space", call, what, addr,
                static_cast<unsigned long long>(n));
  struct Range {
    SegKind kind;
    uintptr_t base, lo, hi;
  };
  Range ranges[kSegKinds];
  int count = 0;
  const uintptr_t hb = reinterpret_cast<uintptr_t>(host_->myBase());
  ranges[count++] = {SegKind::Host, hb, hb + kControlBytes, hb + host_->committed()};
  if (device_) {
    const uintptr_t db = reinterpret_cast<uintptr_t>(device_->myBase());
    ranges[count++] = {SegKind::Device, db, db + kDeviceControlBytes, db + device_->committed()};
  }
  if (static_) {
    const uintptr_t sb = reinterpret_cast<uintptr_t>(staticLocal_);
    ranges[count++] = {SegKind::Static, sb, sb, sb + staticBytes_};
  }
  for (int i = 0; i < count; ++i) {
    const Range& r = ranges[i];
    if (a >= r.lo && a <= r.hi && n <= r.hi - a && (a < r.hi || n == 0)) {
      *ref = SymRef{r.kind, a - r.base};
      return Status::ok();
    }
  }
  std::string where;
  for (int i = 0; i < count; ++i)
    where += strprintf("%s%s [%p, %p)", i ? ", " : "", segKindName(ranges[i].kind),
                       reinterpret_cast<void*>(ranges[i].lo), reinterpret_cast<void*>(ranges[i].hi));
  TETHER_FAIL(TETHER_ERR_NOT_SYMMETRIC, "%s: %s %p (+%llu bytes) is not inside the symmetric heap of PE %d (%s)", call,
              what, addr, static_cast<unsigned long long>(n), rank_, where.c_str());
}

Status SymmetricHeap::readLocal(SymRef ref, void* out, size_t n) const {
  if (isHostMemory(ref.kind)) {
    std::memcpy(out, (ref.kind == SegKind::Host ? host_->myBase() : staticLocal_) + ref.offset, n);
    return Status::ok();
  }
  if (n <= GpuContext::kSmallCopyBytes && gpu_->hostService())  // a wait polls this
    return gpu_->getSmall(out, device_->myBase() + ref.offset, n);
  return gpu_->copy(out, device_->myBase() + ref.offset, n, false);
}

Status SymmetricHeap::zeroLocal(SymRef ref, size_t n) {
  if (isHostMemory(ref.kind)) {
    std::memset((ref.kind == SegKind::Host ? host_->myBase() : staticLocal_) + ref.offset, 0, n);
    return Status::ok();
  }
  return gpu_->memset(device_->myBase() + ref.offset, 0, n);
}

uint64_t SymmetricHeap::segmentBytes(SegKind k) const {
  switch (k) {
    case SegKind::Host: return host_ ? host_->committed() : 0;
    case SegKind::Device: return device_ ? device_->committed() : 0;
    case SegKind::Static: return staticBytes_;
  }
  return 0;
}

Status SymmetricHeap::commit(const char* call, SegKind kind, uint64_t zeroOffset, uint64_t zeroBytes, Status* local) {
  *local = Status::ok();
  Allocator& al = allocator(kind);
  const uint64_t need = al.highWater();
  if (kind == SegKind::Host && need > host_->committed()) {
    const uint64_t old = host_->committed();
    uint64_t target = std::max(need, old + old / 2);
    target = std::max(std::min(roundUp(target, kGrowAlign), al.limit()), need);
    *local = host_->grow(target);  // peers' new bytes exist after the caller's exchange: registration follows it
    hostEnd_ = hostBase_ + host_->committed();
  }
  if (kind == SegKind::Host && local->isOk()) *local = host_->back(need);  // memory follows the high-water mark
  if (kind == SegKind::Device && need > device_->committed()) {
    const uint64_t old = device_->committed();
    uint64_t target = std::max(need, old + old / 2);
    target = std::max(std::min(roundUp(target, kGrowAlign), al.limit()), need);
    // Collective inside (every PE computes the same target from the same allocator state).
    TETHER_TRY(device_->grow(target, *bootstrap_).withContext(call));
  }
  if (local->isOk() && zeroBytes) {
    if (kind == SegKind::Host)
      std::memset(host_->myBase() + zeroOffset, 0, zeroBytes);
    else
      *local = gpu_->memset(device_->myBase() + zeroOffset, 0, zeroBytes);
  }
  return Status::ok();
}

Status SymmetricHeap::registerGrowth() {
  if (gpu_ && host_->committed() > registered_) TETHER_TRY(registerHostViews(host_->committed()));
  return Status::ok();
}

Status SymmetricHeap::resolveKind(const char* call, int kind, SegKind* out) const {
  switch (kind) {
    case TETHER_SEG_DEFAULT: *out = defaultKind_; return Status::ok();
    case TETHER_SEG_HOST: *out = SegKind::Host; return Status::ok();
    case TETHER_SEG_DEVICE:
      if (!device_)
        TETHER_FAIL(TETHER_ERR_UNSUPPORTED, "%s: no DEVICE segments in this job (%s); use TETHER_SEG_HOST", call,
                    gpu_ ? "not every PE has a GPU" : "this PE has no GPU context: host-only build, no GPU visible, "
                                                      "or TETHER_GPU=none");
      *out = SegKind::Device;
      return Status::ok();
    default:
      return badEnum<tether_seg_kind_t>(call, "kind", kind);
  }
}

Status SymmetricHeap::liveRef(const char* call, const void* ptr, SymRef* ref) const {
  TETHER_TRY(check(call, "ptr", ptr, 0, ref));
  if (ref->kind == SegKind::Static)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: %p is a static or global variable, not a symmetric heap allocation", call,
                ptr);
  const Allocator& al = ref->kind == SegKind::Host ? *alloc_ : *devAlloc_;
  if (!al.isLive(ref->offset))
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: %p is not the start of a live symmetric allocation", call, ptr);
  return Status::ok();
}

}  // namespace tether
