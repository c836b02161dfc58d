#include "core/world.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/clock.h"
#include "base/enum_arg.h"
#include "base/log.h"
#include "base/unique_fd.h"
#include "datatype/gpu_pack.h"

namespace tether {
namespace {

constexpr uint64_t kDefaultAlign = 64;

// The listening socket a launcher passes in TETHER_BOOTSTRAP_FD (tetherrun, to PE 0) belongs to the process, not to
// one instance: every tether_init of the process -- again after tether_finalize, or shmem_finalize + shmem_init --
// serves its rendezvous on it. The TCP bootstrap closes the socket it is given once the rendezvous ends, so it gets a
// duplicate (*fd replaced); the inherited descriptor stays open, close-on-exec so the program's own children do not
// hold the job's port. Between two instances the kernel queues the other PEs' connections in its backlog.
Status shareInheritedListener(int* fd) {
  const int dup = ::fcntl(*fd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0)
    TETHER_FAIL(TETHER_ERR_BOOTSTRAP, "inherited fd %d (TETHER_BOOTSTRAP_FD) is not usable: %s", *fd,
                std::strerror(errno));
  (void)::fcntl(*fd, F_SETFD, FD_CLOEXEC);
  *fd = dup;
  return Status::ok();
}

// Collective operations checked across PEs (names for messages).
// An op is kOp* + 16 * segment kind.
enum CollectiveOp : uint64_t { kOpAlloc = 1, kOpRealloc = 2, kOpFree = 3, kOpStatic = 4 };

struct CollectiveRecord {
  uint64_t seq;
  uint64_t op;
  uint64_t a, b;
  uint64_t localError;  // non-zero: this PE's arguments were invalid; everyone fails
};

}  // namespace

Status World::create(const tether_init_attr_t& attr, std::unique_ptr<World>* out, const void* mpiComm) {
  std::unique_ptr<World> w(new World());
  TETHER_TRY(w->init(attr, mpiComm));
  *out = std::move(w);
  return Status::ok();
}

World::~World() {
  // Resources are released by members' destructors (segment unmapped, sockets closed) even without finalize(), in
  // reverse declaration order -- except that the stream runtime, the proxy and the DEVICE heap go first, in that
  // order, here: the heap room is declared before the GPU context (its HOST views outlive the context, which
  // unregisters them), but DEVICE mappings must go before the context. Messaging (its progress thread, its sibling
  // GPU context) goes before all of them.
  msg_.reset();
  streams_.close();
  proxy_.reset();
  ownerGpu_.reset();
  heap_.closeDevice();
}

Status World::init(const tether_init_attr_t& attr, const void* mpiComm) {
  // tether.h: the attribute's listening socket is given away with the call. Rank 0's bootstrap takes it over; on
  // every other path (a failure before that, a 1-PE job, another rank) it is closed here.
  UniqueFd given(attr.bootstrap_listen_fd);
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
  // TETHER_GPU's form, in every build and whether or not a GPU is visible (GpuContext::create serves it).
  const std::string gpuSel = config_.str("TETHER_GPU");
  int64_t ordinal = -1;
  if (gpuSel != "auto" && gpuSel != "none" && !(parseInt(gpuSel, &ordinal) && ordinal >= 0))
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "tether_init: TETHER_GPU=%s: expected auto, none or a GPU ordinal",
                gpuSel.c_str());
  timeout_ = config_.seconds("TETHER_TIMEOUT");
  forceProxy_ = config_.flag("TETHER_FORCE_PROXY");
  const std::string byHost = config_.str("TETHER_SYNC_BY_HOST");
  if (byHost != "auto" && !parseBool(byHost, &syncByHost_))
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "tether_init: TETHER_SYNC_BY_HOST=%s: expected auto, 1 or 0", byHost.c_str());
  const std::string defaultSegment = config_.str("TETHER_DEFAULT_SEGMENT");
  if (defaultSegment != "auto" && defaultSegment != "host" && defaultSegment != "device")
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "tether_init: TETHER_DEFAULT_SEGMENT=%s: expected auto, host or device",
                defaultSegment.c_str());

  if (mpiComm) {
    if (attr.rank >= 0 || attr.size > 0 || attr.bootstrap_addr || attr.bootstrap_listen_fd >= 0)
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "tether_init_mpi: the communicator gives rank, size and rendezvous; leave "
                  "the attribute's rank, size, bootstrap_addr and bootstrap_listen_fd unset");
    TETHER_TRY(mpiJob(config_, mpiComm, timeout_, &job_));
  } else if (attr.rank >= 0 && attr.size > 0) {
    if (attr.rank >= attr.size)
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "tether_init: rank %d outside [0, %d)", attr.rank, attr.size);
    job_.rank = attr.rank;
    job_.size = attr.size;
    job_.launcher = "explicit";
    job_.bootstrapAddr = config_.str("TETHER_BOOTSTRAP_ADDR");
    job_.secret = config_.str("TETHER_JOB_SECRET");
  } else {
    TETHER_TRY(launcherJob(config_, timeout_, attr.bootstrap_addr || attr.bootstrap_listen_fd >= 0, &job_)
                   .withContext("tether_init"));
  }
  if (attr.bootstrap_addr) job_.bootstrapAddr = attr.bootstrap_addr;
  if (attr.job_secret) job_.secret = attr.job_secret;
  if (attr.bootstrap_listen_fd >= 0) job_.listenFd = attr.bootstrap_listen_fd;

  if (job_.size == 1) {
    bootstrap_ = createSelfBootstrap();
  } else {
    if (attr.bootstrap_listen_fd < 0 && job_.listenFdInherited)  // tetherrun's (an attribute's fd is given away)
      TETHER_TRY(shareInheritedListener(&job_.listenFd).withContext("tether_init"));
    if (job_.rank == 0) (void)given.release();  // the bootstrap's now (job_.listenFd)
    TETHER_TRY(createTcpBootstrap(job_, timeout_, &bootstrap_).withContext("tether_init"));
  }
  TETHER_LOG_INFO(LogSys::Core, "PE %d of %d (launcher %s)", job_.rank, job_.size, job_.launcher.c_str());
  TETHER_TRY(discoverHosts());
  TETHER_TRY(GpuContext::create(config_, localPe_, &gpu_).withContext("tether_init"));
  if (gpu_ && config_.flag("TETHER_DT_PRELOAD")) {  // (dt::gpuPreload says why: before any wait can be pending)
    const uint64_t t0 = nowNs();
    TETHER_TRY(dt::gpuPreload(gpu_->device()).withContext("tether_init"));
    TETHER_LOG_INFO(LogSys::Core, "datatype engine ready on GPU %d in %.1f ms: pack kernels loaded, cost model read or "
                    "measured (TETHER_DT_PRELOAD=1)", gpu_->device(), static_cast<double>(nowNs() - t0) / 1e6);
  }
  streams_.attach(gpu_.get(), job_.rank);
  TETHER_TRY(discoverTopology());
  noteSharedGpu();
  TETHER_TRY(streams_.configure(config_, topo_.someGpuShared()).withContext("tether_init"));
  // auto: by host (since 2026-12-05 also where PEs have GPUs: the first-contact hang of GPU stream operations to
  // another host, calls P/Q on one H200, passed on one H100 with b985c53's preconnect --
  // bench/results/h100/gpu_tests_2026-12-05c.txt). The schedule stays flat where the hosts' shape gives nothing.
  if (byHost == "auto") syncByHost_ = true;
  {
    std::vector<int> all(static_cast<size_t>(job_.size));
    for (int pe = 0; pe < job_.size; ++pe) all[static_cast<size_t>(pe)] = pe;
    barrierSchedule_ = syncSchedule(all, job_.rank, ControlBlock::kMaxRounds);
    if (barrierSchedule_.byHost)
      TETHER_LOG_INFO(LogSys::Sync, "barriers by host: each host's PEs meet first, one PE per host crosses the network "
                      "(%d words; TETHER_SYNC_BY_HOST=%s)", barrierSchedule_.wordsUsed, byHost.c_str());
  }

  TETHER_TRY(heap_.setUp(config_, job_, topo_, localPe_, localSize_, timeout_, *bootstrap_, gpu_.get()));

  TETHER_TRY(setUpPaths());
  teams_.setUp();  // the world and shared teams; their words are in the control block, zero since it was made
  TETHER_TRY(colls_.setUp(config_, localSize_).withContext("tether_init"));
  TETHER_TRY(Proxy::checkSlots(config_.integer("TETHER_PROXY_SLOTS")).withContext("tether_init"));
  if (forceProxy_) {  // its thread starts with the first device handle (rings are per handle address space)
    TETHER_TRY(Proxy::create(*this, config_.integer("TETHER_PROXY_SLOTS"), &proxy_).withContext("tether_init"));
    liveProxy_.store(proxy_.get());
    TETHER_LOG_INFO(LogSys::Core, "TETHER_FORCE_PROXY=1: device handles reach every other PE through the proxy");
  }
  TETHER_TRY(bootstrap_->barrier().withContext("tether_init"));
  if (heap_.device()) {
    // The device control words (device barrier) start at zero. Written only now that every PE has finished setting
    // up (a copy into the DEVICE heap while other instances of this process were still registering and mapping
    // failed with cudaErrorOperatingSystem); the barrier after it keeps peers' kernels from signalling earlier.
    std::vector<char> zeros(kDeviceCollScratchOffset, 0);  // not the scratch after them
    TETHER_TRY(gpu_->copy(heap_.device()->myBase(), zeros.data(), zeros.size(), false)
                   .withContext("tether_init: device control words"));
    TETHER_TRY(bootstrap_->barrier().withContext("tether_init"));
  }
  return Status::ok();
}

