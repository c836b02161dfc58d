// A barrier's failure passed on (core/sync_schedule.h): a member whose barrier fails part-way -- a wait timed out, a
// signal failed -- leaves the members it still owed a signal in that barrier waiting out TETHER_TIMEOUT. By host,
// those are its host's other members when a leader's step between hosts fails: they would time out with it, at about
// the same moment, or long after it where the leader's failure is quick (a lost endpoint). So the failing member
// signals them a failure instead of the barrier's value, and they fail at once, naming it and its status code, and
// pass it on in turn. Used by the three barriers that walk a SyncSchedule (World::barrierRounds, Teams::rounds,
// Collectives::roundsOnce), each in its own word discipline:
//  - counters (World: epoch counters; Teams: counts consumed by subtraction) get syncFailureAdd(code) added, far above
//    any count (isSyncFailure tells it; syncFailureCode reads the code back);
//  - the collectives' values get their own tag (core/collectives.cpp).
// Only members this PE reaches by loads and stores are told (a store: passing a failure on never waits on the
// network, nor on a peer that may be the failure's cause); a member on another host fails by its own wait as before.
// In one barrier each word is signalled by exactly one member (the schedule's contract), and the steps after the
// failed one are exactly those whose words this member has not signalled: a failure never overwrites a value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "tether/tether.h"

namespace tether {

class World;
struct SyncSchedule;

constexpr uint64_t kSyncFailure = uint64_t{1} << 60;
// What a counter word gets added for a failure with status `code` (kept in bits 48..59; counts stay below 2^48).
constexpr uint64_t syncFailureAdd(tether_status_t code) {
  return kSyncFailure | (static_cast<uint64_t>(code) & 0xfff) << 48;
}
constexpr bool isSyncFailure(uint64_t counter) { return counter >= kSyncFailure; }
constexpr tether_status_t syncFailureCode(uint64_t counter) {
  return static_cast<tether_status_t>((counter >> 48) & 0xfff);
}

// The steps of s after step `failed` that signal a member this PE reaches by loads and stores: word `word` of member
// `to` at offset base + word * stride of its HOST segment gets `value` by op. pes: member -> world PE (null: the
// members are the world's PEs). Best effort: a signal that fails is skipped (this PE is failing already).
void passSyncFailure(const World& w, const SyncSchedule& s, size_t failed, const std::vector<int>* pes, uint64_t base,
                     uint64_t stride, uint64_t value, tether_signal_op_t op);

// The error of a member that received a failure from world PE `from` in round `word` of call's barrier.
Status syncFailurePassed(const char* call, int me, int from, int word, tether_status_t code);

}  // namespace tether
