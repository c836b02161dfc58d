// Messaging's ring credit (core/msg_credit.h) against its contract, on a model of two PEs writing spanning messages
// into each other's rings in random interleavings: no slot is ever written while its receiver has not consumed it,
// whether acks arrive as stores or as posted ADDs applied late and out of order; and credit never runs dry -- once
// both sides have drained and every ack has landed, each sender has more than half a ring free. Also the 32-bit carry
// widened across 2^32. Prints its seed (TETHER_TEST_SEED repeats one).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "core/msg_credit.h"
#include "test_seed.h"

namespace tether {
namespace {

TEST(MsgCredit, CarryWidensAcross32Bits) {
  std::vector<uint64_t> acked(2, 0);
  RingCredit c(2, 16);
  c.attach(acked.data());
  c.hear(1, 0xFFFFFFF0u);
  EXPECT_EQ(c.credit(1), 0xFFFFFFF0u);
  c.hear(1, 0x10u);  // the low 32 bits wrapped: the count went on
  EXPECT_EQ(c.credit(1), 0x100000010ull);
  c.hear(1, 0x10u);  // the same count again: no step
  EXPECT_EQ(c.credit(1), 0x100000010ull);
  acked[1] = 0x200000000ull;  // the ack word ahead of what was heard: the larger counts
  EXPECT_EQ(c.credit(1), 0x200000000ull);
}

// One direction's ring in the model: which slots hold an unconsumed message, and each message's span and carry.
struct Ring {
  explicit Ring(uint64_t k) : full(k, 0), span(k, 0), carry(k, 0) {}
  std::vector<char> full;
  std::vector<uint64_t> span;
  std::vector<uint32_t> carry;
};

struct Add {
  int to;  // whose ack word
  uint64_t step;
};

TEST(MsgCredit, RandomTwoPesNeverOverwriteNorStall) {
  const uint64_t seed = testSeed("test_msg_credit");
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 40 && !HasFailure(); ++round) {
    const uint64_t k = 2 + rng() % 15;
    const bool adds = round % 2;  // acks as posted ADDs (another host) or as stores (a mapped peer)
    SCOPED_TRACE("round " + std::to_string(round) + ", " + std::to_string(k) + " slots, " +
                 (adds ? "ADDs" : "stores"));
    std::vector<std::vector<uint64_t>> acked(2, std::vector<uint64_t>(2, 0));  // acked[pe][peer]
    std::vector<RingCredit> pe;
    pe.emplace_back(2, k);
    pe.emplace_back(2, k);
    pe[0].attach(acked[0].data());
    pe[1].attach(acked[1].data());
    std::vector<Ring> ring(2, Ring(k));  // ring[s]: s's ring at the other PE
    std::deque<Add> pending;             // posted ADDs not applied yet
    uint64_t written = 0;
    auto consume = [&](int me) {  // me drains the other's ring at it; false: nothing there
      const int s = 1 - me;
      Ring& r = ring[static_cast<size_t>(s)];
      const uint64_t at = pe[me].next(s) % k;
      if (!r.full[at]) return false;
      pe[me].hear(s, r.carry[at]);
      const uint64_t span = r.span[at];
      for (uint64_t j = 0; j < span; ++j) r.full[at + j] = 0;
      pe[me].consumed(s, span);
      if (pe[me].mustPublish(s)) {
        uint64_t v = 0;
        const uint64_t step = pe[me].publish(s, &v);
        if (adds) pending.push_back({s, step});
        else __atomic_store_n(&acked[static_cast<size_t>(s)][static_cast<size_t>(me)], v, __ATOMIC_RELEASE);
      }
      return true;
    };
    auto land = [&](size_t i) {
      acked[static_cast<size_t>(pending[i].to)][static_cast<size_t>(1 - pending[i].to)] += pending[i].step;
      pending.erase(pending.begin() + static_cast<long>(i));
    };
    for (int op = 0; op < 4000 && !HasFailure(); ++op) {
      const int me = static_cast<int>(rng() % 2), d = 1 - me;
      const int kind = static_cast<int>(rng() % 5);
      if (kind < 2) {  // me writes a message of 1.. slots to d, as push does (no wrap: a SKIP takes the rest)
        RingCredit& c = pe[me];
        const uint64_t free = c.free(d), at = c.sent(d) % k;
        ASSERT_LE(free, k);
        if (free == 0) continue;
        uint64_t span = 1 + rng() % std::min<uint64_t>(k, 3);
        if (at + span > k) span = k - at;  // (the SKIP)
        if (span > free) continue;
        Ring& r = ring[static_cast<size_t>(me)];
        for (uint64_t j = 0; j < span; ++j)
          ASSERT_FALSE(r.full[at + j]) << "slot " << at + j << " overwritten, op " << op;
        r.full[at] = 1;
        for (uint64_t j = 1; j < span; ++j) r.full[at + j] = 1;
        r.span[at] = span;
        r.carry[at] = c.carry(d);
        c.wrote(d, span);
        ++written;
      } else if (kind < 4) {
        consume(me);
      } else if (!pending.empty()) {  // a posted ADD lands, in any order
        land(rng() % pending.size());
      }
    }
    // Quiescence: both drain, every ADD lands; then each sender has more than half a ring free.
    for (int pass = 0; pass < 4 * static_cast<int>(k) + 4; ++pass) {
      consume(0);
      consume(1);
    }
    while (!pending.empty()) land(0);
    for (int me = 0; me < 2; ++me) {
      EXPECT_GE(pe[me].free(1 - me), k / 2 + 1) << "PE " << me << " starved of credit";
      EXPECT_EQ(pe[1 - me].next(me), pe[me].sent(1 - me)) << "PE " << 1 - me << " did not drain";
    }
    EXPECT_GT(written, 100u);
  }
}

}  // namespace
}  // namespace tether
