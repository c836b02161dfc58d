// Teams (core/teams.h): the world and shared teams, splits, destroy, sync and barrier.
#include "core/teams.h"

#include "core/collectives.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "base/clock.h"
#include "base/log.h"
#include "core/op.h"
#include "core/sync_failure.h"
#include "core/world.h"

namespace tether {

void Teams::setUp() {
  const int me = w_.myPe(), n = w_.nPes();
  auto world = std::make_shared<Team>();
  auto shared = std::make_shared<Team>();
  for (int pe = 0; pe < n; ++pe) {
    world->pes.push_back(pe);
    // The PEs whose HOST memory this PE can load and store (tether_ptr non-null): the same-host PEs on shared
    // memory paths, only this PE when they are reached through a network path (TETHER_PATHS=host=ucx).
    const SegPath& p = w_.path(pe, SegKind::Host);
    if (pe == me || (p.ops && (p.ops->caps & kCapLoadStore) && p.base)) {
      if (pe == me) shared->me = static_cast<int>(shared->pes.size());
      shared->pes.push_back(pe);
    }
  }
  world->me = me;
  world->sync = w_.syncSchedule(world->pes, world->me, kTeamScheduleWords);
  shared->sync = w_.syncSchedule(shared->pes, shared->me, kTeamScheduleWords);
  std::lock_guard<std::mutex> lock(mu_);
  world->slot = kWorldTeamSlot;
  shared->slot = kSharedTeamSlot;
  world->serial = takeSerial();
  shared->serial = takeSerial();
  bySlot_[kWorldTeamSlot] = std::move(world);
  bySlot_[kSharedTeamSlot] = std::move(shared);
  used_ = (uint64_t{1} << kWorldTeamSlot) | (uint64_t{1} << kSharedTeamSlot);
}

uint64_t Teams::takeSerial() {
  const uint64_t s = nextSerial_;
  nextSerial_ = (nextSerial_ + 1) & ((uint64_t{1} << kTeamSerialBits) - 1);
  if (nextSerial_ == 0) nextSerial_ = 1;
  return s;
}

TeamRef Teams::refOf(int slot) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Team* t = bySlot_[slot].get();
  return t ? TeamRef{slot, t->serial} : TeamRef{};
}

Status Teams::find(const char* call, const char* what, TeamRef ref, std::shared_ptr<Team>* out) const {
  bool lost = false;
  return findLost(call, what, ref, out, &lost);
}

Status Teams::findLost(const char* call, const char* what, TeamRef ref, std::shared_ptr<Team>* out,
                       bool* lost) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ref.slot >= 0 && ref.slot < kTeamSlots && bySlot_[ref.slot] && bySlot_[ref.slot]->serial == ref.serial) {
      *out = bySlot_[ref.slot];
      *lost = !(*out)->lost.isOk();
      return Status::ok();
    }
  }
  TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: %s is not a live team of PE %d (destroyed, or not a handle a team call "
              "returned)", call, what, w_.myPe());
}

Status Teams::acquire(const char* call, TeamRef ref, std::shared_ptr<Team>* out) const {
  // One lock on the way of every collective call: the lookup also reads whether the team is lost (a team is marked
  // lost only under mu_; lostState builds the error when it is).
  bool lost = false;
  TETHER_TRY(findLost(call, "team", ref, out, &lost));
  if (!lost) return w_.collectiveState(call);
  return lostState(call, **out);
}

uint64_t Teams::wordsOffset(int slot) const {
  return offsetof(ControlBlock, teams) + static_cast<uint64_t>(slot) * kTeamSyncWords * sizeof(uint64_t);
}

uint64_t* Teams::words(int slot) const {
  return reinterpret_cast<uint64_t*>(w_.heap().host()->myBase() + wordsOffset(slot));
}

