// OpenSHMEM teams: SHMEM_TEAM_WORLD / SHMEM_TEAM_SHARED, splits, destroy, configuration, queries, team_sync -- a thin
// layer over tether's core teams (tether_team_*, include/tether/tether.h; docs/teams.md).
//
// A shmem team holds its core team (membership, the split agreement, the index, team_sync), its OpenSHMEM
// configuration, and the collective engine's synchronisation words: kSyncWords of the shmem team area, a symmetric
// HOST array of SHMEM_TEAM_MAX_TEAMS_ x kSyncWords words reserved at shmem_init, at the core team's index
// (tether_team_index: the same on every member, different for the live teams of a PE). The member list is cached
// (world PEs by team PE) for the engine and the contexts' PE translation. Destroy is local: the team's words are
// back at zero once this PE has finished its own collectives on it (the engine consumes every barrier arrival it
// receives and clears its value words); its index comes back to this PE only through a later split, which the core
// agrees on with every member again.
#include <shmem.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "shmem_coll_impl.h"
#include "shmem_internal.h"

struct tether_shmem_team_s {
  tether_team_t core = TETHER_TEAM_INVALID;
  std::vector<int> pes;       // world PE of each member, by team PE number (the core team's, cached)
  int myIndex = -1;           // this PE's team PE number (every team handle this PE holds contains it)
  uint64_t* sync = nullptr;   // the engine's kSyncWords words at the core team's index
  shmem_team_config_t config{};
  std::atomic<bool> live{false};  // set up and not destroyed
};

struct tether_shmem_team_s tether_shmem_team_world_;
struct tether_shmem_team_s tether_shmem_team_shared_;

