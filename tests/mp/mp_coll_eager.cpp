// The eager broadcast (tether_team_broadcast_eager; core/collectives.h "Eager broadcast") on HOST memory at 2/4/8 PEs.
// Data: on the world, reversed-world and even-PE teams, kRounds randomized broadcasts (MP_SEED, printed: root, size
// 0..6000 bytes across the inline/staged boundary of 896 and the staged/pull one of 4096 (2048 for 2), type, in place on
// the root or not; the root rewrites its src every round, which a staged root may do before its readers copied),
// every 5th round an allreduce (the barrier path, same token ring), every 11th a team sync; more rounds than the ring
// has slots, so the root runs ahead and waits for ring credits. Every member checks its dest and that nothing past it was written.
// Agreement, each followed by an eager broadcast and an allreduce that must work (the team stays usable): count
// differs on the last PE -> TETHER_ERR_MISMATCH there only; every member names the next one as root -> every member
// fails (nobody hangs); the last PE's root is invalid -> its own error, the others succeed; the root's src is not
// symmetric -> its own error, TETHER_ERR_INVALID_ARG naming the root on the others; PE 0 calls the eager broadcast
// (root 1) while the others call an allreduce -> every member fails with TETHER_ERR_MISMATCH well before
// TETHER_TIMEOUT; PE 0 calls tether_team_broadcast from itself, the others the eager one from it -> all fail.
// The eager alltoall (tether_team_alltoall_eager; with TETHER_COLL_EAGER_ALLTOALL=1, the default, members store into
// each other's dest, so every call here follows a team sync): a correct call; count differs on the last PE ->
// TETHER_ERR_MISMATCH naming the count on every member; PE 0 calls tether_team_alltoall where the others call the eager
// form -> every member fails with the setting on (succeeds with it off: both are the agreed alltoall); the last PE's
// src is not symmetric -> its own error, TETHER_ERR_INVALID_ARG on the others; each followed by a working broadcast,
// allreduce and eager alltoall.
// MP_EAGER_A2A_PE0=1 (only this section runs): PE 0's TETHER_COLL_EAGER_ALLTOALL is the opposite of the others' (0
// where the environment leaves the default) -> an eager alltoall fails on every member with TETHER_ERR_MISMATCH well
// before TETHER_TIMEOUT (the setting is in the record), and the team stays usable (a broadcast, an allreduce and an
// agreed alltoall after it work).
// Destroy with a slow reader (3+ PEs): PE 2 reads root 0's staged broadcast on T = {0, 1, 2} 200 ms late while PEs 0
// and 1 destroy T, split {0, 1} again (the new team takes T's index: the same token and staging rings) and broadcast
// other bytes in it; PE 2 must still get T's bytes (tether_team_destroy waits until every member finished its calls).
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <tuple>
#include <utility>

#include "mp_util.h"

