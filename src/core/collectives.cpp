// Team data collectives, host engine (core/collectives.h has the protocol).
#include "core/collectives.h"
#include "core/coll_check.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <unistd.h>
#include <vector>

#include "base/clock.h"
#include "base/config.h"
#include "base/cpu.h"
#include "base/log.h"
#include "core/dtype.h"
#include "core/op.h"
#include "core/reduce_ops.h"
#include "core/stream_ops.h"
#include "core/sync_failure.h"
#include "core/world.h"

namespace tether {

namespace {

// Allreduce as reduce-scatter + allgather (twoShot) from these sizes on. One host (a token team) with HOST src: 4 KiB
// and 2+ members -- a one-slice pull reads every member's whole src, lines their owners have just rewritten in a
// real program; 2-core VM, osh_bench --touch-src, 2 and 4 PEs: 0.49-0.86x the time from 4 to 32 KiB (level at
// 64 KiB, 4 PEs, where this was already two-shot); with src left unchanged (cached where it was read last time)
// the one-slice pull was faster, 1.1-1.9x (bench/results/cpu-2core-vm/coll_two_shot_ab.txt). Elsewhere (members
// on other hosts, DEVICE src): 64 KiB and 3+ members, as before (across two netns hosts from 16 KiB was mixed, one
// more barrier over the network: coll_two_shot_remote_ab.txt).
constexpr size_t kTwoShotLocalBytes = 4 * 1024;
constexpr size_t kTwoShotBytes = 64 * 1024;
const char* at(const void* p, size_t off) { return static_cast<const char*>(p) + off; }
char* at(void* p, size_t off) { return static_cast<char*>(p) + off; }

// The largest member block a crowded host stages in the rings, by kind (n members): beyond it pulling and closing is
// faster, since a member that returns early competes for the cores with the members still reading (2-core VM, 4 and
// 8 PEs: bench/results/cpu-2core-vm/coll_ring_block_ab.txt). Reductions never (their one-shot is kCollStageBytes).
size_t ringBlockMax(CollKind kind, size_t n) {
  switch (kind) {
    case CollKind::Broadcast: return n <= 4 ? 8192 : kRingStageBytes;  // one copy, n - 1 readers
    case CollKind::Allgather: return 4096;
    case CollKind::Alltoall: case CollKind::ReduceScatter: return 2048;  // n blocks staged
    default: return 0;
  }
}

// [addr, addr + n) inside this PE's by-host scratch (kByHostScratchOffset): *ref its place in the HOST segment. The
// heap's checks refuse it (control area); check() takes it for the by-host steps only (CollArgs::scratch). The data
// phases address members' objects by the refs check() resolved (Plan::dref/sref), so they need no such case.
bool inByHostScratch(const World& w, const void* addr, uint64_t n, SymRef* ref) {
  const uintptr_t base = reinterpret_cast<uintptr_t>(w.heap().host()->myBase()) + kByHostScratchOffset;
  const uintptr_t at = reinterpret_cast<uintptr_t>(addr), total = kTeamSlots * kByHostScratchBytes;
  if (at < base || at - base >= total || n > total - (at - base)) return false;
  *ref = SymRef{SegKind::Host, kByHostScratchOffset + (at - base)};
  return true;
}

}  // namespace

static_assert(CollRecord::kWords <= kCollValueWords, "a record fits the value words");

namespace {

// Sets a token team's done word to the calls completed when the call returns, whatever it returns.
class DoneOnExit {
 public:
  DoneOnExit(const CollTokens* tokens, const Team& t, uint64_t calls) : tokens_(tokens), t_(t), calls_(calls) {}
  ~DoneOnExit() {
    if (tokens_) tokens_->markDone(t_, calls_);
  }
  DoneOnExit(const DoneOnExit&) = delete;
  DoneOnExit& operator=(const DoneOnExit&) = delete;

