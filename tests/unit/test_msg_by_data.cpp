// MsgByData (core/msg_by_data.h): the rendezvous transfers messaging hands to a transport's data operations, driven
// through a fake transport whose expectData / sendData / cancelData record their calls and whose completion words
// the test sets: which transfers take the transport, when a send starts or waits behind TETHER_MSG_REMOTE_INFLIGHT,
// a send in pieces (offsets in order, one on the wire), failures (the receiver refused, the transfer ended once),
// cancel / withdraw / the withdrawn tokens, and drop's bounded wait (its word never reused). Host buffers only.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/msg_by_data.h"
#include "transport/transport.h"

namespace tether {
namespace {

struct Call {
  int pe;
  uint64_t token;
  size_t n, offset, total;
  uint64_t* word;
};

// The fake transport's state (its functions are plain function pointers: one instance at a time).
struct Fake {
  std::vector<Call> expects, sends;
  std::vector<uint64_t> cancels;
  bool cancelOver = true;      // cancelData's answer
  Status sendResult = Status::ok();
  Status expectResult = Status::ok();
};
Fake* fake = nullptr;

Status fExpect(void*, int pe, uint64_t token, void*, size_t n, uint64_t* done) {
  if (!fake->expectResult.isOk()) return fake->expectResult;
  fake->expects.push_back({pe, token, n, 0, n, done});
  return Status::ok();
}
bool fCancel(void*, int, uint64_t token) {
  fake->cancels.push_back(token);
  return fake->cancelOver;
}
Status fSend(void*, int pe, uint64_t token, const void*, size_t n, size_t offset, size_t total, bool,
             uint64_t* sent) {
  if (!fake->sendResult.isOk()) return fake->sendResult;
  fake->sends.push_back({pe, token, n, offset, total, sent});
  return Status::ok();
}

TransportOps dataOps() {
  TransportOps o{};
  o.name = "fake";
  o.expectData = fExpect;
  o.cancelData = fCancel;
  o.sendData = fSend;
  return o;
}

struct Ended {
  MsgByData::Xfer* x;
  Status result;
  size_t moved;
};

class Recorder final : public MsgByData::Owner {
 public:
  void ended(MsgByData::Xfer& x, Status result) override { ends.push_back({&x, std::move(result), x.moved}); }
  void refuse(int pe, uint64_t token) override { refusals.emplace_back(pe, token); }
  std::vector<Ended> ends;
  std::vector<std::pair<int, uint64_t>> refusals;
};

class MsgByDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake = &f;
    ops = dataOps();
    words.attach(triggers, dones, kWords);
  }
  void TearDown() override { fake = nullptr; }
  // A room with these settings whose every peer is reached by `ops`.
  MsgByData& room(size_t rndvMin = 1024, size_t cap = 1 << 20, size_t pieces = 0, double timeout = 1.0) {
    MsgByData::Settings s;
    s.me = 0;
    s.nPes = 4;
    s.timeout = timeout;
    s.rndvMin = rndvMin;
    s.cap = cap;
    s.pieceBytes = pieces;
    s.pieceHost = pieces != 0;
    made.reset(new MsgByData(s, words, rec));
    MsgByData::Links l;
    l.ops = [this](int, void** ctx) -> const TransportOps& {
      *ctx = nullptr;
      return ops;
    };
    l.progress = [this] { ++progressed; };
    made->attach(l);
    return *made;
  }
  size_t freeWords() {  // (takes them all, then gives them back)
    std::vector<uint32_t> taken;
    uint32_t i = 0;
    while (words.take(&i)) taken.push_back(i);
    for (uint32_t t : taken) words.release(t);
    return taken.size();
  }
  static void set(const Call& c, uint64_t v) { __atomic_store_n(c.word, v, __ATOMIC_RELEASE); }

