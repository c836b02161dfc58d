// SyncSchedule: the steps of one member's barrier over members that may sit on several hosts (issue #21: "remote
// peers hierarchically"). A pure function of the members' hosts; the barriers of World (tether_barrier_all), Teams
// (team sync, split) and Collectives (agreement and closing rounds) walk it with their own word discipline.
//
// Flat (every member on one host, or every host holding one member, or by host not allowed: TETHER_SYNC_BY_HOST=0):
// the dissemination of
// n members -- round r (r = 0 .. ceil(log2 n) - 1): signal word r of member me + 2^r, wait for own word r (signalled
// by member me - 2^r).
// By host (the members span hosts and some host holds two or more of them):
//   1. the members of each host run the dissemination among themselves, in team order, on words 0 .. a - 1
//      (a = ceil(log2) of the largest host's member count; a host with fewer members uses the first of them);
//   2. each host's leader (its first member in team order) runs the dissemination among the leaders, hosts in the
//      order of their leaders, on words a .. a + b - 1 (b = ceil(log2 hosts));
//   3. each leader signals word a + b of its host's other members (the release), which they wait for.
// Only phase 2 crosses hosts: ceil(log2 hosts) network rounds on the leaders instead of up to ceil(log2 n) on every
// member, and the others' waits are answered by same-host stores.
//
// Contract (both shapes; checked for random host maps by tests/unit/test_sync_schedule.cpp):
//  - every member's steps, run by all members, complete, and a member completes only after every member has started
//    (a chain of signals joins each member's start to every member's end), so a member can be at most one barrier
//    ahead of another;
//  - in one barrier each word of a member is signalled by exactly one member and awaited once by its owner (words a
//    member awaits are the words signalled into it, and no others), so the callers' disciplines hold as in the flat
//    dissemination: epoch counters (World), counts consumed by subtraction (Teams), values consumed by zeroing
//    (Collectives; a value carries its sender's flag, and in phase 3 the leader's verdict, so a flag raised anywhere
//    reaches every member);
//  - the schedule uses words 0 .. wordsUsed - 1 <= maxWords (by host only where that fits; otherwise flat, which needs
//    ceil(log2 n) <= maxWords, as before);
//  - every member computes the same shape from the same host map (the hosts of a job's PEs are known to all of them
//    from start-up: World::hostKey).
#pragma once

#include <vector>

namespace tether {

// The members of each host: host[m] keys member m's host (equal keys = one host); groups in the order of their first
// member, each in member order (so groups[g][0] is host g's leader).
std::vector<std::vector<int>> groupByHost(const std::vector<int>& host);

struct SyncStep {
  int word = 0;   // this step's word: signalled at member `to`, awaited here
  int to = -1;    // team member to signal on its word `word` first, or -1
  int from = -1;  // team member whose signal on this member's word `word` the step then waits for, or -1 (no wait)
};

struct SyncSchedule {
  std::vector<SyncStep> steps;
  bool byHost = false;  // the three phases above (false: flat dissemination)
  int wordsUsed = 0;

  // host[m]: any key naming member m's host (equal keys = one host); me: this member's index; maxWords: the words
  // each member has for one barrier; byHost: allow the three-phase shape (TETHER_SYNC_BY_HOST).
  static SyncSchedule make(const std::vector<int>& host, int me, int maxWords, bool byHost);
};

}  // namespace tether