 private:
  const CollTokens* tokens_;
  const Team& t_;
  uint64_t calls_;
};

}  // namespace

uint64_t Collectives::wordsOffset(int slot) {
  return offsetof(ControlBlock, coll) + static_cast<uint64_t>(slot) * kCollWords * sizeof(uint64_t);
}

// ---- device views -------------------------------------------------------------------------------------------------

Status Collectives::deviceView(const char* call, TeamRef ref, const tether_device_handle_t& h,
                               tether_device_team_t* out) {
  std::shared_ptr<Team> team;
  TETHER_TRY(w_.teams().find(call, "team", ref, &team));
  return viewOf(call, *team, h, out);
}

Status Collectives::viewOf(const char* call, Team& t, const tether_device_handle_t& h,
                           tether_device_team_t* out) const {
  CollViewBases b;
  b.me = w_.myPe();
  b.nPes = w_.nPes();
  b.host = w_.heap().host()->myBase();
  b.device = w_.heap().device() ? w_.heap().device()->myBase() : nullptr;
  b.hostSyncOffset = offsetof(ControlBlock, devTeams);
  return deviceTeamView(call, t, h, byHost_.hostRun(t), gpu_, b, out);
}

Status Collectives::resetDeviceWords(int slot) {
  const uint64_t words = static_cast<uint64_t>(slot) * kDeviceTeamWords * sizeof(uint64_t);
  const size_t bytes = kDeviceTeamWords * sizeof(uint64_t);
  TETHER_TRY(w_.heap().zeroLocal(SymRef{SegKind::Host, offsetof(ControlBlock, devTeams) + words}, bytes));
  if (w_.heap().device()) TETHER_TRY(w_.heap().zeroLocal(SymRef{SegKind::Device, kDeviceTeamSyncOffset + words}, bytes));
  return Status::ok();
}

// ---- stream forms -------------------------------------------------------------------------------------------------

Status Collectives::enqueue(const char* call, TeamRef ref, const CollArgs& a, bool syncOnly, void* stream) {
  std::shared_ptr<Team> team;
  TETHER_TRY(w_.teams().acquire(call, ref, &team));
  Team& t = *team;
  StreamCollCall c;
  Plan p;
  if (!syncOnly) {
    TETHER_TRY(check(call, t, a, &p));
    c = streamCall(p);
  }
  StreamOps* so = nullptr;
  TETHER_TRY(w_.streams().ops(&so).withContext(call));
  if (!syncOnly && p.block != 0 && !so->gpuAddresses() &&
      (!isHostMemory(p.dref.kind) || !isHostMemory(p.sref.kind)))
    TETHER_FAIL(TETHER_ERR_UNSUPPORTED, "%s: the CPU stream emulation serves HOST and STATIC segments only", call);
  // By host (protocol above), where every subteam has a device view: the same collectives on the subteams, enqueued.
  if (!syncOnly) {
    bool byHost = false;
    TETHER_TRY(byHost_.enqueue(call, t, ref, p, so, stream, &byHost));
    if (byHost) return Status::ok();
  }
  tether_device_handle_t h;
  TETHER_TRY(w_.deviceHandle(so->gpuAddresses(), &h).withContext(call));
  tether_device_team_t v;
  TETHER_TRY(viewOf(call, t, h, &v));
  // Reductions pull the members the stream cannot load through the proxy ring (device.cuh, teamReduceStaged); the
  // arguments are evaluated only when the message is logged.
  TETHER_LOG_INFO(LogSys::Core, "%s: team index %d, %zu PEs, count %zu: on the stream (the device form), %s%s%s",
                  call, t.slot, t.pes.size(), c.count,
                  !so->gpuAddresses() ? "an emulated step" : c.blocks > 1 ? "a cooperative grid" : "one block",
                  c.algo == StreamCollCall::TwoShot   ? ", two-shot"
                  : c.algo == StreamCollCall::OneShot ? ", one-shot"
                                                      : "",
                  !syncOnly && isReduction(a.kind) && p.block != 0 && unreachableMember(t, p.sref.kind) >= 0
                      ? ", proxied members pulled through the team's scratch"
                      : "");
  return so->coll(stream, h, v, c);
}

StreamCollCall Collectives::streamCall(const Plan& p) const {
  CollShape shape;
  shape.n = p.n;
  shape.block = p.block;
  shape.elemBytes = p.es;
  shape.destBytes = p.destBytes;
  return streamCollCall(p.a.kind, p.a.type, p.a.dest, p.a.src, p.a.count, p.a.op, p.a.root, shape, gpu_);
}

// ---- the GPU engine (host forms on GPU memory) -------------------------------------------------------------------

Status Collectives::gpuPlan(const char* call, Team& t, Plan* p) {
  p->gpu = false;
  // Never called for a broadcast (run()): its dest is each member's own affair (not agreed, any kind), and each
  // member's one copy from the root by the CPU path is a copy-engine transfer already. Not alltoallv (no device form).
  if (!gpu_.host || !w_.gpu() || p->block == 0 || p->a.kind == CollKind::Alltoallv) return Status::ok();
  if (p->sref.kind != SegKind::Device || p->dref.kind != SegKind::Device) return Status::ok();  // agreed values
  if (unreachableMember(t, SegKind::Device) >= 0) return Status::ok();
  TETHER_TRY(w_.streams().engineStream(t.slot, &p->gops, &p->gstream).withContext(call));
  if (!p->gops->gpuAddresses()) return Status::ok();
  TETHER_TRY(w_.deviceHandle(true, &p->gh).withContext(call));
  TETHER_TRY(viewOf(call, t, p->gh, &p->gv));
  p->gcall = streamCall(*p);
  p->gpu = true;
  return Status::ok();
}

Status Collectives::gpuData(const char* call, const Plan& p) {
  // The legacy default stream's work so far (run() settles it on the host for the CPU paths) lands before the kernel
  // starts, so before its first team sync: the earliest a peer touches this member's objects. The host does not wait.
  TETHER_TRY(p.gops->follow(p.gstream, nullptr).withContext(call));
  TETHER_TRY(p.gops->coll(p.gstream, p.gh, p.gv, p.gcall).withContext(call));
  return p.gops->synchronize(p.gstream).withContext(call);
}

int Collectives::unreachableMember(const Team& t, SegKind kind) const {
  for (int pe : t.pes) {
    if (pe == w_.myPe()) continue;
    const SegPath& sp = w_.path(pe, kind);
    if (w_.forceProxy() || !sp.ops || !(sp.ops->caps & kCapLoadStore) || !sp.base) return pe;
  }
  return -1;
}

// ---- local checks ------------------------------------------------------------------------------------------------

Status Collectives::check(const char* call, const Team& t, const CollArgs& a, Plan* p) const {
  struct Ctx {
    const World& w;
    const CollArgs& a;
    const char* call;
  } ctx{w_, a, call};
  CollSymCheck symmetric;
  symmetric.ctx = &ctx;
  symmetric.fn = [](const void* c, const char* what, const void* addr, uint64_t n, SymRef* ref) {
    const Ctx& x = *static_cast<const Ctx*>(c);
    if (x.a.scratch && inByHostScratch(x.w, addr, n, ref)) return Status::ok();
    return x.w.checkSymmetric(x.call, what, addr, n, ref);
  };
  return collCheck(call, t.pes.size(), static_cast<size_t>(t.me), a, symmetric, p);
}

// ---- barriers ----------------------------------------------------------------------------------------------------

// A token team's closing (or a two-shot allreduce's middle): this PE stores its close word (encoding below) and waits
// for every other member's to reach this call's phase -- one store and one pass over the members instead of log2(n) barrier rounds that
// depend on each other (each a wake-up of another PE where PEs share cores). A member's close word moves on only at the
// closing of a later call, which needs every member's token of that call (the agreement), so nobody misses a value.
Status Collectives::phaseBarrier(const char* call, Team& t, bool middle, bool raise, bool* flagged) {
  if (tokens_.team(t)) return w_.teams().lose(t, tokens_.closeCall(call, t, middle, raise, flagged));
  return rounds_.rounds(call, t, middle ? CollRounds::kTagMiddle : CollRounds::kTagClose, raise, flagged);
}

Status Collectives::mismatch(const char* call, const Team& t, const Record& mine, size_t m,
                             const Record& theirs) const {
  return recordMismatch(call, t.me, w_.myPe(), mine, m, t.pes[m], theirs);
}

// ---- data --------------------------------------------------------------------------------------------------------

bool Collectives::twoShot(Team& t, const Plan& p) const {
  if (p.a.kind != CollKind::Allreduce) return false;
  if (tokens_.team(t) && isHostMemory(p.sref.kind)) return p.n >= 2 && p.block >= kTwoShotLocalBytes;
  return p.n >= 3 && p.block >= kTwoShotBytes;
}

Status Collectives::dataPhase(const char* call, Team& t, const Plan& p) {
  const size_t n = p.n, me = p.me, B = p.block;
  const bool destDevice = p.dref.kind == SegKind::Device;
  char* dest = static_cast<char*>(p.a.dest);
  const int myPe = w_.myPe();
  Status err;
  bool flagged = false;
  // Members in the order this PE visits them: starting after itself, so that not everyone reads member 0 first.
  auto visit = [&](auto&& f) {
    for (size_t k = 1; k <= n && err.isOk(); ++k) err = f((me + k) % n);
  };
  std::vector<char> temp;  // in-place one-shot allreduce: the result waits here until nobody reads src any more
  // The movers' copies: into CPU memory batched (Gets: the gets to other hosts complete together at finish), into
  // GPU memory one by one.
  CollReach::Gets gets(reach_, call);
  auto fetch = [&](void* dst, const SymRef& from, size_t bytes, int pe) {
    return destDevice ? reach_.copyFrom(call, dst, from, bytes, pe) : gets.add(dst, pe, from, bytes);
  };
  switch (p.a.kind) {
    case CollKind::Broadcast:
      if (me != static_cast<size_t>(p.a.root)) err = reach_.copyFrom(call, dest, p.sref, B, t.pes[p.a.root]);
      else if (!p.inPlace) err = reach_.copyFrom(call, dest, p.sref, B, myPe);
      break;
    case CollKind::Allgather:
      visit([&](size_t k) {
        if (k == me && p.inPlace) return Status::ok();
        return fetch(at(dest, k * B), p.inPlace ? p.dref.plus(k * B) : p.sref, B, t.pes[k]);
      });
      break;
    case CollKind::Alltoall:
      visit([&](size_t k) { return fetch(at(dest, k * B), p.sref.plus(me * B), B, t.pes[k]); });
      break;
    case CollKind::Alltoallv:
      visit([&](size_t k) {
        size_t sc = 0, sd = 0;  // member k's count and displacement for this PE, from its symmetric arrays
        TETHER_TRY(reach_.copyFrom(call, &sc, p.scRef.plus(me * sizeof sc), sizeof sc, t.pes[k]));
        TETHER_TRY(reach_.copyFrom(call, &sd, p.sdRef.plus(me * sizeof sd), sizeof sd, t.pes[k]));
        if (sc != p.a.rcounts[k])
          TETHER_FAIL(TETHER_ERR_MISMATCH, "%s: team PE %zu (world PE %d) expects rcounts[%zu] = %zu elements from "
                      "team PE %zu (world PE %d), whose scounts[%zu] is %zu", call, me, myPe, k, p.a.rcounts[k], k,
                      t.pes[k], me, sc);
        // Member k's block lies where its sdispls says, which this PE's own arrays did not bound (check): the range
        // is checked here, on this PE's copy of the object (the heaps are symmetric).
        SymRef from{};
        if (sc != 0) TETHER_TRY(w_.checkSymmetric(call, "src", at(p.a.src, sd * p.es), sc * p.es, &from));
        return reach_.copyFrom(call, at(dest, p.a.rdispls[k] * p.es), from, sc * p.es, t.pes[k]);
      });
      break;
    case CollKind::Reduce:
      if (me == static_cast<size_t>(p.a.root))
        err = reach_.reduceSlice(call, t.pes, myPe, p, 0, p.a.count, dest, destDevice);
      break;
    case CollKind::ReduceScatter:
      err = reach_.reduceSlice(call, t.pes, myPe, p, me * p.a.count, p.a.count, dest, destDevice);
      break;
    case CollKind::Allreduce:
      if (!twoShot(t, p)) {
        if (p.inPlace) temp.resize(B);
        err = reach_.reduceSlice(call, t.pes, myPe, p, 0, p.a.count, p.inPlace ? temp.data() : dest,
                                 p.inPlace ? false : destDevice);
      } else {
        // Two-shot: member k owns slice k = [lo(k), lo(k + 1)) elements.
        const size_t q = p.a.count / n, r = p.a.count % n;
        auto lo = [&](size_t k) { return k * q + std::min(k, r); };
        err = reach_.reduceSlice(call, t.pes, myPe, p, lo(me), lo(me + 1) - lo(me), at(dest, lo(me) * p.es),
                                 destDevice);
        TETHER_TRY(phaseBarrier(call, t, true, !err.isOk(), &flagged));
        if (err.isOk() && flagged) break;
        visit([&](size_t k) {
          if (k == me) return Status::ok();
          return fetch(at(dest, lo(k) * p.es), p.dref.plus(lo(k) * p.es), (lo(k + 1) - lo(k)) * p.es, t.pes[k]);
        });
      }
      break;
    default:
      break;
  }
  const Status landed = gets.finish();
  if (err.isOk()) err = landed;
  TETHER_TRY(phaseBarrier(call, t, false, !err.isOk() || flagged, &flagged));
  if (flagged) return rounds_.failedTogether(call, t, err);
  if (!temp.empty()) TETHER_TRY(reach_.writeLocal(call, dest, temp.data(), B, destDevice));
  return Status::ok();
}

// ---- one-shot ----------------------------------------------------------------------------------------------------

Status Collectives::setUp(const Config& config, int localPes) {
  const std::string mode = config.str("TETHER_COLL_CROWDED");
  if (mode == "auto") {
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    crowded_ = cpus > 0 && localPes > cpus;
  } else if (!parseBool(mode, &crowded_)) {
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "TETHER_COLL_CROWDED=%s: expected auto, 1 or 0", mode.c_str());
  }
  TETHER_LOG_INFO(LogSys::Core, "collectives: %s host (%d PEs here, TETHER_COLL_CROWDED=%s)",
                  crowded_ ? "crowded" : "uncrowded", localPes, mode.c_str());
  // The rooms lose the team the same way (Teams::lose).
  auto lose = [this](Team& t, Status s) { return w_.teams().lose(t, std::move(s)); };
  CollTokens::Links links;
  links.me = w_.myPe();
  links.host = [this](int pe, uint64_t off) -> char* {
    if (pe == w_.myPe()) return w_.heap().host()->myBase() + off;
    const SegPath& sp = w_.path(pe, SegKind::Host);
    return sp.ops && (sp.ops->caps & kCapLoadStore) ? w_.remote(pe, SymRef{SegKind::Host, off}).ptr : nullptr;
  };
  links.lose = lose;
  links.timeout = w_.timeout();
  links.wakeups = &w_.wakeups();
  tokens_.attach(std::move(links));
  CollRounds::Links rl;
  rl.me = w_.myPe();
  rl.timeout = w_.timeout();
  rl.base = wordsOffset(0);
  rl.mine = w_.heap().host()->myBase();
  rl.signal = [this](int pe, uint64_t off, uint64_t value) {
    return signalWord(w_, pe, SymRef{SegKind::Host, off}, value, TETHER_SIGNAL_SET, /*post=*/true);
  };
  rl.get = [this](int pe, uint64_t off, void* dst, size_t bytes) {
    const SegPath& p = w_.path(pe, SegKind::Host);
    return p.ops->get(p.ctx, pe, dst, w_.remote(pe, SymRef{SegKind::Host, off}), bytes, false);
  };
  rl.progress = [this] { return w_.paths().progress(); };
  rl.passFailure = [this](const Team& t, size_t failed, uint64_t off, uint64_t value) {
    passSyncFailure(w_, t.sync, failed, &t.pes, off, sizeof(uint64_t), value, TETHER_SIGNAL_SET);
  };
  rl.lose = lose;
  rl.sleepWord = w_.wakeups().mine();
  rounds_.attach(std::move(rl));
  CollReach::Links reach;
  reach.mapped = [this](int pe, const SymRef& ref) -> char* {
    if (!isHostMemory(ref.kind) || !(w_.path(pe, ref.kind).ops->caps & kCapLoadStore)) return nullptr;
    return w_.remote(pe, ref).ptr;
  };
  reach.get = [this](int pe, void* dst, const SymRef& ref, size_t bytes) {
    const SegPath& sp = w_.path(pe, ref.kind);
    return sp.ops->get(sp.ctx, pe, dst, w_.remote(pe, ref), bytes, false);
  };
  reach.getAll = [this](const std::vector<CollReach::Fetch>& batch) {
    std::vector<SegKind> kinds(batch.size());
    std::vector<GetItem> items(batch.size());
    for (size_t i = 0; i < batch.size(); ++i) {
      kinds[i] = batch[i].ref.kind;
      items[i] = GetItem{batch[i].pe, batch[i].dst, w_.remote(batch[i].pe, batch[i].ref), batch[i].bytes};
    }
    return w_.paths().getMany(kinds.data(), items.data(), items.size());
  };
  reach.putDevice = [this](const char* call, void* dst, const void* src, size_t bytes) {
    return w_.put(call, dst, src, bytes, w_.myPe(), false);
  };
  reach_.attach(std::move(reach));
  eagerAlltoall_ = config.flag("TETHER_COLL_EAGER_ALLTOALL");
  CollByHost::Links bl;
  bl.hostsOf = [this](const std::vector<int>& pes) { return w_.hostsOf(pes); };
  bl.mapped = [this](int pe) { return tokens_.peer(pe); };
  bl.split = [this](const char* call, TeamRef ref) { return w_.teams().splitByHost(call, ref); };
  bl.lose = lose;
  bl.scratch = w_.heap().host()->myBase() + kByHostScratchOffset;
  byHost_.attach(config.flag("TETHER_COLL_BY_HOST"), std::move(bl));
  gpu_.host = config.flag("TETHER_COLL_GPU");
  gpu_.twoShot = config.size("TETHER_COLL_TWO_SHOT");
  gpu_.maxBlocks = static_cast<unsigned>(config.integer("TETHER_COLL_BLOCKS"));
  gpu_.blockBytes = config.size("TETHER_COLL_BLOCK_BYTES");
  gpu_.scratch = config.size("TETHER_COLL_SCRATCH");
  if (gpu_.scratch % 16)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "TETHER_COLL_SCRATCH=%zu: not a multiple of 16 bytes", gpu_.scratch);
  return Status::ok();
}