  static constexpr uint32_t kWords = 8;
  uint64_t triggers[kWords] = {};
  uint64_t dones[kWords] = {};
  StreamWords words;
  Fake f;
  TransportOps ops{};
  Recorder rec;
  std::unique_ptr<MsgByData> made;
  int progressed = 0;
  char buf[64] = {};
};

TEST_F(MsgByDataTest, ExpectTakesTheTransportFromTheThresholdOn) {
  MsgByData& b = room(1024);
  MsgByData::Xfer small, none, big;
  EXPECT_FALSE(b.expect("t", small, 1, buf, 1023, false, 7, 3));  // under TETHER_MSG_REMOTE_RNDV
  EXPECT_FALSE(b.expect("t", none, 1, buf, 0, false, 8, 3));
  ops.sendData = nullptr;  // a transport without the three operations
  EXPECT_FALSE(b.takes(1, false));
  EXPECT_FALSE(b.expect("t", big, 1, buf, 4096, false, 9, 3));
  ops = dataOps();
  EXPECT_TRUE(b.takes(1, false));
  EXPECT_FALSE(b.takes(1, true));  // GPU memory only with kCapDataGpu
  ASSERT_TRUE(b.expect("t", big, 1, buf, 4096, false, 9, 3));
  EXPECT_TRUE(big.busy());
  EXPECT_TRUE(b.any());
  ASSERT_EQ(f.expects.size(), 1u);
  EXPECT_EQ(f.expects[0].token, 9u);
  EXPECT_EQ(freeWords(), kWords - 1);
  bool did = false;
  b.poll(&did);  // word still 0
  EXPECT_FALSE(did);
  EXPECT_TRUE(rec.ends.empty());
  set(f.expects[0], 4096 + 1);
  b.poll(&did);
  EXPECT_TRUE(did);
  ASSERT_EQ(rec.ends.size(), 1u);
  EXPECT_EQ(rec.ends[0].x, &big);
  EXPECT_TRUE(rec.ends[0].result.isOk()) << rec.ends[0].result.message();
  EXPECT_EQ(rec.ends[0].moved, 4096u);
  EXPECT_FALSE(big.busy());
  EXPECT_FALSE(b.any());
  EXPECT_EQ(freeWords(), kWords);
}

TEST_F(MsgByDataTest, ShortOrFailedReceiveEndsWithAnError) {
  MsgByData& b = room();
  MsgByData::Xfer a, c;
  ASSERT_TRUE(b.expect("t", a, 2, buf, 2048, false, 1, 5));
  ASSERT_TRUE(b.expect("t", c, 3, buf, 2048, false, 2, 6));
  set(f.expects[0], 100 + 1);
  set(f.expects[1], kDataFailed);
  bool did = false;
  b.poll(&did);
  ASSERT_EQ(rec.ends.size(), 2u);
  EXPECT_EQ(rec.ends[0].result.code(), TETHER_ERR_SYSTEM);
  EXPECT_NE(rec.ends[0].result.message().find("100 of the 2048 bytes from PE 2 (tag 5)"), std::string::npos)
      << rec.ends[0].result.message();
  EXPECT_EQ(rec.ends[1].result.code(), TETHER_ERR_SYSTEM);
  EXPECT_EQ(rec.ends[1].moved, 0u);
  EXPECT_TRUE(rec.refusals.empty());  // a receive refuses nobody
}

TEST_F(MsgByDataTest, ExpectRefusedByTheTransportLeavesTheRing) {
  MsgByData& b = room();
  f.expectResult = Status(TETHER_ERR_SYSTEM, "no");
  MsgByData::Xfer a;
  EXPECT_FALSE(b.expect("t", a, 1, buf, 4096, false, 1, 0));
  EXPECT_FALSE(a.busy());
  EXPECT_EQ(freeWords(), kWords);
}