Status Teams::lose(Team& t, const Status& s) {
  if (s.isOk()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  if (t.lost.isOk()) t.lost = s;
  return s;
}

Status Teams::lostState(const char* call, const Team& t) const {
  TETHER_TRY(w_.collectiveState(call));
  std::lock_guard<std::mutex> lock(mu_);
  if (t.lost.isOk()) return Status::ok();
  return Status(t.lost.code(), std::string(call) + ": the team's collective state is lost (an earlier collective on "
                                                   "it failed part-way): " + t.lost.message());
}

// ---- sync words --------------------------------------------------------------------------------------------------

Status Teams::rounds(const char* call, const Team& t, bool post) {
  const size_t n = t.pes.size();
  uint64_t* mine = words(t.slot);
  // A failure part-way goes on to the members on this host that this PE still owes a signal (core/sync_failure.h).
  auto failed = [&](size_t i, const Status& s) {
    passSyncFailure(w_, t.sync, i, &t.pes, wordsOffset(t.slot), sizeof(uint64_t), syncFailureAdd(s.code()),
                    TETHER_SIGNAL_ADD);
    return s;
  };
  for (size_t i = 0; i < t.sync.steps.size(); ++i) {  // core/sync_schedule.h: dissemination, or by host
    const SyncStep& s = t.sync.steps[i];
    if (s.to >= 0) {
      const int to = t.pes[static_cast<size_t>(s.to)];
      const SymRef at{SegKind::Host, wordsOffset(t.slot) + s.word * sizeof(uint64_t)};
      // post (the barrier, after its quiet): the transport need not wait for the signal to apply (UCX: no reply).
      const Status sent = signalWord(w_, to, at, 1, TETHER_SIGNAL_ADD, post);
      if (!sent.isOk()) return failed(i, sent.withContext(call));
    }
    if (s.from < 0) continue;
    const int from = t.pes[static_cast<size_t>(s.from)];
    uint64_t* word = mine + s.word;
    SpinWait spin(w_.timeout(), w_.wakeups().mine());
    uint64_t seen;
    while ((seen = __atomic_load_n(word, __ATOMIC_ACQUIRE)) < 1) {
      if (w_.paths().progress()) spin.busy();
      if (!spin.next())
        return failed(i, Status(TETHER_ERR_TIMEOUT, strprintf(
            "%s: timed out after %.1f s (TETHER_TIMEOUT) on PE %d (team PE %d of %zu, team index %d), round %d, "
            "waiting for world PE %d (word at %p expected >= 1, seen 0); did PE %d exit or skip the call?", call,
            w_.timeout(), w_.myPe(), t.me, n, t.slot, s.word, from, static_cast<void*>(word), from)));
      if (spin.noteDue())
        TETHER_LOG_WARN(LogSys::Sync, "%s: PE %d still waiting for PE %d in a team sync (team index %d, round %d); "
                        "%.0f s so far, %.0f s left of TETHER_TIMEOUT", call, w_.myPe(), from, t.slot, s.word,
                        spin.elapsedSeconds(), spin.secondsLeft());
    }
    if (isSyncFailure(seen)) {  // consumed as a count is, then passed on
      __atomic_fetch_sub(word, syncFailureAdd(syncFailureCode(seen)), __ATOMIC_ACQ_REL);
      return failed(i, syncFailurePassed(call, w_.myPe(), from, s.word, syncFailureCode(seen)));
    }
    // Consumed: an arrival of the member's next sync may already be in the word, and stays for it.
    __atomic_fetch_sub(word, 1, __ATOMIC_ACQ_REL);
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return Status::ok();
}

Status Teams::gather(const char* call, const Team& t, const uint64_t* mine, size_t n, uint64_t* out) {
  uint64_t* values = words(t.slot) + kTeamRoundWords;
  std::memcpy(values, mine, n * sizeof(uint64_t));
  TETHER_TRY(rounds(call, t, false));
  for (size_t m = 0; m < t.pes.size(); ++m) {
    const int pe = t.pes[m];
    const SegPath& p = w_.path(pe, SegKind::Host);
    const RemoteAddr at = w_.remote(pe, SymRef{SegKind::Host, wordsOffset(t.slot) + kTeamRoundWords * 8});
    TETHER_TRY(p.ops->get(p.ctx, pe, out + m * n, at, n * sizeof(uint64_t), false).withContext(call));
  }
  TETHER_TRY(rounds(call, t, false));  // nobody reads this PE's values any more
  std::memset(values, 0, n * sizeof(uint64_t));
  return Status::ok();
}

Status Teams::sync(const char* call, TeamRef ref, bool quietFirst) {
  std::shared_ptr<Team> t;
  TETHER_TRY(find(call, "team", ref, &t));
  TETHER_TRY(lostState(call, *t));
  if (quietFirst) TETHER_TRY(lose(*t, w_.quiet().withContext(call)));
  if (t->pes.size() == 1) return w_.fence();
  return lose(*t, rounds(call, *t, quietFirst));
}

// ---- split -------------------------------------------------------------------------------------------------------

namespace {

// The record each parent member publishes in a split.
enum : size_t { kRecFree, kRecArg0, kRecConfigOk = kRecArg0 + 3, kRecTokens, kRecWords };
static_assert(kRecWords <= kTeamValueWords, "split record fits the value words");

}  // namespace

Status Teams::split(const char* call, TeamRef parentRef, const long long (&args)[3],
                    const char* const (&argNames)[3], bool configOk, const Plan& plan, TeamRef* out, int nOut) {
  for (int k = 0; k < nOut; ++k) out[k] = TeamRef{};
  std::shared_ptr<Team> parent;
  TETHER_TRY(find(call, "parent team", parentRef, &parent));
  TETHER_TRY(lostState(call, *parent));
  uint64_t mine[kRecWords];
  {
    std::lock_guard<std::mutex> lock(mu_);
    mine[kRecFree] = ~used_;
  }
  for (size_t i = 0; i < 3; ++i) mine[kRecArg0 + i] = static_cast<uint64_t>(args[i]);
  mine[kRecConfigOk] = configOk ? 1 : 0;
  mine[kRecTokens] = w_.colls().tokenBase();
  const int n = static_cast<int>(parent->pes.size());
  std::vector<uint64_t> rec(static_cast<size_t>(n) * kRecWords);
  TETHER_TRY(lose(*parent, gather(call, *parent, mine, kRecWords, rec.data())));

  // From here on every member decides from the same records: all succeed or all fail alike.
  auto arg = [&](int m, size_t i) { return static_cast<long long>(rec[static_cast<size_t>(m) * kRecWords + kRecArg0 + i]); };
  for (int m = 0; m < n; ++m)
    for (size_t i = 0; i < 3; ++i)
      if (arg(m, i) != args[i])
        TETHER_FAIL(TETHER_ERR_MISMATCH,
                    "%s: the PEs of the parent team passed different arguments: team PE %d (world PE %d) passed "
                    "%s=%lld, team PE %d (world PE %d) passed %s=%lld",
                    call, parent->me, w_.myPe(), argNames[i], args[i], m, parent->pes[static_cast<size_t>(m)],
                    argNames[i], arg(m, i));
  for (int m = 0; m < n; ++m)
    if (rec[static_cast<size_t>(m) * kRecWords + kRecConfigOk] == 0)
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: team PE %d (world PE %d) of the parent passed an invalid config",
                  call, m, parent->pes[static_cast<size_t>(m)]);
  std::vector<PlannedTeam> teams;
  if (!plan(n, parent->me, teams))
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: invalid arguments %s=%lld %s=%lld %s=%lld for a parent team of %d PEs",
                call, argNames[0], args[0], argNames[1], args[1], argNames[2], args[2], n);

  // Slots, team by team in plan order, from the members' free masks as published.
  std::vector<uint64_t> freeMask(static_cast<size_t>(n));
  for (size_t m = 0; m < freeMask.size(); ++m) freeMask[m] = rec[m * kRecWords + kRecFree];
  std::vector<int> slots;
  for (size_t k = 0; k < teams.size(); ++k) {
    uint64_t common = ~uint64_t{0};
    for (int m : teams[k].members) common &= freeMask[static_cast<size_t>(m)];
    if (common == 0) {
      int full = -1;  // a member with no free slot at all, if any
      for (int m : teams[k].members)
        if (rec[static_cast<size_t>(m) * kRecWords + kRecFree] == 0) full = m;
      if (full >= 0)
        TETHER_FAIL(TETHER_ERR_NO_MEMORY, "%s: world PE %d already holds %d live teams (TETHER_TEAM_MAX, the world "
                    "and shared teams included, and indices kept by lost teams); destroy one first", call,
                    parent->pes[static_cast<size_t>(full)], kTeamSlots);
      TETHER_FAIL(TETHER_ERR_NO_MEMORY, "%s: new team %zu of this split (%zu PEs) finds no team slot free on all of "
                  "its members (each PE holds at most TETHER_TEAM_MAX = %d live teams); destroy teams first", call,
                  k, teams[k].members.size(), kTeamSlots);
    }
    const int slot = __builtin_ctzll(common);
    slots.push_back(slot);
    for (int m : teams[k].members) freeMask[static_cast<size_t>(m)] &= ~(uint64_t{1} << slot);
  }

  std::lock_guard<std::mutex> lock(mu_);
  for (size_t k = 0; k < teams.size(); ++k) {
    const PlannedTeam& p = teams[k];
    if (p.out < 0) continue;
    auto t = std::make_shared<Team>();
    for (int m : p.members) t->pes.push_back(parent->pes[static_cast<size_t>(m)]);
    t->me = p.myIndex;
    t->sync = w_.syncSchedule(t->pes, t->me, kTeamScheduleWords);
    t->slot = slots[k];
    t->serial = takeSerial();
    t->flags = p.flags;
    uint64_t base = 0;  // above every member's token numbers: a stale token of the slot never matches (collectives.h)
    for (int m : p.members) base = std::max(base, rec[static_cast<size_t>(m) * kRecWords + kRecTokens]);
    w_.colls().startTokens(*t, base);
    used_ |= uint64_t{1} << t->slot;
    out[p.out] = TeamRef{t->slot, t->serial};
    bySlot_[t->slot] = std::move(t);
  }
  return Status::ok();
}