size_t Collectives::stagedBytes(const Plan& p, bool tokens) const {
  // Broadcast: dest is each member's own affair (not agreed), so the choice must not depend on its kind.
  const bool destHost = p.a.kind == CollKind::Broadcast || isHostMemory(p.dref.kind);
  if (p.block == 0 || !destHost || !isHostMemory(p.sref.kind)) return 0;
  size_t bytes = 0;
  switch (p.a.kind) {
    case CollKind::Broadcast: case CollKind::Reduce: case CollKind::Allreduce: case CollKind::Allgather:
      bytes = p.block;
      break;
    case CollKind::ReduceScatter: case CollKind::Alltoall:
      bytes = p.block * p.n;
      break;
    default:
      return 0;
  }
  if (bytes <= kCollStageBytes) return bytes;
  return tokens && crowded_ && bytes <= kRingStageBytes && p.block <= ringBlockMax(p.a.kind, p.n) ? bytes : 0;
}

uint64_t Collectives::stageOffset(const Team& t) const {
  return kCollStageOffset + (static_cast<uint64_t>(t.slot) * 2 + (t.stageSeq & 1)) * kCollStageBytes;
}

void Collectives::stage(const Team& t, const Plan& p, size_t bytes) {
  char* mine = w_.heap().host()->myBase() + stageOffset(t);
  std::memcpy(mine, p.a.src, bytes);
}

