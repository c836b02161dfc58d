// Random two-sided messaging (tether/msg.h) on a 1-PE instance, every message to itself, against a model of MPI's
// matching, with bad arguments and misused requests mixed in. Checked for every call:
//  - bad arguments (a PE outside the job or a wildcard PE on a send, a negative tag other than the receive wildcard, a
//    NULL buffer with bytes, a NULL request, a request id that names nothing -- never issued, or already completed)
//    fail with TETHER_ERR_INVALID_ARG or _INVALID_PE and a message naming the call, and change nothing;
//  - the model: a send matches the earliest posted receive that fits it, else waits as unexpected; a receive matches
//    the earliest unexpected message that fits it, else waits as posted (messages from one PE are matched in the
//    order they were sent). A receive the model has matched completes at its next test or wait with the message's
//    tag, source 0, its bytes (or the receive's, TETHER_ERR_TRUNCATED when shorter) and its bytes in the buffer; one
//    the model has not matched does not complete (test says not done);
//  - sends (eager: at most 2 KiB here) complete at their test or wait; waitall and waitany complete what they should;
//  - persistent requests (send_init / recv_init): each start is a send or a posted receive of the model; starting or
//    freeing an active one is refused; wait/test leave a completed one inactive with its id; on an inactive one they
//    return at once with an empty status; a freed one's id is stale.
// Ends by sending a message for every receive still posted and waiting for everything. Prints its seed
// (TETHER_TEST_SEED repeats a run); a watchdog turns a hang into a failure naming the call.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "call_watchdog.h"
#include "test_seed.h"
#include "tether/msg.h"
#include "tether/tether.h"

namespace {

constexpr int kCalls = 50000;
constexpr size_t kMaxSend = 2048;  // below the default eager size (8192): sends complete without a receive
constexpr size_t kMaxPending = 48;  // sends (receives) outstanding at most: unexpected bytes stay well inside the pool

const char* const kConfig[] = {"TETHER_HEAP_SIZE=16M", "TETHER_TIMEOUT=5", "TETHER_DEFAULT_SEGMENT=host",
                               "TETHER_GPU=none", nullptr};

struct Msg {  // a send, as the model knows it
  uint64_t id = 0;
  int tag = 0;
  std::vector<unsigned char> data;
};
struct Recv {  // a receive, as the model knows it
  tether_request_t req = TETHER_REQUEST_NULL;
  int tag = TETHER_ANY_TAG;
  std::unique_ptr<std::vector<unsigned char>> buf;  // stays put while the request is pending
  size_t bytes = 0;
  const Msg* matched = nullptr;  // (points into matched_)
  int pe = TETHER_ANY_PE;
};
struct Send {
  tether_request_t req = TETHER_REQUEST_NULL;
  std::unique_ptr<std::vector<unsigned char>> buf;
};

class MsgFuzz {
 public:
  MsgFuzz(tether_t w, uint64_t seed) : w_(w), rng_(seed) {}

  void run(int calls) {
    CallWatchdog dog("msg fuzz", 30);
    dog_ = &dog;
    for (int i = 0; i < calls && !::testing::Test::HasFailure(); ++i) {
      dog.enter(i, "");
      step();
      dog.left();
    }
    if (!::testing::Test::HasFailure()) drain();
    std::printf("msg fuzz: %d calls, %d sends, %d receives (%d truncated), %d persistent rounds, %d refused as they "
                "should be\n", calls, nSends_, nRecvs_, nTrunc_, nRounds_, nBad_);
  }

 private:
  uint64_t uni(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }
  bool coin(unsigned percent) { return uni(100) < percent; }
  std::string at() const { return "call " + std::to_string(dog_->index()) + " (" + dog_->verb() + "): "; }

  // A refused call: INVALID_ARG or INVALID_PE, the message naming it.
  void refused(const char* call, tether_status_t st) {
    ++nBad_;
    ASSERT_TRUE(st == TETHER_ERR_INVALID_ARG || st == TETHER_ERR_INVALID_PE)
        << at() << "a bad argument gave " << tether_status_string(st);
    const std::string msg = tether_last_error();
    ASSERT_NE(msg.find(call), std::string::npos) << at() << "the message does not name " << call << ": " << msg;
  }
  static bool fits(const Recv& r, const Msg& m) { return r.tag == TETHER_ANY_TAG || r.tag == m.tag; }

