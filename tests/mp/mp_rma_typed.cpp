// Non-contiguous put/get (tether_put_typed & co.) between PEs over HOST segments, against the host reference:
// seeded random type trees (tests/datatype/random_types.h) paired with a type of equal packed size (contiguous bytes,
// a shuffled scatter of byte blocks, a resized twin), the random type on the remote side and on the local side, put
// and get, blocking and nbi + quiet; every target buffer is poisoned and compared whole (gaps and margins untouched);
// multi-fragment transfers (several MiB, typed to typed); error cases. Each PE puts to / gets from its right
// neighbour. Run with TETHER_DT_RMA=staged too (the staging route), and with MP_ON_STREAM=1: every transfer goes
// through tether_{put,get}_typed_on_stream on a CPU-emulated stream (core/stream_ops.h), issued with duplicated type
// handles that are freed before the stream runs, then the stream is synchronised. Seed: MP_SEED (printed), trees:
// MP_TREES.
#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "../datatype/random_types.h"
#include "core/stream_ops.h"
#include "mp_util.h"
#include "tether/datatype.h"
#include "typed_sides.h"

namespace {

constexpr int64_t kMaxSpan = 16 << 20;  // skip random pairs whose buffers would be larger
constexpr int64_t kMaxPacked = 4 << 20;

using typed_test::data;
using typed_test::expected;
using typed_test::packed;
using typed_test::poison;
using typed_test::Side;
using typed_test::side;

// MP_ON_STREAM=1: the emulated stream every transfer is enqueued on (null: blocking and nbi forms).
tether::StreamOps* streamOps = nullptr;
void* stream = nullptr;

tether_type_t dupCommitted(tether_type_t t) {
  tether_type_t d = nullptr;
  TK(tether_type_dup(t, &d));
  TK(tether_type_commit(d));
  return d;
}

// A stream-ordered staged transfer (TETHER_DT_RMA=staged, or a PE this PE does not map: another host) carries a table
// of the remote side's memory runs, at most this many (core/rma_typed.cpp kMaxStreamRuns, datatype.h); more are
// refused with TETHER_ERR_UNSUPPORTED.
constexpr int64_t kStreamRunCap = int64_t{1} << 20;
long refusedOnStream = 0;  // transfers this PE saw refused for the cap (printed at the end)

// The memory runs of a side: maximal ranges of consecutive bytes in pack order (as the library merges them).
int64_t runsOf(const Side& s) {
  const std::vector<int64_t> at = typed_test::placement(s);
  int64_t runs = at.empty() ? 0 : 1;
  for (size_t i = 1; i < at.size(); ++i) runs += at[i] != at[i - 1] + 1;
  return runs;
}

// Whether the stream form of a transfer with PE pe whose remote side is `remote` is refused for the run cap.
bool overRunCap(const void* sym, int pe, const Side& remote) {
  if (!stream) return false;
  const char* env = std::getenv("TETHER_DT_RMA");
  const bool staged = (env && std::string(env) == "staged") || !mp::mapped(sym, pe);
  return staged && runsOf(remote) > kStreamRunCap;
}

// The stream form of put (isPut) or get with handles of its own, freed as soon as the call returns (the stream must
// not need them), then the stream synchronised. refused: the call must fail with UNSUPPORTED (the run cap).
void onStream(bool isPut, void* dest, tether_type_t dt, int64_t dc, const void* src, tether_type_t st, int64_t sc,
              int pe, bool refused) {
  tether_t w = mp::world();
  tether_type_t d = dupCommitted(dt), s = dupCommitted(st);
  const tether_status_t rc =
      (isPut ? tether_put_typed_on_stream : tether_get_typed_on_stream)(w, dest, d, dc, src, s, sc, pe, stream);
  if (refused) {
    MP_EXPECT_STATUS(rc, TETHER_ERR_UNSUPPORTED);
    MP_MSG_HAS("memory runs");
    ++refusedOnStream;
  } else {
    MP_OK(rc);
  }
  tether_type_free(&d);
  tether_type_free(&s);
  const tether::Status done = streamOps->synchronize(stream);
  if (!done.isOk()) {
    std::fprintf(stderr, "FAIL: stream error: %s\n", done.message().c_str());
    std::exit(1);
  }
}

void check(const unsigned char* got, const std::vector<unsigned char>& want, const char* op, uint64_t seed,
           const std::string& text) {
  const std::string what = std::string(op) + " seed " + std::to_string(seed) + " type " + text;
  typed_test::compare(got, want, what.c_str());
}

// One put and one get of `local` <-> `remote` with the right neighbour; every PE calls it with the same types.
void exchange(const Side& remote, const Side& local, uint64_t seed, bool nbi, const std::string& text) {
  tether_t w = mp::world();
  const int me = tether_my_pe(w), n = tether_n_pes(w);
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  void* p = nullptr;
  MP_OK(tether_malloc_kind(w, TETHER_SEG_HOST, 64, static_cast<size_t>(remote.bytes()), &p));
  auto* sym = static_cast<unsigned char*>(p);
  std::vector<unsigned char> loc(static_cast<size_t>(local.bytes()));

  // put: my local data -> right neighbour's symmetric buffer.
  const std::vector<unsigned char> pz = poison(remote.bytes());
  std::copy(pz.begin(), pz.end(), sym);
  loc = data(local.bytes(), seed, me);
  MP_OK(tether_barrier_all(w));
  auto put = nbi ? tether_put_typed_nbi : tether_put_typed;
  // On a stream, a transfer over the run cap is refused: to the right (this PE's put) and from the left (what lands
  // here; same-host mapping is symmetric, so the left PE decides as overRunCap(sym, left) does here).
  const bool putRefused = overRunCap(sym, right, remote), leftRefused = overRunCap(sym, left, remote);
  if (stream)
    onStream(true, sym + remote.origin(), remote.type, remote.count, loc.data() + local.origin(), local.type,
             local.count, right, putRefused);
  else
    MP_OK(put(w, sym + remote.origin(), remote.type, remote.count, loc.data() + local.origin(), local.type,
              local.count, right));
  if (nbi) MP_OK(tether_quiet(w));
  MP_OK(tether_barrier_all(w));
  if (!leftRefused)
    check(sym, expected(local, data(local.bytes(), seed, left), remote), nbi ? "put_nbi" : "put", seed, text);
  MP_OK(tether_barrier_all(w));

  // get: right neighbour's symmetric data -> my local buffer.
  const std::vector<unsigned char> mine = data(remote.bytes(), seed + 1, me);
  std::copy(mine.begin(), mine.end(), sym);
  loc = poison(local.bytes());
  MP_OK(tether_barrier_all(w));
  auto get = nbi ? tether_get_typed_nbi : tether_get_typed;
  if (stream)
    onStream(false, loc.data() + local.origin(), local.type, local.count, sym + remote.origin(), remote.type,
             remote.count, right, putRefused);
  else
    MP_OK(get(w, loc.data() + local.origin(), local.type, local.count, sym + remote.origin(), remote.type,
              remote.count, right));
  if (nbi) MP_OK(tether_quiet(w));
  if (!putRefused)
    check(loc.data(), expected(remote, data(remote.bytes(), seed + 1, right), local), nbi ? "get_nbi" : "get", seed,
          text);
  MP_OK(tether_free(w, sym));  // collective: ends with a barrier
}

tether_type_t bytesType(int64_t n) {
  tether_type_t b = nullptr, t = nullptr;
  TK(tether_type_basic(TETHER_BASIC_BYTE, &b));
  TK(tether_type_contiguous(n, b, &t));
  TK(tether_type_commit(t));
  tether_type_free(&b);
  return t;
}

// n bytes as k blocks of random lengths placed at shuffled slots with random gaps (one instance).
tether_type_t scatterType(dt_test::Gen& g, int64_t n, std::string* text) {
  const int64_t k = std::min<int64_t>(n, g.uni(1, 64));
  std::vector<int64_t> cuts{0, n};
  for (int64_t i = 1; i < k; ++i) cuts.push_back(g.uni(0, n));
  std::sort(cuts.begin(), cuts.end());
  std::vector<int64_t> len, slot;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) len.push_back(cuts[i + 1] - cuts[i]);
  std::vector<size_t> order(len.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[static_cast<size_t>(g.uni(0, static_cast<int64_t>(i) - 1))]);
  std::vector<int64_t> displ(len.size());
  int64_t at = g.uni(-32, 32);  // may start below the origin
  for (size_t j : order) {
    displ[j] = at;
    at += len[j] + g.uni(0, 40);
  }
  tether_type_t b = nullptr, t = nullptr;
  TK(tether_type_basic(TETHER_BASIC_BYTE, &b));
  TK(tether_type_hindexed(static_cast<int64_t>(len.size()), len.data(), displ.data(), b, &t));
  TK(tether_type_commit(t));
  tether_type_free(&b);
  *text = "scatter(" + std::to_string(len.size()) + " blocks)";
  return t;
}

