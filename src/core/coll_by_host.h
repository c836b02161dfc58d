// CollByHost: the team data collectives by host (core/collectives.h's step 4, where the team spans hosts): which calls
// go by host (the team's shape, TETHER_COLL_BY_HOST), the subteams they run on (made at the first call that needs
// them), and the steps: whole collectives on the subteams, called back through Owner (host forms, stream forms, the
// one-shot read, the pull). A room of the Collectives engine; it knows no World (Links: the hosts, the mapping, the
// split, lose, this PE's scratch), so tests/unit's test_coll_by_host runs it with a fake owner.
//
// Contracts
//  - Every member decides alike: the rules read only agreed values (the call's record: kind, sizes, root, object
//    kinds), the team's hosts and the split's outcome (the same on every member).
//  - recorded(): the record's kByHost bit (some by-host form applies to a); call(): this call's data phase goes by
//    host (after the agreement); data() runs it, enqueue() enqueues the stream forms' steps.
//  - A step's failure loses the team (Links::lose) and is passed into the later steps (CollArgs::invalid): their
//    members fail at once naming it; the first failure is returned.
//
// The protocol (moved here from core/collectives.h):
// By host (allreduce, and allgather where each host's members are consecutive in team order and every host holds as
// many (Team::hostRun), and broadcast and rooted reduce as below; HOST/STATIC objects on a team whose members span
// hosts with 2+ on some host; not on the GPU engine; TETHER_COLL_BY_HOST, on by default, in the record): after the
// agreement none of core/collectives.h's data phases runs; instead three collectives on two subteams of the team, made
// by one split (Teams::splitByHost) at the team's first such call and destroyed with it. Allreduce: this host's members
// (in team order) reduce into the first one's dest (a reduce with root 0; a member alone on its host copies src to
// dest), those first members allreduce in place among themselves (their team has one member per host: flat), each
// broadcasts its dest on its host (eager broadcast). Allgather: this host's members allgather into their part of dest
// (blocks first .. first + run - 1), the first members allgather those parts in place, each broadcasts the whole dest
// on its host. Each is a whole collective with its own agreement and close, so the contracts hold as they do there (a
// member's src is read before its reduce returns, so an in-place member's dest is written only afterwards). Every
// member takes the path alike: it depends on the agreed record, the team's hosts, and the split's outcome, which is the
// same on every member (no free team index: all go on pulling, Team::byHost 3). Elements combine per host in team
// order, then across hosts in host order: every member gets the same bits, not always those of one team-order pass. One
// crossing per host pair instead of every member pulling every other host's members: 2-core VM, two netns hosts,
// --touch-src, allreduce: 4 PEs 0.54-0.69x, 8 PEs 0.27-0.48x the time (bench/results/cpu-2core-vm/
// coll_by_host_ab.txt); allgather (fcollect): 4 PEs 0.58-0.86x, 8 PEs 0.45-0.59x (coll_by_host_allgather_ab.txt).
// Stream forms (enqueue): the same three, enqueued as stream forms on the subteams, where every subteam has a
// device view (Team::hostStrided: members at a fixed world-PE stride, alike from the team's hosts); their first
// call makes the subteams (a blocking split: members enqueue stream collectives in the same order anyway). A
// stream broadcast (any root, any size) likewise: on the root's host from the root (its first member included),
// from that first member to the other hosts' first members, on each other host from its first member; dest is
// symmetric in the stream forms, so the later steps broadcast it in place. Through the CPU stream emulation
// across two netns hosts: broadcast 0.28-0.53x the time at 4 PEs, 0.13-0.24x at 8; allreduce 0.39-0.51x and
// 0.17-0.21x (bench/results/cpu-2core-vm/coll_stream_by_host_ab.txt). Device views (viewOf, deviceTeamView in
// core/coll_device.h): host_run = Team::hostRun where the team is host-shaped, so the device broadcast goes by
// host in the kernel (device.cuh).
// Broadcast (host forms, HOST/STATIC src, where this host's members map each other -- Team::hostMapped: the
// host team is a token team; a job whose hosts differ in that fails its broadcasts across hosts as a mismatch
// naming TETHER_COLL_BY_HOST and TETHER_PATHS): first to one member per host, then each of those broadcasts on
// its host from where it holds the data (eager, CollArgs::srcAtRoot: the members' dests may lie at different
// offsets, so the readers take that member's place from its token instead of agreeing on a src). Up to
// kCollStageBytes (stagedBroadcast), from any root: the root stages its src before the agreement as on the
// one-shot path; after it the root's host reads that copy in place and the other hosts' first members fetch it
// (one get each instead of one per member). Over it, where the root is its host's first member in team order
// (Team::hostOf, hostLeader): the root broadcasts from its src to the hosts' first members (the leaders' team,
// agreed: each pulls the root's src, which the agreement above found ready). 2-core VM, two netns hosts,
// from root 0: 8 B-2 KiB 4 PEs 0.74-0.90x, 8 PEs 0.60-0.78x the time; 4-64 KiB 0.66-0.98x and 0.51-0.70x
// (bench/results/cpu-2core-vm/coll_by_host_bcast_ab.txt).
// Rooted reduce (host forms, HOST/STATIC objects, over kCollStageBytes up to kByHostScratchBytes, the root its
// host's first member or some host holding 3+: scratched): no member's dest but the root's may change, so the
// partials go through the by-host scratch of the team's slot (kByHostScratchOffset, CollArgs::scratch): this
// host's members reduce into their first member's scratch (a member alone on its host copies its src there),
// those first members reduce into the root's dest where the root is its host's first member, else in place into
// the root host's first member's scratch, which then broadcasts it on that host (eager; the root into its dest,
// the others into their own scratch). Combination order as the allreduce's. 2-core VM, two netns hosts, 4-32
// KiB: root 0 0.76-0.87x the time at 4 PEs, 0.66-0.78x at 8; the last PE 0.70-0.80x at 8
// (bench/results/cpu-2core-vm/coll_by_host_reduce_ab.txt).
// Reduce_scatter (host forms, HOST/STATIC objects, the whole src up to kByHostScratchBytes, Team::hostRun
// members per host, consecutive: scratched): this host's members reduce their whole src into their first
// member's by-host scratch; those first members reduce_scatter it in place among themselves (first member h keeps
// host h's run of blocks); each broadcasts its run on its host (eager, into the members' own scratch), and each
// member copies its block into dest. Combination order as the allreduce's. 2-core VM, two netns hosts: 4 PEs
// 0.47-1.06x the time at 8-512 B per member, 0.54-0.68x at 1-8 KiB; 8 PEs 0.24-0.49x at 8 B-4 KiB
// (bench/results/cpu-2core-vm/coll_by_host_reduce_scatter_ab.txt).
// Alltoall (host forms, HOST/STATIC objects, Team::hostRun = m members per host, consecutive, where two regions
// of m * n blocks fit kByHostScratchBytes: scratched): this host's members allgather their whole srcs into
// region a of each one's by-host scratch; the first member reorders them into region b by destination host
// (b[h][j][i] = a[j][h * m + i]: from this host's member j to host h's member i) and alltoalls b among the
// first members (blocks of m * m) into a; each broadcasts a on its host (eager), and member i of it takes
// a[h][j][i] as its dest block h * m + j. 2-core VM, two netns hosts: 4 PEs 0.59-1.07x the time, 8 PEs
// 0.26-0.60x (bench/results/cpu-2core-vm/coll_by_host_alltoall_ab.txt).
// A host form whose step fails passes that failure into its later steps (CollArgs::invalid): their members fail
// at once, naming it, instead of waiting for it (netns_coll_peer_killed: a PE killed inside these steps).
//
// Who calls it: Collectives (core/collectives.cpp): run() after the agreement, enqueue() for the stream forms, the
// record and the device views. Thread-safety: as the team's collectives (calls on one team never race).
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "base/status.h"
#include "core/coll_layout.h"
#include "core/coll_plan.h"
#include "core/teams.h"

