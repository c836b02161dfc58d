// OpenSHMEM teams: SHMEM_TEAM_WORLD / SHMEM_TEAM_SHARED, splits, destroy, configuration, queries, team_sync.
//
// A team is the ordered list of its members' world PE numbers plus one of kSlots slots of the team area: a symmetric
// HOST array of kSlots x kSyncWords 64-bit words reserved at shmem_init, where the team's collectives synchronise
// (shmem_coll_impl.h). Slot 0 is SHMEM_TEAM_WORLD's, slot 1 SHMEM_TEAM_SHARED's. A split agrees on a slot for each new
// team over the parent team: every parent member publishes its mask of free slots (and the split's arguments, checked
// for equality); every member then computes, for each new team in a fixed order, the lowest slot free on all of its
// members, and marks it taken on those members. Every parent member computes the same answer, and a slot is never
// held twice by teams sharing a PE. Destroy only frees the slot locally: the slot's words are back at zero once this
// PE has finished its own operations on the team (the collectives consume every barrier arrival they receive and
// clear their value words), and another member can only reuse the slot with this PE in a later split.
#include <shmem.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "shmem_coll_impl.h"
#include "shmem_internal.h"

struct tether_shmem_team_s {
  std::vector<int> pes;       // world PE of each member, by team PE number
  int myIndex = -1;           // this PE's team PE number (every team handle this PE holds contains it)
  int slot = -1;              // index in the team area
  uint64_t* sync = nullptr;   // the slot's kSyncWords words
  shmem_team_config_t config{};
  std::atomic<bool> live{false};  // set up and not destroyed
};

struct tether_shmem_team_s tether_shmem_team_world_;
struct tether_shmem_team_s tether_shmem_team_shared_;

