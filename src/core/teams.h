// Teams: the team room of one World (tether_team_* in tether.h, issue #21).
//
// A team is an ordered list of world PEs (a member's index is its team PE number) plus one of kTeamSlots slots of
// symmetric HOST words reserved in the control block at init (ControlBlock::teams, core/world.h: kTeamSyncWords
// words per slot), where the team's own collectives (sync, barrier, the split agreement) synchronise. Slot 0 is the
// world team's, slot 1 the shared team's. The slot number is the team's index (tether_team_index): the same on every
// member, different for the live teams of any one PE, so layers above may index their own per-team symmetric state by
// it (the OpenSHMEM layer does, for its collectives' words).
//
// Split: collective over the parent. Every parent member publishes one record in the parent's value words (its mask
// of free slots, the split's integer arguments, whether its config is valid); every member then checks the
// arguments (a difference: TETHER_ERR_MISMATCH on every member, naming both records), plans the new teams (the same
// list on every member), and gives each new team, in plan order, the lowest slot free on all of its members. If one
// planned team finds no common slot, no team is made and every parent member fails the same way. Destroy is local:
// the slot goes back to this PE's free mask once this PE is done with the team and every member has finished the
// collectives this PE called on it (destroy waits for that: an eager broadcast's root returns before its members
// read its staged bytes, and a later team in the same slot that leaves a slow reader out would rewrite them); another
// member can reuse it with this PE only through a later split, which agrees on it again.
//
// Sync words: the steps of the team's schedule (Team::sync, core/sync_schedule.h: dissemination, or by host where
// members span hosts), consuming what they receive (a dissemination round r: add 1 to round word r of member
// me + 2^r, wait for own round word r >= 1, subtract 1; each word gets one arrival per sync in either shape), so the
// words are zero whenever no collective of the team is in progress on this PE, except for arrivals of a faster member
// that entered the next one (consumed by it):
// back-to-back syncs need no epochs, and a slot can be reused after destroy without clearing.
//
// Who calls it: the C API (core/api.cpp) through World::teams(); teams are found by (slot, serial) there.
// Thread-safety: queries, lookups and destroy take the room's mutex; collective calls on one team (split of it as
// parent, sync, barrier) must not race with each other, like the World's own collectives. A team found by lookup
// stays alive (shared_ptr) while a call uses it, even if another thread destroys it.
// Lifetime: a member of World; setUp at init once the paths exist. Handles of a finalized World are refused by the
// C API before they reach here.
//
// Kernels (#21): Collectives::deviceView takes a POD view of a team (tether_device_team_t: members as start/stride,
// my team PE, slot, device sync words) for the device and stream collectives; the slot's device words are reset by
// the release hook of destroy.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "base/status.h"
#include "core/sync_schedule.h"
#include "tether/tether.h"

namespace tether {

class World;

constexpr int kTeamSlots = TETHER_TEAM_MAX;
static_assert(kTeamSlots == 64, "a PE's slot usage is one 64-bit mask");
constexpr int kWorldTeamSlot = 0;
constexpr int kSharedTeamSlot = 1;
constexpr size_t kTeamRoundWords = 32;  // dissemination rounds: enough for 2^32 members
constexpr size_t kTeamValueWords = 8;   // a split record
constexpr size_t kTeamSyncWords = kTeamRoundWords + kTeamValueWords;
// The words a team's barrier schedule (Team::sync) may use: the fewer of the team sync's (kTeamRoundWords) and the
// data collectives' (kCollRounds, core/coll_layout.h), which walk the same schedule.
constexpr int kTeamScheduleWords = 16;
constexpr unsigned kTeamSerialBits = 27;  // serials wrap (never 0): the C API's handle holds them (core/api.cpp)

// Where a handle points: a slot of this World and the serial of the team that holds it.
struct TeamRef {
  int slot = -1;
  uint64_t serial = 0;
};

struct Team {
  std::vector<int> pes;  // world PE of each member, by team PE number
  int me = -1;           // this PE's team PE number
  int slot = -1;
  uint64_t serial = 0;   // which team held the slot (stale handles are refused)
  uint32_t flags = 0;    // tether_team_config_t::flags (none defined yet)
  Status lost;           // a collective on the team failed part-way: later ones fail at once (under Teams' mutex)
  uint64_t collSeq = 0;  // barriers the data collectives ran on it (core/collectives.h: their word set)
  uint64_t stageSeq = 0; // one-shot collectives completed on it (core/collectives.h: their staging buffer)
  uint64_t callSeq = 0;  // data collectives called on it (core/collectives.h: token number)
  uint64_t minDone = 0;  // every member's done word was at least this when last read (core/collectives.h)
  int8_t tokens = -1;    // token team (core/collectives.h): -1 not known yet, 0 no, 1 yes
  SyncSchedule sync;     // this member's barrier steps (core/sync_schedule.h), made with the team
  std::vector<uint64_t*> rings;  // token teams: each member's token ring of the slot (its done word), mapped here
  // The last record a token of this PE carried and its hash (core/collectives.cpp): a stream of like calls hashes once.
  uint64_t hashedRecord[8] = {};
  uint64_t recordHash = 0;
  bool hashed = false;
  // This PE's eager-broadcast staging ring of the slot (core/collectives.cpp): bytes handed out so far (the ring offset
  // is this modulo its size), and where each call still holding a part of it starts (start, call), oldest first.
  uint64_t stageHead = 0;
  std::deque<std::pair<uint64_t, uint64_t>> staged;
  // Data collectives by host (core/collectives.h "By host"): -1 not known yet, 0 not for this team (one host, or
  // one member per host), 1 its shape allows them, 2 its subteams are made: hostTeam (the members on this PE's host,
  // in team order; none when this PE is alone on its host) and leaderTeam (each host's first member, in team order;
  // none unless this PE is one), made by one split of this team (Teams::splitByHost) at the first call that needs
  // them and destroyed with it. 3: that split failed alike on every member (no free team slot): not by host.
  int8_t byHost = -1;
  int hostRun = 0;  // where byHost > 0: members per host when each host's are consecutive in team order and every
                    // host holds as many (allgather by host needs that), else 0
  int hostMost = 0;  // where byHost > 0: the most members on one host
  bool hostStrided = false;  // where byHost > 0: each subteam's members at a fixed world-PE stride (device views)
  // Where byHost > 0: hostOf[k] is team PE k's host, numbered as leaderTeam orders them, hostLeader[h] the team PE of
  // host h's first member (a broadcast by host over kCollStageBytes needs its root first on its host); hostMapped:
  // every other member on this PE's host is load/store mapped here (its host team is a token team, which a
  // broadcast by host needs).
  std::vector<int> hostOf, hostLeader;
  bool hostMapped = false;
  TeamRef hostTeam, leaderTeam;
};

// One new team of a split, planned identically on every parent member.
struct PlannedTeam {
  std::vector<int> members;  // parent team PE numbers, in new-team order
  int out = -1;              // which output handle of the call receives it on this PE; -1: this PE is not a member
  int myIndex = -1;          // this PE's team PE number in it (out >= 0)
  uint32_t flags = 0;        // config of this PE's team (out >= 0)
};

class Teams {
 public:
  explicit Teams(World& w) : w_(w) {}