TEST_F(MsgByDataTest, SendsToOnePeWaitBehindTheInflightCap) {
  MsgByData& b = room(1024, 6000);
  MsgByData::Xfer s1, s2, s3;
  b.send("t", s1, 1, buf, 4000, false, 0, 11, false);
  b.send("t", s2, 1, buf, 4000, false, 0, 12, false);  // 8000 > 6000 under way: queued
  b.send("t", s3, 2, buf, 4000, false, 0, 13, false);  // another PE: starts
  ASSERT_EQ(f.sends.size(), 2u);
  EXPECT_EQ(f.sends[0].token, 11u);
  EXPECT_EQ(f.sends[1].token, 13u);
  EXPECT_TRUE(s1.busy());
  EXPECT_FALSE(s2.busy());
  bool did = false;
  b.startQueued("t", &did);  // still capped
  EXPECT_FALSE(did);
  set(f.sends[0], 1);
  b.poll(&did);
  ASSERT_EQ(rec.ends.size(), 1u);
  EXPECT_EQ(rec.ends[0].x, &s1);
  EXPECT_TRUE(rec.ends[0].result.isOk());
  did = false;
  b.startQueued("t", &did);
  EXPECT_TRUE(did);
  ASSERT_EQ(f.sends.size(), 3u);
  EXPECT_EQ(f.sends[2].token, 12u);
  EXPECT_TRUE(s2.busy());
  EXPECT_FALSE(b.unqueue(s2));  // started: no longer queued
}

TEST_F(MsgByDataTest, AQueuedSendCanBeWithdrawn) {
  MsgByData& b = room(1024, 100);
  MsgByData::Xfer s1, s2;
  b.send("t", s1, 3, buf, 4000, false, 0, 21, false);  // one larger message may go alone
  b.send("t", s2, 3, buf, 4000, false, 0, 22, false);
  EXPECT_EQ(f.sends.size(), 1u);
  EXPECT_TRUE(b.unqueue(s2));
  EXPECT_FALSE(b.unqueue(s2));
  set(f.sends[0], 1);
  bool did = false;
  b.poll(&did);
  b.startQueued("t", &did);
  EXPECT_EQ(f.sends.size(), 1u);  // s2 never starts
  EXPECT_EQ(rec.ends.size(), 1u);
}

TEST_F(MsgByDataTest, NoWordFreeWaits) {
  MsgByData& b = room();
  std::vector<uint32_t> held(kWords);
  for (uint32_t& i : held) ASSERT_TRUE(words.take(&i));
  MsgByData::Xfer r, s;
  EXPECT_FALSE(b.expect("t", r, 1, buf, 4096, false, 1, 0));  // the ring carries it
  b.send("t", s, 1, buf, 4096, false, 0, 2, false);           // queued
  EXPECT_TRUE(f.sends.empty());
  words.release(held.back());
  bool did = false;
  b.startQueued("t", &did);
  EXPECT_TRUE(did);
  EXPECT_EQ(f.sends.size(), 1u);
}

TEST_F(MsgByDataTest, ASendInPiecesGoesOnePieceAtATime) {
  MsgByData& b = room(8, 1 << 20, 4);  // pieces of 4 bytes (TETHER_MSG_REMOTE_PIECE_HOST)
  MsgByData::Xfer s;
  b.send("t", s, 1, buf, 10, false, 4, 31, false);
  bool did = false;
  for (size_t k = 0; k < 3; ++k) {
    ASSERT_EQ(f.sends.size(), k + 1);
    const Call& c = f.sends[k];
    EXPECT_EQ(c.offset, 4 * k);
    EXPECT_EQ(c.n, k < 2 ? 4u : 2u);
    EXPECT_EQ(c.total, 10u);
    EXPECT_TRUE(rec.ends.empty());
    set(c, 1);
    b.poll(&did);
  }
  ASSERT_EQ(rec.ends.size(), 1u);
  EXPECT_TRUE(rec.ends[0].result.isOk());
  EXPECT_TRUE(rec.refusals.empty());
  EXPECT_FALSE(s.busy());
  EXPECT_EQ(freeWords(), kWords);
}