namespace tether_shmem {
namespace {

constexpr int kSlots = SHMEM_TEAM_MAX_TEAMS_;
static_assert(kSlots == 64, "a PE's slot usage is one 64-bit mask");
constexpr int kWorldSlot = 0;
constexpr int kSharedSlot = 1;

// The team state of the default instance, between shmemTeamsInit and shmemTeamsFinalize. Splits of one PE must not
// run concurrently from several threads (they are collective, like the allocation routines); the mutex keeps the
// bookkeeping consistent for destroy and the queries.
struct Teams {
  std::mutex mutex;
  tether_t world = nullptr;
  uint64_t* area = nullptr;                  // kSlots * kSyncWords symmetric words
  uint64_t used = 0;                         // bit s: slot s is held by a live team of this PE
  std::vector<tether_shmem_team_s*> all;     // every split team object made; deleted at finalize
  std::vector<tether_shmem_team_s*> spare;   // destroyed ones, reused by later splits
};
Teams g_teams;

void setUp(tether_shmem_team_s* t, std::vector<int> pes, int myIndex, int slot, const shmem_team_config_t& config) {
  t->pes = std::move(pes);
  t->myIndex = myIndex;
  t->slot = slot;
  t->sync = g_teams.area + static_cast<size_t>(slot) * kSyncWords;
  t->config = config;
  t->live.store(true, std::memory_order_release);
}

void tearDown(tether_shmem_team_s* t) {
  t->live.store(false, std::memory_order_release);
  t->pes.clear();
  t->myIndex = -1;
  t->slot = -1;
  t->sync = nullptr;
}

bool isPredefined(shmem_team_t team) { return team == SHMEM_TEAM_WORLD || team == SHMEM_TEAM_SHARED; }

// config/config_mask of a split: only SHMEM_TEAM_NUM_CONTEXTS is known; config may be NULL when the mask is 0.
bool configValid(const shmem_team_config_t* config, long mask) {
  if ((mask & ~SHMEM_TEAM_NUM_CONTEXTS) != 0) return false;
  if (mask == 0) return true;
  return config != nullptr && config->num_contexts >= 0;
}

shmem_team_config_t configOf(const shmem_team_config_t* config, long mask) {
  shmem_team_config_t c{};
  if ((mask & SHMEM_TEAM_NUM_CONTEXTS) != 0) c.num_contexts = config->num_contexts;
  return c;
}

// One team a split creates: its members as parent team PE numbers in new-team order, and for the team this PE is in,
// where its handle goes and its configuration.
struct Planned {
  std::vector<int> members;
  shmem_team_t* out = nullptr;  // non-null iff this PE is a member
  int myIndex = -1;
  shmem_team_config_t config{};
  int slot = -1;
};

// Record each parent member publishes in a split.
enum : size_t { kRecFree, kRecArg0, kRecArg1, kRecArg2, kRecConfigOk, kRecWords };
static_assert(kRecWords <= kValueWords, "split record fits the value words");

// The collective part of both splits. args: the split's three integer arguments (checked equal on every parent
// member: a difference ends the program naming both). plan(parentSize, teams) fills the teams to create, the same
// list on every member, and returns false when the arguments are invalid. Creates this PE's teams; returns 0 when
// every team this PE is a member of was created (and, for a PE in none, when every planned team was), else -1.
template <class Plan>
int split(shmem_team_t parent, const long long (&args)[3], bool configOk, Plan plan, const char* call) {
  tether_t w = shmemWorld(call);
  CollGroup g;
  if (!shmemTeamGroup(parent, w, &g)) return -1;
  uint64_t mine[kRecWords];
  {
    std::lock_guard<std::mutex> lock(g_teams.mutex);
    mine[kRecFree] = ~g_teams.used;
  }
  for (size_t i = 0; i < 3; ++i) mine[kRecArg0 + i] = static_cast<uint64_t>(args[i]);
  mine[kRecConfigOk] = configOk ? 1 : 0;
  std::vector<uint64_t> rec(static_cast<size_t>(g.size) * kRecWords);
  collGather(g, mine, kRecWords, rec.data(), call);

  bool allConfigOk = true;
  for (int m = 0; m < g.size; ++m) {
    const uint64_t* r = &rec[static_cast<size_t>(m) * kRecWords];
    if (r[kRecArg0] != mine[kRecArg0] || r[kRecArg1] != mine[kRecArg1] || r[kRecArg2] != mine[kRecArg2]) {
      char msg[256];
      std::snprintf(msg, sizeof msg,
                    "the PEs of the parent team passed different arguments: team PE %d (%lld, %lld, %lld), "
                    "team PE %d (%lld, %lld, %lld)",
                    g.me, args[0], args[1], args[2], m, static_cast<long long>(r[kRecArg0]),
                    static_cast<long long>(r[kRecArg1]), static_cast<long long>(r[kRecArg2]));
      shmemAbortMsg(call, msg);
    }
    allConfigOk = allConfigOk && r[kRecConfigOk] != 0;
  }
  std::vector<Planned> teams;
  if (!allConfigOk || !plan(g.size, teams)) return -1;

  // Slots, team by team in plan order, from the members' free masks as published.
  std::vector<uint64_t> freeMask(static_cast<size_t>(g.size));
  for (size_t m = 0; m < freeMask.size(); ++m) freeMask[m] = rec[m * kRecWords + kRecFree];
  bool allCreated = true, mineCreated = true;
  for (Planned& t : teams) {
    uint64_t common = ~uint64_t{0};
    for (int m : t.members) common &= freeMask[static_cast<size_t>(m)];
    if (common == 0) {
      allCreated = false;
      if (t.out != nullptr) mineCreated = false;
      continue;
    }
    t.slot = __builtin_ctzll(common);
    for (int m : t.members) freeMask[static_cast<size_t>(m)] &= ~(uint64_t{1} << t.slot);
  }

  std::lock_guard<std::mutex> lock(g_teams.mutex);
  for (Planned& t : teams) {
    if (t.out == nullptr || t.slot < 0) continue;
    std::vector<int> pes;
    for (int m : t.members) pes.push_back(g.pes[m]);
    tether_shmem_team_s* team = nullptr;
    if (!g_teams.spare.empty()) {
      team = g_teams.spare.back();
      g_teams.spare.pop_back();
    } else {
      team = new tether_shmem_team_s;
      g_teams.all.push_back(team);
    }
    setUp(team, std::move(pes), t.myIndex, t.slot, t.config);
    g_teams.used |= uint64_t{1} << t.slot;
    *t.out = team;
  }
  const bool member = std::any_of(teams.begin(), teams.end(), [](const Planned& t) { return t.out != nullptr; });
  return (member ? mineCreated : allCreated) ? 0 : -1;
}

void requireOut(const void* out, const char* what, const char* call) {
  if (out == nullptr) {
    char msg[96];
    std::snprintf(msg, sizeof msg, "%s is NULL", what);
    shmemAbortMsg(call, msg);
  }
}

}  // namespace

void shmemTeamsInit(tether_t world) {
  const int me = tether_my_pe(world), n = tether_n_pes(world);
  void* area = nullptr;
  const size_t bytes = kSlots * kSyncWords * sizeof(uint64_t);
  if (tether_malloc_kind(world, TETHER_SEG_HOST, 64, bytes, &area) != TETHER_SUCCESS) shmemAbort("shmem_init");
  std::memset(area, 0, bytes);
  // Nobody may signal into another PE's area before that PE has zeroed it.
  if (tether_sync_all(world) != TETHER_SUCCESS) shmemAbort("shmem_init");
  std::vector<int> all, shared;
  for (int pe = 0; pe < n; ++pe) all.push_back(pe);
  // SHMEM_TEAM_SHARED: the PEs whose symmetric memory this PE can load and store (shmem_ptr non-null).
  for (int pe = 0; pe < n; ++pe)
    if (pe == me || tether_ptr(world, area, pe) != nullptr) shared.push_back(pe);
  int sharedMe = 0;
  while (shared[static_cast<size_t>(sharedMe)] != me) ++sharedMe;

  std::lock_guard<std::mutex> lock(g_teams.mutex);
  g_teams.world = world;
  g_teams.area = static_cast<uint64_t*>(area);
  g_teams.used = (uint64_t{1} << kWorldSlot) | (uint64_t{1} << kSharedSlot);
  setUp(&tether_shmem_team_world_, all, me, kWorldSlot, shmem_team_config_t{});
  setUp(&tether_shmem_team_shared_, shared, sharedMe, kSharedSlot, shmem_team_config_t{});
}

void shmemTeamsFinalize() {
  std::lock_guard<std::mutex> lock(g_teams.mutex);
  tearDown(&tether_shmem_team_world_);
  tearDown(&tether_shmem_team_shared_);
  for (tether_shmem_team_s* t : g_teams.all) delete t;
  g_teams.all.clear();
  g_teams.spare.clear();
  if (g_teams.area != nullptr && tether_free(g_teams.world, g_teams.area) != TETHER_SUCCESS)
    shmemAbort("shmem_finalize");
  g_teams.area = nullptr;
  g_teams.used = 0;
  g_teams.world = nullptr;
}

bool shmemTeamValid(shmem_team_t team) { return team != nullptr && team->live.load(std::memory_order_acquire); }

int shmemTeamWorldPe(shmem_team_t team, int pe) {
  if (!shmemTeamValid(team) || pe < 0 || pe >= static_cast<int>(team->pes.size())) return -1;
  return team->pes[static_cast<size_t>(pe)];
}

bool shmemTeamGroup(shmem_team_t team, tether_t world, CollGroup* g) {
  if (!shmemTeamValid(team)) return false;
  g->world = world;
  g->pes = team->pes.data();
  g->size = static_cast<int>(team->pes.size());
  g->me = team->myIndex;
  g->sync = team->sync;
  return true;
}

}  // namespace tether_shmem

