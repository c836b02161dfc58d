// CollByHost (core/coll_by_host.h): which calls go by host, the subteams they run on, and the steps on them.
#include "core/coll_by_host.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/log.h"
#include "core/dtype.h"
#include "core/stream_ops.h"
#include "core/sync_schedule.h"

namespace tether {

bool CollByHost::shaped(Team& t) const {
  if (t.byHost < 0) {
    size_t largest = 0;
    const std::vector<std::vector<int>> groups = groupByHost(links_.hostsOf(t.pes));
    bool blocks = true;  // each host's members consecutive in team order, as many on every host
    for (const auto& g : groups) {
      largest = std::max(largest, g.size());
      blocks = blocks && g.size() == groups[0].size() && g.back() - g.front() + 1 == static_cast<int>(g.size());
    }
    t.byHost = groups.size() >= 2 && largest >= 2 ? 1 : 0;
    t.hostRun = t.byHost && blocks ? static_cast<int>(largest) : 0;
    t.hostMost = static_cast<int>(largest);
    // The subteams' device views (stream forms) need their members at a fixed world-PE stride.
    auto strided = [&](const std::vector<int>& members) {  // team numbers
      for (size_t k = 2; k < members.size(); ++k)
        if (t.pes[members[k]] - t.pes[members[k - 1]] != t.pes[members[1]] - t.pes[members[0]]) return false;
      return true;
    };
    std::vector<int> leaders;
    t.hostStrided = true;
    t.hostOf.assign(t.pes.size(), -1);
    t.hostMapped = true;
    for (const auto& g : groups) {
      for (int m : g) t.hostOf[static_cast<size_t>(m)] = static_cast<int>(leaders.size());
      leaders.push_back(g[0]);
      t.hostStrided = t.hostStrided && strided(g);
      if (std::find(g.begin(), g.end(), t.me) != g.end())
        for (int m : g) t.hostMapped = t.hostMapped && (m == t.me || links_.mapped(t.pes[static_cast<size_t>(m)]));
    }
    t.hostStrided = t.hostStrided && strided(leaders);
    t.hostLeader = leaders;
  }
  return t.byHost != 0;
}

bool CollByHost::kind(Team& t, CollKind k) const {
  return enabled_ && shaped(t) && (k == CollKind::Allreduce || (k == CollKind::Allgather && t.hostRun > 0));
}

bool CollByHost::scratched(Team& t, const CollArgs& a, size_t block) const {
  // Over the one-shot sizes (whose single round of staged gets beats three subteam collectives) up to the scratch;
  // a root that is not its host's first member costs a third step, which pays where a host holds 3+ members. (2-core
  // VM, two netns hosts, 3 rounds, by host at every size: root 0 at 4-32 KiB 0.65-0.75x the time at 4 PEs,
  // 0.71-0.77x at 8; the last PE as root 1.03-1.19x at 4 PEs, 0.72-0.81x at 8; 8 B-2 KiB up to 1.77x, 64-256 KiB
  // (32 KiB chunks) up to 1.44x. This rule: root 0 0.76-0.87x at 4 PEs, 0.66-0.78x at 8, the last PE 0.70-0.80x at
  // 8; bench/results/cpu-2core-vm/coll_by_host_reduce_ab.txt.)
  if (a.kind == CollKind::ReduceScatter) {
    // Up to the scratch (the whole src), the one-shot sizes too: there every member's staged gets reach every other
    // member. (Same VM, 3 rounds: by host over 2 KiB: 4 PEs 0.52-0.55x at 1-8 KiB per member, 8 PEs 0.31-0.34x at
    // 512 B-4 KiB; this rule, twice: 4 PEs 0.47-1.06x at 8-512 B, 0.54-0.68x at 1-8 KiB; 8 PEs 0.24-0.49x at
    // 8 B-4 KiB; bench/results/cpu-2core-vm/coll_by_host_reduce_scatter_ab.txt.)
    size_t total = 0;
    return enabled_ && !__builtin_mul_overflow(block, t.pes.size(), &total) && total > 0 &&
           total <= kByHostScratchBytes && shaped(t) && t.hostRun > 0;
  }
  if (a.kind == CollKind::Alltoall) {  // two regions of a host's whole srcs (coll_by_host_alltoall_ab.txt)
    size_t total = 0;
    return enabled_ && shaped(t) && t.hostRun > 0 &&
           !__builtin_mul_overflow(block, t.pes.size() * static_cast<size_t>(t.hostRun) * 2, &total) && total > 0 &&
           total <= kByHostScratchBytes;
  }
  if (!enabled_ || a.kind != CollKind::Reduce || block <= kCollStageBytes || block > kByHostScratchBytes ||
      !shaped(t) || a.root < 0 || static_cast<size_t>(a.root) >= t.pes.size())
    return false;
  const size_t root = static_cast<size_t>(a.root);
  return t.hostLeader[static_cast<size_t>(t.hostOf[root])] == a.root || t.hostMost >= 3;
}

bool CollByHost::broadcast(Team& t, const CollArgs& a, size_t block) const {
  // (Both sizes from root 0 against every member pulling, 2-core VM, two netns hosts: 4 PEs 0.66-0.98x the time,
  // 8 PEs 0.51-0.78x; bench/results/cpu-2core-vm/coll_by_host_bcast_ab.txt.)
  if (!enabled_ || a.kind != CollKind::Broadcast || !shaped(t) || !t.hostMapped || a.root < 0 ||
      static_cast<size_t>(a.root) >= t.pes.size())
    return false;
  // Over kCollStageBytes the leaders' broadcast pulls the root's src: the root must be one of them.
  const size_t root = static_cast<size_t>(a.root);
  return block <= kCollStageBytes || t.hostLeader[static_cast<size_t>(t.hostOf[root])] == a.root;
}

bool CollByHost::call(Team& t, const CollPlan& p) const {
  if (p.a.kind == CollKind::Broadcast)  // (each member's dest is its own affair: only src is agreed)
    return broadcast(t, p.a, p.block) && p.block != 0 && isHostMemory(p.sref.kind) && t.byHost != 3;
  return (kind(t, p.a.kind) || scratched(t, p.a, p.block)) && !p.gpu && p.block != 0 &&
         isHostMemory(p.sref.kind) && isHostMemory(p.dref.kind) && t.byHost != 3;
}

Status CollByHost::make(const char* call, Team& t, TeamRef ref) {
  if (t.byHost != 1) return Status::ok();
  const Status made = links_.split(call, ref);
  if (made.code() == TETHER_ERR_NO_MEMORY) {  // no free team index (every member alike): this call and later ones pull
    t.byHost = 3;
    TETHER_LOG_INFO(LogSys::Core, "%s: team index %d: no subteams by host (%s); pulling from every member", call,
                    t.slot, made.message().c_str());
    return Status::ok();
  }
  TETHER_TRY(links_.lose(t, made));
  t.byHost = 2;
  return Status::ok();
}

char* CollByHost::scratchOf(const Team& t) const {
  return links_.scratch + static_cast<size_t>(t.slot) * kByHostScratchBytes;
}

void CollByHost::hostStep(const char* call, Team& t, TeamRef sub, CollArgs r, const char* what, Status* failed) {
  r.invalid = *failed;
  const Status s = links_.lose(t, owner_.runOn(call, sub, r)).withContext(what);
  if (failed->isOk()) *failed = s;
}

Status CollByHost::data(const char* call, Team& t, TeamRef ref, const CollPlan& p) {
  TETHER_TRY(make(call, t, ref));
  if (t.byHost == 3) return stagedBroadcast(p) ? owner_.oneShot(call, t, p) : owner_.pull(call, t, p);
  if (p.a.kind == CollKind::Broadcast) return broadcastSteps(call, t, p);
  if (p.a.kind == CollKind::Reduce) return reduceSteps(call, t, p);
  if (p.a.kind == CollKind::ReduceScatter) return reduceScatterSteps(call, t, p);
  if (p.a.kind == CollKind::Alltoall) return alltoallSteps(call, t, p);
  return steps(call, t, p, nullptr, nullptr);
}

Status CollByHost::enqueue(const char* call, Team& t, TeamRef ref, const CollPlan& p, StreamOps* so, void* stream,
                           bool* done) {
  *done = false;
  const CollKind k = p.a.kind;
  // (shaped() before hostStrided: it fills the shape fields.)
  if (p.block == 0 || !(kind(t, k) || (k == CollKind::Broadcast && enabled_ && shaped(t))) || !t.hostStrided ||
      t.byHost == 3)
    return Status::ok();
  TETHER_TRY(make(call, t, ref));
  if (t.byHost != 2) return Status::ok();
  *done = true;
  return k == CollKind::Broadcast ? streamBroadcast(call, t, p, so, stream) : steps(call, t, p, so, stream);
}

Status CollByHost::reduceSteps(const char* call, Team& t, const CollPlan& p) {
  const size_t root = static_cast<size_t>(p.a.root);
  const int host = t.hostOf[p.me], rootHost = t.hostOf[root];
  const bool rootLeads = t.hostLeader[static_cast<size_t>(rootHost)] == p.a.root;
  TETHER_LOG_INFO(LogSys::Core, "%s: team index %d, %zu PEs, count %zu of %s: by host (reduce into each host's first "
                  "member, those reduce into %s)", call, t.slot, p.n, p.a.count, dtypeInfo(p.a.type).name,
                  rootLeads ? "the root" : "the root's host's first member, which broadcasts to the root");
  // This PE's scratch of the team's slot (byHostScratched: the block fits): every member passes its own, at the same
  // offset (one symmetric object).
  char* scratch = scratchOf(t);
  const bool alone = t.hostTeam.slot < 0;  // this PE is its host's only member (and so its first)
  // A step after a failed one passes that failure (its members fail at once, naming this PE); the first is returned.
  Status failed;
  auto step = [&](TeamRef sub, const CollArgs& r, const char* what) { hostStep(call, t, sub, r, what, &failed); };
  CollArgs r;
  r.kind = CollKind::Reduce;
  r.type = p.a.type;
  r.op = p.a.op;
  r.count = p.a.count;
  r.scratch = true;
  if (alone) {
    std::memcpy(scratch, p.a.src, p.block);
  } else {
    r.root = 0;
    r.dest = scratch;
    r.src = p.a.src;
    step(t.hostTeam, r, "on this host");
  }
  if (t.leaderTeam.slot >= 0) {  // (an in-place root's src was read above: its dest may change now)
    r.root = rootHost;
    r.dest = rootLeads ? p.a.dest : scratch;
    r.src = scratch;
    step(t.leaderTeam, r, "between hosts");
  }
  if (!rootLeads && host == rootHost) {
    r.kind = CollKind::Broadcast;
    r.root = 0;
    r.src = scratch;
    r.dest = p.me == root ? p.a.dest : scratch;
    r.eager = true;
    step(t.hostTeam, r, "to the root on its host");
  }
  return failed;
}

Status CollByHost::reduceScatterSteps(const char* call, Team& t, const CollPlan& p) {
  // Team::hostRun members per host, consecutive in team order: host h's are members h * perHost ... (h + 1) * perHost
  // - 1 (two or more: a host-shaped team's largest host, and all hold as many), its blocks a run of perHost.
  const size_t perHost = static_cast<size_t>(t.hostRun), host = static_cast<size_t>(t.hostOf[p.me]);
  TETHER_LOG_INFO(LogSys::Core, "%s: team index %d, %zu PEs, count %zu of %s: by host (reduce into each host's first "
                  "member, reduce_scatter among those, broadcast on each host)", call, t.slot, p.n, p.a.count,
                  dtypeInfo(p.a.type).name);
  // This PE's scratch of the team's slot (byHostScratched: the whole src fits); host h's run of blocks at h * runBytes,
  // the same place in every member's scratch.
  char* scratch = scratchOf(t);
  char* ours = scratch + host * perHost * p.block;
  Status failed;  // (step(): a later step passes the first failure on)
  auto step = [&](TeamRef sub, const CollArgs& r, const char* what) { hostStep(call, t, sub, r, what, &failed); };
  CollArgs r;
  r.type = p.a.type;
  r.op = p.a.op;
  r.scratch = true;
  r.root = 0;
  r.kind = CollKind::Reduce;  // this host's whole srcs into its first member's scratch (src read here: dest may change)
  r.count = p.n * p.a.count;
  r.dest = scratch;
  r.src = p.a.src;
  step(t.hostTeam, r, "on this host");
  if (t.leaderTeam.slot >= 0) {  // first member h keeps host h's run (in place: dest = src + h * the run)
    r.kind = CollKind::ReduceScatter;
    r.count = perHost * p.a.count;
    r.dest = ours;
    r.src = scratch;
    step(t.leaderTeam, r, "between hosts");
  }
  r.kind = CollKind::Broadcast;  // the run on this host, each member into the same place of its own scratch
  r.count = perHost * p.a.count;
  r.dest = ours;
  r.src = ours;
  r.eager = true;
  step(t.hostTeam, r, "broadcasting on this host");
  if (failed.isOk()) std::memcpy(p.a.dest, ours + (p.me % perHost) * p.block, p.block);
  return failed;
}

Status CollByHost::alltoallSteps(const char* call, Team& t, const CollPlan& p) {
  // Team::hostRun = m members per host, consecutive: member (h, j) is team member h * m + j; H = n / m hosts.
  const size_t m = static_cast<size_t>(t.hostRun), n = p.n, hosts = n / m, B = p.block, j = p.me % m;
  TETHER_LOG_INFO(LogSys::Core, "%s: team index %d, %zu PEs, count %zu of %s: by host (allgather on each host, "
                  "alltoall among the hosts' first members, broadcast on each host)", call, t.slot, n, p.a.count,
                  dtypeInfo(p.a.type).name);
  // This PE's scratch of the team's slot (byHostScratched: 2 * m * n blocks fit): region a, then region b.
  char* a = scratchOf(t);
  char* b = a + m * n * B;
  Status failed;  // (step(): a later step passes the first failure on)
  auto step = [&](TeamRef sub, const CollArgs& r, const char* what) { hostStep(call, t, sub, r, what, &failed); };
  CollArgs r;
  r.type = p.a.type;
  r.scratch = true;
  r.kind = CollKind::Allgather;  // a[j][k]: this host's member j's block for member k (src read here: dest may change)
  r.count = n * p.a.count;
  r.dest = a;
  r.src = p.a.src;
  step(t.hostTeam, r, "on this host");
  if (t.leaderTeam.slot >= 0) {  // b[h][j][i] = a[j][h * m + i]: from this host's member j to host h's member i
    if (failed.isOk())
      for (size_t h = 0; h < hosts; ++h)
        for (size_t jj = 0; jj < m; ++jj) std::memcpy(b + (h * m + jj) * m * B, a + (jj * n + h * m) * B, m * B);
    r.kind = CollKind::Alltoall;  // a[h][j][i] then: from host h's member j to this host's member i
    r.count = m * m * p.a.count;
    r.dest = a;
    r.src = b;
    step(t.leaderTeam, r, "between hosts");
  }
  r.kind = CollKind::Broadcast;  // that on this host, each member into the same place of its own scratch
  r.root = 0;
  r.count = n * m * p.a.count;
  r.dest = a;
  r.src = a;
  r.eager = true;
  step(t.hostTeam, r, "broadcasting on this host");
  if (failed.isOk())  // dest block k = h * m + jj: a[h][jj][j]
    for (size_t k = 0; k < n; ++k) std::memcpy(static_cast<char*>(p.a.dest) + k * B, a + (k * m + j) * B, B);
  return failed;
}

Status CollByHost::broadcastSteps(const char* call, Team& t, const CollPlan& p) {
  const size_t root = static_cast<size_t>(p.a.root);
  const bool staged = stagedBroadcast(p);
  const int host = t.hostOf[p.me], rootHost = t.hostOf[root];
  TETHER_LOG_INFO(LogSys::Core, "%s: team index %d, %zu PEs, count %zu of %s: by host (%s, each of those broadcasts "
                  "on its host)", call, t.slot, p.n, p.a.count, dtypeInfo(p.a.type).name,
                  staged ? "the root's staged copy to the root's host and the other hosts' first members"
                         : "the root's src to the other hosts' first members");
  CollArgs r;  // the steps' broadcast
  r.kind = CollKind::Broadcast;
  r.type = p.a.type;
  r.count = p.a.count;
  Status failed;
  if (staged) {  // the root staged its src before the agreement: its host reads it in place, the other hosts' first
    // members fetch it (one get each), as the one-shot path does for every member; the others get it from their
    // host's first member below
    if (host == rootHost || t.hostLeader[static_cast<size_t>(host)] == static_cast<int>(p.me))
      failed = owner_.oneShot(call, t, p);
    else
      ++t.stageSeq;  // (oneShot flips it on the others: every member alike)
    if (host == rootHost) return failed;
  } else if (t.leaderTeam.slot >= 0) {  // the root (its host's first member) to every host's first member, from src
    r.root = rootHost;
    r.dest = p.a.dest;
    r.src = p.a.src;
    failed = links_.lose(t, owner_.runOn(call, t.leaderTeam, r)).withContext("between hosts");
  }
  if (t.hostTeam.slot < 0) return failed;  // alone on its host
  // Each host's first member to the others, from where it holds the data: the root its src, the others their dest,
  // at offsets the readers need not share (srcAtRoot: the root's token says where). A member passes its own object
  // as both (the root's dest stays as the step above left it; the readers' src is not read). A first member whose
  // step above failed passes that failure: its readers fail at once (naming it) instead of waiting for its token.
  r.root = 0;
  r.eager = true;
  r.srcAtRoot = true;
  r.invalid = failed;
  r.dest = p.me == root ? const_cast<void*>(p.a.src) : p.a.dest;
  r.src = r.dest;
  const Status s = links_.lose(t, owner_.runOn(call, t.hostTeam, r)).withContext("broadcasting on this host");
  return failed.isOk() ? s : failed;
}

Status CollByHost::streamBroadcast(const char* call, Team& t, const CollPlan& p, StreamOps* so, void* stream) {
  const size_t root = static_cast<size_t>(p.a.root);
  const int host = t.hostOf[p.me], rootHost = t.hostOf[root];
  TETHER_LOG_INFO(LogSys::Core, "%s: team index %d, %zu PEs, count %zu of %s: by host (on the root's host, then to "
                  "the other hosts' first members, each broadcasts on its host), each step on the stream", call, t.slot,
                  p.n, p.a.count, dtypeInfo(p.a.type).name);
  // Every member's dest is the same symmetric object (stream forms), so the steps pass dest as the src of the
  // members that hold the data by then (in place); a member's src is read only where it is the step's root.
  CollArgs r;
  r.kind = CollKind::Broadcast;
  r.type = p.a.type;
  r.count = p.a.count;
  r.dest = p.a.dest;
  auto step = [&](TeamRef sub, int from, const void* src, const char* what) {
    r.root = from;
    r.src = src;
    return owner_.enqueueOn(call, sub, r, stream).withContext(what);
  };
  const bool alone = t.hostTeam.slot < 0;  // this PE is its host's only member
  if (host == rootHost && !alone) {        // every member of the root's host, its first one included
    int at = 0;                            // the root's place on its host (team order)
    for (size_t m = 0; m < root; ++m) at += t.hostOf[m] == rootHost;
    TETHER_TRY(step(t.hostTeam, at, p.a.src, "on the root's host"));
  } else if (host == rootHost && !p.inPlace) {  // the root, alone on its host
    TETHER_TRY(so->copy(stream, p.a.dest, p.a.src, p.block).withContext(call));
  }
  if (t.leaderTeam.slot >= 0) TETHER_TRY(step(t.leaderTeam, rootHost, p.a.dest, "between hosts"));
  if (host != rootHost && !alone) TETHER_TRY(step(t.hostTeam, 0, p.a.dest, "broadcasting on this host"));
  return Status::ok();
}

Status CollByHost::steps(const char* call, Team& t, const CollPlan& p, StreamOps* so, void* stream) {
  const bool gather = p.a.kind == CollKind::Allgather;
  TETHER_LOG_INFO(LogSys::Core, "%s: team index %d, %zu PEs, count %zu of %s: by host (%s each host's first member, "
                  "%s among those, broadcast on each host)%s", call, t.slot, p.n, p.a.count,
                  dtypeInfo(p.a.type).name, gather ? "allgather on each host, so into" : "reduce into",
                  gather ? "allgather" : "allreduce", so ? ", each step on the stream" : "");
  // One step: the blocking host form, or (so) the stream form enqueued on stream (an error there returns at once).
  // A host form after a failed one passes that failure: the step fails at once on every member of its subteam
  // (naming this PE) instead of leaving them to wait for it; the first failure is returned.
  Status failed;
  auto step = [&](TeamRef sub, const CollArgs& r, const char* what) {
    if (so) return owner_.enqueueOn(call, sub, r, stream).withContext(what);
    hostStep(call, t, sub, r, what, &failed);
    return Status::ok();
  };
  CollArgs r;
  r.type = p.a.type;
  r.op = p.a.op;
  r.root = 0;
  const bool alone = t.hostTeam.slot < 0;  // this PE is its host's only member (and so its first)
  // Allgather (Team::hostRun members per host, consecutive): this host's blocks [first, first + perHost) of dest.
  const size_t perHost = static_cast<size_t>(t.hostRun), first = gather ? p.me - p.me % perHost : 0;
  char* dest = static_cast<char*>(p.a.dest);
  if (!alone) {  // each host's blocks (allgather) or combination (reduce) at its first member
    r.kind = gather ? CollKind::Allgather : CollKind::Reduce;
    r.dest = gather ? dest + first * p.block : dest;
    r.src = p.a.src;
    r.count = p.a.count;
    TETHER_TRY(step(t.hostTeam, r, "on this host"));
  }
  if (alone && !p.inPlace) {  // the leaders' allreduce is in place
    if (so) TETHER_TRY(so->copy(stream, dest, p.a.src, p.block).withContext(call));
    else std::memcpy(dest, p.a.src, p.block);
  }
  if (t.leaderTeam.slot >= 0) {  // in place: leader h's part of dest is its host's (allgather: blocks h * perHost ...)
    r.kind = gather ? CollKind::Allgather : CollKind::Allreduce;
    r.dest = dest;
    r.src = gather ? dest + first * p.block : dest;
    r.count = gather ? perHost * p.a.count : p.a.count;
    TETHER_TRY(step(t.leaderTeam, r, "between hosts"));
  }
  if (!alone) {
    r.kind = CollKind::Broadcast;
    r.dest = dest;
    r.src = dest;
    r.count = gather ? p.n * p.a.count : p.a.count;
    r.eager = true;
    TETHER_TRY(step(t.hostTeam, r, "broadcasting on this host"));
  }
  return failed;
}

}  // namespace tether