Status Teams::splitStrided(const char* call, TeamRef parent, int start, int stride, int size, uint32_t flags,
                           bool configOk, TeamRef* out) {
  const long long args[3] = {start, stride, size};
  static const char* const names[3] = {"start", "stride", "size"};
  auto plan = [&](int n, int me, std::vector<PlannedTeam>& teams) {
    // Valid triplet: size >= 1 PEs start + i*stride all inside the parent; stride 0 only for a single PE.
    if (size < 1 || size > n || start < 0 || start >= n || (stride == 0 && size != 1)) return false;
    const long long last = start + static_cast<long long>(stride) * (size - 1);
    if (last < 0 || last >= n) return false;
    PlannedTeam t;
    for (int i = 0; i < size; ++i) {
      const int p = start + stride * i;
      if (p == me) {
        t.out = 0;
        t.myIndex = i;
        t.flags = flags;
      }
      t.members.push_back(p);
    }
    teams.push_back(std::move(t));
    return true;
  };
  return split(call, parent, args, names, configOk, plan, out, 1);
}

Status Teams::split2d(const char* call, TeamRef parent, int xrange, uint32_t xflags, uint32_t yflags, bool configOk,
                      TeamRef* xout, TeamRef* yout) {
  const long long args[3] = {xrange, 0, 0};
  static const char* const names[3] = {"xrange", "-", "-"};
  auto plan = [&](int n, int me, std::vector<PlannedTeam>& teams) {
    if (xrange < 1) return false;
    const int xr = xrange < n ? xrange : n;  // wider than the parent: one row
    const int yrange = (n + xr - 1) / xr;
    // Rows (x-axis teams) first, then columns (y-axis teams); parent PE p sits at (p % xr, p / xr).
    for (int y = 0; y < yrange; ++y) {
      PlannedTeam t;
      for (int p = y * xr; p < n && p < (y + 1) * xr; ++p) t.members.push_back(p);
      if (me / xr == y) {
        t.out = 0;
        t.myIndex = me % xr;
        t.flags = xflags;
      }
      teams.push_back(std::move(t));
    }
    for (int x = 0; x < xr; ++x) {
      PlannedTeam t;
      for (int p = x; p < n; p += xr) t.members.push_back(p);
      if (me % xr == x) {
        t.out = 1;
        t.myIndex = me / xr;
        t.flags = yflags;
      }
      teams.push_back(std::move(t));
    }
    return true;
  };
  TeamRef out[2];
  TETHER_TRY(split(call, parent, args, names, configOk, plan, out, 2));
  *xout = out[0];
  *yout = out[1];
  return Status::ok();
}

