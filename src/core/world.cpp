#include "core/world.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <random>

#include "base/clock.h"
#include "base/log.h"

namespace tether {
namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kGrowAlign = 2ull << 20;
constexpr uint64_t kDefaultAlign = 64;

uint64_t roundUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

std::string hostIdentity() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  std::string boot;
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::getline(f, boot);
  return std::string(name) + (boot.empty() ? "" : "/" + boot);
}

// Collective operations checked across PEs (names for messages).
enum CollectiveOp : uint64_t { kOpAlloc = 1, kOpRealloc = 2, kOpFree = 3 };

struct CollectiveRecord {
  uint64_t seq;
  uint64_t op;
  uint64_t a, b;
  uint64_t localError;  // non-zero: this PE's arguments were invalid; everyone fails
};

}  // namespace

Status World::create(const tether_init_attr_t& attr, std::unique_ptr<World>* out) {
  std::unique_ptr<World> w(new World());
  TETHER_TRY(w->init(attr));
  *out = std::move(w);
  return Status::ok();
}

World::~World() {
  // Resources are released by members' destructors (segment unmapped, sockets closed) even without finalize().
}

Status World::init(const tether_init_attr_t& attr) {
  config_ = Config::fromEnvironment();
  if (attr.config) {
    for (const char* const* kv = attr.config; *kv; ++kv) {
      const char* eq = std::strchr(*kv, '=');
      if (!eq) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "tether_init: config entry '%s' is not NAME=value", *kv);
      std::string name(*kv, static_cast<size_t>(eq - *kv));
      bool known = false;
      for (const auto& v : configVars()) known = known || name == v.name;
      if (!known) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "tether_init: unknown config variable %s", name.c_str());
      config_.set(name, eq + 1);
    }
  }
  std::vector<std::string> unknown;
  TETHER_TRY(config_.validate(&unknown).withContext("tether_init"));
  for (const auto& u : unknown)
    TETHER_LOG_WARN(LogSys::Config, "%s is not a tether variable (typo?); see tether-info --config", u.c_str());
  timeout_ = config_.seconds("TETHER_TIMEOUT");

  if (attr.rank >= 0 && attr.size > 0) {
    if (attr.rank >= attr.size)
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "tether_init: rank %d outside [0, %d)", attr.rank, attr.size);
    job_.rank = attr.rank;
    job_.size = attr.size;
    job_.launcher = "explicit";
    job_.bootstrapAddr = config_.str("TETHER_BOOTSTRAP_ADDR");
    job_.secret = config_.str("TETHER_JOB_SECRET");
  } else {
    TETHER_TRY(detectJob(config_, &job_).withContext("tether_init"));
  }
  if (attr.bootstrap_addr) job_.bootstrapAddr = attr.bootstrap_addr;
  if (attr.job_secret) job_.secret = attr.job_secret;
  if (attr.bootstrap_listen_fd >= 0) job_.listenFd = attr.bootstrap_listen_fd;

  if (job_.size == 1) {
    bootstrap_ = createSelfBootstrap();
  } else {
    TETHER_TRY(createTcpBootstrap(job_, timeout_, &bootstrap_).withContext("tether_init"));
  }
  TETHER_LOG_INFO(LogSys::Core, "PE %d of %d (launcher %s)", job_.rank, job_.size, job_.launcher.c_str());
  TETHER_TRY(discoverTopology());

  // Heap: a per-job tag from rank 0 names the fd-exchange sockets.
  uint64_t tag = 0;
  if (job_.rank == 0) tag = std::random_device{}() ^ (static_cast<uint64_t>(std::random_device{}()) << 32) ^ nowTag();
  TETHER_TRY(bootstrap_->broadcast(&tag, sizeof tag, 0));
  std::vector<int> localRanks;
  for (int r = 0; r < job_.size; ++r)
    if (pes_[static_cast<size_t>(r)].host == pes_[static_cast<size_t>(job_.rank)].host) localRanks.push_back(r);
  HostSegmentParams hp;
  hp.localIndex = localPe_;
  hp.localRanks = localRanks;
  hp.maxBytes = roundUp(std::max<uint64_t>(config_.size("TETHER_HEAP_MAX"), kControlBytes + kPage), kPage);
  hp.initialBytes = std::min(hp.maxBytes, roundUp(std::max<uint64_t>(config_.size("TETHER_HEAP_SIZE"),
                                                                     kControlBytes + kPage), kPage));
  char tagText[32];
  std::snprintf(tagText, sizeof tagText, "%016llx", static_cast<unsigned long long>(tag));
  hp.jobTag = tagText;
  hp.secret = job_.secret.empty() ? hp.jobTag : job_.secret;
  hp.timeoutSeconds = timeout_;
  TETHER_TRY(HostSegmentGroup::create(hp, *bootstrap_, &host_).withContext("tether_init: host heap"));
  alloc_.reset(new Allocator(kControlBytes, hp.maxBytes));

  // Peer paths, chosen once.
  const std::string override = config_.str("TETHER_PATHS");
  paths_.resize(static_cast<size_t>(job_.size));
  for (int pe = 0; pe < job_.size; ++pe) {
    PathChoice c;
    TETHER_TRY(choosePath(pes_, job_.rank, pe, override, &c).withContext("tether_init"));
    PeerPath& p = paths_[static_cast<size_t>(pe)];
    p.kind = c.kind;
    p.reason = c.reason;
    if (c.kind == PathKind::None)
      TETHER_FAIL(TETHER_ERR_UNREACHABLE, "tether_init: no path from PE %d to PE %d: %s", job_.rank, pe,
                  c.reason.c_str());
    p.ops = &shmTransportOps();
    p.base = host_->base(pes_[static_cast<size_t>(pe)].localIndex);
    if (std::find(opsInUse_.begin(), opsInUse_.end(), std::make_pair(p.ops, p.ctx)) == opsInUse_.end())
      opsInUse_.emplace_back(p.ops, p.ctx);
    TETHER_LOG_INFO(LogSys::Transport, "path to PE %d: %s (%s)", pe, pathKindName(c.kind), c.reason.c_str());
  }
  TETHER_TRY(bootstrap_->barrier().withContext("tether_init"));
  return Status::ok();
}