const char* Collectives::stagedInPlace(const Team& t, const Plan& p, size_t m, size_t off) const {
  if (p.tokenCall)  // token teams are load/store mapped
    return tokens_.token(t, m, p.tokenCall - 1).data() + off;
  if (p.ringCall)  // the token's data word: where the member's copy lies in its staging ring
    return tokens_.stage(t, m, tokens_.token(t, m, p.ringCall - 1).dataWord() % kEagerStageTeamBytes) + off;
  const int pe = t.pes[m];
  if (pe == w_.myPe()) return w_.heap().host()->myBase() + stageOffset(t) + off;
  return reach_.mapped(pe, SymRef{SegKind::Host, stageOffset(t) + off});
}

Status Collectives::staged(const char* call, const Team& t, const Plan& p, size_t m, size_t off, size_t bytes,
                           char* scratch, const char** out) {
  if ((*out = stagedInPlace(t, p, m, off))) return Status::ok();
  TETHER_TRY(reach_.copyFrom(call, scratch, SymRef{SegKind::Host, stageOffset(t) + off}, bytes, t.pes[m]));
  *out = scratch;
  return Status::ok();
}

Status Collectives::stagedAll(const char* call, const Team& t, const Plan& p, size_t off, size_t bytes,
                              std::unique_ptr<char[]>* fetched, const char** at) {
  const size_t n = p.n;
  CollReach::Gets gets(reach_, call);
  for (size_t m = 0; m < n; ++m) {
    if ((at[m] = stagedInPlace(t, p, m, off))) continue;
    if (!*fetched) fetched->reset(new char[n * bytes]);
    char* dst = fetched->get() + m * bytes;
    TETHER_TRY(gets.add(dst, t.pes[m], SymRef{SegKind::Host, stageOffset(t) + off}, bytes));
    at[m] = dst;
  }
  return gets.finish();
}