Status World::registerStatic(const char* call, void* addr, uint64_t bytes, const Status& found) {
  const Status local = found.isOk() ? heap_.staticArgs(call, addr, bytes) : found.withContext(call);
  TETHER_TRY(collectiveCheckWithError(call, kOpStatic, bytes, 0, "size", "-", local));

  TETHER_TRY(loseCollectiveState(heap_.createStatic(call, addr, bytes)));
  // Same paths as the HOST heap (host memory of the same PEs), with the STATIC views as bases.
  paths_.mirror(SegKind::Host, SegKind::Static,
                [this](int pe) { return heap_.statics()->base(topo_.pes[static_cast<size_t>(pe)].localIndex); });
  if (paths_.hasRemoteKeys())
    TETHER_TRY(loseCollectiveState(paths_.segmentsGrew(SegKind::Static, addr, bytes, *bootstrap_).withContext(call)));
  TETHER_LOG_INFO(LogSys::Heap, "STATIC segment: %p + %llu bytes of this process made symmetric", addr,
                  static_cast<unsigned long long>(bytes));
  return loseCollectiveState(bootstrap_->barrier().withContext(call));
}

Status World::setUpPaths() {
  PathOverrides ov;
  TETHER_TRY(PathOverrides::parse(config_.str("TETHER_PATHS"), &ov).withContext("tether_init"));
  SegmentMap segs[kSegKinds];
  HostSegmentGroup* host = heap_.host();
  DeviceHeap* device = heap_.device();
  auto local = [this](int pe) { return topo_.pes[static_cast<size_t>(pe)].localIndex; };
  segs[static_cast<int>(SegKind::Host)] = {true, host->myBase(), host->committed(),
                                           [host, local](int pe) { return host->base(local(pe)); }};
  if (device)
    segs[static_cast<int>(SegKind::Device)] = {true, device->myBase(), device->committed(),
                                               [device, local](int pe) { return device->base(local(pe)); }};
  ProviderRegistry registry = makeLocalRegistry(gpu_.get());
  UcxOptions ucx;  // the network provider (PEs on other hosts; TETHER_PATHS host=ucx)
  ucx.timeoutSeconds = timeout_;
  ucx.progressUs = static_cast<int>(config_.integer("TETHER_UCX_PROGRESS_US"));
  ucx.wakeup = config_.flag("TETHER_UCX_WAKEUP");
  ucx.gpu = gpu_.get();
  const std::string amo = config_.str("TETHER_UCX_AMO");
  if (amo != "native" && amo != "owner")
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "tether_init: TETHER_UCX_AMO=%s: expected native or owner", amo.c_str());
  ucx.ownerAmo = amo == "owner";
  // A peer's atomic or signal on a word of this PE, applied through this PE's own (self) path: CPU atomics on HOST
  // and STATIC words, system-scope GPU atomics on DEVICE words.
  ucx.applyOwnerOp = [this](const OwnerOp& o, uint64_t* fetched) -> Status {
    const uint64_t width = o.signal ? sizeof(uint64_t) : o.amo.width;
    const SegPath& self = path(job_.rank, o.kind);
    const uint64_t bytes = heap_.segmentBytes(o.kind);
    if (!self.ops || width == 0 || o.offset % width != 0 || o.offset > bytes || width > bytes - o.offset)
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "a %llu-byte word at offset 0x%llx is not inside this PE's %s segment "
                  "(%llu bytes)", static_cast<unsigned long long>(width), static_cast<unsigned long long>(o.offset),
                  segKindName(o.kind), static_cast<unsigned long long>(bytes));
    const RemoteAddr at = remote(job_.rank, SymRef{o.kind, o.offset});
    // GPU work for a peer runs on the owner-op sibling context (non-blocking streams): on the World's own context
    // (blocking streams) it would queue behind a kernel of this PE on the legacy default stream -- the very kernel
    // that may be spinning on this word (a device-side wait, a device barrier) -- and both would wait forever.
    void* ctx = self.ctx;
    if (gpu_ && self.ctx == gpu_.get()) TETHER_TRY(ownerGpu(&ctx));
    const Status done = o.signal ? self.ops->signal(ctx, job_.rank, at, o.value, o.sigOp)
                                 : self.ops->amo(ctx, job_.rank, at, o.amo, fetched);
    wakeups_.wake(job_.rank);  // a thread of this PE may sleep waiting for the word
    return done;
  };
  registry.add(makeUcxProvider(ucx));
  // Each PE of this host has its sleep word in its control block, at the start of its HOST heap (core/wakeups.h).
  std::vector<SleepWord*> words(static_cast<size_t>(job_.size), nullptr);
  if (config_.flag("TETHER_WAIT_FUTEX"))
    for (int pe = 0; pe < job_.size; ++pe)
      if (topo_.sameHost(pe, job_.rank))
        words[static_cast<size_t>(pe)] = &reinterpret_cast<ControlBlock*>(host->base(local(pe)))->wake;
  wakeups_.setUp(std::move(words), job_.rank);
  TETHER_TRY(paths_.setUp(topo_, job_.rank, ov, std::move(registry), segs, *bootstrap_));
  // Peers' GPU-word operations may arrive while this PE's first kernel already runs: make their context now (a
  // context made later, inside the message handler, would load its kernels while that kernel runs).
  if (gpu_ && device && paths_.hasRemoteKeys()) {
    void* unused = nullptr;
    TETHER_TRY(ownerGpu(&unused).withContext("tether_init"));
  }
  // With peers on other hosts, GPU work of this process (those owner-executed operations, UCX's copies of arriving
  // data) releases stream waits: waits as kernels, which never hold it back (core/stream_ops.h, GpuStreamOpsOptions).
  GpuStreamOpsOptions so;
  so.kernelWaits = paths_.hasRemoteKeys();
  streams_.setGpuOptions(so);
  return Status::ok();
}