  void step() {
    switch (uni(10)) {
      case 0: case 1: isend(); break;
      case 2: case 3: irecv(); break;
      case 4: testRecv(); break;
      case 5: completeSend(); break;
      case 6: waitMatched(); break;
      case 7: waitGroup(); break;
      case 8: persistent(); break;
      default: bad();
    }
  }

  void isend() {
    dog_->name("tether_isend");
    if (sends_.size() >= kMaxPending) return;
    Msg m = newMsg(kMaxSend);
    Send s;
    s.buf = std::make_unique<std::vector<unsigned char>>(m.data);
    ASSERT_EQ(tether_isend(w_, s.buf->data(), s.buf->size(), 0, m.tag, &s.req), TETHER_SUCCESS)
        << at() << tether_last_error();
    ASSERT_NE(s.req, TETHER_REQUEST_NULL) << at() << "no request";
    ++nSends_;
    sends_.push_back(std::move(s));
    modelSend(std::move(m));
  }

  // The model. A message sent: the earliest posted receive that fits takes it, else it waits as unexpected.
  void modelSend(Msg m) {
    matched_.push_back(std::move(m));
    const Msg* mp = &matched_.back();
    for (auto it = posted_.begin(); it != posted_.end(); ++it) {
      if (fits(**it, *mp)) {
        (*it)->matched = mp;
        posted_.erase(it);
        return;
      }
    }
    unexpected_.push_back(mp);
  }
  // A receive posted: it takes the earliest unexpected message that fits, else waits as posted.
  void modelRecv(Recv* r) {
    r->matched = nullptr;
    for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
      if (fits(*r, **it)) {
        r->matched = *it;
        unexpected_.erase(it);
        return;
      }
    }
    posted_.push_back(r);
  }
  Msg newMsg(size_t maxBytes) {
    Msg m;
    m.id = ++nextMsg_;
    m.tag = static_cast<int>(uni(4));
    m.data.resize(uni(maxBytes + 1));
    for (size_t i = 0; i < m.data.size(); ++i) m.data[i] = static_cast<unsigned char>(m.id * 131 + i * 7);
    return m;
  }

  void irecv() {
    dog_->name("tether_irecv");
    if (recvs_.size() >= kMaxPending) return;
    auto r = std::make_unique<Recv>();
    r->tag = coin(25) ? TETHER_ANY_TAG : static_cast<int>(uni(4));
    r->pe = coin(50) ? TETHER_ANY_PE : 0;
    // Mostly room for any message; sometimes shorter than what comes (truncation).
    r->bytes = coin(60) ? kMaxSend : coin(25) ? uni(64) : uni(kMaxSend + 1);
    r->buf = std::make_unique<std::vector<unsigned char>>(r->bytes + 16, 0xee);  // 16 guard bytes
    ASSERT_EQ(tether_irecv(w_, r->bytes ? r->buf->data() : (coin(50) ? nullptr : r->buf->data()), r->bytes, r->pe,
                           r->tag, &r->req),
              TETHER_SUCCESS)
        << at() << tether_last_error();
    ++nRecvs_;
    modelRecv(r.get());
    recvs_.push_back(std::move(r));
  }