Status Collectives::oneShot(const char* call, Team& t, const Plan& p) {
  const size_t n = p.n, me = p.me, B = p.block, es = p.es;
  char* dest = static_cast<char*>(p.a.dest);
  alignas(16) char scratch[kCollStageBytes];
  const char* from = nullptr;
  std::unique_ptr<char[]> fetched;  // the other hosts' staged bytes (stagedAll)
  const char* atInline[16];         // where each member's bytes are readable (no allocation on small teams)
  std::unique_ptr<const char*[]> atHeap(n > 16 ? new const char*[n] : nullptr);
  const char** at = atHeap ? atHeap.get() : atInline;
  Status err;
  switch (p.a.kind) {
    case CollKind::Broadcast:
      if (me != static_cast<size_t>(p.a.root)) {
        err = staged(call, t, p, static_cast<size_t>(p.a.root), 0, B, scratch, &from);
        if (err.isOk()) err = reach_.writeLocal(call, dest, from, B, p.dref.kind == SegKind::Device);
      } else if (!p.inPlace) {
        if (p.dref.kind == SegKind::Device) err = reach_.copyFrom(call, dest, p.sref, B, w_.myPe());
        else std::memmove(dest, p.a.src, B);
      }
      break;
    case CollKind::Allgather:
    case CollKind::Alltoall:
      err = stagedAll(call, t, p, p.a.kind == CollKind::Alltoall ? me * B : 0, B, &fetched, at);
      for (size_t k = 1; k <= n && err.isOk(); ++k) {
        const size_t m = (me + k) % n;
        if (m == me && p.inPlace) continue;  // (in-place allgather; alltoall has no in-place form)
        std::memcpy(dest + m * B, at[m], B);
      }
      break;
    default: {  // reductions: combine in team order; dest is written only here (the sources are staged copies)
      const bool rooted = p.a.kind == CollKind::Reduce;
      if (rooted && me != static_cast<size_t>(p.a.root)) break;
      const size_t off = p.a.kind == CollKind::ReduceScatter ? me * B : 0;
      alignas(16) char accBytes[kCollStageBytes];  // larger (ring) contributions: on the heap (new[] aligns for any type)
      std::unique_ptr<char[]> accBig(B > sizeof accBytes ? new char[B] : nullptr);
      char* acc = accBig ? accBig.get() : accBytes;
      err = stagedAll(call, t, p, off, B, &fetched, at);
      for (size_t m = 0; m < n && err.isOk(); ++m) {
        if (m == 0) std::memcpy(acc, at[0], B);
        else reduceInto(p.a.type, p.a.op, acc, at[m], B / es);
      }
      if (err.isOk()) std::memcpy(dest, acc, B);
      break;
    }
  }
  ++t.stageSeq;  // every member flips (the agreement succeeded): the next one-shot uses the other buffer
  return err;
}