using namespace tether_shmem;

extern "C" {

int shmem_team_my_pe(shmem_team_t team) { return shmemTeamValid(team) ? team->myIndex : -1; }
int shmem_team_n_pes(shmem_team_t team) { return shmemTeamValid(team) ? static_cast<int>(team->pes.size()) : -1; }

int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team) {
  const int world = shmemTeamWorldPe(src_team, src_pe);
  if (world < 0 || !shmemTeamValid(dest_team)) return -1;
  for (size_t i = 0; i < dest_team->pes.size(); ++i)
    if (dest_team->pes[i] == world) return static_cast<int>(i);
  return -1;
}

void* shmem_team_ptr(shmem_team_t team, const void* dest, int pe) {
  tether_t w = shmemWorld("shmem_team_ptr");
  const int world = shmemTeamWorldPe(team, pe);
  return world < 0 ? nullptr : tether_ptr(w, dest, world);
}

int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t* config) {
  if (!shmemTeamValid(team) || config == nullptr || (config_mask & ~SHMEM_TEAM_NUM_CONTEXTS) != 0) return -1;
  if ((config_mask & SHMEM_TEAM_NUM_CONTEXTS) != 0) config->num_contexts = team->config.num_contexts;
  return 0;
}

int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t* config, long config_mask, shmem_team_t* new_team) {
  const char* call = "shmem_team_split_strided";
  requireOut(new_team, "new_team", call);
  *new_team = SHMEM_TEAM_INVALID;
  const int myParentPe = shmemTeamValid(parent_team) ? parent_team->myIndex : -1;
  const long long args[3] = {start, stride, size};
  auto plan = [&](int n, std::vector<Planned>& teams) {
    // Valid triplet: size >= 1 PEs start + i*stride all inside the parent; stride 0 only for a single PE.
    if (size < 1 || size > n || start < 0 || start >= n || (stride == 0 && size != 1)) return false;
    const long long last = start + static_cast<long long>(stride) * (size - 1);
    if (last < 0 || last >= n) return false;
    Planned t;
    for (int i = 0; i < size; ++i) {
      const int p = start + stride * i;
      if (p == myParentPe) {
        t.out = new_team;
        t.myIndex = i;
        t.config = configOf(config, config_mask);
      }
      t.members.push_back(p);
    }
    teams.push_back(std::move(t));
    return true;
  };
  return split(parent_team, args, configValid(config, config_mask), plan, call);
}