  // What a completed receive must show.
  void checkRecv(const Recv& r, tether_status_t st, const tether_msg_status_t& s) {
    const Msg& m = *r.matched;
    const bool trunc = m.data.size() > r.bytes;
    const size_t got = trunc ? r.bytes : m.data.size();
    if (trunc) ++nTrunc_;
    EXPECT_EQ(st, trunc ? TETHER_ERR_TRUNCATED : TETHER_SUCCESS) << at() << tether_last_error();
    EXPECT_EQ(s.error, st) << at();
    EXPECT_EQ(s.source, 0) << at();
    EXPECT_EQ(s.tag, m.tag) << at() << "message " << m.id << " receive tag " << r.tag;
    EXPECT_EQ(s.bytes, got) << at() << "message " << m.id;
    if (got && std::memcmp(r.buf->data(), m.data.data(), got) != 0)
      ADD_FAILURE() << at() << "message " << m.id << ": bytes differ";
    for (size_t i = r.bytes; i < r.buf->size(); ++i)
      if ((*r.buf)[i] != 0xee) {
        ADD_FAILURE() << at() << "message " << m.id << ": a byte past the receive buffer was written";
        break;
      }
  }
  void forget(const Recv* r) {
    for (auto it = recvs_.begin(); it != recvs_.end(); ++it)
      if (it->get() == r) {
        stale_.push_back((*it)->req);
        recvs_.erase(it);
        return;
      }
  }

  // test a receive: done exactly when the model matched it (a matched eager message is there to be read).
  void testRecv() {
    dog_->name("tether_msg_test");
    if (recvs_.empty()) return;
    Recv& r = *recvs_[uni(recvs_.size())];
    tether_request_t req = r.req;
    int done = -1;
    tether_msg_status_t s{};
    const tether_status_t st = tether_msg_test(w_, &req, &done, &s);
    if (!r.matched) {
      ASSERT_EQ(st, TETHER_SUCCESS) << at() << tether_last_error();
      ASSERT_EQ(done, 0) << at() << "a receive that nothing fits completed (tag " << r.tag << ")";
      ASSERT_EQ(req, r.req) << at() << "test changed a pending request";
      return;
    }
    ASSERT_EQ(done, 1) << at() << "a receive whose message was sent did not complete at test";
    ASSERT_EQ(req, TETHER_REQUEST_NULL) << at();
    checkRecv(r, st, s);
    forget(&r);
  }

  // wait (or test) a send: eager sends to this PE complete.
  void completeSend() {
    dog_->name("tether_msg_wait(send)");
    if (sends_.empty()) return;
    const size_t i = uni(sends_.size());
    tether_request_t req = sends_[i].req;
    tether_msg_status_t s{};
    const tether_status_t st = tether_msg_wait(w_, &req, &s);
    ASSERT_EQ(st, TETHER_SUCCESS) << at() << tether_last_error();
    ASSERT_EQ(req, TETHER_REQUEST_NULL) << at();
    EXPECT_EQ(s.source, 0) << at();
    EXPECT_EQ(s.bytes, sends_[i].buf->size()) << at();
    stale_.push_back(sends_[i].req);
    sends_.erase(sends_.begin() + static_cast<std::ptrdiff_t>(i));
  }

  // wait for a receive the model matched.
  void waitMatched() {
    dog_->name("tether_msg_wait(receive)");
    for (auto& rp : recvs_) {
      if (!rp->matched) continue;
      tether_request_t req = rp->req;
      tether_msg_status_t s{};
      const tether_status_t st = tether_msg_wait(w_, &req, &s);
      ASSERT_EQ(req, TETHER_REQUEST_NULL) << at();
      checkRecv(*rp, st, s);
      forget(rp.get());
      return;
    }
  }

