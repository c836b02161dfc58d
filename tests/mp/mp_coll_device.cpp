// The device API's team collectives (include/tether/device.cuh: team_sync, team_broadcast, team_allgather,
// team_alltoall, team_allreduce, team_reduce_scatter; issue #21) compiled for the host: CPU threads run the same code
// kernels run, over HOST segments, with a CPU device handle and tether_team_device_view. Each PE runs the collectives
// once per scope: Scope::Thread (one thread), Scope::Block and Scope::Grid (kThreads CPU threads as one group,
// HostScope; a kernel's grid on a GPU), on the world team, the even PEs, the world reversed (stride -1) and the rows of a 2-wide grid; in place and not; element
// types int64, int32, uint8, double with every op they take, allreduce one-shot and two-shot (reduce-scatter +
// allgather, slices of unequal and zero length); results against a reference from the inputs every
// member generates from the seed (MP_SEED, printed). Then in-place order (inPlaceOrder) and slot reuse: a team destroyed after device syncs and a new
// team in its slot (the sync words are reset at destroy, else the epochs would disagree and the sync hang).
// MP_PROXY_PE0=1: TETHER_FORCE_PROXY on PE 0 only (see main). Each view's host_run (the broadcast by host across
// hosts) against what the team's shape on the job's hosts gives (expectedRun).
// Under TETHER_FORCE_PROXY=1 (every peer through the proxy ring) the data movers and sync run through the ring and
// the reductions pull the other members' elements through it into the team's scratch (detail::teamReduceStaged;
// with TETHER_COLL_SCRATCH=48 a chunk takes several pulls, the last one short); over two netns hosts (netns_coll_*)
// the members of the other host are proxied and those of this host loaded.
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "mp_util.h"
#include "coll_ref.h"
#include "tether/device.cuh"

namespace dev = tether::device;
using dev::RedOp;
using dev::Scope;