uint64_t World::nowTag() { return static_cast<uint64_t>(getpid()) << 16 ^ static_cast<uint64_t>(time(nullptr)); }

Status World::discoverTopology() {
  struct Rec {
    char host[240];
    int32_t rank;
    int32_t pad;
  } mine{};
  std::string id = hostIdentity();
  std::strncpy(mine.host, id.c_str(), sizeof mine.host - 1);
  mine.rank = job_.rank;
  std::vector<Rec> all(static_cast<size_t>(job_.size));
  TETHER_TRY(bootstrap_->allgather(&mine, all.data(), sizeof mine).withContext("tether_init: topology"));
  pes_.assign(static_cast<size_t>(job_.size), PeInfo{});
  std::vector<std::pair<std::string, int>> counts;
  for (int r = 0; r < job_.size; ++r) {
    PeInfo& p = pes_[static_cast<size_t>(r)];
    p.host = all[static_cast<size_t>(r)].host;
    int idx = 0;
    for (int q = 0; q < r; ++q) idx += pes_[static_cast<size_t>(q)].host == p.host;
    p.localIndex = idx;
  }
  localPe_ = pes_[static_cast<size_t>(job_.rank)].localIndex;
  localSize_ = 0;
  for (const auto& p : pes_) localSize_ += p.host == pes_[static_cast<size_t>(job_.rank)].host;
  if (job_.localRank >= 0 && job_.localRank != localPe_)
    TETHER_LOG_INFO(LogSys::Topology, "launcher says local rank %d, host identity gives %d (using %d)",
                    job_.localRank, localPe_, localPe_);
  return Status::ok();
}

Status World::finalize() {
  if (finalized_) return Status::ok();
  finalized_ = true;
  Status s = barrier("tether_finalize", true);
  host_.reset();
  bootstrap_.reset();
  return s;
}

// ---- checks ------------------------------------------------------------------------------------------------------

Status World::checkPe(const char* call, int pe) const {
  if (pe < 0 || pe >= job_.size)
    TETHER_FAIL(TETHER_ERR_INVALID_PE, "%s: PE %d is out of range: this job has PEs 0..%d", call, pe, job_.size - 1);
  return Status::ok();
}

