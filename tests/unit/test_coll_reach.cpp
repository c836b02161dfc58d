// CollReach (core/coll_reach.h) alone, over fake members in one process: each member's HOST and DEVICE "segments"
// are byte arrays; a chosen subset of members is load/store mapped, the others are reached by gets (one at a time or
// in batches, recorded). Checked: Gets copies mapped bytes at once, fetches DEVICE bytes at once and writes a queued
// destination only at finish() (one batch); reduceSlice's result against a reference combined in team order (random
// team sizes, mapped subsets, types, ops, offsets and lengths over several chunks; prints its seed), its batches (one
// per window of kGetWindow members and chunk, only where some member is not mapped), in place on this PE's own
// elements, into DEVICE memory (a local put per chunk), and a failed batch passed on with the call's name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "core/coll_reach.h"
#include "core/reduce_ops.h"
#include "test_seed.h"

namespace tether {
namespace {

class FakeMembers {
 public:
  FakeMembers(int n, size_t bytes, std::set<int> mapped) : mapped_(std::move(mapped)) {
    host.assign(static_cast<size_t>(n), std::vector<char>(bytes));
    device.assign(static_cast<size_t>(n), std::vector<char>(bytes));
  }
  CollReach::Links links() {
    CollReach::Links l;
    l.mapped = [this](int pe, const SymRef& ref) -> char* {
      if (ref.kind == SegKind::Device || !mapped_.count(pe)) return nullptr;
      return host[static_cast<size_t>(pe)].data() + ref.offset;
    };
    l.get = [this](int pe, void* dst, const SymRef& ref, size_t bytes) {
      ++gets;
      std::memcpy(dst, seg(pe, ref), bytes);
      return Status::ok();
    };
    l.getAll = [this](const std::vector<CollReach::Fetch>& batch) {
      batches.push_back(batch.size());
      if (failBatches) return Status(TETHER_ERR_UNREACHABLE, "peer gone");
      for (const CollReach::Fetch& f : batch) {
        EXPECT_FALSE(f.ref.kind == SegKind::Device) << "DEVICE bytes are fetched at once, not batched";
        EXPECT_FALSE(mapped_.count(f.pe)) << "mapped bytes are read in place, not fetched";
        std::memcpy(f.dst, seg(f.pe, f.ref), f.bytes);
      }
      return Status::ok();
    };
    l.putDevice = [this](const char*, void* dst, const void* src, size_t bytes) {
      ++puts;
      std::memcpy(dst, src, bytes);
      return Status::ok();
    };
    return l;
  }
  const char* seg(int pe, const SymRef& ref) const {
    const auto& s = ref.kind == SegKind::Device ? device : host;
    return s[static_cast<size_t>(pe)].data() + ref.offset;
  }

  std::vector<std::vector<char>> host, device;
  std::vector<size_t> batches;  // the size of each getAll batch, in order
  int gets = 0, puts = 0;
  bool failBatches = false;