// ---- tokens and the eager broadcast ------------------------------------------------------------------------------

Status Collectives::eagerBroadcast(const char* call, Team& t, const Plan& p, const Record& mine, uint64_t c) {
  if (!p.local.isOk() || p.me != static_cast<size_t>(p.a.root)) return eagerRead(call, t, p, mine, c);
  const bool host = isHostMemory(p.sref.kind);
  const bool inl = host && p.block <= kEagerDataBytes;
  // Two members stage only up to 2 KiB: at 4 KiB the one reader pulling straight from src was faster than the
  // root's extra copy (2-core VM, interleaved A/B, 15 runs: 0.67 vs 0.92 us per call); at 3+ members the root's wait
  // for every reader costs more (4 PEs on 2 cores: 2.2 us staged vs 7-16 us pull under load at 4 KiB; 8 KiB 5.8 ->
  // 1.5 us staged, bench/results/cpu-2core-vm/coll_ring_ab.txt), so a crowded host stages up to ringBlockMax (at 4
  // PEs 16-32 KiB pulled are now faster than staged, 0.6-0.9x: coll_ring_block_ab.txt).
  const size_t limit = p.n == 2 ? kEagerStagePairBytes : crowded_ ? ringBlockMax(p.a.kind, p.n) : kEagerStageBytes;
  const bool staged = host && !inl && p.block <= limit;
  uint64_t off = 0;  // staged: where the copy lies in this PE's staging ring (the token's data carries it)
  if (staged) {
    TETHER_TRY(w_.teams().lose(t, tokens_.stageRoom(call, t, p.block, c, &off)));
    std::memcpy(tokens_.stage(t, p.me, off), p.a.src, p.block);  // before the token's release store
  }
  // Pull: the token's data word says where src lies (CollArgs::srcAtRoot's readers read it there).
  const uint64_t ref = p.sref.offset << 2 | static_cast<uint64_t>(p.sref.kind);
  TETHER_TRY(w_.teams().lose(t, tokens_.post(call, t, c, mine,
                                          CollTokens::kEager | (inl ? CollTokens::kInline : 0) |
                                              (staged ? CollTokens::kStaged : 0),
                                          inl ? p.a.src : staged ? static_cast<const void*>(&off) : &ref,
                                          inl ? p.block : sizeof(uint64_t))));
  Status err;
  if (!p.inPlace && p.block != 0) {
    if (host && isHostMemory(p.dref.kind)) std::memmove(p.a.dest, p.a.src, p.block);
    else err = reach_.copyFrom(call, p.a.dest, p.sref, p.block, w_.myPe());
  }
  // Pull: the others read src until their done word passes this call.
  if (!inl && !staged) TETHER_TRY(w_.teams().lose(t, tokens_.waitDone(call, t, c + 1, false)));
  return err;
}

Status Collectives::eagerAlltoall(const char* call, Team& t, const Plan& p, const Record& mine, uint64_t c) {
  const size_t n = p.n, me = p.me, B = p.block;
  const SymRef to = p.dref.plus(me * B);  // where this member's block lands in every member's dest
  Status err;
  for (size_t k = 0; k < n && err.isOk(); ++k) {
    const size_t m = (me + k) % n;  // own block first, then the others in turn (not everyone onto member 0 first)
    const void* from = at(p.a.src, m * B);
    const int pe = t.pes[m];
    if (m == me) {
      std::memcpy(at(p.a.dest, me * B), from, B);
    } else if (char* mapped = reach_.mapped(pe, to)) {
      std::memcpy(mapped, from, B);
    } else {  // (every HOST segment of a token team is mapped; a path without mapping still works)
      const SegPath& sp = w_.path(pe, to.kind);
      err = sp.ops->put(sp.ctx, pe, w_.remote(pe, to), from, B, false).withContext(call);
    }
  }
  // The token's release store publishes the blocks: a member that sees every token of call c holds every block. A
  // member whose stores failed posts an invalid record, so that no member returns success with its block missing.
  TETHER_TRY(w_.teams().lose(t, tokens_.post(call, t, c, err.isOk() ? mine : Record{}, 0, nullptr, 0)));
  return agreeByTokens(call, t, mine, err, c);
}