Status Teams::splitByHost(const char* call, TeamRef parentRef) {
  std::shared_ptr<Team> parent;
  TETHER_TRY(find(call, "parent team", parentRef, &parent));
  const std::vector<std::vector<int>> groups = groupByHost(w_.hostsOf(parent->pes));
  const long long args[3] = {0, 0, 0};
  static const char* const names[3] = {"-", "-", "-"};
  auto plan = [&](int, int me, std::vector<PlannedTeam>& teams) {
    PlannedTeam leaders;
    for (const std::vector<int>& g : groups) {
      if (g[0] == me) {
        leaders.out = 1;
        leaders.myIndex = static_cast<int>(leaders.members.size());
      }
      leaders.members.push_back(g[0]);
      if (g.size() < 2) continue;  // a host of one needs no team of its own
      PlannedTeam host;
      host.members = g;
      for (size_t k = 0; k < g.size(); ++k)
        if (g[k] == me) {
          host.out = 0;
          host.myIndex = static_cast<int>(k);
        }
      teams.push_back(std::move(host));
    }
    teams.push_back(std::move(leaders));
    return true;
  };
  TeamRef out[2];
  TETHER_TRY(split(call, parentRef, args, names, true, plan, out, 2));
  std::lock_guard<std::mutex> lock(mu_);  // destroy (any thread) reads them
  parent->hostTeam = out[0];
  parent->leaderTeam = out[1];
  return Status::ok();
}