 private:
  std::set<int> mapped_;
};

TEST(CollReach, GetsCopyMappedAndDeviceBytesAtOnceAndQueueTheRestUntilFinish) {
  FakeMembers m(3, 64, {0});  // member 0 mapped; 1 and 2 reached by gets
  for (size_t pe = 0; pe < 3; ++pe) {
    std::fill(m.host[pe].begin(), m.host[pe].end(), static_cast<char>(10 + pe));
    std::fill(m.device[pe].begin(), m.device[pe].end(), static_cast<char>(20 + pe));
  }
  CollReach r;
  r.attach(m.links());
  char a[8] = {}, b[8] = {}, c[8] = {}, d[8] = {};
  CollReach::Gets gets(r, "test");
  ASSERT_TRUE(gets.add(a, 0, SymRef{SegKind::Host, 8}, 8).isOk());
  EXPECT_EQ(a[0], 10);  // mapped: copied at once
  ASSERT_TRUE(gets.add(b, 1, SymRef{SegKind::Device, 8}, 8).isOk());
  EXPECT_EQ(b[0], 21);  // DEVICE: one blocking get at once
  EXPECT_EQ(m.gets, 1);
  ASSERT_TRUE(gets.add(c, 1, SymRef{SegKind::Host, 0}, 8).isOk());
  ASSERT_TRUE(gets.add(d, 2, SymRef{SegKind::Static, 0}, 8).isOk());
  ASSERT_TRUE(gets.add(d, 2, SymRef{SegKind::Host, 0}, 0).isOk());  // nothing to fetch: not queued
  EXPECT_EQ(c[0], 0);  // queued: written only at finish
  EXPECT_EQ(d[0], 0);
  EXPECT_TRUE(m.batches.empty());
  ASSERT_TRUE(gets.finish().isOk());
  EXPECT_EQ(c[0], 11);
  EXPECT_EQ(d[0], 12);
  ASSERT_EQ(m.batches.size(), 1u);
  EXPECT_EQ(m.batches[0], 2u);  // both queued gets in one batch
  ASSERT_TRUE(gets.finish().isOk());  // an empty finish posts nothing
  EXPECT_EQ(m.batches.size(), 1u);
}

TEST(CollReach, AFailedBatchIsReturnedWithTheCallsName) {
  FakeMembers m(2, 64, {});
  m.failBatches = true;
  CollReach r;
  r.attach(m.links());
  char a[8];
  CollReach::Gets gets(r, "tether_team_allgather");
  ASSERT_TRUE(gets.add(a, 1, SymRef{SegKind::Host, 0}, 8).isOk());
  const Status s = gets.finish();
  EXPECT_EQ(s.code(), TETHER_ERR_UNREACHABLE);
  EXPECT_NE(s.message().find("tether_team_allgather: peer gone"), std::string::npos) << s.message();
  // reduceSlice passes it on.
  CollPlan p;
  p.a.type = TETHER_INT64;
  p.a.op = TETHER_RED_SUM;
  p.n = 2;
  p.es = 8;
  p.sref = SymRef{SegKind::Host, 0};
  p.a.src = m.host[0].data();
  int64_t out[4];
  EXPECT_EQ(r.reduceSlice("tether_team_allreduce", {0, 1}, 0, p, 0, 4, reinterpret_cast<char*>(out), false).code(),
            TETHER_ERR_UNREACHABLE);
}

// The reference: out[i] = member 0's op member 1's op ... (team order), elements [srcElem, srcElem + len).
template <class T>
std::vector<T> reference(const FakeMembers& m, const std::vector<int>& pes, tether_dtype_t type, tether_red_op_t op,
                         uint64_t srcOff, size_t srcElem, size_t len) {
  std::vector<T> acc(len);
  std::memcpy(acc.data(), m.seg(pes[0], SymRef{SegKind::Host, srcOff + srcElem * sizeof(T)}), len * sizeof(T));
  for (size_t k = 1; k < pes.size(); ++k)
    reduceInto(type, op, acc.data(), m.seg(pes[k], SymRef{SegKind::Host, srcOff + srcElem * sizeof(T)}), len);
  return acc;
}

// One random reduction: team of n members (world PEs in a shuffled order), a random mapped subset, this PE a random
// member. Returns the number of batches the reference count predicts and checks the bits.
template <class T>
void randomReduction(std::mt19937_64& rng, tether_dtype_t type, tether_red_op_t op, bool outDevice) {
  const int n = 1 + static_cast<int>(rng() % 9);
  const size_t chunk = CollReach::kChunkBytes / sizeof(T);
  const size_t len = 1 + rng() % (3 * chunk), srcElem = rng() % 100, srcOff = 64 * (rng() % 4);
  const size_t bytes = srcOff + (srcElem + len) * sizeof(T);
  std::vector<int> pes(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) pes[static_cast<size_t>(k)] = k;
  std::shuffle(pes.begin(), pes.end(), rng);
  std::set<int> mapped;
  for (int k = 0; k < n; ++k)
    if (rng() % 2) mapped.insert(k);
  const int myPe = pes[rng() % static_cast<size_t>(n)];
  mapped.insert(myPe);  // this PE's own HOST memory is always mapped here
  FakeMembers m(n, bytes, mapped);
  // Integers: small values; floating point: full mantissas over a few magnitudes, so that another combining order
  // gives other bits.
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (auto& h : m.host)
    for (size_t i = 0; i + sizeof(T) <= h.size(); i += sizeof(T)) {
      const T v = std::is_integral<T>::value ? static_cast<T>(static_cast<int64_t>(rng() % 2001) - 1000)
                                             : static_cast<T>(unit(rng) * std::pow(10.0, static_cast<int>(rng() % 5)));
      std::memcpy(h.data() + i, &v, sizeof v);
    }
  CollReach r;
  r.attach(m.links());
  CollPlan p;
  p.a.type = type;
  p.a.op = op;
  p.n = static_cast<size_t>(n);
  p.es = sizeof(T);
  p.sref = SymRef{SegKind::Host, srcOff};
  p.a.src = m.host[static_cast<size_t>(myPe)].data() + srcOff;
  const std::vector<T> want = reference<T>(m, pes, type, op, srcOff, srcElem, len);
  std::vector<T> out(len, static_cast<T>(-1));
  ASSERT_TRUE(r.reduceSlice("test", pes, myPe, p, srcElem, len, reinterpret_cast<char*>(out.data()), outDevice).isOk());
  ASSERT_EQ(std::memcmp(out.data(), want.data(), len * sizeof(T)), 0)
      << "n " << n << " len " << len << " srcElem " << srcElem << " myPe " << myPe << " mapped " << mapped.size();
  // One batch per (chunk, window of members) holding a member that is not mapped; never more than a window's worth.
  size_t windowsFetching = 0;
  for (size_t k0 = 0; k0 < p.n; k0 += CollReach::kGetWindow)
    for (size_t k = k0; k < std::min(p.n, k0 + CollReach::kGetWindow); ++k)
      if (!mapped.count(pes[k])) {
        ++windowsFetching;
        break;
      }
  const size_t chunks = (len + chunk - 1) / chunk;
  EXPECT_EQ(m.batches.size(), chunks * windowsFetching);
  for (size_t b : m.batches) EXPECT_LE(b, CollReach::kGetWindow);
  EXPECT_EQ(m.puts, outDevice ? static_cast<int>(chunks) : 0);  // DEVICE out: one local put per chunk
}

TEST(CollReach, ReduceSliceMatchesATeamOrderReference) {
  std::mt19937_64 rng(testSeed("CollReach.ReduceSliceMatchesATeamOrderReference"));
  for (int i = 0; i < 40; ++i) {
    randomReduction<int64_t>(rng, TETHER_INT64, TETHER_RED_SUM, i % 4 == 0);
    randomReduction<int32_t>(rng, TETHER_INT32, TETHER_RED_MAX, false);
    randomReduction<double>(rng, TETHER_DOUBLE, TETHER_RED_SUM, i % 4 == 1);  // order-sensitive in general
    randomReduction<float>(rng, TETHER_FLOAT, TETHER_RED_PROD, false);
    if (HasFatalFailure()) return;
  }
}

TEST(CollReach, ReduceSliceInPlaceOnThisPesOwnElements) {
  for (size_t n : {1, 2, 3, 6}) {
    for (size_t me = 0; me < n; ++me) {
      const size_t len = CollReach::kChunkBytes / 8 + 100;  // two chunks: the second is read after the first is written
      std::set<int> mapped;
      for (size_t k = 0; k < n; ++k) mapped.insert(static_cast<int>(k));
      mapped.erase(1);  // member 1 (where there is one) by gets
      mapped.insert(static_cast<int>(me));
      FakeMembers m(static_cast<int>(n), len * 8, mapped);
      for (size_t k = 0; k < n; ++k)
        for (size_t i = 0; i < len; ++i) {
          const int64_t v = static_cast<int64_t>(1000 * k + i);
          std::memcpy(m.host[k].data() + i * 8, &v, 8);
        }
      std::vector<int> pes;
      for (size_t k = 0; k < n; ++k) pes.push_back(static_cast<int>(k));
      CollReach r;
      r.attach(m.links());
      CollPlan p;
      p.a.type = TETHER_INT64;
      p.a.op = TETHER_RED_SUM;
      p.n = n;
      p.es = 8;
      p.sref = SymRef{SegKind::Host, 0};
      p.a.src = m.host[me].data();
      char* out = m.host[me].data();  // this PE (member me) reduces into its own src
      ASSERT_TRUE(r.reduceSlice("test", pes, static_cast<int>(me), p, 0, len, out, false).isOk());
      for (size_t i = 0; i < len; ++i) {
        int64_t want = 0, got = 0;
        for (size_t k = 0; k < n; ++k) want += static_cast<int64_t>(1000 * k + i);
        std::memcpy(&got, out + i * 8, 8);
        ASSERT_EQ(got, want) << "n " << n << " me " << me << " element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace tether