namespace tether {

class StreamOps;

class CollByHost {
 public:
  // The calls the steps make, back into the collectives engine (Collectives).
  class Owner {
   public:
    // The host form of r on subteam sub: a whole blocking collective (its agreement, data phase, close).
    virtual Status runOn(const char* call, TeamRef sub, const CollArgs& r) = 0;
    // The stream form of r on subteam sub, enqueued on stream.
    virtual Status enqueueOn(const char* call, TeamRef sub, const CollArgs& r, void* stream) = 0;
    // p's one-shot read of the staged copies (a staged broadcast: the root's host, the other hosts' first members).
    virtual Status oneShot(const char* call, Team& t, const CollPlan& p) = 0;
    // p's data phase without subteams: every member pulls (no team index was free for the split).
    virtual Status pull(const char* call, Team& t, const CollPlan& p) = 0;

   protected:
    ~Owner() = default;
  };

  struct Links {
    // The host of each world PE in pes (World::hostsOf: host numbers alike on every PE).
    std::function<std::vector<int>(const std::vector<int>& pes)> hostsOf;
    // World PE pe's HOST segment is load/store mapped here (CollTokens::peer).
    std::function<bool(int pe)> mapped;
    // Splits the team behind ref into its subteams by host (Teams::splitByHost; records them in the Team).
    std::function<Status(const char* call, TeamRef ref)> split;
    // The team loses its collective state with status s (Teams::lose), which it returns.
    std::function<Status(Team& t, Status s)> lose;
    // This PE's by-host scratch of team slot 0 (its HOST segment + kByHostScratchOffset); slot s's is
    // kByHostScratchBytes further per slot, the same place on every member.
    char* scratch = nullptr;
  };

