// MsgDirect (core/msg_direct.h): rendezvous messages on one host that the receiver reads straight from the send buffer.
// Two rooms in one process play PE 0 (the sender) and PE 1 (the receiver), each with a region whose stream area holds
// the claim words and which the other "maps" (the same memory): which sends are offered and how (a get for symmetric
// buffers, process_vm_readv for private host memory, none for GPU memory without CUDA IPC), the claim word's race
// between the receiver's read and the sender's withdrawal, reads that fall back to the ring (a GPU receive buffer,
// process_vm_readv refused -- remembered per source), delivery reported once, and the words given back or not.
#include <gtest/gtest.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/msg_direct.h"

namespace tether {
namespace {

constexpr uint32_t kWords = 4;
constexpr size_t kAreaOffset = 128;  // the stream area's place in a region (as in messaging's)

class Delivered final : public MsgDirect::Owner {
 public:
  void delivered(MsgDirect::Offer& o) override { offers.push_back(&o); }
  std::vector<MsgDirect::Offer*> offers;
};

struct GetCall {
  int src;
  SegKind kind;
  uint64_t at;
  size_t n;
};

// Whether this process may read itself with process_vm_readv (a sandbox may forbid it).
bool cmaWorks() {
  char from[8] = "tether", to[8] = {};
  iovec local{to, sizeof to}, remote{from, sizeof from};
  return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(sizeof to) &&
         std::memcmp(from, to, sizeof to) == 0;
}

class MsgDirectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int pe = 0; pe < 2; ++pe) {
      regions[pe].assign(kAreaOffset + 2 * kWords * sizeof(uint64_t), 0);
      auto* area = reinterpret_cast<uint64_t*>(regions[pe].data() + kAreaOffset);
      words[pe].attach(area, area + kWords, kWords);
      sym[pe].assign(4096, 0);
    }
    for (size_t i = 0; i < sym[0].size(); ++i) sym[0][i] = static_cast<char>(i * 7 + 1);
    make(MsgDirect::Settings{});
  }

  // Both rooms anew with settings s (me and nPes filled in), linked to the regions and the fake symmetric heap.
  void make(MsgDirect::Settings s) {
    s.nPes = 2;
    for (int pe = 0; pe < 2; ++pe) {
      s.me = pe;
      rooms[pe].reset(new MsgDirect(s, words[pe], owners[pe]));
      MsgDirect::Links l;
      l.region = regions[pe].data();
      l.mapped = [this](int peer) { return mapped[peer] ? regions[peer].data() : nullptr; };
      l.symmetric = [this, pe](const void* p, size_t n, bool, SegKind* kind, uint64_t* at) {
        const char* c = static_cast<const char*>(p);
        const char* base = sym[pe].data();
        if (c < base || c + n > base + sym[pe].size()) return false;
        *kind = SegKind::Device;
        *at = static_cast<uint64_t>(c - base);
        return true;
      };
      l.get = [this](const char*, void* dst, int src, SegKind kind, uint64_t at, size_t n) {
        gets.push_back({src, kind, at, n});
        if (!getResult.isOk()) return getResult;
        std::memcpy(dst, sym[src].data() + at, n);
        return Status::ok();
      };
      rooms[pe]->attach(l);
    }
  }

  uint64_t claimWord(const MsgDirect::Ticket& t) const {
    return __atomic_load_n(reinterpret_cast<const uint64_t*>(regions[0].data() + t.claim), __ATOMIC_ACQUIRE);
  }
  // Words PE pe can still take (taken back at once).
  uint32_t freeWords(int pe) {
    std::vector<uint32_t> got;
    uint32_t i = 0;
    while (words[pe].take(&i)) got.push_back(i);
    for (uint32_t w : got) words[pe].release(w);
    return static_cast<uint32_t>(got.size());
  }
  MsgDirect::Outcome read(const MsgDirect::Ticket& t, void* dst, size_t n, bool gpu = false) {
    return rooms[1]->read("test", 0, t, GpuIpcRef{}, dst, gpu, n, &result);
  }
  size_t pollSender() {
    bool did = false;
    const size_t before = owners[0].offers.size();
    rooms[0]->poll(&did);
    EXPECT_EQ(did, owners[0].offers.size() > before);
    return owners[0].offers.size() - before;
  }

  std::vector<char> regions[2], sym[2];
  StreamWords words[2];
  Delivered owners[2];
  std::unique_ptr<MsgDirect> rooms[2];
  bool mapped[2] = {true, true};
  std::vector<GetCall> gets;
  Status getResult = Status::ok();
  Status result;
};