Status Collectives::eagerRead(const char* call, Team& t, const Plan& p, const Record& mine, uint64_t c) {
  TETHER_TRY(w_.teams().lose(t, tokens_.post(call, t, c, mine, CollTokens::kEager, nullptr, 0)));
  if (!p.local.isOk()) return p.local;  // fails alone (protocol: what is detected where)
  const size_t root = static_cast<size_t>(p.a.root);
  TETHER_TRY(tokens_.await(call, t, root, c, "the broadcast root"));
  const CollTokens::Token s = tokens_.token(t, root, c);
  if (!s.valid())
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: the root, team PE %zu (world PE %d), passed invalid arguments or failed "
                "an earlier step of a collective by host (its own error says which); dest is untouched", call, root,
                t.pes[root]);
  // A root running another collective differs too (and fails when it compares this member's token).
  // (This member's own token, just posted, holds the hash of its record.)
  if (s.hash() != tokens_.token(t, static_cast<size_t>(t.me), c).hash())
    return mismatch(call, t, mine, root, s.record());
  if (s.inlined()) return reach_.writeLocal(call, p.a.dest, s.data(), p.block, p.dref.kind == SegKind::Device);
  if (s.staged())  // the token's data word: where the root's copy lies in its staging ring
    return reach_.writeLocal(call, p.a.dest, tokens_.stage(t, root, s.dataWord() % kEagerStageTeamBytes), p.block,
                      p.dref.kind == SegKind::Device);
  if (!p.a.srcAtRoot) return reach_.copyFrom(call, p.a.dest, p.sref, p.block, t.pes[root]);
  // The root's src, where its token says (a symmetric range here too: the heaps are symmetric; checked all the same).
  const SymRef ref{static_cast<SegKind>(s.dataWord() & 3), s.dataWord() >> 2};
  SymRef checked{};
  TETHER_TRY(w_.checkSymmetric(call, "the root's src", w_.heap().local(ref), p.block, &checked));
  return reach_.copyFrom(call, p.a.dest, checked, p.block, t.pes[root]);
}

Status Collectives::agreeByTokens(const char* call, Team& t, const Record& mine, const Status& localError,
                                  uint64_t c) {
  const size_t n = t.pes.size(), me = static_cast<size_t>(t.me);
  for (size_t k = 1; k < n; ++k) TETHER_TRY(tokens_.await(call, t, (me + k) % n, c, "the agreement round"));
  // Every member has every record now: each reaches the same verdict (its own error first, like explain).
  // The hashes decide (62 bits; the full records only explain a difference), from each token's first cache line.
  if (!localError.isOk()) return localError;
  for (size_t m = 0; m < n; ++m)
    if (!tokens_.token(t, m, c).valid())
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: team PE %zu (world PE %d) passed invalid arguments or failed an "
                  "earlier step of a collective by host (its own error says which); no member ran the collective",
                  call, m, t.pes[m]);
  const uint64_t h = tokens_.token(t, me, c).hash();  // this member's record hash, as post stored it
  for (size_t m = 0; m < n; ++m) {
    const CollTokens::Token s = tokens_.token(t, m, c);
    if (s.hash() != h) return mismatch(call, t, mine, m, s.record());
  }
  return Status::ok();
}

// ---- entry -------------------------------------------------------------------------------------------------------