int shmem_team_split_2d(shmem_team_t parent_team, int xrange, const shmem_team_config_t* xaxis_config,
                        long xaxis_mask, shmem_team_t* xaxis_team, const shmem_team_config_t* yaxis_config,
                        long yaxis_mask, shmem_team_t* yaxis_team) {
  const char* call = "shmem_team_split_2d";
  requireOut(xaxis_team, "xaxis_team", call);
  requireOut(yaxis_team, "yaxis_team", call);
  *xaxis_team = SHMEM_TEAM_INVALID;
  *yaxis_team = SHMEM_TEAM_INVALID;
  const int me = shmemTeamValid(parent_team) ? parent_team->myIndex : -1;
  const long long args[3] = {xrange, 0, 0};
  auto plan = [&](int n, std::vector<Planned>& teams) {
    if (xrange < 1) return false;
    const int xr = xrange < n ? xrange : n;  // wider than the parent: one row
    const int yrange = (n + xr - 1) / xr;
    // Rows (x-axis teams) first, then columns (y-axis teams); parent PE p sits at (p % xr, p / xr).
    for (int y = 0; y < yrange; ++y) {
      Planned t;
      for (int p = y * xr; p < n && p < (y + 1) * xr; ++p) t.members.push_back(p);
      if (me / xr == y) {
        t.out = xaxis_team;
        t.myIndex = me % xr;
        t.config = configOf(xaxis_config, xaxis_mask);
      }
      teams.push_back(std::move(t));
    }
    for (int x = 0; x < xr; ++x) {
      Planned t;
      for (int p = x; p < n; p += xr) t.members.push_back(p);
      if (me % xr == x) {
        t.out = yaxis_team;
        t.myIndex = me / xr;
        t.config = configOf(yaxis_config, yaxis_mask);
      }
      teams.push_back(std::move(t));
    }
    return true;
  };
  const bool configOk = configValid(xaxis_config, xaxis_mask) && configValid(yaxis_config, yaxis_mask);
  return split(parent_team, args, configOk, plan, call);
}

void shmem_team_destroy(shmem_team_t team) {
  const char* call = "shmem_team_destroy";
  shmemWorld(call);
  if (team == SHMEM_TEAM_INVALID) return;
  if (isPredefined(team)) shmemAbortMsg(call, "a predefined team (SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED) cannot be destroyed");
  std::lock_guard<std::mutex> lock(g_teams.mutex);
  if (!shmemTeamValid(team)) shmemAbortMsg(call, "the team is not valid (destroyed already?)");
  for (size_t i = 0; i < kSyncWords; ++i)
    if (__atomic_load_n(&team->sync[i], __ATOMIC_ACQUIRE) != 0)
      shmemAbortMsg(call, "a collective on the team is still in progress on another member (destroy the team only "
                          "after the collectives every member calls on it)");
  g_teams.used &= ~(uint64_t{1} << team->slot);
  tearDown(team);
  g_teams.spare.push_back(team);
}

int shmem_team_sync(shmem_team_t team) {
  const char* call = "shmem_team_sync";
  CollGroup g;
  if (!shmemTeamGroup(team, shmemWorld(call), &g)) return -1;
  collBarrier(g, call);
  return 0;
}

}  // extern "C"