Status World::checkSymmetric(const char* call, const char* what, const void* addr, uint64_t n,
                             uint64_t* offset) const {
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  const uintptr_t lo = reinterpret_cast<uintptr_t>(host_->myBase()) + kControlBytes;
  const uintptr_t hi = reinterpret_cast<uintptr_t>(host_->myBase()) + host_->committed();
  if (a + n < a)
    TETHER_FAIL(TETHER_ERR_OVERFLOW, "%s: %s %p + %llu bytes overflows the address space", call, what, addr,
                static_cast<unsigned long long>(n));
  if (a < lo || a > hi || n > hi - a)
    TETHER_FAIL(TETHER_ERR_NOT_SYMMETRIC,
                "%s: %s %p (+%llu bytes) is not inside the symmetric heap [%p, %p) of PE %d", call, what, addr,
                static_cast<unsigned long long>(n), reinterpret_cast<void*>(lo), reinterpret_cast<void*>(hi),
                job_.rank);
  *offset = a - reinterpret_cast<uintptr_t>(host_->myBase());
  return Status::ok();
}

void* World::ptr(const void* addr, int pe) const {
  uint64_t off;
  if (pe < 0 || pe >= job_.size || !checkSymmetric("tether_ptr", "addr", addr, 0, &off).isOk()) return nullptr;
  const PeerPath& p = path(pe);
  if (!(p.ops->caps & kCapLoadStore) || !p.base) return nullptr;
  return p.base + off;
}

// ---- collective allocation -----------------------------------------------------------------------------------------

Status World::collectiveCheckWithError(const char* call, uint64_t op, uint64_t a, uint64_t b, const char* aName,
                                       const char* bName, const Status& localError) {
  static const char* const opNames[] = {"?", "tether_malloc/calloc/align", "tether_realloc", "tether_free"};
  CollectiveRecord mine{++allocSeq_, op, a, b, localError.isOk() ? 0u : static_cast<uint64_t>(localError.code())};
  std::vector<CollectiveRecord> all(static_cast<size_t>(job_.size));
  TETHER_TRY(bootstrap_->allgather(&mine, all.data(), sizeof mine).withContext(call));
  if (!localError.isOk()) return localError;
  for (int r = 0; r < job_.size; ++r) {
    const CollectiveRecord& o = all[static_cast<size_t>(r)];
    if (o.localError)
      TETHER_FAIL(static_cast<tether_status_t>(o.localError),
                  "%s: collective call #%llu failed because PE %d passed invalid arguments (%s)", call,
                  static_cast<unsigned long long>(mine.seq), r, tether_status_string(
                      static_cast<tether_status_t>(o.localError)));
  }
  for (int r = 0; r < job_.size; ++r) {
    const CollectiveRecord& o = all[static_cast<size_t>(r)];
    if (o.op != mine.op || o.seq != mine.seq)
      TETHER_FAIL(TETHER_ERR_MISMATCH,
                  "%s: collective call #%llu differs across PEs: PE %d called %s (call #%llu), PE %d called %s",
                  call, static_cast<unsigned long long>(mine.seq), job_.rank, opNames[op],
                  static_cast<unsigned long long>(mine.seq), r, opNames[o.op < 4 ? o.op : 0]);
    if (o.a != mine.a || o.b != mine.b)
      TETHER_FAIL(TETHER_ERR_MISMATCH,
                  "%s: collective call #%llu has different arguments on different PEs: PE %d passed %s=%llu %s=%llu, "
                  "PE %d passed %s=%llu %s=%llu",
                  call, static_cast<unsigned long long>(mine.seq), job_.rank, aName,
                  static_cast<unsigned long long>(mine.a), bName, static_cast<unsigned long long>(mine.b), r, aName,
                  static_cast<unsigned long long>(o.a), bName, static_cast<unsigned long long>(o.b));
  }
  return Status::ok();
}

Status World::commitAndSync(const char* call, uint64_t zeroOffset, uint64_t zeroBytes) {
  Status local;
  uint64_t need = alloc_->highWater();
  if (need > host_->committed()) {
    uint64_t target = std::max(need, host_->committed() + host_->committed() / 2);
    target = std::min(roundUp(target, kGrowAlign), alloc_->limit());
    local = host_->grow(std::max(target, need));
  }
  if (local.isOk() && zeroBytes) std::memset(host_->myBase() + zeroOffset, 0, zeroBytes);
  // The status exchange is also the closing barrier of the collective call.
  int32_t mine = local.isOk() ? 0 : static_cast<int32_t>(local.code());
  std::vector<int32_t> all(static_cast<size_t>(job_.size));
  TETHER_TRY(bootstrap_->allgather(&mine, all.data(), sizeof mine).withContext(call));
  if (!local.isOk()) return local.withContext(call);
  for (int r = 0; r < job_.size; ++r)
    if (all[static_cast<size_t>(r)])
      TETHER_FAIL(static_cast<tether_status_t>(all[static_cast<size_t>(r)]),
                  "%s: PE %d could not grow its symmetric heap (see its log)", call, r);
  return Status::ok();
}