TEST_F(MsgByDataTest, AFailedPieceRefusesTheReceiverAndEndsOnce) {
  MsgByData& b = room(8, 1 << 20, 4);
  MsgByData::Xfer s;
  b.send("t", s, 2, buf, 12, false, 4, 41, false);
  set(f.sends[0], 1);
  bool did = false;
  b.poll(&did);  // the second piece starts
  ASSERT_EQ(f.sends.size(), 2u);
  set(f.sends[1], kDataFailed);
  b.poll(&did);
  ASSERT_EQ(rec.ends.size(), 1u);
  EXPECT_EQ(rec.ends[0].result.code(), TETHER_ERR_SYSTEM);
  ASSERT_EQ(rec.refusals.size(), 1u);  // the third piece never comes: the receiver is told
  EXPECT_EQ(rec.refusals[0], std::make_pair(2, uint64_t{41}));
  EXPECT_EQ(f.sends.size(), 2u);
  EXPECT_EQ(freeWords(), kWords);
}

TEST_F(MsgByDataTest, ASendThatCannotStartRefusesAndEnds) {
  MsgByData& b = room();
  f.sendResult = Status(TETHER_ERR_SYSTEM, "wire cut");
  MsgByData::Xfer s;
  b.send("t", s, 1, buf, 4096, false, 0, 51, false);
  ASSERT_EQ(rec.ends.size(), 1u);
  EXPECT_NE(rec.ends[0].result.message().find("wire cut"), std::string::npos);
  ASSERT_EQ(rec.refusals.size(), 1u);
  EXPECT_EQ(rec.refusals[0].second, 51u);
  EXPECT_FALSE(s.busy());
  EXPECT_EQ(freeWords(), kWords);
}

TEST_F(MsgByDataTest, WithdrawKeepsTheTokenForALateCancel) {
  MsgByData& b = room();
  MsgByData::Xfer r;
  ASSERT_TRUE(b.expect("t", r, 1, buf, 4096, false, 61, 0));
  f.cancelOver = false;  // bytes are being written: not yet
  EXPECT_FALSE(b.withdraw(r));
  EXPECT_TRUE(r.busy());
  EXPECT_FALSE(b.withdrawn(61));
  f.cancelOver = true;
  EXPECT_TRUE(b.withdraw(r));
  EXPECT_FALSE(r.busy());
  EXPECT_EQ(freeWords(), kWords);
  EXPECT_TRUE(b.withdrawn(61));   // the sender's CANCEL for it is recognised once
  EXPECT_FALSE(b.withdrawn(61));
  EXPECT_TRUE(rec.ends.empty());  // withdrawn transfers end without ended()
}

TEST_F(MsgByDataTest, CancelOfAReceiveWhoseBytesLandedSucceeds) {
  MsgByData& b = room();
  MsgByData::Xfer r;
  ASSERT_TRUE(b.expect("t", r, 1, buf, 4096, false, 71, 0));
  f.cancelOver = false;
  set(f.expects[0], 4096 + 1);  // its word is set: nothing more will touch the buffer
  EXPECT_TRUE(b.cancel(r));
  EXPECT_FALSE(b.any());
}

TEST_F(MsgByDataTest, DropWaitsBoundedAndNeverReusesTheWord) {
  MsgByData& b = room(1024, 1 << 20, 0, 0.05);
  MsgByData::Xfer s;
  b.send("t", s, 1, buf, 4096, false, 0, 81, false);
  ASSERT_TRUE(s.busy());
  b.drop(s);  // a send cannot be cancelled; its word never comes: given up after TETHER_TIMEOUT
  EXPECT_FALSE(s.busy());
  EXPECT_FALSE(b.any());
  EXPECT_GT(progressed, 0);
  EXPECT_EQ(freeWords(), kWords - 1);  // the transport may still store it
  MsgByData::Xfer s2;
  b.send("t", s2, 1, buf, 4096, false, 0, 82, false);  // its bytes were given back: the next one starts
  EXPECT_EQ(f.sends.size(), 2u);
}

}  // namespace
}  // namespace tether
