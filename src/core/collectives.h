// Collectives: the team data collectives of one World (tether_team_broadcast/reduce/allreduce/allgather/
// reduce_scatter/alltoall in tether.h, issue #21; docs/collectives.md).
//
// What it owns: the host engine behind those calls (blocking, called by every member), and the per-team words it
// synchronises on: kCollWords symmetric HOST words per team slot in the control block (ControlBlock::coll,
// core/world.h), zero whenever no collective of the slot's team is in progress on this PE.
//
// Protocol of one call:
//  1. Local checks (collCheck, core/coll_check.h: types, op, root, symmetric ranges, alignment, overlaps); a failure
//     does not return at once: the PE takes part in step 2 marked invalid, so every member fails alike.
//  2. Agreement (token teams: by tokens, below): a barrier over the team's schedule (Team::sync, walked by the
//     room CollRounds, core/coll_rounds.h, member rounds_; core/sync_schedule.h: the dissemination described here,
//     or by host where members span hosts -- each host's members disseminate, the leaders disseminate, each
//     leader's release carries its verdict) whose messages carry
//     a 62-bit hash of this PE's record (collective, type, op, count, root, in place, and where dest and src lie in
//     the symmetric heap) and a flag. In round r a member
//     SETs round word r of member me + 2^r to (hash << 2 | flag << 1 | 1), waits for its own word, zeroes it, and
//     raises its flag when the hash it got differs from its own or the word's flag is up. Every member hears from
//     every other through a chain of increasing rounds, and a chain joining two different records has a hop that
//     sees the difference, whose flag then travels on along the chain; so after the last round every member's flag
//     is up exactly when some records differ or some member is invalid (up to hash collisions, 2^-62). Barrier k of
//     a team uses the word set k % 2: a member can be at most one barrier ahead of another, so the two sets never
//     mix, and a word is consumed before the same set is used again.
//  3. Flag up: every member publishes its full record in its value words, syncs, reads every member's, syncs, and
//     fails with the same code (TETHER_ERR_MISMATCH naming both values, or the invalid member's). The team stays
//     usable (every member agreed). Flag down: the data phase, then a closing barrier (its flag carries a data-phase
//     failure of any member to all of them; state stays intact). The barriers also order memory: a member's sources
//     are ready before anyone reads them and stay unread after the closing barrier (on token teams: the close words,
//     CollTokens::closeCall, which also stand in for the barrier between the two halves of a two-shot allreduce).
//  One-shot (small, HOST memory): each member first copies what the others need (its src; for alltoall and
//     reduce_scatter all of it) into its staging buffer of the team (kCollStageBytes, two used alternately), then
//     the agreement barrier, then every member reads the others' staging buffers and returns: no closing barrier.
//     Safe because a member writes the same buffer again only two one-shot collectives later, after it passed the
//     barrier of the one in between, which no member reaches before it finished reading. The choice is a function of
//     the agreed record (kind, count, type, team size, segment kinds), and the buffer in use flips only after an
//     agreement succeeded, so every member takes the same path and the same buffer. On token teams of a crowded
//     host (crowded_: more PEs on the host than online CPUs, or TETHER_COLL_CROWDED) contributions over
//     kCollStageBytes up to kRingStageBytes are one-shot too while the block stays within ringBlockMax
//     (collectives.cpp; by kind: alltoall 2 KiB, allgather 4 KiB, broadcast 8 KiB up to 4 members, reductions
//     none), staged in the member's staging ring of the team (the eager broadcast's, below: CollTokens::stageRoom
//     reserves the room once every member is done with the calls whose copies it overwrites), the copy's offset in
//     the member's token. There, for small blocks,
//     a second sync point costs more than the copy (4 PEs on 2 cores, alltoall of 1-2 KiB blocks 0.83-0.91x the
//     time of pull + close); for larger ones a member that returned early competes for the cores with those still
//     reading (4 KiB blocks 1.2x, reductions of 4-32 KiB 1.3-2.2x slower staged: bench/results/cpu-2core-vm/
//     coll_ring_block_ab.txt); with a core per PE pulling wins from 2 KiB on (2 PEs on 2 cores: 1.4-3x;
//     coll_ring_ab.txt). Every member of a token team is on one host, so all reach the same answer
//     (TETHER_COLL_CROWDED must be alike on a host).
//  Tokens (token teams: 2+ members, every member's HOST segment load/store mapped here; Team::tokens caches it; the
//     rings, their layout and their waits are the room CollTokens, core/coll_tokens.h, member tokens_): at the
//     start of its c-th collective on the team every member writes a token into slot c % kEagerDepth of its own ring
//     for the team: flags, its record's hash and its one-shot contribution inline when it fits kEagerDataBytes (from
//     the first cache line on: a collective of up to 40 bytes reads one line per member), the full record (the slot's
//     last line), and the call number c + 1, stored last (release: the member's earlier stores, its src included, are
//     visible to whoever sees it). It reuses a slot only once every member's done word (calls it completed on the team,
//     stored as each call returns, whatever it returns) shows it finished the call that used the slot last, so a token
//     is never overwritten while someone may read it; a member that has to wait for that waits until half the ring is
//     free (an eager root ahead of its readers then reads their done words once per kEagerDepth / 2 calls). On
//     token teams the agreement of step 2 is not a barrier: each member waits for every member's token of call c
//     and compares the records' 62-bit hashes (the full records only to name the differing field), so every member
//     reaches the same verdict (its own error first, then the first invalid
//     member, then the first differing one) with no second exchange, no barrier words left behind, and the team usable
//     after it; one-shot collectives whose contribution fits the token read the others' tokens instead of the staging
//     buffers. Non-token teams (a UCX peer) run the dissemination barrier of step 2. Every member must reach the same
//     answer on whether a team is a token team: load/store reachability is symmetric on one host; a job whose PEs
//     choose different transports for the same pair (TETHER_PATHS differing per PE) is not supported.
//  Eager broadcast (tether_team_broadcast_eager, what the OpenSHMEM layer calls; token teams only, elsewhere the
//     agreed broadcast): no agreement wait. The root posts its token with the data inline (HOST src up to
//     kEagerDataBytes), copies its own dest and returns; a HOST src up to the staging limit (below the constants: a
//     reader pulling from src is faster from 4 KiB on on teams of two, waiting for them slower on crowded hosts)
//     it first copies into its
//     staging ring of the team (kEagerStageTeamBytes used in turn, each call's copy contiguous at a 64-byte boundary;
//     the bytes of an earlier call are written again only once every member's done word passed that call, so nobody
//     still reads them) and posts "staged" with the copy's offset: it returns without waiting, the others copy
//     from that buffer; larger or GPU sources post "pull": the others copy from the root's src, and the root returns
//     once every member's done word passed call c (none reads src any more). A
//     non-root posts its token, waits for the root's token of call c and compares the root's record with its own:
//     equal, it copies the data into its dest; else it fails (TETHER_ERR_MISMATCH naming the field, or
//     TETHER_ERR_INVALID_ARG when the root's arguments were invalid). The eager form is part of the record, so an
//     agreed collective (tether_team_broadcast included) meeting an eager one at the same call fails on every member
//     that waits for all tokens. What is detected where: a member whose record differs from the root's fails at
//     once; the root and the members matching it succeed and are not told (OpenSHMEM leaves mismatched calls
//     undefined and its error model ends the job at the first failing PE); a member with invalid arguments fails
//     alone (the others fail if it is their root); members disagreeing on the root never hang (each waits for the
//     member it names, which posts a token whatever it believes), but two members that each name themselves both act
//     as root and succeed. The team stays usable after all of these. Only a member's own ring and done word are
//     written (by it): no dest is written by another member.
//  Eager alltoall (tether_team_alltoall_eager, what the OpenSHMEM layer calls; with TETHER_COLL_EAGER_ALLTOALL=1, the
//     default, on token teams with HOST/STATIC dest and src, otherwise the agreed alltoall; the setting is in the
//     record): OpenSHMEM's precondition -- every member's dest is ready to be written when any member enters the
//     call -- lets a member store its block for member m straight into m's dest (mapped)
//     before the agreement; then it posts its token (release: the blocks are visible to whoever sees it) and waits
//     for every member's token of the call, comparing records as the agreed collectives do (every member reaches the
//     same verdict). One wait, no staging copy, no close: nobody reads another member's src. The only collective
//     whose members write another member's dest: with mismatched arguments the blocks have been stored when every
//     member fails (TETHER_ERR_MISMATCH; OpenSHMEM leaves such calls undefined), always inside the receivers' HOST
//     segments (each writer checked its own range, and the heaps are symmetric). The eager form is part of the
//     record: an agreed alltoall meeting an eager one fails on every member.
//  4. Data phase (pull: each member writes only its own dest): broadcast, allgather and alltoall copy from the
//     members' copies; reductions combine members' elements in team order (core/reduce_ops.h) on the CPU, reading
//     load/store-mapped HOST memory in place and everything else (DEVICE memory, network peers) into chunk buffers.
//     How members' memory is reached, and the reductions over it: the room CollReach (core/coll_reach.h, member
//     reach_). Copies into CPU memory from HOST memory reached only by gets (another host) go through its Gets: gets
//     posted together (PathTable::getMany, TransportOps::getv; one round trip for a call's copies, for reductions
//     per window of 4 members and chunk), as do the one-shot path's reads of other hosts' staging buffers (stagedAll).
//     Allreduces of at least 4 KiB on one host (token teams, HOST src; 2+ members), elsewhere of 64 KiB on 3+
//     members, are two-shot (twoShot): member k combines slice k (reduce-scatter), a barrier, every member pulls the
//     other slices (allgather).
//     GPU memory is correct here but not fast: the GPU engine (kernels over NVLink, stream and device forms) is the
//     next step of #21 (docs/collectives.md says what exists).
//  By host (allreduce, allgather, broadcast, rooted reduce, reduce_scatter, alltoall of HOST/STATIC objects on a team
//     whose members span hosts with 2+ on some host; TETHER_COLL_BY_HOST, on by default, in the record): after the
//     agreement nothing above runs; instead whole collectives on two subteams (this host's members, the hosts' first
//     members). Which calls, the subteams and the steps: CollByHost (core/coll_by_host.h).
//
// Where its words and buffers lie: core/coll_layout.h. Who calls it: the C API (core/api.cpp) through
// World::colls(). Thread-safety: collective calls on one team must
// not race (teams' rule); different teams may run on different threads. Lifetime: a member of World; uses Teams.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "core/coll_by_host.h"
#include "core/coll_device.h"
#include "core/coll_layout.h"
#include "core/coll_plan.h"
#include "core/coll_reach.h"
#include "core/coll_record.h"
#include "core/coll_rounds.h"
#include "core/coll_tokens.h"
#include "core/teams.h"
#include "tether/tether.h"