Status World::allocate(const char* call, tether_seg_kind_t kind, uint64_t align, uint64_t size, bool zero,
                       void** out) {
  *out = nullptr;
  Status local;
  if (align == 0) align = kDefaultAlign;
  if (kind == TETHER_SEG_DEVICE)
    local = Status(TETHER_ERR_UNSUPPORTED, strprintf("%s: DEVICE segments need the GPU heap, which is not built yet "
                                                     "(issue #4); use TETHER_SEG_HOST", call));
  else if (kind != TETHER_SEG_DEFAULT && kind != TETHER_SEG_HOST)
    local = Status(TETHER_ERR_INVALID_ARG, strprintf("%s: unknown segment kind %d", call, static_cast<int>(kind)));
  else if ((align & (align - 1)) != 0)
    local = Status(TETHER_ERR_INVALID_ARG, strprintf("%s: alignment %llu is not a power of two", call,
                                                     static_cast<unsigned long long>(align)));
  TETHER_TRY(collectiveCheckWithError(call, kOpAlloc, size, align, "size", "alignment", local));
  uint64_t off = 0;
  TETHER_TRY(alloc_->allocate(size, align, &off).withContext(call));
  Status s = commitAndSync(call, off, zero ? size : 0);
  if (!s.isOk()) {
    TETHER_WARN_ON_FAIL(alloc_->release(off));
    return s;
  }
  *out = host_->myBase() + off;
  TETHER_LOG_DEBUG(LogSys::Heap, "%s: %llu bytes at offset 0x%llx", call, static_cast<unsigned long long>(size),
                   static_cast<unsigned long long>(off));
  return Status::ok();
}

Status World::liveOffset(const char* call, const void* ptr, uint64_t* off) const {
  TETHER_TRY(checkSymmetric(call, "ptr", ptr, 0, off));
  if (!alloc_->isLive(*off))
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: %p is not the start of a live symmetric allocation", call, ptr);
  return Status::ok();
}

Status World::release(const char* call, void* ptr) {
  uint64_t off = 0;
  Status local = ptr ? liveOffset(call, ptr, &off) : Status::ok();
  TETHER_TRY(quiet());
  TETHER_TRY(collectiveCheckWithError(call, kOpFree, ptr ? off : 0, 0, "offset", "-", local));
  if (ptr) TETHER_TRY(alloc_->release(off).withContext(call));
  return Status::ok();
}

Status World::reallocate(const char* call, void* ptr, uint64_t size, void** out) {
  *out = nullptr;
  if (!ptr) return allocate(call, TETHER_SEG_HOST, kDefaultAlign, size, false, out);
  if (size == 0) return release(call, ptr);
  uint64_t off = 0;
  Status local = liveOffset(call, ptr, &off);
  TETHER_TRY(quiet());
  TETHER_TRY(collectiveCheckWithError(call, kOpRealloc, off, size, "offset", "size", local));
  bool inPlace = false;
  TETHER_TRY(alloc_->resizeInPlace(off, size, &inPlace).withContext(call));
  uint64_t newOff = off;
  if (!inPlace) {
    TETHER_TRY(alloc_->allocate(size, kDefaultAlign, &newOff).withContext(call));
  }
  Status s = commitAndSync(call, 0, 0);
  if (!s.isOk()) {
    if (!inPlace) TETHER_WARN_ON_FAIL(alloc_->release(newOff));
    return s;
  }
  if (!inPlace) {
    std::memmove(host_->myBase() + newOff, host_->myBase() + off, std::min<uint64_t>(alloc_->blockSize(off), size));
    TETHER_TRY(alloc_->release(off).withContext(call));
    // Peers may put into the new block only after every PE has copied its old contents.
    TETHER_TRY(bootstrap_->barrier().withContext(call));
  }
  *out = host_->myBase() + newOff;
  return Status::ok();
}

}  // namespace tether