  explicit CollByHost(Owner& owner) : owner_(owner) {}
  void attach(bool enabled, Links links) {  // at setUp, before the first call; enabled: TETHER_COLL_BY_HOST
    enabled_ = enabled;
    links_ = std::move(links);
  }

  // t's members span hosts and some host holds 2+ (fills Team::byHost's shape fields once).
  bool shaped(Team& t) const;
  // The device views' host_run: Team::hostRun where TETHER_COLL_BY_HOST is on and t is host-shaped, else 0.
  int hostRun(Team& t) const { return enabled_ && shaped(t) ? t.hostRun : 0; }
  // The record's kByHost bit: some form below applies to a call a of block bytes on t.
  bool recorded(Team& t, const CollArgs& a, size_t block) const {
    return kind(t, a.kind) || scratched(t, a, block) || broadcast(t, a, block);
  }
  // p's data phase runs by host (agreed values and t's shape; host forms, after the agreement).
  bool call(Team& t, const CollPlan& p) const;
  // A broadcast by host whose root staged its src before the agreement (one-shot sizes).
  static bool stagedBroadcast(const CollPlan& p) {
    return p.a.kind == CollKind::Broadcast && p.block <= kCollStageBytes;  // (by host: HOST src, so the root staged)
  }
  // The data phase by host (call(t, p) held): the subteams, then the calls on them, or the pull (no subteams).
  Status data(const char* call, Team& t, TeamRef ref, const CollPlan& p);
  // A stream form p on t by host, where t's shape and kind allow it and every subteam has a device view: the steps
  // enqueued on stream (*done), else nothing (*done false: the caller enqueues the device form itself).
  Status enqueue(const char* call, Team& t, TeamRef ref, const CollPlan& p, StreamOps* so, void* stream, bool* done);

 private:
  bool kind(Team& t, CollKind k) const;  // TETHER_COLL_BY_HOST and t's shape allow k by host (allreduce, allgather)
  // A call a of block bytes that goes by host through the by-host scratch (host forms only; TETHER_COLL_BY_HOST and
  // t's shape): a rooted reduce whose block is over kCollStageBytes up to kByHostScratchBytes, the root its host's
  // first member or some host holding 3+; a reduce_scatter whose whole src (block * members) is up to
  // kByHostScratchBytes, an alltoall whose hosts' whole srcs fit the scratch twice, each host's members consecutive
  // in team order, as many on every host (Team::hostRun).
  bool scratched(Team& t, const CollArgs& a, size_t block) const;
  // A broadcast a of block bytes by host: TETHER_COLL_BY_HOST, over kCollStageBytes, t's shape, its root first on
  // its host, this host's members mapped.
  bool broadcast(Team& t, const CollArgs& a, size_t block) const;
  // t's subteams, made at the first call that needs them (Team::byHost 2, or 3 when no team index was free on some
  // member: alike on all). A failure of the split loses t.
  Status make(const char* call, Team& t, TeamRef ref);
  char* scratchOf(const Team& t) const;  // this PE's by-host scratch of t's team index
  // One host-form step on subteam sub of t: r passes *failed (the first failure of the call's earlier steps,
  // CollArgs::invalid) on, so the step's members fail at once naming this PE; this step's failure becomes *failed
  // where none was. A failure loses t's collective state.
  void hostStep(const char* call, Team& t, TeamRef sub, CollArgs r, const char* what, Status* failed);
  // The three calls on the subteams (allreduce, allgather): host forms, or (so) stream forms enqueued on stream.
  Status steps(const char* call, Team& t, const CollPlan& p, StreamOps* so, void* stream);
  Status reduceSteps(const char* call, Team& t, const CollPlan& p);         // rooted reduce (host forms, scratch)
  Status reduceScatterSteps(const char* call, Team& t, const CollPlan& p);  // reduce_scatter (host forms, scratch)
  Status alltoallSteps(const char* call, Team& t, const CollPlan& p);       // alltoall (host forms, scratch)
  // A broadcast's two steps (host forms): to the hosts' first members (from the root's staged copy, or over
  // kCollStageBytes by the leaders' broadcast), then on each host from its first member.
  Status broadcastSteps(const char* call, Team& t, const CollPlan& p);
  // A stream broadcast's steps, enqueued on stream: on the root's host from the root, to the other hosts' first
  // members from the root's host's first one, on each other host from its first member.
  Status streamBroadcast(const char* call, Team& t, const CollPlan& p, StreamOps* so, void* stream);

  Owner& owner_;
  bool enabled_ = true;  // TETHER_COLL_BY_HOST
  Links links_;
};

}  // namespace tether
