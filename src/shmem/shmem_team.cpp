// OpenSHMEM teams (first part): SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED, team queries and PE translation.
// A team is the ordered list of its members' world PE numbers; this PE's index in it is its team PE number.
#include <shmem.h>

#include <vector>

#include "shmem_internal.h"

struct tether_shmem_team_s {
  std::vector<int> pes;  // world PE of each member, by team PE number
  int myIndex = -1;      // this PE's team PE number (every team handle this PE holds contains it)
  bool live = false;     // set up and not destroyed
};

struct tether_shmem_team_s tether_shmem_team_world_;
struct tether_shmem_team_s tether_shmem_team_shared_;

namespace tether_shmem {
namespace {

void setMembers(tether_shmem_team_s* t, std::vector<int> pes, int myWorldPe) {
  t->pes = std::move(pes);
  t->myIndex = -1;
  for (size_t i = 0; i < t->pes.size(); ++i)
    if (t->pes[i] == myWorldPe) t->myIndex = static_cast<int>(i);
  t->live = true;
}

}  // namespace

void shmemTeamsInit(tether_t world) {
  const int me = tether_my_pe(world), n = tether_n_pes(world);
  std::vector<int> all, shared;
  for (int pe = 0; pe < n; ++pe) all.push_back(pe);
  // SHMEM_TEAM_SHARED: the PEs whose symmetric memory this PE can load and store (shmem_ptr non-null); the control
  // words at the start of the heap are symmetric, so any heap address answers that.
  void* probe = nullptr;
  if (tether_malloc(world, 8, &probe) != TETHER_SUCCESS) shmemAbort("shmem_init");
  for (int pe = 0; pe < n; ++pe)
    if (pe == me || tether_ptr(world, probe, pe) != nullptr) shared.push_back(pe);
  if (tether_free(world, probe) != TETHER_SUCCESS) shmemAbort("shmem_init");
  setMembers(&tether_shmem_team_world_, all, me);
  setMembers(&tether_shmem_team_shared_, shared, me);
}

void shmemTeamsFinalize() {
  tether_shmem_team_world_ = tether_shmem_team_s();
  tether_shmem_team_shared_ = tether_shmem_team_s();
}

bool shmemTeamValid(shmem_team_t team) { return team != nullptr && team->live; }

int shmemTeamWorldPe(shmem_team_t team, int pe) {
  if (!shmemTeamValid(team) || pe < 0 || pe >= static_cast<int>(team->pes.size())) return -1;
  return team->pes[static_cast<size_t>(pe)];
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

}  // extern "C"