Status Collectives::run(const char* call, TeamRef ref, const CollArgs& a) {
  std::shared_ptr<Team> team;
  TETHER_TRY(w_.teams().acquire(call, ref, &team));
  Team& t = *team;
  // Eager broadcast on a known token team: a member will wait for the root's token of this call, so loading its lines
  // (the head and the inline data this member expects) starts now and the transfers overlap the checks below (in a
  // stream of broadcasts the root has usually posted it already; if not, the lines are loaded again once the root
  // writes them), and the next call's head too. The root will write those lines, which its readers hold from the call
  // that used the slot last: taking them for writing now keeps those transfers from stalling the locked instructions
  // that follow the root's stores.
  if (a.eager && a.kind == CollKind::Broadcast && t.tokens == 1 && a.root >= 0 &&
      static_cast<size_t>(a.root) < t.pes.size()) {
    tokens_.prefetch(t, static_cast<size_t>(a.root), t.callSeq, a.count * dtypeInfo(a.type).size, a.root == t.me);
  }
  Plan p;
  p.local = check(call, t, a, &p);
  // Not a broadcast (see gpuPlan; and the eager broadcast's path stays as short as it was).
  if (p.local.isOk() && a.kind != CollKind::Broadcast) p.local = gpuPlan(call, t, &p);
  // Peers read this member's GPU objects once the agreement barrier passes: what the program queued on the legacy
  // default stream (a cudaMemcpy from pageable memory returns before its DMA lands) must have landed by then. The GPU
  // engine orders its kernel after that work on the GPU instead (gpuData).
  if (p.local.isOk() && !p.gpu && w_.gpu() &&
      (p.sref.kind == SegKind::Device || p.dref.kind == SegKind::Device || p.scRef.kind == SegKind::Device ||
       p.sdRef.kind == SegKind::Device)) p.local = w_.gpu()->settleDefaultStream().withContext(call);
  Record mine;
  if (p.local.isOk()) {
    // Broadcast: every member pulls from the root's src, so only src must be the same object everywhere; each
    // member's dest (and whether it is in place) is its own affair (the OpenSHMEM 1.4 root passes dest = src to keep
    // its dest untouched).
    const bool bcast = a.kind == CollKind::Broadcast;
    const uint64_t head = static_cast<uint64_t>(a.kind) | static_cast<uint64_t>(a.type) << 8 |
                          (isReduction(a.kind) ? static_cast<uint64_t>(a.op) << 16 : 0) |
                          uint64_t{p.inPlace && !bcast} << 24 | Record::kValid |
                          (a.eager && (bcast || (a.kind == CollKind::Alltoall && eagerAlltoall_)) ? Record::kEager : 0) |
                          (byHost_.recorded(t, a, p.block) ? Record::kByHost : 0) |
                          (bcast && a.srcAtRoot ? Record::kSrcAtRoot : 0) |
                          (p.gpu ? Record::kGpu | uint64_t{p.gcall.algo} << Record::kAlgoShift : 0);
    mine.w[Record::kHead] = head;
    mine.w[Record::kCount] = a.count;
    mine.w[Record::kRoot] = hasRoot(a.kind) ? static_cast<uint64_t>(a.root) : 0;
    if (p.block != 0 && a.kind != CollKind::Alltoallv) {  // alltoallv: extents differ by design
      // In-place allgather and reduce_scatter: the side that differs per member by design is left out.
      const bool destVaries = (p.inPlace && a.kind == CollKind::ReduceScatter) || bcast;
      const bool srcVaries = (p.inPlace && a.kind == CollKind::Allgather) || (bcast && a.srcAtRoot);
      if (!destVaries) mine.w[Record::kDest] = p.dref.offset << 2 | static_cast<uint64_t>(p.dref.kind);
      if (!srcVaries) mine.w[Record::kSrc] = p.sref.offset << 2 | static_cast<uint64_t>(p.sref.kind);
    }
    if (a.kind == CollKind::Alltoallv) {  // the arrays the receivers read must be the same objects everywhere
      mine.w[Record::kScounts] = p.scRef.offset << 2 | static_cast<uint64_t>(p.scRef.kind);
      mine.w[Record::kSdispls] = p.sdRef.offset << 2 | static_cast<uint64_t>(p.sdRef.kind);
    }
  }
  if (t.pes.size() == 1 && !p.local.isOk()) return p.local;
  const bool tokens = tokens_.team(t);
  if (a.srcAtRoot && !(tokens && a.eager && a.kind == CollKind::Broadcast))  // (internal: CollByHost)
    TETHER_FAIL(TETHER_ERR_INTERNAL, "%s: a broadcast from the root's own place needs the eager form on a team whose "
                "members map each other (team index %d)", call, t.slot);
  const uint64_t c = t.callSeq++;
  DoneOnExit done(tokens ? &tokens_ : nullptr, t, c + 1);
  if (tokens && a.eager && a.kind == CollKind::Broadcast) return eagerBroadcast(call, t, p, mine, c);
  // The eager alltoall of HOST objects, where TETHER_COLL_EAGER_ALLTOALL allows it (a function of the agreed record,
  // the setting's eager bit included, so all members take it when they agree): members store their blocks into each
  // other's dest, one wait.
  if (tokens && a.eager && eagerAlltoall_ && a.kind == CollKind::Alltoall && p.local.isOk() && !p.gpu &&
      isHostMemory(p.sref.kind) && isHostMemory(p.dref.kind))
    return eagerAlltoall(call, t, p, mine, c);
  // By host (a function of the agreed record and the team's shape, so every member takes it alike): nothing staged,
  // but a small broadcast's root (CollByHost::stagedBroadcast).
  const bool byHost = p.local.isOk() && !tokens && byHost_.call(t, p);
  const size_t stagedB = p.local.isOk() && (!byHost || CollByHost::stagedBroadcast(p)) ? stagedBytes(p, tokens) : 0;
  const bool small = stagedB != 0;
  // Token teams carry small contributions in the token itself, larger ones in the members' staging rings (the
  // choice depends on the agreed record only). A broadcast's non-roots contribute nothing.
  p.tokenCall = tokens && small && stagedB <= kEagerDataBytes ? c + 1 : 0;
  p.ringCall = tokens && stagedB > kCollStageBytes ? c + 1 : 0;
  const bool contributes = small && !(a.kind == CollKind::Broadcast && p.me != static_cast<size_t>(a.root));
  uint64_t ringOff = 0;  // ringCall: where this member's copy lies in its ring (its token's data word says so)
  if (contributes && p.ringCall) {
    TETHER_TRY(w_.teams().lose(t, tokens_.stageRoom(call, t, stagedB, c, &ringOff)));
    std::memcpy(tokens_.stage(t, p.me, ringOff), a.src, stagedB);  // before the token's release store
  } else if (contributes && !p.tokenCall) {
    stage(t, p, stagedB);
  }
  if (tokens) {
    const void* data = p.ringCall ? static_cast<const void*>(&ringOff) : a.src;
    const size_t bytes = !contributes ? 0 : p.ringCall ? sizeof ringOff : p.tokenCall ? stagedB : 0;
    TETHER_TRY(w_.teams().lose(t, tokens_.post(call, t, c, mine, 0, data, bytes)));
    TETHER_TRY(agreeByTokens(call, t, mine, p.local, c));
  } else {
    bool flagged = false;
    TETHER_TRY(rounds_.rounds(call, t, mine.hash(), !p.local.isOk(), &flagged));
    if (flagged) return rounds_.explain(call, t, mine, p.local);
  }
  if (p.gpu) {
    TETHER_LOG_INFO(LogSys::Core, "%s: team index %d, %zu PEs, count %zu of %s: on the GPU (the stream form's kernel "
                    "on the engine stream)", call, t.slot, p.n, a.count, dtypeInfo(a.type).name);
    return gpuData(call, p);
  }
  if (byHost) return byHost_.data(call, t, ref, p);
  if (small) {
    TETHER_LOG_INFO(LogSys::Core, "%s: team index %d, %zu PEs, count %zu of %s: one-shot through the %s", call,
                    t.slot, p.n, a.count, dtypeInfo(a.type).name,
                    p.tokenCall ? "tokens" : p.ringCall ? "staging rings" : "staging buffers");
    return oneShot(call, t, p);
  }
  TETHER_LOG_INFO(LogSys::Core, "%s: team index %d, %zu PEs, count %zu of %s (%s -> %s): %s", call, t.slot, p.n,
                  a.count, dtypeInfo(a.type).name, segKindName(p.sref.kind), segKindName(p.dref.kind),
                  twoShot(t, p) ? "two-shot (reduce-scatter + allgather), CPU combine"
                  : isReduction(a.kind) ? "pull, CPU combine"
                                        : "pull copies");
  return dataPhase(call, t, p);
}

}  // namespace tether
