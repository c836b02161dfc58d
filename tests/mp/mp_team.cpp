// Teams in the core C API (tether_team_*, issue #21), on HOST memory at 2/4/8 PEs (and 3/7: rounds that wrap):
// the predefined teams, split_strided (even/odd, reversed, single PE, non-members get TETHER_TEAM_INVALID),
// split_2d for every xrange, nested splits, translate_pe / world_pe, one index per team agreed by its members,
// team_sync and team_barrier correctness (counters, interleaved teams), destroy + re-split many times (index reuse),
// exhaustion (TETHER_ERR_NO_MEMORY on every PE, then the indices come back), mismatched split arguments and an
// invalid config on one PE (every PE fails alike, naming both values), invalid handles (NULL, garbage, destroyed,
// predefined destroy, after finalize).
// `mp_team timeout` (TETHER_TIMEOUT=3): PE 0 skips a team sync; every other PE's sync fails within the timeout naming
// the round and the PE it waited for (or the PE that timed out first and passed its failure on), and the next sync on
// the team fails at once ("collective state is lost"), while the world goes on; then PE 0 makes its sync late (into
// the words of members that gave up), the lost team's members still destroy it, and a new team works.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "mp_util.h"

namespace {

tether_t w;
int me, npes;
long* board;  // npes longs per PE (HOST): what members tell each other

// Collective over the world (every PE calls it; team may be TETHER_TEAM_INVALID here): every member of team writes v
// into board[me] of every member; after a world barrier each member checks that all members wrote the same value
// (the index agreement, and membership seen from every side).
void expectSameOnMembers(tether_team_t team, long v, const char* what) {
  const int n = team ? tether_team_n_pes(team) : 0;
  for (int i = 0; i < n; ++i) MP_OK(tether_long_p(w, &board[me], v, tether_team_world_pe(team, i)));
  MP_OK(tether_barrier_all(w));
  for (int i = 0; i < n; ++i)
    if (board[tether_team_world_pe(team, i)] != v) mp::fail(__FILE__, __LINE__, what, "members disagree");
  MP_OK(tether_barrier_all(w));
}

// Collective over the world: on members of t, team PE i of t is world PE expect(i), for every i; -1 outside.
template <class F>
void expectMembers(tether_team_t t, int size, F expect) {
  if (!t) return expectSameOnMembers(t, 0, "non-member");
  MP_CHECK(tether_team_n_pes(t) == size);
  int mine = -1;
  for (int i = 0; i < size; ++i) {
    MP_CHECK(tether_team_world_pe(t, i) == expect(i));
    MP_CHECK(tether_team_translate_pe(t, i, tether_team_world(w)) == expect(i));
    MP_CHECK(tether_team_translate_pe(tether_team_world(w), expect(i), t) == i);
    if (expect(i) == me) mine = i;
  }
  MP_CHECK(tether_team_my_pe(t) == mine);
  MP_CHECK(tether_team_world_pe(t, size) == -1 && tether_team_world_pe(t, -1) == -1);
  const int index = tether_team_index(t);
  MP_CHECK(index >= 2 && index < TETHER_TEAM_MAX);
  expectSameOnMembers(t, index, "team index");
}

void predefined() {
  tether_team_t world = tether_team_world(w), shared = tether_team_shared(w);
  MP_CHECK(world != TETHER_TEAM_INVALID && shared != TETHER_TEAM_INVALID);
  MP_CHECK(tether_team_world(w) == world);  // the same handle every time
  MP_CHECK(tether_team_n_pes(world) == npes && tether_team_my_pe(world) == me && tether_team_index(world) == 0);
  MP_CHECK(tether_team_index(shared) == 1);
  // Shared: the PEs whose HOST memory is mapped here, in world order.
  int count = 0, mine = -1;
  for (int pe = 0; pe < npes; ++pe)
    if (pe == me || mp::mapped(board, pe)) {
      MP_CHECK(tether_team_world_pe(shared, count) == pe);
      if (pe == me) mine = count;
      ++count;
    }
  MP_CHECK(tether_team_n_pes(shared) == count && tether_team_my_pe(shared) == mine);
  if (count == tether_local_size(w)) MP_CHECK(tether_team_my_pe(shared) == tether_local_pe(w));
  MP_OK(tether_team_sync(shared));
  MP_OK(tether_team_barrier(world));
}

void strided() {
  tether_team_t world = tether_team_world(w);
  const int half = (npes + 1) / 2;
  tether_team_t even, odd = TETHER_TEAM_INVALID, rev, single;
  tether_team_config_t cfg{};
  MP_OK(tether_team_split_strided(world, 0, 2, half, &cfg, &even));
  MP_CHECK((even != TETHER_TEAM_INVALID) == (me % 2 == 0));
  expectMembers(even, half, [](int i) { return 2 * i; });
  if (npes > 1) {
    MP_OK(tether_team_split_strided(world, 1, 2, npes / 2, nullptr, &odd));
    MP_CHECK((odd != TETHER_TEAM_INVALID) == (me % 2 == 1));
    expectMembers(odd, npes / 2, [](int i) { return 2 * i + 1; });
  }
  MP_OK(tether_team_split_strided(world, npes - 1, -1, npes, nullptr, &rev));
  expectMembers(rev, npes, [](int i) { return npes - 1 - i; });
  if (even) MP_CHECK(tether_team_translate_pe(even, 0, rev) == npes - 1);
  if (odd && even == TETHER_TEAM_INVALID) MP_CHECK(tether_team_translate_pe(odd, 0, even) == -1);
  MP_OK(tether_team_split_strided(world, npes - 1, 0, 1, nullptr, &single));
  MP_CHECK((single != TETHER_TEAM_INVALID) == (me == npes - 1));
  if (single) {
    MP_CHECK(tether_team_n_pes(single) == 1 && tether_team_my_pe(single) == 0);
    MP_OK(tether_team_sync(single));
    MP_OK(tether_team_barrier(single));
  }

  // Nested: every second PE of the even team (world PEs 0, 4, 8, ...), split by the even team's members only; and a
  // split of the reversed team.
  if (even) {
    tether_team_t nested;
    MP_OK(tether_team_split_strided(even, 0, 2, (half + 1) / 2, nullptr, &nested));
    MP_CHECK((nested != TETHER_TEAM_INVALID) == (me % 4 == 0));
    if (nested) {
      MP_CHECK(tether_team_n_pes(nested) == (half + 1) / 2);
      for (int i = 0; i < tether_team_n_pes(nested); ++i) MP_CHECK(tether_team_world_pe(nested, i) == 4 * i);
      MP_OK(tether_team_sync(nested));
    }
    MP_OK(tether_team_sync(even));
    MP_OK(tether_team_destroy(nested));
  }
  tether_team_t tail;
  MP_OK(tether_team_split_strided(rev, npes - 1, -1, (npes + 1) / 2, nullptr, &tail));  // world PEs 0, 1, ...
  MP_CHECK((tail != TETHER_TEAM_INVALID) == (me < (npes + 1) / 2));
  if (tail) MP_CHECK(tether_team_world_pe(tail, tether_team_my_pe(tail)) == me && tether_team_my_pe(tail) == me);

  // Invalid triplets: every PE fails alike, *new_team INVALID.
  const int bad[][3] = {{0, 1, npes + 1}, {-1, 1, 1}, {npes, 1, 1}, {0, 0, 2}, {0, 1, 0}, {npes - 1, 1, 2}};
  for (const auto& b : bad) {
    if (b[2] == 2 && npes < 2) continue;
    tether_team_t t = world;
    MP_EXPECT_STATUS(tether_team_split_strided(world, b[0], b[1], b[2], nullptr, &t), TETHER_ERR_INVALID_ARG);
    MP_CHECK(t == TETHER_TEAM_INVALID);
    MP_MSG_HAS("tether_team_split_strided: invalid arguments");
  }
  // An invalid config on one PE only: every PE fails, naming it.
  {
    tether_team_config_t c{};
    c.flags = me == npes - 1 ? 1u : 0u;
    tether_team_t t = world;
    MP_EXPECT_STATUS(tether_team_split_strided(world, 0, 1, npes, &c, &t), TETHER_ERR_INVALID_ARG);
    MP_CHECK(t == TETHER_TEAM_INVALID);
    MP_MSG_HAS("passed an invalid config");
  }
  // Mismatched arguments (the last PE asks for a smaller team): TETHER_ERR_MISMATCH on every PE naming both sizes;
  // the parent stays usable.
  {
    tether_team_t t = world;
    const int size = me == npes - 1 ? 1 : npes;
    const tether_status_t s = tether_team_split_strided(world, 0, 1, size, nullptr, &t);
    if (npes > 1) {
      MP_EXPECT_STATUS(s, TETHER_ERR_MISMATCH);
      MP_CHECK(t == TETHER_TEAM_INVALID);
      MP_MSG_HAS("passed different arguments");
      char want[64];
      std::snprintf(want, sizeof want, "size=%d", me == npes - 1 ? npes : 1);  // the other PE's value
      MP_MSG_HAS(want);
      std::snprintf(want, sizeof want, "size=%d", size);  // and this PE's
      MP_MSG_HAS(want);
    } else {
      MP_OK(s);
      MP_OK(tether_team_destroy(t));
    }
    MP_OK(tether_team_sync(world));
  }
  if (even) MP_OK(tether_team_destroy(even));
  if (odd) MP_OK(tether_team_destroy(odd));
  MP_OK(tether_team_destroy(rev));
  MP_OK(tether_team_destroy(single));
  MP_OK(tether_team_destroy(tail));
  MP_OK(tether_barrier_all(w));
}

void split2d() {
  tether_team_t world = tether_team_world(w);
  for (int xr = 1; xr <= npes + 1; ++xr) {
    tether_team_t xt, yt;
    tether_team_config_t xc{}, yc{};
    MP_OK(tether_team_split_2d(world, xr, &xc, &xt, &yc, &yt));
    const int x = xr < npes ? xr : npes;
    const int row = me / x, col = me % x;
    const int rowSize = (row + 1) * x <= npes ? x : npes - row * x;
    int colSize = 0;
    for (int p = col; p < npes; p += x) ++colSize;
    MP_CHECK(xt != TETHER_TEAM_INVALID && yt != TETHER_TEAM_INVALID);
    MP_CHECK(tether_team_n_pes(xt) == rowSize && tether_team_my_pe(xt) == col);
    MP_CHECK(tether_team_n_pes(yt) == colSize && tether_team_my_pe(yt) == row);
    for (int i = 0; i < rowSize; ++i) MP_CHECK(tether_team_world_pe(xt, i) == row * x + i);
    for (int i = 0; i < colSize; ++i) MP_CHECK(tether_team_world_pe(yt, i) == col + i * x);
    MP_CHECK(tether_team_index(xt) != tether_team_index(yt));
    MP_OK(tether_team_sync(xt));
    MP_OK(tether_team_barrier(yt));
    // Nested: a 2d split of the column.
    tether_team_t a, b;
    MP_OK(tether_team_split_2d(yt, 2, nullptr, &a, nullptr, &b));
    MP_CHECK(tether_team_world_pe(a, tether_team_my_pe(a)) == me);
    MP_CHECK(tether_team_world_pe(b, tether_team_my_pe(b)) == me);
    MP_OK(tether_team_sync(b));
    for (tether_team_t t : {a, b, xt, yt}) MP_OK(tether_team_destroy(t));
  }
  tether_team_t xt = world, yt = world;
  MP_EXPECT_STATUS(tether_team_split_2d(world, 0, nullptr, &xt, nullptr, &yt), TETHER_ERR_INVALID_ARG);
  MP_CHECK(xt == TETHER_TEAM_INVALID && yt == TETHER_TEAM_INVALID);
  MP_OK(tether_barrier_all(w));
}

// Counters: in every round each member adds 1 to a counter on every member (blocking atomics, complete on return),
// syncs, and must then see round * size on its own; team_barrier the same with nbi puts it must complete. The even
// and odd teams run their rounds interleaved with world syncs, on different indices.
void counters() {
  tether_team_t world = tether_team_world(w);
  auto* counter = static_cast<uint64_t*>(mp::hostZeroed(w, 2 * sizeof(uint64_t)));
  auto* slots = static_cast<long*>(mp::hostZeroed(w, static_cast<size_t>(npes) * sizeof(long)));
  MP_OK(tether_barrier_all(w));
  // mine: the PEs of my parity (the even team, then the odd one: each PE is in exactly one).
  tether_team_t even, odd = TETHER_TEAM_INVALID;
  MP_OK(tether_team_split_strided(world, 0, 2, (npes + 1) / 2, nullptr, &even));
  if (npes > 1) MP_OK(tether_team_split_strided(world, 1, 2, npes / 2, nullptr, &odd));
  tether_team_t mine = me % 2 == 0 ? even : odd;
  const int n = tether_team_n_pes(mine);
  MP_CHECK(n == (me % 2 == 0 ? (npes + 1) / 2 : npes / 2));
  const uint64_t one = 1;
  for (int round = 1; round <= 50; ++round) {
    for (int i = 0; i < n; ++i)
      MP_OK(tether_atomic(w, TETHER_AMO_ADD, TETHER_UINT64, &counter[0], &one, nullptr, nullptr,
                          tether_team_world_pe(mine, i)));
    MP_OK(tether_team_sync(mine));
    const uint64_t seen = __atomic_load_n(&counter[0], __ATOMIC_ACQUIRE);
    if (seen != static_cast<uint64_t>(round) * n) mp::fail(__FILE__, __LINE__, "team_sync counter", nullptr);
    MP_OK(tether_team_sync(mine));  // nobody adds for the next round before everyone checked this one
    // team_barrier completes nbi puts: each member puts round into its slot on every member.
    const long value = round;
    for (int i = 0; i < n; ++i) MP_OK(tether_put_nbi(w, &slots[me], &value, sizeof value, tether_team_world_pe(mine, i)));
    MP_OK(tether_team_barrier(mine));
    for (int i = 0; i < n; ++i)
      if (__atomic_load_n(&slots[tether_team_world_pe(mine, i)], __ATOMIC_ACQUIRE) != round)
        mp::fail(__FILE__, __LINE__, "team_barrier slot", nullptr);
    if (round % 10 == 0) MP_OK(tether_team_sync(world));  // teams and the world interleaved
  }
  MP_OK(tether_team_barrier(mine));
  MP_OK(tether_team_destroy(mine));
  MP_OK(tether_barrier_all(w));
  // The world team: a counter on PE 0 only, everyone checks it after the sync.
  for (int round = 1; round <= 20; ++round) {
    MP_OK(tether_atomic(w, TETHER_AMO_ADD, TETHER_UINT64, &counter[1], &one, nullptr, nullptr, 0));
    MP_OK(tether_team_sync(world));
    uint64_t got = 0;
    MP_OK(tether_get(w, &got, &counter[1], sizeof got, 0));
    if (got != static_cast<uint64_t>(round) * npes) mp::fail(__FILE__, __LINE__, "world team counter", nullptr);
    MP_OK(tether_team_sync(world));
  }
  MP_OK(tether_free(w, slots));
  MP_OK(tether_free(w, counter));
}

// Many more teams over time than indices; running out fails alike on every PE; the indices come back.
void reuse() {
  tether_team_t world = tether_team_world(w);
  for (int iter = 0; iter < 200; ++iter) {
    tether_team_t t;
    const int start = iter % 2 < npes ? iter % 2 : 0;
    MP_OK(tether_team_split_strided(world, start, 2, (npes - start + 1) / 2, nullptr, &t));
    if (t) {
      MP_OK(tether_team_sync(t));
      MP_OK(tether_team_destroy(t));
    }
  }
  std::vector<tether_team_t> live;
  for (;;) {
    tether_team_t t = world;
    const tether_status_t s = tether_team_split_strided(world, 0, 1, npes, nullptr, &t);
    if (s != TETHER_SUCCESS) {
      MP_EXPECT_STATUS(s, TETHER_ERR_NO_MEMORY);
      MP_CHECK(t == TETHER_TEAM_INVALID);
      MP_MSG_HAS("TETHER_TEAM_MAX");
      break;
    }
    live.push_back(t);
    MP_CHECK(live.size() <= TETHER_TEAM_MAX);
  }
  MP_CHECK(live.size() == TETHER_TEAM_MAX - 2);
  for (tether_team_t t : live) MP_OK(tether_team_sync(t));
  for (tether_team_t t : live) MP_OK(tether_team_destroy(t));
  tether_team_t t;
  MP_OK(tether_team_split_strided(world, 0, 1, npes, nullptr, &t));
  MP_OK(tether_team_destroy(t));
  MP_OK(tether_barrier_all(w));
}

void badHandles() {
  tether_team_t world = tether_team_world(w);
  MP_CHECK(tether_team_world(nullptr) == TETHER_TEAM_INVALID);
  MP_EXPECT_STATUS(tether_team_sync(TETHER_TEAM_INVALID), TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("tether_team_sync: team is TETHER_TEAM_INVALID");
  MP_CHECK(tether_team_n_pes(TETHER_TEAM_INVALID) == -1 && tether_team_my_pe(TETHER_TEAM_INVALID) == -1);
  MP_CHECK(tether_team_translate_pe(world, 0, TETHER_TEAM_INVALID) == -1);
  MP_OK(tether_team_destroy(TETHER_TEAM_INVALID));
  const uintptr_t garbage[] = {0x1000, 0x12345, ~uintptr_t{0}, 0xdeadbeefcafef00dull};
  for (uintptr_t g : garbage) {
    tether_team_t t = reinterpret_cast<tether_team_t>(g);
    MP_EXPECT_STATUS(tether_team_barrier(t), TETHER_ERR_INVALID_ARG);
    MP_CHECK(tether_team_n_pes(t) == -1 && tether_team_index(t) == -1);
    MP_EXPECT_STATUS(tether_team_destroy(t), TETHER_ERR_INVALID_ARG);
    tether_team_t out = world;
    MP_EXPECT_STATUS(tether_team_split_strided(t, 0, 1, 1, nullptr, &out), TETHER_ERR_INVALID_ARG);
    MP_CHECK(out == TETHER_TEAM_INVALID);
  }
  MP_EXPECT_STATUS(tether_team_split_strided(world, 0, 1, 1, nullptr, nullptr), TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("new_team is NULL");
  MP_EXPECT_STATUS(tether_team_destroy(world), TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("predefined");
  MP_EXPECT_STATUS(tether_team_destroy(tether_team_shared(w)), TETHER_ERR_INVALID_ARG);
  // A destroyed handle: refused by every call, also once its index is taken by a new team.
  tether_team_t t, again;
  MP_OK(tether_team_split_strided(world, 0, 1, npes, nullptr, &t));
  MP_OK(tether_team_destroy(t));
  MP_OK(tether_team_split_strided(world, 0, 1, npes, nullptr, &again));
  MP_CHECK(again != t);
  MP_EXPECT_STATUS(tether_team_sync(t), TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("not a live team");
  MP_EXPECT_STATUS(tether_team_destroy(t), TETHER_ERR_INVALID_ARG);
  MP_CHECK(tether_team_n_pes(t) == -1 && tether_team_world_pe(t, 0) == -1);
  tether_team_t out = world;
  MP_EXPECT_STATUS(tether_team_split_strided(t, 0, 1, 1, nullptr, &out), TETHER_ERR_INVALID_ARG);
  MP_CHECK(out == TETHER_TEAM_INVALID);
  MP_OK(tether_team_sync(again));
  MP_OK(tether_team_destroy(again));
  // A team this PE is not in: its handle is INVALID here, so the split fails at once, without communicating.
  tether_team_t first;
  MP_OK(tether_team_split_strided(world, 0, 1, 1, nullptr, &first));
  if (me != 0) {
    MP_CHECK(first == TETHER_TEAM_INVALID);
    MP_EXPECT_STATUS(tether_team_split_strided(first, 0, 1, 1, nullptr, &out), TETHER_ERR_INVALID_ARG);
  } else {
    MP_OK(tether_team_destroy(first));
  }
  MP_OK(tether_barrier_all(w));
}

void timeoutMode() {
  tether_team_t t;
  MP_OK(tether_team_split_strided(tether_team_world(w), 0, 1, npes, nullptr, &t));
  auto* through = static_cast<uint64_t*>(mp::hostZeroed(w, sizeof(uint64_t)));
  MP_OK(tether_barrier_all(w));
  if (me != 0) {
    const auto t0 = std::chrono::steady_clock::now();
    MP_EXPECT_STATUS(tether_team_sync(t), TETHER_ERR_TIMEOUT);
    // Its own wait timed out, or a member that timed out first passed its failure on (core/sync_failure.h: the
    // members it still owed a signal fail at once with its code).
    const char* e = tether_last_error();
    if (!(std::strstr(e, "tether_team_sync: timed out") && std::strstr(e, "waiting for world PE")) &&
        !(std::strstr(e, "tether_team_sync: PE ") && std::strstr(e, "failed this barrier (TETHER_ERR_TIMEOUT")))
      mp::fail(__FILE__, __LINE__, "message is neither a timeout nor a passed-on timeout", e);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    MP_CHECK(s < 30);
    const auto t1 = std::chrono::steady_clock::now();
    MP_EXPECT_STATUS(tether_team_barrier(t), TETHER_ERR_TIMEOUT);
    MP_MSG_HAS("collective state is lost");
    MP_CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count() < 1.0);
    mp::passedTimeout(through, 0);
  } else {
    mp::awaitTimeouts(through, npes - 1);
  }
  // The world team and the instance are unaffected.
  MP_OK(tether_team_sync(tether_team_world(w)));
  MP_OK(tether_barrier_all(w));
  // PE 0 makes the sync it skipped now: its signals land in the words of members that gave up (whatever it returns).
  // Those members' destroy still releases the lost team (its index stays reserved on them); PE 0's, whose team is
  // not lost, may be refused if a signal for it is left over. Either way a new team gets an index free on all.
  if (me == 0) (void)tether_team_sync(t);
  MP_OK(tether_barrier_all(w));
  if (me != 0) {
    MP_OK(tether_team_destroy(t));
  } else {
    const tether_status_t s = tether_team_destroy(t);
    MP_CHECK(s == TETHER_SUCCESS || s == TETHER_ERR_INVALID_ARG);
  }
  tether_team_t again;
  MP_OK(tether_team_split_strided(tether_team_world(w), 0, 1, npes, nullptr, &again));
  for (int k = 0; k < 3; ++k) MP_OK(tether_team_sync(again));
  MP_OK(tether_team_destroy(again));
  MP_OK(tether_barrier_all(w));
  std::printf("PE %d: team timeout OK\n", me);
}

}  // namespace

int main(int argc, char** argv) {
  mp::init();
  w = mp::world();
  me = tether_my_pe(w);
  npes = tether_n_pes(w);
  board = static_cast<long*>(mp::hostZeroed(w, static_cast<size_t>(npes) * sizeof(long)));
  MP_OK(tether_barrier_all(w));
  if (argc > 1 && std::strcmp(argv[1], "timeout") == 0) {
    timeoutMode();
    return mp::finish();
  }
  predefined();
  strided();
  split2d();
  counters();
  reuse();
  badHandles();
  tether_team_t world = tether_team_world(w);
  MP_OK(tether_free(w, board));
  if (mp::finish() != 0) return 1;
  // After finalize: every team call on the instance's handles is refused.
  MP_EXPECT_STATUS(tether_team_sync(world), TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("finalized");
  MP_CHECK(tether_team_n_pes(world) == -1);
  std::printf("PE %d: teams OK\n", me);
  return 0;
}