TEST_F(MsgDirectTest, APrivateHostBufferIsReadByCmaAndDeliveredOnce) {
  if (!cmaWorks()) GTEST_SKIP() << "process_vm_readv on this process is refused here";
  std::string buf(3000, 'x');
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<char>('a' + i % 26);
  MsgDirect::Offer o;
  MsgDirect::Ticket t;
  ASSERT_TRUE(rooms[0]->offer(o, 1, buf.data(), buf.size(), false, &t));
  EXPECT_TRUE(o.offered());
  EXPECT_EQ(t.how & 0xff, MsgDirect::kViaCma);
  EXPECT_EQ(t.at, reinterpret_cast<uint64_t>(buf.data()));
  EXPECT_EQ(t.pid, static_cast<uint32_t>(getpid()));
  EXPECT_EQ(regions[0].data() + t.claim, reinterpret_cast<char*>(words[0].trigger(o.claim)));
  EXPECT_EQ(claimWord(t), MsgDirect::kOpen);
  EXPECT_EQ(freeWords(0), kWords - 1);
  EXPECT_EQ(pollSender(), 0u);  // not read yet

  std::string dst(buf.size(), '\0');
  EXPECT_EQ(read(t, &dst[0], dst.size()), MsgDirect::Outcome::Read);
  EXPECT_TRUE(result.isOk()) << result.message();
  EXPECT_EQ(dst, buf);
  EXPECT_EQ(claimWord(t), MsgDirect::kDone);
  EXPECT_TRUE(gets.empty());
  ASSERT_EQ(pollSender(), 1u);
  EXPECT_EQ(owners[0].offers[0], &o);
  EXPECT_FALSE(rooms[0]->any());
  EXPECT_EQ(pollSender(), 0u);  // once
  rooms[0]->release(o);
  EXPECT_EQ(freeWords(0), kWords);
}

TEST_F(MsgDirectTest, ASymmetricBufferIsReadByAGetOfTheSameObject) {
  MsgDirect::Offer o;
  MsgDirect::Ticket t;
  ASSERT_TRUE(rooms[0]->offer(o, 1, sym[0].data() + 100, 500, true, &t));  // GPU memory too, when symmetric
  EXPECT_EQ(t.how & 0xff, MsgDirect::kViaGet);
  EXPECT_EQ(static_cast<SegKind>(t.how >> 8), SegKind::Device);
  EXPECT_EQ(t.at, 100u);
  std::vector<char> dst(500, 0);
  EXPECT_EQ(read(t, dst.data(), dst.size()), MsgDirect::Outcome::Read);
  ASSERT_EQ(gets.size(), 1u);
  EXPECT_EQ(gets[0].src, 0);
  EXPECT_EQ(gets[0].kind, SegKind::Device);
  EXPECT_EQ(gets[0].at, 100u);
  EXPECT_EQ(gets[0].n, 500u);
  EXPECT_EQ(std::memcmp(dst.data(), sym[0].data() + 100, 500), 0);
  EXPECT_EQ(pollSender(), 1u);
}

TEST_F(MsgDirectTest, AFailedGetFailsTheReceiveAndStillCompletesTheSend) {
  MsgDirect::Offer o;
  MsgDirect::Ticket t;
  ASSERT_TRUE(rooms[0]->offer(o, 1, sym[0].data(), 64, false, &t));
  getResult = Status(TETHER_ERR_PEER_LOST, "the get failed");
  std::vector<char> dst(64, 0);
  EXPECT_EQ(read(t, dst.data(), dst.size()), MsgDirect::Outcome::Read);
  EXPECT_EQ(result.code(), TETHER_ERR_PEER_LOST);
  EXPECT_EQ(claimWord(t), MsgDirect::kDone);  // the sender's buffer is free again
  EXPECT_EQ(pollSender(), 1u);
}