  // waitall over every send and matched receive (with null entries mixed in), or waitany over them.
  void waitGroup() {
    const bool any = coin(50);
    dog_->name(any ? "tether_msg_waitany" : "tether_msg_waitall");
    std::vector<tether_request_t> reqs;
    std::vector<const Recv*> who;  // nullptr: a send or a null entry
    for (auto& s : sends_) reqs.push_back(s.req), who.push_back(nullptr);
    for (auto& r : recvs_)
      if (r->matched) reqs.push_back(r->req), who.push_back(r.get());
    if (coin(30)) reqs.push_back(TETHER_REQUEST_NULL), who.push_back(nullptr);
    std::vector<tether_msg_status_t> st(reqs.size());
    if (any) {
      size_t index = 0;
      tether_msg_status_t s{};
      const bool allNull = reqs.empty() || (reqs.size() == 1 && reqs[0] == TETHER_REQUEST_NULL);
      const tether_status_t rc = tether_msg_waitany(w_, reqs.size(), reqs.data(), &index, &s);
      if (allNull) {
        ASSERT_EQ(rc, TETHER_SUCCESS) << at() << tether_last_error();
        ASSERT_EQ(index, SIZE_MAX) << at() << "waitany over null requests";
        return;
      }
      ASSERT_LT(index, reqs.size()) << at() << tether_last_error();
      ASSERT_EQ(reqs[index], TETHER_REQUEST_NULL) << at();
      complete(index, rc, s, who);
      return;
    }
    const tether_status_t rc = tether_msg_waitall(w_, reqs.size(), reqs.data(), st.data());
    tether_status_t first = TETHER_SUCCESS;
    for (size_t i = 0; i < reqs.size(); ++i) {
      ASSERT_EQ(reqs[i], TETHER_REQUEST_NULL) << at() << "entry " << i;
      if (first == TETHER_SUCCESS) first = st[i].error;
    }
    ASSERT_EQ(rc, first) << at() << "waitall returns the first failure";
    // (Null entries were null before: nothing to complete; the others in order.)
    std::vector<tether_request_t> ids;
    for (auto& s : sends_) ids.push_back(s.req);
    size_t k = 0;
    for (size_t i = 0; i < reqs.size(); ++i) {
      if (who[i]) {
        checkRecv(*who[i], st[i].error, st[i]);
        forget(who[i]);
      } else if (k < ids.size()) {
        EXPECT_EQ(st[i].error, TETHER_SUCCESS) << at();
        stale_.push_back(ids[k++]);
      }
    }
    sends_.clear();
  }
  void complete(size_t index, tether_status_t rc, const tether_msg_status_t& s, const std::vector<const Recv*>& who) {
    if (who[index]) {
      checkRecv(*who[index], rc, s);
      forget(who[index]);
      return;
    }
    ASSERT_LT(index, sends_.size()) << at() << "waitany completed a null entry";
    EXPECT_EQ(rc, TETHER_SUCCESS) << at();
    stale_.push_back(sends_[index].req);
    sends_.erase(sends_.begin() + static_cast<std::ptrdiff_t>(index));
  }

  // Bad arguments and misused requests: refused, nothing changes.
  void bad() {
    unsigned char b[8] = {};
    tether_request_t req = TETHER_REQUEST_NULL;
    switch (uni(7)) {
      case 0: {
        dog_->name("tether_isend");
        const int pes[] = {1, TETHER_ANY_PE, -2, INT_MAX, INT_MIN};
        refused("tether_isend", tether_isend(w_, b, 8, pes[uni(5)], 0, &req));
        break;
      }
      case 1: {
        dog_->name("tether_isend");
        const int tags[] = {-1, -2, INT_MIN};
        refused("tether_isend", tether_isend(w_, b, 8, 0, tags[uni(3)], &req));
        break;
      }
      case 2: {
        dog_->name("tether_irecv");
        const int tags[] = {-2, -100, INT_MIN};
        refused("tether_irecv", tether_irecv(w_, b, 8, TETHER_ANY_PE, tags[uni(3)], &req));
        break;
      }
      case 3: {
        dog_->name("tether_isend");
        refused("tether_isend", coin(50) ? tether_isend(w_, nullptr, 8, 0, 0, &req)
                                         : tether_isend(w_, b, 8, 0, 0, nullptr));
        break;
      }
      case 4: {
        dog_->name("tether_irecv");
        refused("tether_irecv", coin(50) ? tether_irecv(w_, nullptr, 8, 0, 0, &req)
                                         : tether_irecv(w_, b, 8, 0, 0, nullptr));
        break;
      }
      case 5: {  // a completed request again
        dog_->name("tether_msg_wait(stale)");
        if (stale_.empty()) return;
        req = stale_[uni(stale_.size())];
        tether_msg_status_t s{};
        refused("tether_msg_wait", tether_msg_wait(w_, &req, &s));
        break;
      }
      default: {  // an id never issued
        dog_->name("tether_msg_test(unknown)");
        req = (uint64_t{1} << 62) + uni(1000);
        int done = 0;
        refused("tether_msg_test", tether_msg_test(w_, &req, &done, nullptr));
      }
    }
  }