Status World::ownerGpu(void** ctx) {
  std::lock_guard<std::mutex> lock(ownerGpuMu_);
  if (!ownerGpu_) TETHER_TRY(gpu_->createSibling(&ownerGpu_).withContext("owner-executed operations"));
  *ctx = ownerGpu_.get();
  return Status::ok();
}

Status World::discoverHosts() {
  struct Rec {
    char host[240];
    int32_t rank;
    int32_t pad;
  } mine{};
  std::string id;
  TETHER_TRY(hostIdentity(&id).withContext("tether_init"));
  std::strncpy(mine.host, id.c_str(), sizeof mine.host - 1);
  mine.rank = job_.rank;
  std::vector<Rec> all(static_cast<size_t>(job_.size));
  TETHER_TRY(bootstrap_->allgather(&mine, all.data(), sizeof mine).withContext("tether_init: topology"));
  topo_.pes.assign(static_cast<size_t>(job_.size), PeRecord{});
  for (int r = 0; r < job_.size; ++r) {
    PeRecord& p = topo_.pes[static_cast<size_t>(r)];
    p.host = all[static_cast<size_t>(r)].host;
    int idx = 0;
    for (int q = 0; q < r; ++q) idx += topo_.pes[static_cast<size_t>(q)].host == p.host;
    p.localIndex = idx;
  }
  hostKey_.assign(static_cast<size_t>(job_.size), 0);
  for (int r = 0; r < job_.size; ++r) {
    int first = 0;  // the lowest PE of r's host
    while (topo_.pes[static_cast<size_t>(first)].host != topo_.pes[static_cast<size_t>(r)].host) ++first;
    hostKey_[static_cast<size_t>(r)] = first;
  }
  localPe_ = topo_.pes[static_cast<size_t>(job_.rank)].localIndex;
  localSize_ = 0;
  for (const auto& p : topo_.pes) localSize_ += p.host == topo_.pes[static_cast<size_t>(job_.rank)].host;
  if (job_.localRank >= 0 && job_.localRank != localPe_)
    TETHER_LOG_INFO(LogSys::Topology, "launcher says local rank %d, host identity gives %d (using %d)",
                    job_.localRank, localPe_, localPe_);
  return Status::ok();
}