void randomPairs(uint64_t seed0, int trees) {
  int done = 0, skipped = 0;
  for (int it = 0; it < trees; ++it) {
    const uint64_t seed = seed0 * 1000003u + static_cast<uint64_t>(it);
    dt_test::Gen g(seed);
    std::string text;
    tether_type_t t = nullptr;
    try {
      t = g.make(static_cast<int>(g.uni(1, 4)), &text);
    } catch (const dt_test::Fail& f) {
      std::fprintf(stderr, "FAIL seed %" PRIu64 ": generator: %s\n", seed, f.msg.c_str());
      std::exit(1);
    }
    if (tether_type_commit(t) != TETHER_SUCCESS) {  // beyond the canonical size bound: same on every PE
      tether_type_free(&t);
      ++skipped;
      continue;
    }
    const int64_t count = g.uni(1, 3);
    Side a = side(t, count);
    const int64_t n = packed(a);
    if (n > kMaxPacked || a.bytes() > kMaxSpan) {
      tether_type_free(&t);
      ++skipped;
      continue;
    }
    std::string ptext;
    tether_type_t pt = nullptr;
    int64_t pcount = 1;
    switch (it % 3) {
      case 0: pt = bytesType(n); ptext = "bytes"; break;
      case 1: pt = scatterType(g, n, &ptext); break;
      default: {
        int64_t lb = 0, ext = 0;
        TK(tether_type_extent(t, &lb, &ext));
        TK(tether_type_resized(t, lb - 8 * g.uni(0, 2), ext + 8 * g.uni(0, 4), &pt));
        TK(tether_type_commit(pt));
        pcount = count;
        ptext = "resized twin";
      }
    }
    Side b = side(pt, pcount);
    const bool nbi = (it / 3) % 2 == 1;
    const std::string desc = text + " x" + std::to_string(count) + " <-> " + ptext;
    if (b.bytes() <= kMaxSpan) {
      exchange(a, b, seed, nbi, "remote " + desc);  // the random type on the symmetric side
      exchange(b, a, seed, !nbi, "local " + desc);  // and on the local side
      ++done;
    } else {
      ++skipped;
    }
    tether_type_free(&pt);
    tether_type_free(&t);
  }
  if (tether_my_pe(mp::world()) == 0) std::printf("random pairs: %d exchanged, %d skipped (size bounds)\n", done, skipped);
}

