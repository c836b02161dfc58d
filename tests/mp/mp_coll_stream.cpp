// The stream-ordered team collectives (tether_team_*_on_stream, issue #21) through the CPU stream emulation (an
// emulated stream is a worker thread; the collectives run there as the device forms with the CPU handle), on HOST
// memory at 2/3/4/8 PEs: the world team, the even PEs and the world reversed; every operation, in place and not,
// several collectives enqueued back to back before one synchronize (stream order), interleaved with a stream put
// that must see the reduced data; HALF and BFLOAT16 sums and maxima (exact for the small integers used); the local
// errors at the call (bad root, overlap, bad op, bad handle); broadcasts from every root, in place and not, on the
// world and the reversed world.
// Seed: MP_SEED (default 1), printed.
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "coll_ref.h"
#include "core/stream_ops.h"
#include "mp_util.h"

namespace dev = tether::device;
using dev::RedOp;

namespace {

tether_t w;
int me, npes;
uint64_t seed;
tether::StreamOps* so = nullptr;
void* stream = nullptr;
constexpr size_t kBytes = 64 * 1024;
char* bufA;
char* bufB;
char* bufC;

void sync() {
  const tether::Status st = so->synchronize(stream);
  if (!st.isOk()) mp::fail(__FILE__, __LINE__, "stream", st.message().c_str());
}

template <typename T>
T input(uint64_t c, int m, size_t i) {
  return coll_ref::input<T>(seed, c, m, i);
}

[[noreturn]] void bad(const char* what, uint64_t c, size_t i) {
  char msg[160];
  std::snprintf(msg, sizeof msg, "%s case %" PRIu64 " element %zu wrong (MP_SEED=%" PRIu64 ")", what, c, i, seed);
  mp::fail(__FILE__, __LINE__, "stream team collective", msg);
}

void onTeam(tether_team_t team, const char* label) {
  const int n = tether_team_n_pes(team), my = tether_team_my_pe(team);
  using T = int64_t;
  T* a = reinterpret_cast<T*>(bufA);
  T* b = reinterpret_cast<T*>(bufB);
  T* c3 = reinterpret_cast<T*>(bufC);
  const size_t count = 300;  // n * count * 8 <= kBytes for n <= 8... and per-member blocks below
  const size_t per = kBytes / sizeof(T) / static_cast<size_t>(n) / 2;
  // Case inputs: 1 allreduce (a -> b), 2 broadcast (c3 -> c3 in place, root n-1), 3 reduce (a+count.. -> root),
  // 4 allgather, 5 reduce_scatter, 6 alltoall: enqueued back to back, one synchronize.
  for (size_t i = 0; i < count; ++i) a[i] = input<T>(1, my, i);
  for (size_t i = 0; i < count; ++i) c3[i] = input<T>(2, my, i);
  MP_OK(tether_team_sync_on_stream(team, stream));
  MP_OK(tether_team_allreduce_on_stream(team, b, a, count, TETHER_INT64, TETHER_RED_SUM, stream));
  MP_OK(tether_team_broadcast_on_stream(team, c3, c3, count, TETHER_INT64, n - 1, stream));
  MP_OK(tether_team_allreduce_on_stream(team, a, a, count, TETHER_INT64, TETHER_RED_MAX, stream));  // in place
  sync();
  for (size_t i = 0; i < count; ++i) {
    T sum = input<T>(1, 0, i), mx = sum;
    for (int m = 1; m < n; ++m) {
      sum = coll_ref::combine(RedOp::Sum, sum, input<T>(1, m, i));
      mx = coll_ref::combine(RedOp::Max, mx, input<T>(1, m, i));
    }
    if (b[i] != sum) bad("allreduce sum", 1, i);
    if (a[i] != mx) bad("allreduce max in place", 1, i);
    if (c3[i] != input<T>(2, n - 1, i)) bad("broadcast in place", 2, i);
  }
  // reduce to root 0, then a stream put of the result from the root to the next member: stream order makes the put
  // carry the reduced values.
  for (size_t i = 0; i < count; ++i) a[i] = input<T>(3, my, i);
  std::memset(b, 0x5a, count * sizeof(T));
  MP_OK(tether_team_reduce_on_stream(team, b, a, count, TETHER_INT64, TETHER_RED_XOR, 0, stream));
  MP_OK(tether_team_sync_on_stream(team, stream));  // c3 of every member is free before the root's put lands
  if (my == 0 && n > 1)
    MP_OK(tether_putmem_on_stream(w, c3, b, count * sizeof(T), tether_team_world_pe(team, 1), stream));
  MP_OK(tether_team_sync_on_stream(team, stream));
  sync();
  for (size_t i = 0; i < count; ++i) {
    T x = input<T>(3, 0, i);
    for (int m = 1; m < n; ++m) x = coll_ref::combine(RedOp::Xor, x, input<T>(3, m, i));
    if (my == 0 && b[i] != x) bad("reduce at root", 3, i);
    if (my == 1 && c3[i] != x) bad("put of the reduced data after reduce on the stream", 3, i);
    if (my != 0 && b[i] != static_cast<T>(0x5a5a5a5a5a5a5a5aull)) bad("reduce left non-root dest", 3, i);
  }
  // allgather (in place), reduce_scatter (not), alltoall.
  for (size_t i = 0; i < per; ++i) b[static_cast<size_t>(my) * per + i] = input<T>(4, my, i);
  for (size_t i = 0; i < per * static_cast<size_t>(n); ++i) a[i] = input<T>(5, my, i);
  MP_OK(tether_team_allgather_on_stream(team, b, b + static_cast<size_t>(my) * per, per, TETHER_INT64, stream));
  MP_OK(tether_team_reduce_scatter_on_stream(team, c3, a, per, TETHER_INT64, TETHER_RED_PROD, stream));
  sync();
  for (int m = 0; m < n; ++m)
    for (size_t i = 0; i < per; ++i)
      if (b[static_cast<size_t>(m) * per + i] != input<T>(4, m, i)) bad("allgather in place", 4, i);
  for (size_t i = 0; i < per; ++i) {
    const size_t e = static_cast<size_t>(my) * per + i;
    T x = input<T>(5, 0, e);
    for (int m = 1; m < n; ++m) x = coll_ref::combine(RedOp::Prod, x, input<T>(5, m, e));
    if (c3[i] != x) bad("reduce_scatter", 5, i);
  }
  for (size_t i = 0; i < per * static_cast<size_t>(n); ++i) a[i] = input<T>(6, my, i);
  MP_OK(tether_team_alltoall_on_stream(team, b, a, per, TETHER_INT64, stream));
  sync();
  for (int m = 0; m < n; ++m)
    for (size_t i = 0; i < per; ++i)
      if (b[static_cast<size_t>(m) * per + i] != input<T>(6, m, static_cast<size_t>(my) * per + i))
        bad("alltoall", 6, i);
  MP_OK(tether_team_sync_on_stream(team, stream));
  sync();
  if (my == 0) std::printf("PE %d: %s (%d PEs): stream team collectives OK\n", me, label, n);
}

// HALF and BFLOAT16 allreduce (sum, max) on the stream: inputs are small integers, so every partial sum is exact
// and the result must equal the float sum rounded once.
template <typename H>
void narrowFloats(tether_team_t team, tether_dtype_t type, const char* name) {
  const int n = tether_team_n_pes(team), my = tether_team_my_pe(team);
  const size_t count = 333;
  H* a = reinterpret_cast<H*>(bufA);
  H* b = reinterpret_cast<H*>(bufB);
  for (tether_red_op_t op : {TETHER_RED_SUM, TETHER_RED_MAX}) {
    const uint64_t c = 100 + static_cast<uint64_t>(op);
    for (size_t i = 0; i < count; ++i) a[i] = H::narrow(input<float>(c, my, i));
    MP_OK(tether_team_allreduce_on_stream(team, b, a, count, type, op, stream));
    sync();
    for (size_t i = 0; i < count; ++i) {
      float want = input<float>(c, 0, i);
      for (int m = 1; m < n; ++m) {
        const float x = input<float>(c, m, i);
        want = op == TETHER_RED_SUM ? want + x : (x > want ? x : want);
      }
      if (b[i].bits != H::narrow(want).bits) bad(name, c, i);
    }
  }
}

// Broadcasts from every root, 1 to 3000 longs, into dest or in place (every member's dest is its src), each checked
// with the longs after dest (untouched) and, not in place, the root's src (untouched). Across hosts (netns) they go by
// host (core/collectives.h: on the root's host, between the hosts' first members, on each other host).
void broadcasts(tether_team_t team, const char* label) {
  const int n = tether_team_n_pes(team), my = tether_team_my_pe(team);
  using T = int64_t;
  T* src = reinterpret_cast<T*>(bufA);
  T* dest = reinterpret_cast<T*>(bufB);
  constexpr size_t kGuard = 8;
  const T guard = static_cast<T>(0x6b6b6b6b6b6b6b6bull);
  uint64_t c = 200;
  for (int root = 0; root < n; ++root)
    for (size_t count : {size_t{1}, size_t{300}, size_t{3000}})
      for (bool inPlace : {false, true}) {
        ++c;
        T* from = inPlace ? dest : src;
        for (size_t i = 0; i < count; ++i) from[i] = input<T>(c, my, i);
        if (!inPlace)
          for (size_t i = 0; i < count; ++i) dest[i] = guard;
        for (size_t i = count; i < count + kGuard; ++i) dest[i] = guard;
        MP_OK(tether_team_sync_on_stream(team, stream));  // every member's dest is ready before the broadcast
        MP_OK(tether_team_broadcast_on_stream(team, dest, from, count, TETHER_INT64, root, stream));
        MP_OK(tether_team_sync_on_stream(team, stream));  // the others are done reading before the next case
        sync();
        for (size_t i = 0; i < count; ++i)
          if (dest[i] != input<T>(c, root, i)) bad(inPlace ? "broadcast in place" : "broadcast", c, i);
        for (size_t i = count; i < count + kGuard; ++i)
          if (dest[i] != guard) bad("broadcast wrote past dest", c, i);
        if (!inPlace && my == root)
          for (size_t i = 0; i < count; ++i)
            if (src[i] != input<T>(c, my, i)) bad("broadcast changed the root's src", c, i);
      }
  if (my == 0) std::printf("PE %d: %s (%d PEs): stream broadcasts from every root OK\n", me, label, n);
}

void errors() {
  tether_team_t world = tether_team_world(w);
  MP_EXPECT_STATUS(tether_team_broadcast_on_stream(world, bufB, bufA, 4, TETHER_INT64, npes, stream),
                   TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("root");
  MP_EXPECT_STATUS(tether_team_alltoall_on_stream(world, bufA, bufA, 4, TETHER_INT64, stream), TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("overlap");
  MP_EXPECT_STATUS(tether_team_sync_on_stream(TETHER_TEAM_INVALID, stream), TETHER_ERR_INVALID_ARG);
  int badOp = 42;
  tether_red_op_t op;
  std::memcpy(&op, &badOp, sizeof op);
  MP_EXPECT_STATUS(tether_team_allreduce_on_stream(world, bufB, bufA, 4, TETHER_INT64, op, stream),
                   TETHER_ERR_INVALID_ARG);
  // Nothing was enqueued by the failed calls: the stream still works.
  MP_OK(tether_team_sync_on_stream(world, stream));
  sync();
  if (me == 0) std::printf("PE 0: stream errors OK\n");
}

}  // namespace

int main() {
  mp::init();
  w = mp::world();
  std::tie(me, npes) = std::make_pair(tether_my_pe(w), tether_n_pes(w));
  seed = coll_ref::seedFromEnv("mp_coll_stream", me);
  {
    std::unique_ptr<tether::StreamOps> ops = tether::createCpuStreamOps(60);
    so = ops.get();
    MP_CHECK(tether::useStreamOpsForTesting(w, std::move(ops)).isOk());
  }
  MP_CHECK(so->createStream(&stream).isOk());
  bufA = static_cast<char*>(mp::hostZeroed(w, kBytes));
  bufB = static_cast<char*>(mp::hostZeroed(w, kBytes));
  bufC = static_cast<char*>(mp::hostZeroed(w, kBytes));
  MP_OK(tether_barrier_all(w));
  tether_team_t world = tether_team_world(w), even = TETHER_TEAM_INVALID, reversed = TETHER_TEAM_INVALID;
  MP_OK(tether_team_split_strided(world, 0, 2, (npes + 1) / 2, nullptr, &even));
  MP_OK(tether_team_split_strided(world, npes - 1, -1, npes, nullptr, &reversed));
  onTeam(world, "world");
  broadcasts(world, "world");
  narrowFloats<dev::Half>(world, TETHER_HALF, "half allreduce");
  narrowFloats<dev::BFloat16>(world, TETHER_BFLOAT16, "bfloat16 allreduce");
  if (even) onTeam(even, "even PEs");
  MP_OK(tether_barrier_all(w));
  onTeam(reversed, "reversed world");
  broadcasts(reversed, "reversed world");
  MP_OK(tether_barrier_all(w));
  errors();
  MP_OK(tether_team_destroy(even));
  MP_OK(tether_team_destroy(reversed));
  MP_CHECK(so->destroyStream(stream).isOk());
  MP_OK(tether_barrier_all(w));
  return mp::finish();
}