TEST_F(MsgDirectTest, NothingToReadStillClaimsAndCompletes) {
  MsgDirect::Offer o;
  MsgDirect::Ticket t;
  ASSERT_TRUE(rooms[0]->offer(o, 1, sym[0].data(), 64, false, &t));
  EXPECT_EQ(read(t, nullptr, 0), MsgDirect::Outcome::Read);  // a zero-byte receive buffer
  EXPECT_TRUE(gets.empty());
  EXPECT_EQ(claimWord(t), MsgDirect::kDone);
  EXPECT_EQ(pollSender(), 1u);
}

TEST_F(MsgDirectTest, WhoIsNotOffered) {
  std::vector<char> priv(256);
  MsgDirect::Offer o;
  MsgDirect::Ticket t;
  // A private GPU buffer: CUDA IPC needs a GPU context (none here).
  EXPECT_FALSE(rooms[0]->offer(o, 1, priv.data(), priv.size(), true, &t));
  // A PE this process does not map (another host).
  mapped[1] = false;
  EXPECT_FALSE(rooms[0]->offer(o, 1, priv.data(), priv.size(), false, &t));
  mapped[1] = true;
  // TETHER_MSG_DIRECT=0.
  MsgDirect::Settings off;
  off.on = false;
  make(off);
  EXPECT_FALSE(rooms[0]->offer(o, 1, sym[0].data(), 64, false, &t));
  EXPECT_FALSE(o.offered());
  EXPECT_EQ(freeWords(0), kWords);
  EXPECT_FALSE(rooms[0]->any());
}

TEST_F(MsgDirectTest, NoWordFreeMeansTheRing) {
  std::vector<uint32_t> held(kWords);
  for (auto& w : held) ASSERT_TRUE(words[0].take(&w));
  MsgDirect::Offer o;
  MsgDirect::Ticket t;
  EXPECT_FALSE(rooms[0]->offer(o, 1, sym[0].data(), 64, false, &t));
  words[0].release(held.back());
  EXPECT_TRUE(rooms[0]->offer(o, 1, sym[0].data(), 64, false, &t));
  EXPECT_EQ(o.claim, held.back());
}

TEST_F(MsgDirectTest, AWithdrawalBeforeTheClaimWinsAndItsWordIsNeverReused) {
  std::vector<char> priv(256, 'p');
  MsgDirect::Offer o;
  MsgDirect::Ticket t;
  ASSERT_TRUE(rooms[0]->offer(o, 1, priv.data(), priv.size(), false, &t));
  EXPECT_TRUE(rooms[0]->withdraw(o));
  EXPECT_FALSE(o.offered());
  EXPECT_FALSE(rooms[0]->any());
  EXPECT_EQ(claimWord(t), MsgDirect::kWithdrawn);
  std::vector<char> dst(256, 0);
  EXPECT_EQ(read(t, dst.data(), dst.size()), MsgDirect::Outcome::Withdrawn);  // the late claim fails
  EXPECT_EQ(dst, std::vector<char>(256, 0));
  EXPECT_EQ(pollSender(), 0u);
  rooms[0]->release(o);  // (nothing: the word stays taken)
  EXPECT_EQ(freeWords(0), kWords - 1);
  EXPECT_EQ(read(t, dst.data(), dst.size()), MsgDirect::Outcome::Withdrawn);  // still failing
}