namespace tether {

class Config;
class World;
struct SymRef;
enum class SegKind;  // topology/topology.h


class Collectives : private CollByHost::Owner {
 public:
  explicit Collectives(World& w) : w_(w) {}
  // At init: whether this host is crowded (TETHER_COLL_CROWDED: auto = more PEs on the host, localPes, than online
  // CPUs; sysconf, the same for every process of the host, so every member of a token team agrees). An invalid value
  // is TETHER_ERR_INVALID_ARG. The GPU engine's settings (TETHER_COLL_GPU, _TWO_SHOT, _BLOCKS, _BLOCK_BYTES).
  Status setUp(const Config& config, int localPes);

  // Collective over the team (every member, same order): runs a (rules above and in tether.h).
  Status run(const char* call, TeamRef team, const CollArgs& a);

  // Offset of slot's kCollWords words in the HOST segment (Teams::destroy checks they are idle).
  static uint64_t wordsOffset(int slot);

  // tether_team_*_on_stream: checks a on this PE only (members are not compared: the call returns before the stream
  // runs it), then enqueues it on stream as the device form (core/stream/stream_coll_call.h). syncOnly: the team sync
  // (a is ignored).
  Status enqueue(const char* call, TeamRef team, const CollArgs& a, bool syncOnly, void* stream);