std::vector<int> World::hostsOf(const std::vector<int>& pes) const {
  std::vector<int> host(pes.size());
  for (size_t m = 0; m < pes.size(); ++m) host[m] = hostKey_[static_cast<size_t>(pes[m])];
  return host;
}

SyncSchedule World::syncSchedule(const std::vector<int>& pes, int me, int maxWords) const {
  return SyncSchedule::make(hostsOf(pes), me, maxWords, syncByHost_);
}

Status World::discoverTopology() {
  // Each PE describes itself (GPU, NUMA) as one serialised record; every PE then derives the pair facts itself.
  constexpr size_t kRecordBytes = 2048;
  std::unique_ptr<GpuQuery> q = createSystemGpuQuery();
  Topology one;
  one.pes.resize(1);
  TETHER_TRY(discoverLocalPe(*q, gpu_ ? gpu_->device() : -1, &one.pes[0]).withContext("tether_init: topology"));
  one.pes[0].localIndex = localPe_;
  std::string text = one.serialize();
  if (text.size() >= kRecordBytes)
    TETHER_FAIL(TETHER_ERR_INTERNAL, "tether_init: topology record of %zu bytes exceeds %zu", text.size(), kRecordBytes);
  std::vector<char> mine(kRecordBytes, 0), all(kRecordBytes * static_cast<size_t>(job_.size));
  std::memcpy(mine.data(), text.data(), text.size());
  TETHER_TRY(bootstrap_->allgather(mine.data(), all.data(), kRecordBytes).withContext("tether_init: topology"));
  Topology t;
  for (int r = 0; r < job_.size; ++r) {
    Topology part;
    TETHER_TRY(Topology::parse(std::string(all.data() + static_cast<size_t>(r) * kRecordBytes), &part)
                   .withContext("tether_init: topology record of PE " + std::to_string(r)));
    if (part.pes.size() != 1) TETHER_FAIL(TETHER_ERR_INTERNAL, "tether_init: bad topology record from PE %d", r);
    t.pes.push_back(part.pes[0]);
  }
  t.pairs.assign(t.pes.size() * t.pes.size(), PairRecord{});
  TETHER_TRY(discoverPairs(*q, job_.rank, &t).withContext("tether_init: topology"));
  topo_ = std::move(t);
  TETHER_LOG_DEBUG(LogSys::Topology, "topology:\n%s", topo_.serialize().c_str());
  return Status::ok();
}

