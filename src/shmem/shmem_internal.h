// Internal interface of the OpenSHMEM layer (libtether_shmem). Shared by shmem_core.cpp, shmem_amo.cpp and
// shmem_sync.cpp; not installed.
#pragma once

#include <shmem.h>

#include "tether/tether.h"

namespace tether_shmem {

// The default instance created by shmem_init / shmem_init_thread. Calling any routine before shmem_init (or after
// shmem_finalize) aborts with a message naming that routine.
tether_t shmemWorld(const char* call);
inline tether_t shmemWorld() { return shmemWorld("OpenSHMEM routine"); }

// OpenSHMEM error model: an error ends the job. Prints "shmem: PE <pe>: <call> failed: <tether_last_error()>" to
// stderr and calls std::abort (tetherrun then stops the other PEs).
[[noreturn]] void shmemAbort(const char* call);
// Same, with an explicit message instead of tether_last_error().
[[noreturn]] void shmemAbortMsg(const char* call, const char* message);

// Checks a tether status; anything but TETHER_SUCCESS aborts naming `call`.
inline void shmemCheck(tether_status_t st, const char* call) {
  if (st != TETHER_SUCCESS) shmemAbort(call);
}

// a * b (element counts and sizes); aborts naming `call` when it overflows size_t.
size_t shmemMulChecked(size_t a, size_t b, const char* call);

// ---- teams (shmem_team.cpp)
// Set up SHMEM_TEAM_WORLD / SHMEM_TEAM_SHARED (collective; called by shmem_init once the world exists) and release
// every team (called by shmem_finalize before the world is finalised).
void shmemTeamsInit(tether_t world);
void shmemTeamsFinalize();
// True for SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED and teams this PE belongs to that are not destroyed yet.
bool shmemTeamValid(shmem_team_t team);
// World PE number of team-relative `pe`; -1 when the team is invalid or pe is outside [0, team size).
int shmemTeamWorldPe(shmem_team_t team, int pe);

}  // namespace tether_shmem