TEST_F(MsgDirectTest, AClaimBeforeTheWithdrawalWins) {
  MsgDirect::Offer o;
  MsgDirect::Ticket t;
  ASSERT_TRUE(rooms[0]->offer(o, 1, sym[0].data(), 64, false, &t));
  // The receiver claims and is reading (as read() does between its swap and kDone).
  uint64_t open = MsgDirect::kOpen;
  auto* claim = reinterpret_cast<uint64_t*>(regions[0].data() + t.claim);
  ASSERT_TRUE(__atomic_compare_exchange_n(claim, &open, MsgDirect::kRead, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
  EXPECT_FALSE(rooms[0]->withdraw(o));  // the sender must wait
  EXPECT_TRUE(o.offered());
  EXPECT_EQ(pollSender(), 0u);
  __atomic_store_n(claim, MsgDirect::kDone, __ATOMIC_RELEASE);
  EXPECT_EQ(pollSender(), 1u);
  rooms[0]->release(o);
  EXPECT_EQ(freeWords(0), kWords);
}

TEST_F(MsgDirectTest, ARefusedCmaReadFallsBackToTheRingAndIsRemembered) {
  MsgDirect::Offer o1, o2;
  MsgDirect::Ticket t1, t2;
  std::vector<char> priv(64, 'q');
  ASSERT_TRUE(rooms[0]->offer(o1, 1, priv.data(), priv.size(), false, &t1));
  ASSERT_TRUE(rooms[0]->offer(o2, 1, priv.data(), priv.size(), false, &t2));
  t1.at = 8;  // an address process_vm_readv refuses (EFAULT)
  std::vector<char> dst(64, 0);
  EXPECT_EQ(read(t1, dst.data(), dst.size()), MsgDirect::Outcome::Ring);
  EXPECT_EQ(claimWord(t1), MsgDirect::kRead);  // claimed: the sender cannot withdraw, a CTS follows
  EXPECT_FALSE(rooms[0]->withdraw(o1));
  // PE 0's next private host buffer is not even claimed: the ring at once.
  EXPECT_EQ(read(t2, dst.data(), dst.size()), MsgDirect::Outcome::Ring);
  EXPECT_EQ(claimWord(t2), MsgDirect::kOpen);
  EXPECT_TRUE(rooms[0]->withdraw(o2));
  EXPECT_EQ(pollSender(), 0u);
  EXPECT_EQ(dst, std::vector<char>(64, 0));
}

TEST_F(MsgDirectTest, AGpuReceiveBufferIsNotFilledFromPrivateHostMemory) {
  MsgDirect::Offer o;
  MsgDirect::Ticket t;
  std::vector<char> priv(64, 'g');
  ASSERT_TRUE(rooms[0]->offer(o, 1, priv.data(), priv.size(), false, &t));
  std::vector<char> dst(64, 0);
  EXPECT_EQ(read(t, dst.data(), dst.size(), true), MsgDirect::Outcome::Ring);
  EXPECT_EQ(claimWord(t), MsgDirect::kOpen);  // not claimed: the sender may still withdraw
  // By CUDA IPC without a GPU here: the ring too.
  MsgDirect::Ticket ipc = t;
  ipc.how = MsgDirect::kViaIpc;
  EXPECT_EQ(read(ipc, dst.data(), dst.size()), MsgDirect::Outcome::Ring);
  EXPECT_EQ(claimWord(t), MsgDirect::kOpen);
}

TEST_F(MsgDirectTest, ReleaseGivesTheWordBackAndStopsPolling) {
  MsgDirect::Offer a, b;
  MsgDirect::Ticket ta, tb;
  ASSERT_TRUE(rooms[0]->offer(a, 1, sym[0].data(), 64, false, &ta));
  ASSERT_TRUE(rooms[0]->offer(b, 1, sym[0].data() + 64, 64, false, &tb));
  EXPECT_EQ(freeWords(0), kWords - 2);
  rooms[0]->release(a);
  EXPECT_FALSE(a.offered());
  EXPECT_EQ(freeWords(0), kWords - 1);
  EXPECT_TRUE(rooms[0]->any());
  std::vector<char> dst(64);
  EXPECT_EQ(read(tb, dst.data(), dst.size()), MsgDirect::Outcome::Read);
  ASSERT_EQ(pollSender(), 1u);
  EXPECT_EQ(owners[0].offers.back(), &b);
}

}  // namespace
}  // namespace tether