namespace {

tether_t w;
int me, npes;
uint64_t seed;
constexpr size_t kMaxBytes = 8192;
constexpr int kRounds = 200;
char* src = nullptr;  // symmetric
char* dst = nullptr;  // symmetric, kMaxBytes + 64 (a guard after the largest dest)
long* red = nullptr;  // symmetric: allreduce in/out

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
char byteOf(uint64_t round, size_t k) { return static_cast<char>(mix(seed ^ (round << 20) ^ k)); }

struct Case {
  int root;
  size_t count;
  tether_dtype_t type;
  size_t es;
  bool rootInPlace;
};

Case caseOf(uint64_t round, int n) {
  static const std::pair<tether_dtype_t, size_t> types[] = {{TETHER_UINT8, 1}, {TETHER_INT32, 4}, {TETHER_DOUBLE, 8}};
  const uint64_t r = mix(seed ^ round);
  const auto& ty = types[r % 3];
  const size_t bytes = (r >> 8) % 8 == 0 ? 0 : (r >> 16) % 6001;
  return Case{static_cast<int>((r >> 32) % static_cast<uint64_t>(n)), bytes / ty.second, ty.first, ty.second,
              ((r >> 40) & 3) == 0};
}

void broadcastRound(tether_team_t t, uint64_t round) {
  const int tme = tether_team_my_pe(t), tn = tether_team_n_pes(t);
  const Case c = caseOf(round, tn);
  const size_t bytes = c.count * c.es;
  const bool root = tme == c.root;
  if (root)
    for (size_t k = 0; k < bytes; ++k) src[k] = byteOf(round, k);
  std::memset(dst, 0x5a, kMaxBytes + 64);
  void* d = root && c.rootInPlace ? src : dst;
  if (tether_team_broadcast_eager(t, d, src, c.count, c.type, c.root) != TETHER_SUCCESS) {
    std::fprintf(stderr, "round %" PRIu64 ": root %d count %zu (MP_SEED=%" PRIu64 ")\n", round, c.root, c.count, seed);
    MP_CHECK(!"eager broadcast failed");
  }
  const char* got = root && c.rootInPlace ? src : dst;
  for (size_t k = 0; k < bytes; ++k)
    if (got[k] != byteOf(round, k)) {
      std::fprintf(stderr, "round %" PRIu64 ": byte %zu of %zu wrong on team PE %d (root %d, MP_SEED=%" PRIu64 ")\n",
                   round, k, bytes, tme, c.root, seed);
      MP_CHECK(!"eager broadcast data");
    }
  const size_t guardFrom = root && c.rootInPlace ? 0 : bytes;
  for (size_t k = guardFrom; k < kMaxBytes + 64; ++k) MP_CHECK(dst[k] == 0x5a);
}

void allreduceRound(tether_team_t t, uint64_t round) {
  const int tn = tether_team_n_pes(t);
  red[0] = static_cast<long>(round) + tether_team_my_pe(t);
  MP_OK(tether_team_allreduce(t, red, red, 1, TETHER_LONG, TETHER_RED_SUM));
  MP_CHECK(red[0] == static_cast<long>(round) * tn + static_cast<long>(tn) * (tn - 1) / 2);
}

void dataRounds(tether_team_t t, const char* name) {
  for (uint64_t i = 0; i < kRounds; ++i) {
    broadcastRound(t, i);
    if (i % 5 == 4) allreduceRound(t, i);
    if (i % 11 == 10) MP_OK(tether_team_sync(t));
  }
  if (me == 0) std::printf("mp_coll_eager: %s: %d broadcasts OK\n", name, kRounds);
}

// One more eager broadcast and an allreduce on t must succeed everywhere.
void stillUsable(tether_team_t t, uint64_t round) {
  broadcastRound(t, round);
  allreduceRound(t, round);
}

void agreement(tether_team_t world) {
  const int last = npes - 1;
  std::memset(src, 7, 64);
  // count differs on the last PE: only it fails, naming the field.
  tether_status_t st = tether_team_broadcast_eager(world, dst, src, me == last ? 9 : 8, TETHER_UINT8, 0);
  if (me == last) {
    MP_EXPECT_STATUS(st, TETHER_ERR_MISMATCH);
    MP_MSG_HAS("count");
  } else {
    MP_OK(st);
  }
  stillUsable(world, 1000);
  // Everyone names the next member as root: every member waits on a member that is not root; all fail.
  st = tether_team_broadcast_eager(world, dst, src, 8, TETHER_UINT8, (me + 1) % npes);
  MP_EXPECT_STATUS(st, TETHER_ERR_MISMATCH);
  MP_MSG_HAS("root");
  stillUsable(world, 1001);
  // The last PE's root is outside the team: it fails alone.
  st = tether_team_broadcast_eager(world, dst, src, 8, TETHER_UINT8, me == last ? npes : 0);
  if (me == last) MP_EXPECT_STATUS(st, TETHER_ERR_INVALID_ARG);
  else MP_OK(st);
  stillUsable(world, 1002);
  // The root's src is not symmetric: its own error there, the root named on the others.
  char local[8] = {};
  st = tether_team_broadcast_eager(world, dst, me == 0 ? static_cast<void*>(local) : src, 8, TETHER_UINT8, 0);
  MP_CHECK(st != TETHER_SUCCESS);
  if (me != 0) {
    MP_EXPECT_STATUS(st, TETHER_ERR_INVALID_ARG);
    MP_MSG_HAS("the root");
  }
  stillUsable(world, 1003);
  if (me == 0) std::printf("mp_coll_eager: agreement OK\n");
}

// A correct eager alltoall of one long per member pair (after a team sync: OpenSHMEM's dest precondition).
void alltoallRound(tether_team_t t, long base) {
  long* s = reinterpret_cast<long*>(src);
  long* d = reinterpret_cast<long*>(dst);
  for (int j = 0; j < npes; ++j) s[j] = base + me * 100 + j;
  MP_OK(tether_team_sync(t));
  MP_OK(tether_team_alltoall_eager(t, d, s, 1, TETHER_LONG));
  for (int m = 0; m < npes; ++m) MP_CHECK(d[m] == base + m * 100 + me);
}

void eagerAlltoall(tether_team_t t) {
  const int last = npes - 1;
  alltoallRound(t, 0);
  MP_OK(tether_team_sync(t));
  tether_status_t st = tether_team_alltoall_eager(t, dst, src, me == last ? 2 : 1, TETHER_LONG);
  MP_EXPECT_STATUS(st, TETHER_ERR_MISMATCH);
  MP_MSG_HAS("count");
  stillUsable(t, 1010);
  alltoallRound(t, 1000000);
  MP_OK(tether_team_sync(t));
  st = me == 0 ? tether_team_alltoall(t, dst, src, 1, TETHER_LONG)
               : tether_team_alltoall_eager(t, dst, src, 1, TETHER_LONG);
  const char* setting = std::getenv("TETHER_COLL_EAGER_ALLTOALL");  // (the tests set 0 or 1; unset: 1)
  if (!setting || std::strcmp(setting, "0") != 0) MP_EXPECT_STATUS(st, TETHER_ERR_MISMATCH);
  else MP_OK(st);
  stillUsable(t, 1011);
  alltoallRound(t, 2000000);
  char local[64] = {};
  MP_OK(tether_team_sync(t));
  st = tether_team_alltoall_eager(t, dst, me == last ? static_cast<void*>(local) : src, 1, TETHER_LONG);
  MP_CHECK(st != TETHER_SUCCESS);
  if (me != last) MP_EXPECT_STATUS(st, TETHER_ERR_INVALID_ARG);
  stillUsable(t, 1012);
  alltoallRound(t, 3000000);
  MP_OK(tether_barrier_all(w));
  if (me == 0)
    std::printf("mp_coll_eager: eager alltoall OK (TETHER_COLL_EAGER_ALLTOALL=%s)\n", setting ? setting : "1");
}

void settingDiffers(tether_team_t t) {
  long* s = reinterpret_cast<long*>(src);
  long* d = reinterpret_cast<long*>(dst);
  for (int j = 0; j < npes; ++j) s[j] = me * 100 + j;
  MP_OK(tether_team_sync(t));
  const auto start = std::chrono::steady_clock::now();
  const tether_status_t st = tether_team_alltoall_eager(t, d, s, 1, TETHER_LONG);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MP_EXPECT_STATUS(st, TETHER_ERR_MISMATCH);
  MP_CHECK(secs < 5.0);  // TETHER_TIMEOUT is 30 s: detected, not timed out
  stillUsable(t, 1020);  // (rewrites src and dst)
  for (int j = 0; j < npes; ++j) s[j] = me * 100 + j;
  MP_OK(tether_team_sync(t));
  MP_OK(tether_team_alltoall(t, d, s, 1, TETHER_LONG));
  for (int m = 0; m < npes; ++m) MP_CHECK(d[m] == m * 100 + me);
  MP_OK(tether_barrier_all(w));
  if (me == 0)
    std::printf("mp_coll_eager: TETHER_COLL_EAGER_ALLTOALL different on PE 0: mismatch on all (%.3f s), OK\n", secs);
}

// PE 0: eager broadcast from team PE 1; the others: an allreduce. Every member fails fast; the team stays usable.
// Then PE 0 calls the agreed broadcast where the others call the eager one (root 0): every member fails.
void differentCollective(tether_team_t t) {
  const auto start = std::chrono::steady_clock::now();
  tether_status_t st;
  if (me == 0) {
    st = tether_team_broadcast_eager(t, dst, src, 8, TETHER_UINT8, 1);
  } else {
    red[0] = 1;
    st = tether_team_allreduce(t, red, red, 1, TETHER_LONG, TETHER_RED_SUM);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MP_EXPECT_STATUS(st, TETHER_ERR_MISMATCH);
  MP_CHECK(s < 5.0);  // TETHER_TIMEOUT is 30 s: detected, not timed out
  stillUsable(t, 1004);
  if (me == 0) st = tether_team_broadcast(t, dst, src, 8, TETHER_UINT8, 0);
  else st = tether_team_broadcast_eager(t, dst, src, 8, TETHER_UINT8, 0);
  MP_EXPECT_STATUS(st, TETHER_ERR_MISMATCH);
  stillUsable(t, 1005);
  MP_OK(tether_barrier_all(w));
  if (me == 0) std::printf("mp_coll_eager: different collective OK (%.3f s)\n", s);
}

}  // namespace

// Destroy with a slow reader (header comment).
void destroyWhileReading(tether_team_t world) {
  if (npes < 3) return;
  constexpr size_t kBytes = 1024;  // staged: the root returns before its members read
  constexpr uint64_t kFirst = 900001;
  tether_team_t pair = TETHER_TEAM_INVALID, trio = TETHER_TEAM_INVALID, again = TETHER_TEAM_INVALID;
  MP_OK(tether_team_split_strided(world, 0, 1, 2, nullptr, &pair));
  MP_OK(tether_team_split_strided(world, 0, 1, 3, nullptr, &trio));
  long wrong = 0;
  if (trio) {
    const int tme = tether_team_my_pe(trio), index = tether_team_index(trio);
    if (tme == 0)
      for (size_t k = 0; k < kBytes; ++k) src[k] = byteOf(kFirst, k);
    std::memset(dst, 0x5a, kBytes);
    if (tme == 2) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    MP_OK(tether_team_broadcast_eager(trio, dst, src, kBytes, TETHER_UINT8, 0));
    for (size_t k = 0; k < kBytes; ++k) wrong += dst[k] != byteOf(kFirst, k);
    MP_OK(tether_team_destroy(trio));  // on PEs 0 and 1: returns once PE 2 has read
    if (pair) {
      MP_OK(tether_team_split_strided(pair, 0, 1, 2, nullptr, &again));
      if (me == 0 && tether_team_index(again) != index)
        std::printf("destroy with a slow reader: note: the new team has index %d, not %d (no reuse to race)\n",
                    tether_team_index(again), index);
      for (uint64_t r = 1; r <= 8; ++r) {
        if (me == 0)
          for (size_t k = 0; k < kBytes; ++k) src[k] = byteOf(kFirst + r, k);
        MP_OK(tether_team_broadcast_eager(again, dst, src, kBytes, TETHER_UINT8, 0));
        for (size_t k = 0; k < kBytes; ++k) wrong += dst[k] != byteOf(kFirst + r, k);
      }
    }
  }
  if (wrong) std::fprintf(stderr, "PE %d: %ld bytes wrong (destroy with a slow reader)\n", me, wrong);
  MP_CHECK(wrong == 0);
  MP_OK(tether_barrier_all(w));
  MP_OK(tether_team_destroy(again));
  MP_OK(tether_team_destroy(pair));
  if (me == 0) std::printf("destroy with a slow reader: ok\n");
}

int main() {
  const bool settingOnPe0 = std::getenv("MP_EAGER_A2A_PE0") != nullptr;
  if (settingOnPe0 && std::getenv("TETHER_RANK") && std::strcmp(std::getenv("TETHER_RANK"), "0") == 0) {
    const char* others = std::getenv("TETHER_COLL_EAGER_ALLTOALL");  // (the tests set 0 or 1; unset: 1)
    setenv("TETHER_COLL_EAGER_ALLTOALL", others && std::strcmp(others, "0") == 0 ? "1" : "0", 1);
  }
  mp::init();
  w = mp::world();
  std::tie(me, npes) = std::make_pair(tether_my_pe(w), tether_n_pes(w));
  seed = mp::agreeSeed(w, "mp_coll_eager");
  src = static_cast<char*>(mp::hostZeroed(w, kMaxBytes));
  dst = static_cast<char*>(mp::hostZeroed(w, kMaxBytes + 64));
  red = static_cast<long*>(mp::hostZeroed(w, 64));
  MP_OK(tether_barrier_all(w));
  if (settingOnPe0) {
    settingDiffers(tether_team_world(w));
    return mp::finish();
  }
  tether_team_t world = tether_team_world(w);
  dataRounds(world, "world");
  tether_team_t even = TETHER_TEAM_INVALID, reversed = TETHER_TEAM_INVALID;
  MP_OK(tether_team_split_strided(world, 0, 2, (npes + 1) / 2, nullptr, &even));
  MP_OK(tether_team_split_strided(world, npes - 1, -1, npes, nullptr, &reversed));
  dataRounds(reversed, "reversed world");
  if (even) dataRounds(even, "even PEs");
  MP_OK(tether_barrier_all(w));
  agreement(world);
  differentCollective(world);
  eagerAlltoall(world);
  MP_OK(tether_team_destroy(even));
  MP_OK(tether_team_destroy(reversed));
  MP_OK(tether_barrier_all(w));
  destroyWhileReading(world);
  if (me == 0) std::printf("mp_coll_eager: OK (MP_SEED=%" PRIu64 ")\n", seed);
  return mp::finish();
}