namespace {

constexpr int kThreads = 4;
constexpr size_t kBytes = 64 * 1024;  // per buffer

tether_t w;
int me, npes;
uint64_t seed;
char* bufA;  // symmetric HOST buffers
char* bufB;
bool loads = true;  // every PE reachable by loads (not under TETHER_FORCE_PROXY, nor over netns hosts)
std::vector<bool> sameHostPes;  // mp::sameHost: the jobs here run on one or two hosts

// The view's host_run (tether.h) this team should have: where its members form runs of the same length (2+) per host,
// consecutive in team order, on two hosts (the netns jobs), and TETHER_COLL_BY_HOST is not 0; else 0.
int expectedRun(tether_team_t team) {
  const char* byHost = std::getenv("TETHER_COLL_BY_HOST");
  if (byHost && std::strcmp(byHost, "0") == 0) return 0;
  const int n = tether_team_n_pes(team);
  std::vector<int> runs;  // lengths of the runs of members on one host, in team order
  for (int m = 0; m < n; ++m) {
    const bool mine = sameHostPes[static_cast<size_t>(tether_team_world_pe(team, m))];
    if (m == 0 || mine != sameHostPes[static_cast<size_t>(tether_team_world_pe(team, m - 1))]) runs.push_back(0);
    ++runs.back();
  }
  if (runs.size() != 2 || runs[0] != runs[1] || runs[0] < 2) return 0;  // (two hosts: two runs, or members mixed)
  return runs[0];
}

template <typename T>
T input(uint64_t c, int m, size_t i) {
  return coll_ref::input<T>(seed, c, m, i);
}
template <typename T>
T refOp(RedOp op, T a, T b) {
  return coll_ref::combine(op, a, b);
}

[[noreturn]] void bad(const char* what, uint64_t c, size_t i, const char* scope) {
  char msg[200];
  std::snprintf(msg, sizeof msg, "%s case %" PRIu64 " (scope %s) element %zu wrong (MP_SEED=%" PRIu64 ")", what, c,
                scope, i, seed);
  mp::fail(__FILE__, __LINE__, "device team collective", msg);
}

// Runs body(rank) on kThreads CPU threads forming one group of scope S (Scope::Thread: this thread alone).
template <Scope S, typename F>
void group(F&& body) {
  if (S == Scope::Thread) return body(0);
  dev::HostBarrier barrier(kThreads);
  std::vector<std::thread> ts;
  for (int r = 0; r < kThreads; ++r)
    ts.emplace_back([&, r] {
      dev::HostScope<S> scope(r, kThreads, &barrier);
      body(r);
    });
  for (auto& t : ts) t.join();
}

uint64_t caseNo = 0;

template <Scope S, typename T>
void reductions(const dev::Handle& h, const dev::Team& t, const char* sname) {
  const int n = t.n_pes, my = t.my_pe;
  const RedOp ops[] = {RedOp::Sum, RedOp::Prod, RedOp::Min, RedOp::Max, RedOp::And, RedOp::Or, RedOp::Xor};
  for (RedOp op : ops) {
    if (std::is_floating_point<T>::value && op >= RedOp::And) continue;
    for (size_t count : {size_t{1}, size_t{37}, size_t{S == Scope::Thread ? 1000u : 300u}})
      for (bool inPlace : {false, true}) {
        const uint64_t c = ++caseNo;
        T* src = reinterpret_cast<T*>(bufA);
        T* dst = inPlace ? src : reinterpret_cast<T*>(bufB);
        for (dev::ReduceAlgo algo : {dev::ReduceAlgo::OneShot, dev::ReduceAlgo::TwoShot}) {
          for (size_t i = 0; i < count; ++i) src[i] = input<T>(c, my, i);
          group<S>([&](int) { dev::team_allreduce<S>(h, t, dst, src, count, op, algo); });
          for (size_t i = 0; i < count; ++i) {
            T want = input<T>(c, 0, i);
            for (int m = 1; m < n; ++m) want = refOp(op, want, input<T>(c, m, i));
            if (std::memcmp(&dst[i], &want, sizeof(T)) != 0)
              bad(algo == dev::ReduceAlgo::TwoShot ? "team_allreduce (two-shot)" : "team_allreduce", c, i, sname);
          }
        }
        // reduce_scatter: count per member, src holds n * count
        const uint64_t c2 = ++caseNo;
        const size_t per = count / static_cast<size_t>(n) + 1;
        if (per * static_cast<size_t>(n) * sizeof(T) > kBytes) continue;
        for (size_t i = 0; i < per * static_cast<size_t>(n); ++i) src[i] = input<T>(c2, my, i);
        T* rs = inPlace ? src + static_cast<size_t>(my) * per : reinterpret_cast<T*>(bufB);
        group<S>([&](int) { dev::team_reduce_scatter<S>(h, t, rs, src, per, op); });
        for (size_t i = 0; i < per; ++i) {
          const size_t e = static_cast<size_t>(my) * per + i;
          T want = input<T>(c2, 0, e);
          for (int m = 1; m < n; ++m) want = refOp(op, want, input<T>(c2, m, e));
          if (std::memcmp(&rs[i], &want, sizeof(T)) != 0) bad("team_reduce_scatter", c2, i, sname);
        }
      }
  }
}

template <Scope S>
void movers(const dev::Handle& h, const dev::Team& t, const char* sname) {
  const int n = t.n_pes, my = t.my_pe;
  using T = uint32_t;
  // 4096: 16 KiB, where the broadcast goes by host across hosts (kBroadcastByHostMin; up to 4 PEs: kBytes)
  for (size_t count : {size_t{0}, size_t{1}, size_t{13}, size_t{2000}, size_t{4096}}) {
    if (count * static_cast<size_t>(n) * sizeof(T) > kBytes) continue;
    T* a = reinterpret_cast<T*>(bufA);
    T* b = reinterpret_cast<T*>(bufB);
    const size_t bytes = count * sizeof(T);
    for (int root = 0; root < n; root += (n > 2 ? n - 1 : 1)) {
      const uint64_t c = ++caseNo;
      for (size_t i = 0; i < count; ++i) a[i] = input<T>(c, my, i);
      const bool inPlace = root % 2 == 1;
      T* d = inPlace ? a : b;
      group<S>([&](int) { dev::team_broadcast<S>(h, t, d, a, bytes, root); });
      for (size_t i = 0; i < count; ++i)
        if (d[i] != input<T>(c, root, i)) bad("team_broadcast", c, i, sname);
    }
    for (bool inPlace : {false, true}) {
      const uint64_t c = ++caseNo;
      T* src = inPlace ? b + static_cast<size_t>(my) * count : a;
      for (size_t i = 0; i < count; ++i) src[i] = input<T>(c, my, i);
      group<S>([&](int) { dev::team_allgather<S>(h, t, b, src, bytes); });
      for (int m = 0; m < n; ++m)
        for (size_t i = 0; i < count; ++i)
          if (b[static_cast<size_t>(m) * count + i] != input<T>(c, m, i)) bad("team_allgather", c, i, sname);
    }
    const uint64_t c = ++caseNo;
    for (size_t i = 0; i < count * static_cast<size_t>(n); ++i) a[i] = input<T>(c, my, i);
    group<S>([&](int) { dev::team_alltoall<S>(h, t, b, a, bytes); });
    for (int m = 0; m < n; ++m)
      for (size_t i = 0; i < count; ++i)
        if (b[static_cast<size_t>(m) * count + i] != input<T>(c, m, static_cast<size_t>(my) * count + i))
          bad("team_alltoall", c, i, sname);
  }
  // Many syncs in a row: the epochs stay in step.
  for (int k = 0; k < 50; ++k) group<S>([&](int) { dev::team_sync<S>(h, t); });
}

template <Scope S>
void all(const dev::Handle& h, tether_team_t team, const char* label, const char* sname) {
  dev::Team t;
  MP_OK(tether_team_device_view(team, &h, &t));
  MP_CHECK(t.n_pes == tether_team_n_pes(team) && t.my_pe == tether_team_my_pe(team));
  for (int m = 0; m < t.n_pes; ++m) MP_CHECK(dev::team_world_pe(t, m) == tether_team_world_pe(team, m));
  if (t.host_run != expectedRun(team)) {
    std::fprintf(stderr, "PE %d: %s: the device view's host_run is %d, not %d\n", me, label, t.host_run,
                 expectedRun(team));
    MP_CHECK(false);
  }
  caseNo = 0;  // members of different teams ran different numbers of cases before
  movers<S>(h, t, sname);
  // every type at thread scope; the group split (block and grid scope) on two of them
  reductions<S, int64_t>(h, t, sname);
  reductions<S, double>(h, t, sname);
  if (S == Scope::Thread) {
    reductions<S, int32_t>(h, t, sname);
    reductions<S, uint8_t>(h, t, sname);
  }
  if (t.my_pe == 0)
    std::printf("PE %d: %s (%d PEs), scope %s: device team collectives OK%s%s\n", me, label, t.n_pes, sname,
                loads ? "" : " (some members proxied)", t.host_run ? " (broadcast by host)" : "");
}

template <Scope S>
void everyTeam(const dev::Handle& h, const char* sname) {
  tether_team_t world = tether_team_world(w), even = TETHER_TEAM_INVALID, reversed = TETHER_TEAM_INVALID,
                row = TETHER_TEAM_INVALID, col = TETHER_TEAM_INVALID;
  MP_OK(tether_team_split_strided(world, 0, 2, (npes + 1) / 2, nullptr, &even));
  MP_OK(tether_team_split_strided(world, npes - 1, -1, npes, nullptr, &reversed));
  MP_OK(tether_team_split_2d(world, 2, nullptr, &row, nullptr, &col));
  all<S>(h, world, "world", sname);
  if (even) all<S>(h, even, "even PEs", sname);
  all<S>(h, reversed, "reversed world", sname);
  all<S>(h, row, "grid row", sname);
  MP_OK(tether_barrier_all(w));
  for (tether_team_t t : {even, reversed, row, col}) MP_OK(tether_team_destroy(t));
  MP_OK(tether_barrier_all(w));
}

// In place, each member writes its dest (= its src) only after every member has read that element of it: the per-chunk
// team sync of the reduction loops. Short vectors (the short loop) many times over on the world team: the members
// leave the entry sync at different times, so a member that wrote too early is read by a later one (the short loop
// without its sync failed here at 2, 3 and 4 PEs in each of 2 runs on the 2-core VM, 2026-12-04; so did the
// reductions above, in 3 of 3 runs).
void inPlaceOrder(const dev::Handle& h) {
  dev::Team t;
  MP_OK(tether_team_device_view(tether_team_world(w), &h, &t));
  auto* v = reinterpret_cast<int64_t*>(bufA);
  for (int k = 0; k < 400; ++k) {
    const size_t count = 1 + static_cast<size_t>(k) % 7;
    const uint64_t c = 1000000 + static_cast<uint64_t>(k);
    for (size_t i = 0; i < count; ++i) v[i] = input<int64_t>(c, me, i);
    dev::team_allreduce(h, t, v, v, count, RedOp::Sum);
    for (size_t i = 0; i < count; ++i) {
      int64_t want = input<int64_t>(c, 0, i);
      for (int m = 1; m < npes; ++m) want = refOp(RedOp::Sum, want, input<int64_t>(c, m, i));  // wraps, as the sum does
      if (v[i] != want) bad("team_allreduce in place (read before written)", c, i, "thread");
    }
  }
  if (me == 0) std::printf("PE 0: in-place order OK\n");
}

// A team's slot reused by a team of other members: destroy resets the device sync words, so the epochs agree.
void slotReuse(const dev::Handle& h) {
  tether_team_t world = tether_team_world(w), even = TETHER_TEAM_INVALID, all = TETHER_TEAM_INVALID;
  MP_OK(tether_team_split_strided(world, 0, 2, (npes + 1) / 2, nullptr, &even));
  const int evenIndex = even ? tether_team_index(even) : -1;
  if (even) {
    dev::Team t;
    MP_OK(tether_team_device_view(even, &h, &t));
    for (int k = 0; k < 7; ++k) dev::team_sync(h, t);
    MP_OK(tether_team_destroy(even));
  }
  MP_OK(tether_barrier_all(w));
  MP_OK(tether_team_split_strided(world, 0, 1, npes, nullptr, &all));
  if (evenIndex >= 0) MP_CHECK(tether_team_index(all) == evenIndex);  // the lowest free index: the same slot
  dev::Team t;
  MP_OK(tether_team_device_view(all, &h, &t));
  for (int k = 0; k < 5; ++k) dev::team_sync(h, t);
  MP_OK(tether_team_destroy(all));
  MP_OK(tether_barrier_all(w));
  if (me == 0) std::printf("PE 0: slot reuse OK\n");
}

}  // namespace