  // Persistent requests (send_init / recv_init): a start is a send or a posted receive in the model; a start of an
  // active request and a free of an active one are refused; wait/test complete an active one (a receive: once the
  // model matched it) and leave it inactive, *req kept; on an inactive one they return at once with an empty status;
  // a freed one's id is stale.
  struct Persist {
    tether_request_t req = TETHER_REQUEST_NULL;
    bool isSend = false, active = false;
    std::unique_ptr<std::vector<unsigned char>> sendBuf;  // a send's; a receive's is recv.buf
    int tag = 0;
    Recv recv;  // a receive's, as the model knows it
  };
  void persistent() {
    switch (uni(5)) {
      case 0: {
        dog_->name("tether_send_init/recv_init");
        if (pers_.size() >= 8) return;
        auto p = std::make_unique<Persist>();
        p->isSend = coin(50);
        if (p->isSend) {
          p->tag = static_cast<int>(uni(4));
          p->sendBuf = std::make_unique<std::vector<unsigned char>>(uni(kMaxSend + 1));
          ASSERT_EQ(tether_send_init(w_, p->sendBuf->data(), p->sendBuf->size(), 0, p->tag, &p->req), TETHER_SUCCESS)
              << at() << tether_last_error();
        } else {
          Recv& r = p->recv;
          r.tag = coin(25) ? TETHER_ANY_TAG : static_cast<int>(uni(4));
          r.pe = coin(50) ? TETHER_ANY_PE : 0;
          r.bytes = coin(70) ? kMaxSend : uni(kMaxSend + 1);
          r.buf = std::make_unique<std::vector<unsigned char>>(r.bytes + 16, 0xee);
          ASSERT_EQ(tether_recv_init(w_, r.buf->data(), r.bytes, r.pe, r.tag, &p->req), TETHER_SUCCESS)
              << at() << tether_last_error();
          r.req = p->req;
        }
        pers_.push_back(std::move(p));
        break;
      }
      case 1: {  // start
        dog_->name("tether_msg_start");
        if (pers_.empty()) return;
        Persist& p = *pers_[uni(pers_.size())];
        if (p.active) {
          refused("tether_msg_start", tether_msg_start(w_, p.req));
          return;
        }
        Msg m;
        if (p.isSend) {  // this round's bytes, written into the request's buffer before the start
          m = newMsg(p.sendBuf->size());
          m.data.resize(p.sendBuf->size());
          for (size_t i = 0; i < m.data.size(); ++i) m.data[i] = static_cast<unsigned char>(m.id * 131 + i * 7);
          m.tag = p.tag;
          std::copy(m.data.begin(), m.data.end(), p.sendBuf->begin());
        } else {
          std::fill(p.recv.buf->begin(), p.recv.buf->end(), 0xee);
        }
        ASSERT_EQ(tether_msg_start(w_, p.req), TETHER_SUCCESS) << at() << tether_last_error();
        p.active = true;
        ++nRounds_;
        if (p.isSend) modelSend(std::move(m));
        else modelRecv(&p.recv);
        break;
      }
      case 2: case 3: {  // wait or test
        if (pers_.empty()) return;
        Persist& p = *pers_[uni(pers_.size())];
        completePersist(p, coin(50));
        break;
      }
      default: {  // free
        dog_->name("tether_msg_request_free");
        if (pers_.empty()) return;
        const size_t i = uni(pers_.size());
        tether_request_t req = pers_[i]->req;
        if (pers_[i]->active) {
          refused("tether_msg_request_free", tether_msg_request_free(w_, &req));
          return;
        }
        ASSERT_EQ(tether_msg_request_free(w_, &req), TETHER_SUCCESS) << at() << tether_last_error();
        ASSERT_EQ(req, TETHER_REQUEST_NULL) << at();
        stale_.push_back(pers_[i]->req);
        pers_.erase(pers_.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
  }
  // wait (or test) a persistent request; an active receive the model has not matched is only tested.
  void completePersist(Persist& p, bool test) {
    dog_->name(test ? "tether_msg_test(persistent)" : "tether_msg_wait(persistent)");
    const bool pending = p.active && !p.isSend && !p.recv.matched;
    if (pending) test = true;
    tether_request_t req = p.req;
    tether_msg_status_t s{};
    int done = -1;
    const tether_status_t st = test ? tether_msg_test(w_, &req, &done, &s) : tether_msg_wait(w_, &req, &s);
    ASSERT_EQ(req, p.req) << at() << "a persistent request's id changed";
    if (test && pending) {
      ASSERT_EQ(st, TETHER_SUCCESS) << at() << tether_last_error();
      ASSERT_EQ(done, 0) << at() << "a persistent receive that nothing fits completed";
      return;
    }
    if (test) {
      ASSERT_EQ(done, 1) << at();
    }
    if (!p.active) {
      ASSERT_EQ(st, TETHER_SUCCESS) << at() << tether_last_error();
      EXPECT_TRUE(s.source == TETHER_ANY_PE && s.tag == TETHER_ANY_TAG && s.bytes == 0) << at() << "not empty";
      return;
    }
    p.active = false;
    if (p.isSend) {
      EXPECT_EQ(st, TETHER_SUCCESS) << at() << tether_last_error();
      EXPECT_EQ(s.bytes, p.sendBuf->size()) << at();
      return;
    }
    checkRecv(p.recv, st, s);
  }

  // A message for every receive still posted (its tag, or tag 0 for a wildcard), then everything waited for and the
  // persistent requests freed.
  void drain() {
    dog_->name("drain");
    while (!posted_.empty()) {  // (a message that fits the earliest posted receive goes to it)
      Msg m = newMsg(64);
      m.tag = posted_.front()->tag == TETHER_ANY_TAG ? 0 : posted_.front()->tag;
      Send s;
      s.buf = std::make_unique<std::vector<unsigned char>>(m.data);
      ASSERT_EQ(tether_isend(w_, s.buf->data(), s.buf->size(), 0, m.tag, &s.req), TETHER_SUCCESS)
          << tether_last_error();
      sends_.push_back(std::move(s));
      modelSend(std::move(m));
    }
    ASSERT_TRUE(posted_.empty());
    while (!recvs_.empty()) {
      waitMatched();
      if (::testing::Test::HasFailure()) return;
    }
    while (!sends_.empty()) {
      completeSend();
      if (::testing::Test::HasFailure()) return;
    }
    for (auto& p : pers_) {
      if (p->active) completePersist(*p, false);
      if (::testing::Test::HasFailure()) return;
      ASSERT_EQ(tether_msg_request_free(w_, &p->req), TETHER_SUCCESS) << tether_last_error();
    }
    pers_.clear();
  }

  tether_t w_;
  std::mt19937_64 rng_;
  std::deque<Msg> matched_;  // every message sent (deque: pointers stay valid)
  std::deque<const Msg*> unexpected_;
  std::deque<Recv*> posted_;
  std::vector<std::unique_ptr<Recv>> recvs_;
  std::vector<Send> sends_;
  std::vector<std::unique_ptr<Persist>> pers_;
  std::vector<tether_request_t> stale_;
  uint64_t nextMsg_ = 0;
  CallWatchdog* dog_ = nullptr;  // run()'s
  int nSends_ = 0, nRecvs_ = 0, nTrunc_ = 0, nBad_ = 0, nRounds_ = 0;
};

TEST(MsgFuzz, RandomMessagesToSelfFollowMpiMatching) {
  tether_init_attr_t a;
  tether_init_attr_default(&a);
  a.rank = 0;
  a.size = 1;
  a.config = kConfig;
  tether_t w = nullptr;
  ASSERT_EQ(tether_init_attr(&a, &w), TETHER_SUCCESS) << tether_last_error();
  ASSERT_EQ(tether_msg_init(w, nullptr), TETHER_SUCCESS) << tether_last_error();
  {
    MsgFuzz f(w, tether::testSeed("test_msg_fuzz"));
    f.run(kCalls);
  }
  EXPECT_EQ(tether_msg_finalize(w), TETHER_SUCCESS) << tether_last_error();
  EXPECT_EQ(tether_finalize(w), TETHER_SUCCESS) << tether_last_error();
}

}  // namespace