namespace tether_shmem {
namespace {

constexpr int kSlots = SHMEM_TEAM_MAX_TEAMS_;
static_assert(kSlots == TETHER_TEAM_MAX, "one engine slot per core team index");

// The team state of the default instance, between shmemTeamsInit and shmemTeamsFinalize. Splits of one PE must not
// run concurrently from several threads (they are collective, like the allocation routines); the mutex keeps the
// bookkeeping consistent for destroy and the queries.
struct Teams {
  std::mutex mutex;
  tether_t world = nullptr;
  uint64_t* area = nullptr;                  // kSlots * kSyncWords symmetric words
  std::vector<tether_shmem_team_s*> all;     // every split team object made; deleted at finalize
  std::vector<tether_shmem_team_s*> spare;   // destroyed ones, reused by later splits
};
Teams g_teams;

void setUp(tether_shmem_team_s* t, tether_team_t core, const shmem_team_config_t& config, const char* call) {
  const int n = tether_team_n_pes(core), index = tether_team_index(core);
  if (n < 1 || index < 0) shmemAbort(call);
  t->core = core;
  t->pes.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) t->pes[static_cast<size_t>(i)] = tether_team_world_pe(core, i);
  t->myIndex = tether_team_my_pe(core);
  t->sync = g_teams.area + static_cast<size_t>(index) * kSyncWords;
  t->config = config;
  t->live.store(true, std::memory_order_release);
}

void tearDown(tether_shmem_team_s* t) {
  t->live.store(false, std::memory_order_release);
  t->core = TETHER_TEAM_INVALID;
  t->pes.clear();
  t->myIndex = -1;
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

// The core config of a split: the core agrees on config validity over the parent (an invalid config on any member
// fails the split on every member), so an invalid OpenSHMEM config travels as a core config the core refuses (a
// flag it does not define), and every parent member returns non-zero alike.
tether_team_config_t coreConfig(bool valid) {
  tether_team_config_t c{};
  c.flags = valid ? 0u : 0x80000000u;
  return c;
}

// tether_last_error() without the "tether_team_...: " prefix: shmem messages name the shmem routine.
const char* coreMessage() {
  const char* m = tether_last_error();
  const char* colon = std::strstr(m, ": ");
  return std::strncmp(m, "tether_team_", 12) == 0 && colon != nullptr ? colon + 2 : m;
}

// After a core split: st its status, cores[k] the new core teams (INVALID where this PE is in none). Arguments that
// differ across the parent end the program naming both; invalid arguments and exhaustion (the same on every member)
// return -1; anything else (a timeout, a lost PE) ends the program. Otherwise each new core team gets its shmem team.
int finishSplit(tether_status_t st, const tether_team_t* cores, shmem_team_t* const* outs,
                const shmem_team_config_t* configs, int n, const char* call) {
  if (st == TETHER_ERR_INVALID_ARG || st == TETHER_ERR_NO_MEMORY) return -1;
  if (st != TETHER_SUCCESS) shmemAbortMsg(call, coreMessage());
  std::lock_guard<std::mutex> lock(g_teams.mutex);
  for (int k = 0; k < n; ++k) {
    if (cores[k] == TETHER_TEAM_INVALID) continue;
    tether_shmem_team_s* team = nullptr;
    if (!g_teams.spare.empty()) {
      team = g_teams.spare.back();
      g_teams.spare.pop_back();
    } else {
      team = new tether_shmem_team_s;
      g_teams.all.push_back(team);
    }
    setUp(team, cores[k], configs[k], call);
    *outs[k] = team;
  }
  return 0;
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
  void* area = nullptr;
  const size_t bytes = kSlots * kSyncWords * sizeof(uint64_t);
  if (tether_malloc_kind(world, TETHER_SEG_HOST, 64, bytes, &area) != TETHER_SUCCESS) shmemAbort("shmem_init");
  std::memset(area, 0, bytes);
  // Nobody may signal into another PE's area before that PE has zeroed it.
  if (tether_sync_all(world) != TETHER_SUCCESS) shmemAbort("shmem_init");
  std::lock_guard<std::mutex> lock(g_teams.mutex);
  g_teams.world = world;
  g_teams.area = static_cast<uint64_t*>(area);
  // SHMEM_TEAM_SHARED is the core's shared team: the PEs whose symmetric memory this PE can load and store.
  setUp(&tether_shmem_team_world_, tether_team_world(world), shmem_team_config_t{}, "shmem_init");
  setUp(&tether_shmem_team_shared_, tether_team_shared(world), shmem_team_config_t{}, "shmem_init");
}

void shmemTeamsFinalize() {
  std::lock_guard<std::mutex> lock(g_teams.mutex);
  tearDown(&tether_shmem_team_world_);
  tearDown(&tether_shmem_team_shared_);
  for (tether_shmem_team_s* t : g_teams.all) delete t;  // their core teams go with the instance
  g_teams.all.clear();
  g_teams.spare.clear();
  if (g_teams.area != nullptr && tether_free(g_teams.world, g_teams.area) != TETHER_SUCCESS)
    shmemAbort("shmem_finalize");
  g_teams.area = nullptr;
  g_teams.world = nullptr;
}

bool shmemTeamValid(shmem_team_t team) { return team != nullptr && team->live.load(std::memory_order_acquire); }

int shmemTeamWorldPe(shmem_team_t team, int pe) {
  if (!shmemTeamValid(team) || pe < 0 || pe >= static_cast<int>(team->pes.size())) return -1;
  return team->pes[static_cast<size_t>(pe)];
}

tether_team_t shmemCoreTeam(shmem_team_t team) { return team->core; }

void shmemWorldShape(int* me, int* npes) {
  *me = tether_shmem_team_world_.myIndex;
  *npes = static_cast<int>(tether_shmem_team_world_.pes.size());
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

int shmem_team_my_pe(shmem_team_t team) { return shmemTeamValid(team) ? tether_team_my_pe(team->core) : -1; }
int shmem_team_n_pes(shmem_team_t team) { return shmemTeamValid(team) ? tether_team_n_pes(team->core) : -1; }

int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team) {
  if (!shmemTeamValid(src_team) || !shmemTeamValid(dest_team)) return -1;
  return tether_team_translate_pe(src_team->core, src_pe, dest_team->core);
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
  shmemWorld(call);
  if (!shmemTeamValid(parent_team)) return -1;  // no communication: this PE is not in the parent
  const bool ok = configValid(config, config_mask);
  const tether_team_config_t cc = coreConfig(ok);
  tether_team_t core = TETHER_TEAM_INVALID;
  const tether_status_t st = tether_team_split_strided(parent_team->core, start, stride, size, &cc, &core);
  const shmem_team_config_t sc = ok ? configOf(config, config_mask) : shmem_team_config_t{};
  shmem_team_t* const outs[1] = {new_team};
  return finishSplit(st, &core, outs, &sc, 1, call);
}

int shmem_team_split_2d(shmem_team_t parent_team, int xrange, const shmem_team_config_t* xaxis_config,
                        long xaxis_mask, shmem_team_t* xaxis_team, const shmem_team_config_t* yaxis_config,
                        long yaxis_mask, shmem_team_t* yaxis_team) {
  const char* call = "shmem_team_split_2d";
  requireOut(xaxis_team, "xaxis_team", call);
  requireOut(yaxis_team, "yaxis_team", call);
  *xaxis_team = SHMEM_TEAM_INVALID;
  *yaxis_team = SHMEM_TEAM_INVALID;
  shmemWorld(call);
  if (!shmemTeamValid(parent_team)) return -1;
  const bool xok = configValid(xaxis_config, xaxis_mask), yok = configValid(yaxis_config, yaxis_mask);
  const tether_team_config_t xc = coreConfig(xok), yc = coreConfig(yok);
  tether_team_t cores[2] = {TETHER_TEAM_INVALID, TETHER_TEAM_INVALID};
  const tether_status_t st = tether_team_split_2d(parent_team->core, xrange, &xc, &cores[0], &yc, &cores[1]);
  const shmem_team_config_t sc[2] = {xok ? configOf(xaxis_config, xaxis_mask) : shmem_team_config_t{},
                                     yok ? configOf(yaxis_config, yaxis_mask) : shmem_team_config_t{}};
  shmem_team_t* const outs[2] = {xaxis_team, yaxis_team};
  return finishSplit(st, cores, outs, sc, 2, call);
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
  if (tether_team_destroy(team->core) != TETHER_SUCCESS) shmemAbortMsg(call, coreMessage());
  tearDown(team);
  g_teams.spare.push_back(team);
}

int shmem_team_sync(shmem_team_t team) {
  const char* call = "shmem_team_sync";
  shmemWorld(call);
  if (!shmemTeamValid(team)) return -1;
  if (tether_team_sync(team->core) != TETHER_SUCCESS) shmemAbortMsg(call, coreMessage());
  return 0;
}

}  // extern "C"
