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

// ---- global exit (shmem_exit.cpp)
// shmemExitInit (collective, in shmem_init before shmemTeamsInit, whose closing sync publishes the zeroed word):
// reserves this PE's symmetric exit word and starts the thread that ends the PE when another PE's
// shmem_global_exit sets it. shmemExitFinalize stops the thread and frees the word (collective, in shmem_finalize).
void shmemExitInit(tether_t world);
void shmemExitFinalize();
// shmem_global_exit: tells the launcher (tetherrun's control pipe), sets every other PE's exit word, flushes stdio
// and _exits with status.
[[noreturn]] void shmemGlobalExit(int status);

// ---- teams (shmem_team.cpp)
// Set up SHMEM_TEAM_WORLD / SHMEM_TEAM_SHARED (collective; called by shmem_init once the world exists) and release
// every team (called by shmem_finalize before the world is finalised).
void shmemTeamsInit(tether_t world);
void shmemTeamsFinalize();
// True for SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED and teams this PE belongs to that are not destroyed yet.
bool shmemTeamValid(shmem_team_t team);
// The core team (tether_team_t) behind a valid team.
tether_team_t shmemCoreTeam(shmem_team_t team);
// This PE's number and the job's PE count, as SHMEM_TEAM_WORLD keeps them since shmem_init (no lookup).
void shmemWorldShape(int* me, int* npes);
// World PE number of team-relative `pe`; -1 when the team is invalid or pe is outside [0, team size).
int shmemTeamWorldPe(shmem_team_t team, int pe);

// ---- contexts (shmem_ctx.cpp)
// Where an operation of `call` on context `ctx` goes: the instance and the world PE number of `pe`, which is
// numbered in the context's team (SHMEM_TEAM_WORLD: unchanged, tether range-checks it). Aborts naming `call` when
// OpenSHMEM is not initialised, ctx is SHMEM_CTX_INVALID or destroyed, its team is no longer valid, or pe is outside
// the team.
struct ShmemTarget {
  tether_t world;
  int pe;
};
ShmemTarget shmemCtxTarget(shmem_ctx_t ctx, int pe, const char* call);
// The instance for an operation of `call` on the whole context (quiet, fence); the same checks without a PE.
tether_t shmemCtxWorld(shmem_ctx_t ctx, const char* call);
// Marks every created context destroyed (shmem_finalize, before the teams are released).
void shmemCtxFinalize();

}  // namespace tether_shmem

// Defines shmem_ctx_<OP>(shmem_ctx_t ctx, params...) and shmem_<OP>(params...), both returning
// IMPL(context, ARGS..., routine name): one implementation per operation, the routine without a context running on
// SHMEM_CTX_DEFAULT. PARAMS and ARGS are parenthesised lists. For the extern "C" definitions of the ctx forms.
#define SHMEM_DEFINE_CTX_PAIR_(RET, OP, PARAMS, IMPL, ARGS)                                                        \
  RET shmem_ctx_##OP(shmem_ctx_t ctx, SHMEM_UNPAREN_ PARAMS) {                                                     \
    return IMPL(ctx, SHMEM_UNPAREN_ ARGS, "shmem_ctx_" #OP);                                                       \
  }                                                                                                                \
  RET shmem_##OP(SHMEM_UNPAREN_ PARAMS) { return IMPL(SHMEM_CTX_DEFAULT, SHMEM_UNPAREN_ ARGS, "shmem_" #OP); }
