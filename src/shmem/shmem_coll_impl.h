// Internal interface between the teams (shmem_team.cpp) and the collective engine (shmem_coll.cpp); not installed.
//
// Every collective runs over a CollGroup: an ordered list of world PEs, this PE's index in it, and kSyncWords
// symmetric 64-bit synchronisation words (a team's words in the shmem team area, at its core team's index, or the
// user's pSync for the 1.4 active-set forms). The words are zero whenever no collective of the group is in progress
// on this PE, except for barrier arrivals of a faster member that already entered the next collective (they are
// consumed by that collective).
#pragma once

#include <cstddef>
#include <cstdint>

#include "shmem_internal.h"

namespace tether_shmem {

constexpr size_t kRoundWords = 32;  // barrier round words: enough for 2^32 members
constexpr size_t kValueWords = 8;   // words a member publishes for the others to read (collect's byte counts)
constexpr size_t kSyncWords = kRoundWords + kValueWords;
static_assert(kSyncWords <= SHMEM_SYNC_SIZE, "pSync must hold the synchronisation words");

struct CollGroup {
  tether_t world = nullptr;
  const int* pes = nullptr;  // world PE of each member, by member index
  int size = 0;
  int me = -1;               // this PE's member index
  uint64_t* sync = nullptr;  // kSyncWords symmetric words: [0, kRoundWords) rounds, then the value words
  int jobSize = 0;           // 1.4 active sets: the job's PE count (0 for teams)
};

// Dissemination barrier over g: in round r this PE adds 1 to round word r of member me + 2^r, waits until its own
// round word r is >= 1 and subtracts 1. Arrivals of a following barrier accumulate and are consumed by it, so no
// reset is needed and back-to-back barriers are safe. Stores made before it by any member are visible to every member
// after it. A failing tether call (timeout, bad address) aborts naming `call`.
void collBarrier(const CollGroup& g, const char* call);

// The group of a valid team this PE belongs to; false (g untouched) when team is not valid here.
bool shmemTeamGroup(shmem_team_t team, tether_t world, CollGroup* g);

}  // namespace tether_shmem