void World::noteSharedGpu() {
  if (!gpu_) return;
  const PeRecord& me = topo_.pes[static_cast<size_t>(job_.rank)];
  for (int pe = 0; pe < job_.size; ++pe) {
    const PeRecord& p = topo_.pes[static_cast<size_t>(pe)];
    if (pe != job_.rank && p.host == me.host && p.gpu.present && p.gpu.busId == me.gpu.busId) {
      gpu_->noteGpuShared(pe);
      return;
    }
  }
}

Status World::finalize() {
  if (finalized_) return Status::ok();
  finalized_ = true;
  // With collective state lost the closing barrier fails at once, and finalize returns that loss on every PE; this
  // PE's own operations are still completed, and everything below is released all the same.
  if (!lost_.isOk()) TETHER_WARN_ON_FAIL(quiet());
  Status s = barrier("tether_finalize", true);
  msg_.reset();      // its region goes with the heap below
  streams_.close();  // its streams drain (CPU emulation) before the proxy and heaps they use go away
  // Tear down in dependency order: the device API proxy (executes what is posted, stops its thread), device
  // mappings, the GPU context (it unregisters the host views it registered), then the host heap.
  if (proxy_) {
    liveProxy_.store(nullptr);
    TETHER_WARN_ON_FAIL(proxy_->stop());
    proxy_.reset();
  }
  {
    std::lock_guard<std::mutex> lock(ownerGpuMu_);
    ownerGpu_.reset();
  }
  heap_.closeDevice();
  gpu_.reset();
  heap_.close();
  bootstrap_.reset();
  return s;
}