  // The world and shared teams (local: every PE computes the same lists). After the World's paths exist.
  void setUp();

  // The team behind ref, or TETHER_ERR_INVALID_ARG naming call and `what` (destroyed, never made).
  Status find(const char* call, const char* what, TeamRef ref, std::shared_ptr<Team>* out) const;
  // find, then refuse a team (or World) whose collective state is lost: the start of a collective call on it.
  Status acquire(const char* call, TeamRef ref, std::shared_ptr<Team>* out) const;
  // Records that a collective on t failed part-way (s not ok): later collectives on t fail at once. Returns s.
  Status lose(Team& t, const Status& s);
  TeamRef world() const { return refOf(kWorldTeamSlot); }
  TeamRef shared() const { return refOf(kSharedTeamSlot); }

  // Collective over parent (tether_team_split_strided / _2d; rules in tether.h). flags: the configs' flags;
  // configOk: this PE's configs are valid (agreed: an invalid one on any member fails every member). out (xout,
  // yout) receives this PE's new team, {-1, 0} when it is in none.
  Status splitStrided(const char* call, TeamRef parent, int start, int stride, int size, uint32_t flags,
                      bool configOk, TeamRef* out);
  Status split2d(const char* call, TeamRef parent, int xrange, uint32_t xflags, uint32_t yflags, bool configOk,
                 TeamRef* xout, TeamRef* yout);
  // Collective over parent (its members span 2+ hosts): *host = this PE's team of the parent's members on its host
  // (none when it is alone there), *leaders = the team of each host's first member (none unless this PE is one), both
  // in parent order, recorded in the parent (Team::hostTeam, leaderTeam) and destroyed with it. Every member succeeds
  // or fails alike (TETHER_ERR_NO_MEMORY: no common free slot).
  Status splitByHost(const char* call, TeamRef parent);
  // settle(team): runs first, without the room's lock: waits (bounded) until every member has finished what this PE
  // started on the team (the collectives' eager broadcast returns on its root before the members read). A failure
  // leaves the team live. release(slot): runs once the team may go (checks passed), before the slot is freed: the
  // rooms that keep per-slot state reset it there (the collectives' device words). A lost team (Team::lost) is
  // not settled, and where other members still set its words its handle is released but its slot stays taken on
  // this PE (never reused in this run: late writes may still come), without release.
  Status destroy(const char* call, TeamRef ref, const std::function<Status(Team&)>& settle,
                 const std::function<Status(int)>& release);
  // Collective over the team; barrier: quiet first (tether_team_barrier), else sync only (tether_team_sync).
  Status sync(const char* call, TeamRef ref, bool quietFirst);

 private:
  // The collective part of both splits. args: the integer arguments, the same on every member (checked; argNames
  // name them); plan(n, me, teams) plans the new teams of a parent of n members as seen by parent PE me, and returns
  // false when args are invalid (every member computes the same). out[k]: this PE's team for output k.
  using Plan = std::function<bool(int, int, std::vector<PlannedTeam>&)>;
  Status split(const char* call, TeamRef parent, const long long (&args)[3], const char* const (&argNames)[3],
               bool configOk, const Plan& plan, TeamRef* out, int nOut);
  TeamRef refOf(int slot) const;
  // find, also reading under the same lock whether the team's collective state is lost.
  Status findLost(const char* call, const char* what, TeamRef ref, std::shared_ptr<Team>* out, bool* lost) const;
  Status lostState(const char* call, const Team& t) const;
  Status rounds(const char* call, const Team& t, bool post);
  // Publishes n <= kTeamValueWords words of this PE and returns every member's (out[m * n + k]); two rounds.
  Status gather(const char* call, const Team& t, const uint64_t* mine, size_t n, uint64_t* out);
  uint64_t takeSerial();  // under mu_
  uint64_t* words(int slot) const;  // this PE's kTeamSyncWords words of slot
  uint64_t wordsOffset(int slot) const;  // their offset in the HOST segment

  World& w_;
  mutable std::mutex mu_;
  uint64_t used_ = 0;  // bit s: slot s is held by a live team of this PE
  uint64_t nextSerial_ = 1;
  std::shared_ptr<Team> bySlot_[kTeamSlots];
};

}  // namespace tether