  // tether_team_device_view: the team's members as (start, stride), its device sync words in the segment of
  // handle's barrier words, and host_run (by host: TETHER_COLL_BY_HOST and the team's shape, Team::hostRun).
  Status deviceView(const char* call, TeamRef team, const tether_device_handle_t& handle, tether_device_team_t* out);
  // Zeroes slot's device sync words on this PE (HOST and DEVICE copies): the team in it is being destroyed, and
  // every member has finished its collectives on it (Teams::destroy's rule), so no write is still arriving.
  Status resetDeviceWords(int slot);
  // Teams::destroy's settle hook: waits (TETHER_TIMEOUT) until every member's done word has passed every call this
  // PE made on t, so no member still reads this PE's tokens or staged bytes when the slot is freed for reuse.
  Status settle(const char* call, Team& t) { return tokens_.settle(call, t); }
  // Token numbers across team lifetimes (Teams::split): tokenBase() is at least every done word of this PE (any
  // slot); a new team starts its calls at the largest tokenBase() of its members (startTokens sets its callSeq and
  // this PE's done word of the slot to it), so tokens a former team left in the slot's rings, which a slow member of
  // that team may still be reading, never match a new call, and the rings are never zeroed.
  uint64_t tokenBase() const { return tokens_.tokenBase(); }
  void startTokens(Team& t, uint64_t base) { tokens_.start(t, base); }