Status World::collectiveState(const char* call) const {
  if (lost_.isOk()) return Status::ok();
  return Status(lost_.code(), strprintf("%s: collective state lost: %s", call, lost_.message().c_str()));
}

Status World::loseCollectiveState(const Status& s) {
  if (!s.isOk() && lost_.isOk()) {
    lost_ = s;
    TETHER_LOG_WARN(LogSys::Core, "PE %d: collective state lost, every later collective call fails: %s", job_.rank,
                    s.message().c_str());
  }
  return s;
}

// ---- checks ------------------------------------------------------------------------------------------------------

Status World::badPe(const char* call, int pe) const {
  TETHER_FAIL(TETHER_ERR_INVALID_PE, "%s: PE %d is out of range: this job has PEs 0..%d", call, pe, job_.size - 1);
}

void* World::ptr(const void* addr, int pe) const {
  SymRef ref;
  if (pe < 0 || pe >= job_.size || !checkSymmetric("tether_ptr", "addr", addr, 0, &ref).isOk()) return nullptr;
  const SegPath& p = path(pe, ref.kind);
  if (!p.ops || !(p.ops->caps & kCapLoadStore) || !p.base) return nullptr;
  return p.base + ref.offset;
}

// ---- collective allocation -----------------------------------------------------------------------------------------

Status World::collectiveCheckWithError(const char* call, uint64_t op, uint64_t a, uint64_t b, const char* aName,
                                       const char* bName, const Status& localError) {
  static const char* const opNames[] = {"?", "tether_malloc/calloc/align", "tether_realloc", "tether_free",
                                        "tether_register_static"};
  auto opName = [](uint64_t o) { return opNames[o % 16 < 5 ? o % 16 : 0]; };
  TETHER_TRY(collectiveState(call));
  CollectiveRecord mine{++allocSeq_, op, a, b, localError.isOk() ? 0u : static_cast<uint64_t>(localError.code())};
  std::vector<CollectiveRecord> all(static_cast<size_t>(job_.size));
  TETHER_TRY(loseCollectiveState(bootstrap_->allgather(&mine, all.data(), sizeof mine).withContext(call)));
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
                  call, static_cast<unsigned long long>(mine.seq), job_.rank, opName(op),
                  static_cast<unsigned long long>(mine.seq), r, opName(o.op));
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

Status World::commitAndSync(const char* call, SegKind kind, uint64_t zeroOffset, uint64_t zeroBytes) {
  Status local;
  TETHER_TRY(loseCollectiveState(heap_.commit(call, kind, zeroOffset, zeroBytes, &local)));
  // The status exchange is also the closing barrier of the collective call.
  int32_t mine = local.isOk() ? 0 : static_cast<int32_t>(local.code());
  std::vector<int32_t> all(static_cast<size_t>(job_.size));
  TETHER_TRY(loseCollectiveState(bootstrap_->allgather(&mine, all.data(), sizeof mine).withContext(call)));
  if (!local.isOk()) return local.withContext(call);
  for (int r = 0; r < job_.size; ++r)
    if (all[static_cast<size_t>(r)])
      TETHER_FAIL(static_cast<tether_status_t>(all[static_cast<size_t>(r)]),
                  "%s: PE %d could not grow its symmetric heap (see its log)", call, r);
  if (kind == SegKind::Host) TETHER_TRY(heap_.registerGrowth().withContext(call));
  // Providers that address memory by key (none of the local ones) re-register the segment after each commit (the
  // same decision on every PE: hasRemoteKeys comes from the start-up exchange).
  if (paths_.hasRemoteKeys())
    TETHER_TRY(loseCollectiveState(
        paths_.segmentsGrew(kind, heap_.base(kind), heap_.segmentBytes(kind), *bootstrap_).withContext(call)));
  return Status::ok();
}