Status Teams::destroy(const char* call, TeamRef ref, const std::function<Status(Team&)>& settle,
                      const std::function<Status(int)>& release) {
  if (ref.slot == kWorldTeamSlot || ref.slot == kSharedTeamSlot) {
    std::shared_ptr<Team> t;
    if (find(call, "team", ref, &t).isOk())
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: a predefined team (the world or shared team) cannot be destroyed",
                  call);
  }
  std::shared_ptr<Team> t;
  bool lost = false;
  TETHER_TRY(findLost(call, "team", ref, &t, &lost));
  if (!lost) TETHER_TRY(settle(*t));  // (a lost team's members may never finish: nothing to wait for)
  const uint64_t* mine = words(t->slot);
  const uint64_t* coll = reinterpret_cast<const uint64_t*>(w_.heap().host()->myBase() +
                                                           Collectives::wordsOffset(t->slot));
  bool busy = false;
  for (size_t i = 0; i < kTeamSyncWords; ++i) busy |= __atomic_load_n(&mine[i], __ATOMIC_ACQUIRE) != 0;
  for (size_t i = 0; i < kCollWords; ++i) busy |= __atomic_load_n(&coll[i], __ATOMIC_ACQUIRE) != 0;
  if (busy && !lost)
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: a sync of the team (index %d) is still in progress on another member "
                  "(destroy a team only after the collectives every member calls on it); the team stays live", call,
                  t->slot);
  // Its subteams by host (Team::byHost) go with it, each settled and checked the same way first.
  for (TeamRef* sub : {&t->hostTeam, &t->leaderTeam}) {
    if (sub->slot < 0) continue;
    TETHER_TRY(destroy(call, *sub, settle, release));
    *sub = TeamRef{};
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (bySlot_[ref.slot] != t) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: the team was destroyed meanwhile", call);
  if (busy) {
    // A lost team whose words other members set after this PE gave up (more may still come): the handle goes, the
    // index stays taken on this PE (used_) for the rest of the run, so no later team of this PE meets those writes.
    TETHER_LOG_WARN(LogSys::Sync, "%s: PE %d: team index %d was lost (%s) and other members still set its words; "
                    "the handle is released, the index stays reserved on this PE", call, w_.myPe(), ref.slot,
                    t->lost.message().c_str());
    bySlot_[ref.slot].reset();
    return Status::ok();
  }
  TETHER_TRY(release(ref.slot).withContext(call));
  bySlot_[ref.slot].reset();
  used_ &= ~(uint64_t{1} << ref.slot);
  return Status::ok();
}

}  // namespace tether