 private:
  using Plan = CollPlan;      // one call's checked arguments (core/coll_plan.h; filled by collCheck)
  using Record = CollRecord;  // what members agree on (core/coll_record.h)

  // CollByHost::Owner: the by-host steps' calls (runOn: run; enqueueOn: enqueue; oneShot; pull: dataPhase).
  Status runOn(const char* call, TeamRef sub, const CollArgs& r) override { return run(call, sub, r); }
  Status enqueueOn(const char* call, TeamRef sub, const CollArgs& r, void* stream) override {
    return enqueue(call, sub, r, false, stream);
  }
  Status pull(const char* call, Team& t, const Plan& p) override { return dataPhase(call, t, p); }

  // Step 1 (collCheck, core/coll_check.h) with World::checkSymmetric, and for a.scratch this PE's by-host scratch.
  Status check(const char* call, const Team& t, const CollArgs& a, Plan* p) const;
  // (The barriers over the team's words, the record exchange and failedTogether: rounds_, core/coll_rounds.h.)
  // The error a member with record mine returns when member m's record theirs differs (recordMismatch).
  Status mismatch(const char* call, const Team& t, const Record& mine, size_t m, const Record& theirs) const;
  // ---- tokens (their rings: tokens_, core/coll_tokens.h) and the eager forms (protocol above)
  // The data phase's closing barrier (middle: the one between a two-shot allreduce's halves), raising the flag when
  // raise: close words on a token team, else the dissemination rounds. *flagged as CollRounds::rounds'.
  Status phaseBarrier(const char* call, Team& t, bool middle, bool raise, bool* flagged);
  Status eagerBroadcast(const char* call, Team& t, const Plan& p, const Record& mine, uint64_t c);
  Status eagerRead(const char* call, Team& t, const Plan& p, const Record& mine, uint64_t c);
  // The eager alltoall (protocol above): this member's blocks into every member's dest, its token, every token.
  Status eagerAlltoall(const char* call, Team& t, const Plan& p, const Record& mine, uint64_t c);
  // The agreement of call c on a token team (its token posted): waits for every member's token and compares the
  // records; the error every member returns alike (its own first), or ok.
  Status agreeByTokens(const char* call, Team& t, const Record& mine, const Status& localError, uint64_t c);
  Status dataPhase(const char* call, Team& t, const Plan& p);
  // ---- the GPU engine: collectives on GPU memory as the device form on a stream
  // The stream record of p's call (streamCollCall, core/coll_device.h).
  StreamCollCall streamCall(const Plan& p) const;
  // Whether a host form runs on the GPU engine, from agreed values (object kinds, kind of call) and this PE's setup
  // (TETHER_COLL_GPU, a GPU stream layer, every member load/store reachable); a difference between members shows as
  // a record mismatch. Fills p's handle and view (failing as p.local does, before the agreement).
  Status gpuPlan(const char* call, Team& t, Plan* p);
  // After the agreement: the device form on the engine stream (after the legacy default stream's work so far, on the
  // GPU), waited for. Its closing team sync is the close.
  Status gpuData(const char* call, const Plan& p);
  // t's device view for h (deviceTeamView, core/coll_device.h; host_run where the team goes by host).
  Status viewOf(const char* call, Team& t, const tether_device_handle_t& h, tether_device_team_t* out) const;
  // The first member (world PE) this PE cannot reach by loads and stores in kind's segment (TETHER_FORCE_PROXY: any
  // other), or -1.
  int unreachableMember(const Team& t, SegKind kind) const;
  // One-shot path (protocol above): bytes this PE stages (0: not one-shot), staging before and reading after the
  // agreement barrier.
  size_t stagedBytes(const Plan& p, bool tokens) const;
  void stage(const Team& t, const Plan& p, size_t bytes);
  Status oneShot(const char* call, Team& t, const Plan& p) override;
  // Member m's staged bytes from off where this PE reads them in place (its tokens or ring when p.tokenCall or
  // p.ringCall say so, its own or a mapped staging buffer); nullptr where they must be fetched (another host).
  const char* stagedInPlace(const Team& t, const Plan& p, size_t m, size_t off) const;
  // Member m's staging buffer (the one in use) as readable bytes: in place when mapped, else copied into scratch.
  Status staged(const char* call, const Team& t, const Plan& p, size_t m, size_t off, size_t bytes, char* scratch,
                const char** out);
  // staged() for every member at once: at[m] (n entries) = member m's bytes [off, off + bytes). The members reached
  // only by gets (another host) are fetched into *fetched by gets posted together (CollReach::Gets), one round trip
  // for all of them instead of one each.
  Status stagedAll(const char* call, const Team& t, const Plan& p, size_t off, size_t bytes,
                   std::unique_ptr<char[]>* fetched, const char** at);
  uint64_t stageOffset(const Team& t) const;
  bool twoShot(Team& t, const Plan& p) const;  // the allreduce's data phase is reduce-scatter + allgather

  World& w_;
  CollTokens tokens_;  // the token rings (Links attached by setUp)
  CollRounds rounds_;  // the barriers over the team's words (Links attached by setUp)
  CollReach reach_;    // reading members' memory, the reductions over it (Links attached by setUp)
  CollByHost byHost_{*this};  // the data collectives by host (TETHER_COLL_BY_HOST and Links attached by setUp)
  // PEs outnumber cores on this host (setUp): waiting for the others costs more than copying, so the staged one-shot
  // paths go further (protocol above).
  bool crowded_ = false;
  bool eagerAlltoall_ = true;  // TETHER_COLL_EAGER_ALLTOALL: tether_team_alltoall_eager stores into the others' dest
  CollGpuSettings gpu_;  // TETHER_COLL_GPU & co. (core/coll_device.h)
};

}  // namespace tether