Status World::allocate(const char* call, int kind, uint64_t align, uint64_t size, bool zero, void** out) {
  *out = nullptr;
  if (align == 0) align = kDefaultAlign;
  SegKind k = SegKind::Host;
  Status local = heap_.resolveKind(call, kind, &k);
  if (local.isOk() && (align & (align - 1)) != 0)
    local = Status(TETHER_ERR_INVALID_ARG, strprintf("%s: alignment %llu is not a power of two", call,
                                                     static_cast<unsigned long long>(align)));
  TETHER_TRY(collectiveCheckWithError(call, kOpAlloc + 16 * static_cast<uint64_t>(k), size, align, "size",
                                      "alignment", local));
  uint64_t off = 0;
  TETHER_TRY(heap_.allocator(k).allocate(size, align, &off).withContext(call));
  Status s = commitAndSync(call, k, off, zero ? size : 0);
  if (!s.isOk()) {
    TETHER_WARN_ON_FAIL(heap_.allocator(k).release(off));
    return s;
  }
  *out = heap_.base(k) + off;
  TETHER_LOG_DEBUG(LogSys::Heap, "%s: %llu bytes of %s at offset 0x%llx", call, static_cast<unsigned long long>(size),
                   k == SegKind::Host ? "HOST" : "DEVICE", static_cast<unsigned long long>(off));
  return Status::ok();
}

Status World::release(const char* call, void* ptr) {
  SymRef ref{SegKind::Host, 0};
  Status local = ptr ? heap_.liveRef(call, ptr, &ref) : Status::ok();
  TETHER_TRY(loseCollectiveState(quiet()));  // failing, this PE leaves before the exchange its peers wait in
  TETHER_TRY(collectiveCheckWithError(call, kOpFree + 16 * static_cast<uint64_t>(ref.kind), ptr ? ref.offset : 0, 0,
                                      "offset", "-", local));
  if (ptr) TETHER_TRY(heap_.allocator(ref.kind).release(ref.offset).withContext(call));
  return Status::ok();
}

Status World::reallocate(const char* call, void* ptr, uint64_t size, void** out) {
  *out = nullptr;
  if (!ptr) return allocate(call, TETHER_SEG_DEFAULT, kDefaultAlign, size, false, out);
  if (size == 0) return release(call, ptr);
  SymRef ref{SegKind::Host, 0};
  Status local = heap_.liveRef(call, ptr, &ref);
  TETHER_TRY(loseCollectiveState(quiet()));  // failing, this PE leaves before the exchange its peers wait in
  TETHER_TRY(collectiveCheckWithError(call, kOpRealloc + 16 * static_cast<uint64_t>(ref.kind), ref.offset, size,
                                      "offset", "size", local));
  Allocator& al = heap_.allocator(ref.kind);
  const uint64_t off = ref.offset;
  bool inPlace = false;
  TETHER_TRY(al.resizeInPlace(off, size, &inPlace).withContext(call));
  uint64_t newOff = off;
  if (!inPlace) TETHER_TRY(al.allocate(size, kDefaultAlign, &newOff).withContext(call));
  Status s = commitAndSync(call, ref.kind, 0, 0);
  if (!s.isOk()) {
    if (!inPlace) TETHER_WARN_ON_FAIL(al.release(newOff));
    return s;
  }
  char* base = heap_.base(ref.kind);
  if (!inPlace) {
    const uint64_t keep = std::min<uint64_t>(al.blockSize(off), size);
    if (ref.kind == SegKind::Host)
      std::memmove(base + newOff, base + off, keep);
    else
      TETHER_TRY(loseCollectiveState(gpu_->copy(base + newOff, base + off, keep, false).withContext(call)));
    TETHER_TRY(al.release(off).withContext(call));
    // Peers may put into the new block only after every PE has copied its old contents.
    TETHER_TRY(loseCollectiveState(bootstrap_->barrier().withContext(call)));
  }
  *out = base + newOff;
  return Status::ok();
}

}  // namespace tether