// Several MiB: typed-to-typed needs several staging fragments; one side contiguous packs straight into place.
void multiFragment(uint64_t seed) {
  const int64_t n = 5400000;
  tether_type_t b = nullptr, va = nullptr, vb = nullptr;
  TK(tether_type_basic(TETHER_BASIC_BYTE, &b));
  TK(tether_type_vector(5400, 1000, 1700, b, &va));  // 1000-byte blocks
  TK(tether_type_vector(18000, 300, 333, b, &vb));   // 300-byte blocks
  TK(tether_type_commit(va));
  TK(tether_type_commit(vb));
  tether_type_t c = bytesType(n);
  const Side A = side(va, 1), B = side(vb, 1), C = side(c, 1);
  MP_CHECK(packed(A) == n && packed(B) == n && packed(C) == n);
  exchange(A, B, seed + 11, false, "5.4 MB vector(1000/1700) <- vector(300/333)");
  exchange(B, A, seed + 12, true, "5.4 MB vector(300/333) <- vector(1000/1700)");
  exchange(B, C, seed + 13, false, "5.4 MB vector(300/333) <- bytes");
  exchange(C, A, seed + 14, true, "5.4 MB bytes <- vector(1000/1700)");
  tether_type_free(&b);
  tether_type_free(&va);
  tether_type_free(&vb);
  tether_type_free(&c);
  if (tether_my_pe(mp::world()) == 0) std::printf("multi-fragment transfers: ok\n");
}