int main() {
  // MP_PROXY_PE0=1: only PE 0 reaches the others through the proxy ring (it takes the staged reduction loop, the
  // others the loaded ones), so in place their per-chunk team syncs must match across the two loops.
  if (std::getenv("MP_PROXY_PE0") && std::getenv("TETHER_RANK") && std::strcmp(std::getenv("TETHER_RANK"), "0") == 0)
    setenv("TETHER_FORCE_PROXY", "1", 1);
  mp::init();
  w = mp::world();
  std::tie(me, npes) = std::make_pair(tether_my_pe(w), tether_n_pes(w));
  seed = coll_ref::seedFromEnv("mp_coll_device", me);
  bufA = static_cast<char*>(mp::hostZeroed(w, kBytes));
  bufB = static_cast<char*>(mp::hostZeroed(w, kBytes));
  dev::Handle h;
  MP_OK(tether_device_handle_cpu(w, &h));
  for (int pe = 0; pe < npes; ++pe) loads = loads && dev::ptr(h, bufA, pe) != nullptr;
  sameHostPes = mp::sameHost(w);
  MP_OK(tether_barrier_all(w));
  // Bad arguments of the view.
  dev::Team t;
  MP_EXPECT_STATUS(tether_team_device_view(tether_team_world(w), nullptr, &t), TETHER_ERR_INVALID_ARG);
  MP_EXPECT_STATUS(tether_team_device_view(TETHER_TEAM_INVALID, &h, &t), TETHER_ERR_INVALID_ARG);
  everyTeam<Scope::Thread>(h, "thread");
  everyTeam<Scope::Block>(h, "block");
  everyTeam<Scope::Grid>(h, "grid");
  inPlaceOrder(h);
  slotReuse(h);
  return mp::finish();
}
