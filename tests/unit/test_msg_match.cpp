// Two-sided matching (core/msg_match.h) against its contract: receives taken in posting order, messages in arrival
// order, wildcards, O(1) unlink anywhere; an unexpected eager message's bytes held in the node, the pool or the heap
// and the pool's ranges back (coalesced) when the message is taken and dropped; and a random stream of arrivals,
// posts and withdrawals matched exactly as a plain reference of MPI's rules matches them (prints its seed; set
// TETHER_TEST_SEED to repeat one).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/msg_match.h"
#include "test_seed.h"

namespace tether {
namespace {

struct Recv {  // what PostedQueue needs of a request
  int id = 0;
  int pe = 0, tag = 0;
  bool inPosted = false;
  Recv* prevPosted = nullptr;
  Recv* nextPosted = nullptr;
};

struct Meta {
  int announce = 0;
};

TEST(MsgMatch, PostedInOrderWithWildcards) {
  std::vector<Recv> r(5);
  const int want[5][2] = {{1, 7}, {-1, 7}, {2, -1}, {-1, -1}, {1, 7}};
  PostedQueue<Recv> q;
  for (int i = 0; i < 5; ++i) {
    r[i] = Recv{i, want[i][0], want[i][1]};
    q.push(r[i]);
  }
  EXPECT_EQ(q.take(3, 9)->id, 3);  // only the full wildcard fits
  EXPECT_EQ(q.take(3, 9), nullptr);
  EXPECT_EQ(q.take(2, 7)->id, 1);  // ANY_PE with tag 7 is posted before (2, ANY_TAG)
  EXPECT_EQ(q.take(2, 7)->id, 2);
  EXPECT_EQ(q.take(1, 7)->id, 0);
  EXPECT_EQ(q.take(1, 7)->id, 4);
  EXPECT_TRUE(q.empty());
  for (auto& x : r) EXPECT_FALSE(x.inPosted);
}

TEST(MsgMatch, PostedUnlinkAnywhere) {
  for (int drop = 0; drop < 4; ++drop) {
    std::vector<Recv> r(4);
    PostedQueue<Recv> q;
    for (int i = 0; i < 4; ++i) {
      r[i] = Recv{i, -1, -1};
      q.push(r[i]);
    }
    q.unlink(r[drop]);
    q.unlink(r[drop]);  // twice: nothing
    Recv stranger{9, -1, -1};
    q.unlink(stranger);  // never posted: nothing
    for (int i = 0; i < 4; ++i) {
      if (i == drop) continue;
      Recv* t = q.take(0, 0);
      ASSERT_NE(t, nullptr) << "drop " << drop;
      EXPECT_EQ(t->id, i) << "drop " << drop;
    }
    EXPECT_TRUE(q.empty()) << "drop " << drop;
    q.push(r[drop]);  // a queue emptied by unlinks and takes works again
    EXPECT_EQ(q.take(0, 0), &r[drop]);
  }
}

TEST(MsgMatch, PoolFirstFitCoalesces) {
  FirstFitPool p(1024);
  uint64_t a, b, c, d;
  ASSERT_TRUE(p.alloc(1, &a));    // one granule
  ASSERT_TRUE(p.alloc(65, &b));   // two
  ASSERT_TRUE(p.alloc(256, &c));  // four
  EXPECT_EQ(a, 0u);
  EXPECT_EQ(b, 64u);
  EXPECT_EQ(c, 192u);
  EXPECT_FALSE(p.alloc(1024 - 448 + 1, &d));
  ASSERT_TRUE(p.alloc(1024 - 448, &d));
  EXPECT_FALSE(p.alloc(1, &d));
  p.release(b, 65);
  ASSERT_TRUE(p.alloc(64, &d));  // first fit: the hole at 64
  EXPECT_EQ(d, 64u);
  p.release(d, 64);
  p.release(a, 1);  // joins the hole after it
  EXPECT_EQ(p.largestFree(), 192u);
  p.release(c, 256);  // and the one after that
  EXPECT_EQ(p.largestFree(), 448u);
  p.release(448, 1024 - 448);
  EXPECT_EQ(p.freeRanges(), 1u);
  EXPECT_EQ(p.largestFree(), 1024u);
}

std::vector<char> bytesOf(size_t n, int salt) {
  std::vector<char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<char>(i * 31 + salt);
  return v;
}

// Whether a held message's bytes are v (compared here: a failure names no binary bytes).
bool same(const char* p, size_t n, const std::vector<char>& v) {
  return n == v.size() && (n == 0 || std::memcmp(p, v.data(), n) == 0);
}

TEST(MsgMatch, UnexpectedHeldInNodePoolOrHeap) {
  std::vector<char> pool(256);
  UnexpectedQueue<Meta> q;
  q.attach(pool.data(), pool.size());
  const auto tiny = bytesOf(64, 1), mid = bytesOf(200, 2), big = bytesOf(300, 3), again = bytesOf(100, 4);
  q.add(0, 1, true, tiny.size(), tiny.data());
  q.add(0, 2, true, mid.size(), mid.data());  // 256 bytes of the pool
  q.add(0, 3, true, big.size(), big.data());  // more than the pool has left: the heap
  q.add(0, 4, false, 1 << 20, nullptr).meta.announce = 42;  // a rendezvous announcement: no bytes held
  EXPECT_EQ(q.size(), 4u);
  EXPECT_EQ(q.pool().largestFree(), 0u);
  {
    UnexpectedQueue<Meta>::Taken t;
    ASSERT_TRUE(q.take(0, 3, &t));
    EXPECT_TRUE(t->eager);
    EXPECT_FALSE(t->inPool());
    EXPECT_TRUE(same(t->data(), t->bytes, big));
    ASSERT_TRUE(q.take(0, 2, &t));  // the first one goes back as t takes the next
    EXPECT_TRUE(t->inPool());
    EXPECT_GE(t->data(), pool.data());
    EXPECT_LE(t->data() + t->bytes, pool.data() + pool.size());
    EXPECT_TRUE(same(t->data(), t->bytes, mid));
    EXPECT_EQ(q.pool().largestFree(), 0u);  // still held while t lives
  }
  EXPECT_EQ(q.pool().largestFree(), 256u);
  q.add(1, 5, true, again.size(), again.data());  // back in the pool
  UnexpectedQueue<Meta>::Taken t;
  ASSERT_TRUE(q.take(-1, 5, &t));
  EXPECT_TRUE(t->inPool());
  EXPECT_EQ(t->src, 1);
  EXPECT_TRUE(same(t->data(), t->bytes, again));
  ASSERT_TRUE(q.take(0, -1, &t));  // arrival order: tag 1 before the rendezvous
  EXPECT_FALSE(t->inPool());
  EXPECT_TRUE(same(t->data(), t->bytes, tiny));
  ASSERT_TRUE(q.take(-1, -1, &t));
  EXPECT_FALSE(t->eager);
  EXPECT_EQ(t->meta.announce, 42);
  EXPECT_EQ(t->bytes, size_t{1} << 20);
  EXPECT_FALSE(q.take(-1, -1, &t));
  EXPECT_FALSE(t);
  EXPECT_EQ(q.size(), 0u);
  EXPECT_EQ(q.pool().freeRanges(), 1u);
  EXPECT_EQ(q.pool().largestFree(), 256u);
}

TEST(MsgMatch, NoPool) {
  UnexpectedQueue<Meta> q;
  q.attach(nullptr, 0);
  const auto b = bytesOf(65, 5);
  q.add(3, 0, true, 0, nullptr);  // empty eager message
  q.add(3, 0, true, b.size(), b.data());
  UnexpectedQueue<Meta>::Taken t;
  ASSERT_TRUE(q.take(3, 0, &t));
  EXPECT_EQ(t->bytes, 0u);
  ASSERT_TRUE(q.take(3, 0, &t));
  EXPECT_FALSE(t->inPool());
  EXPECT_TRUE(same(t->data(), t->bytes, b));
}

// The reference: MPI's rules spelled out over plain vectors.
struct RefMsg {
  int src, tag, serial;
};
struct RefRecv {
  int pe, tag, id;
};

TEST(MsgMatch, RandomAgainstReference) {
  const uint64_t seed = testSeed("test_msg_match");
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };

  constexpr int kPes = 4, kTags = 3, kOps = 20000;
  std::vector<char> pool(4096);
  UnexpectedQueue<Meta> unexpected;
  unexpected.attach(pool.data(), pool.size());
  PostedQueue<Recv> posted;
  std::vector<Recv> recvs(kOps);  // storage: a request never moves while posted
  std::vector<RefMsg> refUnexpected;
  std::vector<RefRecv> refPosted;
  int serial = 0, live = 0, matched = 0;
  for (int op = 0; op < kOps && !HasFailure(); ++op) {
    const int kind = pick(10);
    if (kind < 4) {  // a message arrives
      const int src = pick(kPes), tag = pick(kTags), s = ++serial;
      const size_t bytes = static_cast<size_t>(pick(3) == 0 ? pick(400) : pick(80));
      std::vector<char> payload = bytesOf(bytes, s);
      size_t want = 0;
      for (; want < refPosted.size(); ++want)
        if (msgFits(refPosted[want].pe, src) && msgFits(refPosted[want].tag, tag)) break;
      Recv* r = posted.take(src, tag);
      if (want < refPosted.size()) {
        ASSERT_NE(r, nullptr) << "op " << op;
        EXPECT_EQ(r->id, refPosted[want].id) << "op " << op;
        refPosted.erase(refPosted.begin() + static_cast<long>(want));
        ++matched;
      } else {
        ASSERT_EQ(r, nullptr) << "op " << op;
        unexpected.add(src, tag, true, bytes, payload.data()).meta.announce = s;
        refUnexpected.push_back({src, tag, s});
      }
    } else if (kind < 8) {  // a receive is posted
      Recv& r = recvs[static_cast<size_t>(op)];
      r = Recv{op, pick(kPes + 1) - 1, pick(kTags + 1) - 1};
      size_t want = 0;
      for (; want < refUnexpected.size(); ++want)
        if (msgFits(r.pe, refUnexpected[want].src) && msgFits(r.tag, refUnexpected[want].tag)) break;
      UnexpectedQueue<Meta>::Taken t;
      if (unexpected.take(r.pe, r.tag, &t)) {
        ASSERT_LT(want, refUnexpected.size()) << "op " << op;
        const RefMsg& m = refUnexpected[want];
        EXPECT_EQ(t->meta.announce, m.serial) << "op " << op;
        EXPECT_EQ(t->src, m.src);
        EXPECT_EQ(t->tag, m.tag);
        const std::vector<char> b = bytesOf(t->bytes, m.serial);
        EXPECT_TRUE(same(t->data(), t->bytes, b)) << "op " << op;
        refUnexpected.erase(refUnexpected.begin() + static_cast<long>(want));
        ++matched;
      } else {
        ASSERT_EQ(want, refUnexpected.size()) << "op " << op;
        posted.push(r);
        refPosted.push_back({r.pe, r.tag, r.id});
        ++live;
      }
    } else if (!refPosted.empty()) {  // a posted receive is withdrawn
      const size_t i = static_cast<size_t>(pick(static_cast<int>(refPosted.size())));
      Recv& r = recvs[static_cast<size_t>(refPosted[i].id)];
      ASSERT_TRUE(r.inPosted);
      posted.unlink(r);
      EXPECT_FALSE(r.inPosted);
      refPosted.erase(refPosted.begin() + static_cast<long>(i));
    }
  }
  EXPECT_EQ(unexpected.size(), refUnexpected.size());
  EXPECT_GT(matched, kOps / 10);  // the mix exercises matching both ways, not only queueing
  EXPECT_GT(live, 0);
  // Draining everything gives every pool byte back.
  UnexpectedQueue<Meta>::Taken t;
  while (unexpected.take(-1, -1, &t)) {
  }
  EXPECT_EQ(unexpected.size(), 0u);
  EXPECT_EQ(unexpected.pool().freeRanges(), 1u);
  EXPECT_EQ(unexpected.pool().largestFree(), pool.size());
}

}  // namespace
}  // namespace tether