void errors() {
  tether_t w = mp::world();
  const int me = tether_my_pe(w), n = tether_n_pes(w);
  const int right = (me + 1) % n;
  void* p = nullptr;
  MP_OK(tether_malloc_kind(w, TETHER_SEG_HOST, 64, 4096, &p));
  auto* sym = static_cast<unsigned char*>(p);
  std::vector<unsigned char> loc(4096);
  tether_type_t b16 = bytesType(16), b32 = bytesType(32);

  // Packed sizes differ: both named.
  MP_EXPECT_STATUS(tether_put_typed(w, sym, b16, 1, loc.data(), b16, 2, right), TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("packed sizes differ");
  MP_MSG_HAS("= 16 bytes");
  MP_MSG_HAS("= 32 bytes");
  MP_EXPECT_STATUS(tether_get_typed(w, loc.data(), b32, 1, sym, b16, 1, right), TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("packed sizes differ");
  // Equal packed sizes through different types and counts are fine.
  MP_OK(tether_put_typed(w, sym, b16, 2, loc.data(), b32, 1, right));
  MP_OK(tether_quiet(w));

  // The symmetric side must be symmetric, its whole true extent included.
  MP_EXPECT_STATUS(tether_put_typed(w, loc.data(), b16, 1, loc.data() + 16, b16, 1, right), TETHER_ERR_NOT_SYMMETRIC);
  MP_MSG_HAS("true extent");
  MP_EXPECT_STATUS(tether_get_typed(w, loc.data(), b16, 1, loc.data() + 16, b16, 1, right), TETHER_ERR_NOT_SYMMETRIC);
  tether_type_t byte = nullptr, far = nullptr, below = nullptr;
  TK(tether_type_basic(TETHER_BASIC_BYTE, &byte));
  TK(tether_type_vector(2, 1, int64_t{1} << 40, byte, &far));  // second byte 1 TiB further
  TK(tether_type_commit(far));
  MP_EXPECT_STATUS(tether_put_typed(w, sym, far, 1, loc.data(), b16, 0, right), TETHER_ERR_INVALID_ARG);  // 2 != 0
  tether_type_t b2 = bytesType(2);
  MP_EXPECT_STATUS(tether_put_typed(w, sym, far, 1, loc.data(), b2, 1, right), TETHER_ERR_NOT_SYMMETRIC);
  MP_EXPECT_STATUS(tether_get_typed(w, loc.data(), b2, 1, sym, far, 1, right), TETHER_ERR_NOT_SYMMETRIC);
  const int64_t one = 1, neg = -(int64_t{1} << 40);
  TK(tether_type_hindexed(1, &one, &neg, byte, &below));  // 1 TiB below the address: negative true lb
  TK(tether_type_commit(below));
  tether_type_t b1 = bytesType(1);
  MP_EXPECT_STATUS(tether_put_typed(w, sym, below, 1, loc.data(), b1, 1, right), TETHER_ERR_NOT_SYMMETRIC);
  MP_EXPECT_STATUS(tether_get_typed_nbi(w, loc.data(), b1, 1, sym, below, 1, right), TETHER_ERR_NOT_SYMMETRIC);

  // The local side's bytes too must be addressable: 3 bytes 2^62 apart reach past int64 (checked before the local
  // buffer is classified or touched).
  tether_type_t spread = nullptr;
  TK(tether_type_resized(byte, 0, int64_t{1} << 62, &spread));
  TK(tether_type_commit(spread));
  tether_type_t b3 = bytesType(3);
  MP_EXPECT_STATUS(tether_put_typed(w, sym, b3, 1, loc.data(), spread, 3, right), TETHER_ERR_OVERFLOW);
  MP_MSG_HAS("3 x src_type");
  MP_EXPECT_STATUS(tether_get_typed(w, loc.data(), spread, 3, sym, b3, 1, right), TETHER_ERR_OVERFLOW);
  MP_MSG_HAS("3 x dest_type");

  // PE, types, counts, buffers.
  MP_EXPECT_STATUS(tether_put_typed(w, sym, b16, 1, loc.data(), b16, 1, n), TETHER_ERR_INVALID_PE);
  MP_EXPECT_STATUS(tether_get_typed(w, loc.data(), b16, 1, sym, b16, 1, -1), TETHER_ERR_INVALID_PE);
  tether_type_t unc = nullptr;
  TK(tether_type_contiguous(16, byte, &unc));
  MP_EXPECT_STATUS(tether_put_typed(w, sym, unc, 1, loc.data(), b16, 1, right), TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("dest_type is not committed");
  MP_EXPECT_STATUS(tether_get_typed(w, loc.data(), b16, 1, sym, unc, 1, right), TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("src_type is not committed");
  MP_EXPECT_STATUS(tether_put_typed(w, sym, nullptr, 1, loc.data(), b16, 1, right), TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("dest_type is NULL");
  MP_EXPECT_STATUS(tether_put_typed(w, sym, b16, -1, loc.data(), b16, 1, right), TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("dest_count is negative");
  MP_EXPECT_STATUS(tether_put_typed(w, sym, b16, 1, nullptr, b16, 1, right), TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("src is NULL");
  MP_EXPECT_STATUS(tether_get_typed(w, nullptr, b16, 1, sym, b16, 1, right), TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("dest is NULL");
  MP_EXPECT_STATUS(tether_put_typed(nullptr, sym, b16, 1, loc.data(), b16, 1, right), TETHER_ERR_INVALID_ARG);
  // Zero bytes: a no-op, even with a NULL local buffer.
  MP_OK(tether_put_typed(w, sym, b16, 0, nullptr, b32, 0, right));
  MP_OK(tether_get_typed_nbi(w, nullptr, b16, 0, sym, b32, 0, right));
  MP_OK(tether_quiet(w));

  // The route query: the transfer's checks and route, nothing moved. HOST segments of same-host PEs with host local
  // buffers: the CPU route, or staged when forced; "none" for 0 bytes.
  const char* env = std::getenv("TETHER_DT_RMA");
  // A PE reached over the network (not mapped here, in a mixed job too): staged (packed here, one transport put/get).
  const std::string want = (env && std::string(env) == "staged") || !mp::mapped(sym, right) ? "staged" : "direct (CPU)";
  const char* r = nullptr;
  MP_OK(tether_barrier_all(w));  // the earlier puts into sym have landed
  std::fill(sym, sym + 64, 0x5A);
  MP_OK(tether_barrier_all(w));
  MP_OK(tether_typed_route(w, 1, sym, b16, 2, loc.data(), b32, 1, right, &r));
  MP_CHECK(r && want == r);
  MP_OK(tether_typed_route(w, 0, loc.data(), b32, 1, sym, b16, 2, right, &r));
  MP_CHECK(r && want == r);
  MP_OK(tether_typed_route(w, 1, sym, b16, 0, nullptr, b32, 0, right, &r));
  MP_CHECK(r && std::string(r) == "none");
  MP_EXPECT_STATUS(tether_typed_route(w, 1, sym, b16, 1, loc.data(), b16, 2, right, &r), TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("packed sizes differ");
  MP_EXPECT_STATUS(tether_typed_route(w, 0, loc.data(), b16, 1, loc.data(), b16, 1, right, &r),
                   TETHER_ERR_NOT_SYMMETRIC);
  MP_EXPECT_STATUS(tether_typed_route(w, 1, sym, b16, 1, loc.data(), b16, 1, right, nullptr), TETHER_ERR_INVALID_ARG);
  MP_MSG_HAS("route is NULL");
  MP_OK(tether_barrier_all(w));
  for (int i = 0; i < 64; ++i) MP_CHECK(sym[i] == 0x5A);  // the queries wrote nothing

  for (tether_type_t* t : {&b16, &b32, &byte, &far, &below, &b2, &b1, &spread, &b3, &unc}) tether_type_free(t);
  MP_OK(tether_free(w, sym));
  if (me == 0) std::printf("error cases: ok\n");
}

}  // namespace

int main() {
  mp::init();
  tether_t w = mp::world();
  const int me = tether_my_pe(w);
  MP_CHECK(tether_n_pes(w) >= 2);
  const char* s = std::getenv("MP_SEED");
  const uint64_t seed = s ? std::strtoull(s, nullptr, 10) : 2026;
  const char* tr = std::getenv("MP_TREES");
  const int trees = tr ? std::atoi(tr) : 60;
  const char* route = std::getenv("TETHER_DT_RMA");
  const char* os = std::getenv("MP_ON_STREAM");
  if (os && std::atoi(os) == 1) {
    std::unique_ptr<tether::StreamOps> ops = tether::createCpuStreamOps(60);
    streamOps = ops.get();
    MP_CHECK(tether::useStreamOpsForTesting(w, std::move(ops)).isOk());
    MP_CHECK(streamOps->createStream(&stream).isOk());
  }
  if (me == 0)
    std::printf("seed %" PRIu64 " trees %d route %s%s\n", seed, trees, route ? route : "auto",
                stream ? ", on a CPU-emulated stream" : "");
  errors();
  randomPairs(seed, trees);
  multiFragment(seed);
  if (stream)
    std::printf("PE %d: %ld stream transfers refused for more than %" PRId64 " memory runs (staged route)\n", me,
                refusedOnStream, kStreamRunCap);
  return mp::finish();
}
