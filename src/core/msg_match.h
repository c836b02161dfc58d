// Two-sided matching for Messaging (core/messaging.h, issue #20), by MPI's rules: an arriving message from source s
// with tag t goes to the first receive, in the order posted, whose wanted source and tag fit it (TETHER_ANY_PE /
// TETHER_ANY_TAG, both -1, fit all); a new receive takes the first message, in arrival order, that fits it; what
// finds nothing waits in its queue. Messages from one source arrive in the order sent (the owner's rings), so with
// these two orders messages between a pair never overtake each other.
//
// Rooms (none allocates once warm; none is thread-safe: the owner's lock guards them):
//  - PostedQueue<R>: receives waiting for a message, linked through the records themselves. R has members
//    `int pe, tag` (wanted source and tag), `bool inPosted`, `R* prevPosted, *nextPosted` (the links, owned here).
//  - UnexpectedQueue<Meta>: messages no receive took, in arrival order, each with the owner's Meta (what a rendezvous
//    announcement needs later) and, for an eager message, its bytes: in the node up to kTinyBytes, else in the pool
//    (a byte range the owner lends -- Messaging's symmetric region), else, the pool full, in heap memory of the
//    node's own, so an arrival never waits for a receive. Bytes go back when the Taken holding the message ends.
//  - FirstFitPool: the pool's allocator (offsets into [0, bytes), 64-byte granules, coalescing on release).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <list>
#include <map>
#include <memory>

namespace tether {

// Whether a receive's wanted source or tag (want; -1: any) takes a message's (have).
inline bool msgFits(int want, int have) { return want < 0 || want == have; }

template <class R>
class PostedQueue {
 public:
  void push(R& r) {
    r.inPosted = true;
    r.prevPosted = last_;
    r.nextPosted = nullptr;
    (last_ ? last_->nextPosted : first_) = &r;
    last_ = &r;
  }
  // r leaves the queue (nothing when it is not in it): O(1), for a receive withdrawn or dropped.
  void unlink(R& r) {
    if (!r.inPosted) return;
    (r.prevPosted ? r.prevPosted->nextPosted : first_) = r.nextPosted;
    (r.nextPosted ? r.nextPosted->prevPosted : last_) = r.prevPosted;
    r.inPosted = false;
    r.prevPosted = r.nextPosted = nullptr;
  }
  // The first receive in posting order that a message from src with tag fits, taken out of the queue; null if none.
  R* take(int src, int tag) {
    R* r = first_;
    while (r && !(msgFits(r->pe, src) && msgFits(r->tag, tag))) r = r->nextPosted;
    if (r) unlink(*r);
    return r;
  }
  bool empty() const { return !first_; }

 private:
  R* first_ = nullptr;
  R* last_ = nullptr;
};

class FirstFitPool {
 public:
  static constexpr size_t kGranule = 64;
  explicit FirstFitPool(size_t bytes) {
    if (bytes) free_[0] = bytes;
  }
  // *off: the start of n bytes (at least one granule, rounded up to granules); false when no free range holds them.
  bool alloc(size_t n, uint64_t* off) {
    n = granules(n);
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->second >= n) {
        *off = it->first;
        const uint64_t rest = it->second - n, at = it->first + n;
        free_.erase(it);
        if (rest) free_[at] = rest;
        return true;
      }
    return false;
  }
  // Gives back what alloc(n) returned at off (n as passed to alloc).
  void release(uint64_t off, size_t n) {
    n = granules(n);
    auto it = free_.emplace(off, n).first;
    auto nx = std::next(it);
    if (nx != free_.end() && it->first + it->second == nx->first) {
      it->second += nx->second;
      free_.erase(nx);
    }
    if (it != free_.begin()) {
      auto pv = std::prev(it);
      if (pv->first + pv->second == it->first) {
        pv->second += it->second;
        free_.erase(it);
      }
    }
  }
  size_t freeRanges() const { return free_.size(); }  // (tests: 1 once every range is back)
  size_t largestFree() const {
    size_t m = 0;
    for (const auto& f : free_) m = std::max<size_t>(m, f.second);
    return m;
  }

 private:
  static size_t granules(size_t n) { return (std::max<size_t>(n, 1) + kGranule - 1) / kGranule * kGranule; }
  std::map<uint64_t, uint64_t> free_;  // offset -> bytes, disjoint and never adjacent
};

template <class Meta>
class UnexpectedQueue {
 public:
  static constexpr size_t kTinyBytes = 64;
  struct Msg {
    int src = 0;
    int tag = 0;
    bool eager = false;  // its bytes are held here (else a rendezvous announcement: Meta says where they are)
    size_t bytes = 0;    // eager: held bytes; rendezvous: the message's length
    Meta meta{};
    // Eager: its bytes. inPool: they lie in the pool (the owner's memory), else in memory of this queue's own.
    const char* data() const { return at; }
    bool inPool() const { return eager && at != tiny && !heap; }

   private:
    friend class UnexpectedQueue;
    const char* at = nullptr;  // eager: tiny, the pool at poolOff, or heap (a node's address never changes: a list)
    uint64_t poolOff = 0;
    std::unique_ptr<char[]> heap;
    alignas(16) char tiny[kTinyBytes];
  };

  // A message taken out of the queue: readable while the Taken lives; when it ends the message's bytes go back and
  // its node is kept for a later arrival.
  class Taken {
   public:
    Taken() = default;
    Taken(const Taken&) = delete;
    Taken& operator=(const Taken&) = delete;
    ~Taken() { reset(); }
    explicit operator bool() const { return !node_.empty(); }
    const Msg& operator*() const { return node_.front(); }
    const Msg* operator->() const { return &node_.front(); }
    void reset() {
      if (node_.empty()) return;
      Msg& m = node_.front();
      if (m.inPool()) q_->pool_.release(m.poolOff, m.bytes);
      m.heap.reset();
      q_->spare_.splice(q_->spare_.end(), node_);
    }

   private:
    friend class UnexpectedQueue;
    UnexpectedQueue* q_ = nullptr;
    std::list<Msg> node_;  // the one node while taken
  };

  UnexpectedQueue() = default;
  // pool: poolBytes of memory the owner lends for held bytes (may be 0), before any add; the owner outlives the
  // queue's use of it.
  void attach(char* pool, size_t poolBytes) {
    poolBase_ = pool;
    pool_ = FirstFitPool(poolBytes);
  }
  UnexpectedQueue(const UnexpectedQueue&) = delete;
  UnexpectedQueue& operator=(const UnexpectedQueue&) = delete;

  // A message no receive took joins the queue; an eager one's bytes (payload, `bytes` of them) are copied now, so the
  // caller may reuse payload on return. The returned node's meta is as its last use left it: the caller's to set
  // where it will read it (not cleared here: an eager message, the common case, needs none).
  Msg& add(int src, int tag, bool eager, size_t bytes, const void* payload) {
    if (spare_.empty()) queue_.emplace_back();
    else queue_.splice(queue_.end(), spare_, spare_.begin());
    Msg& m = queue_.back();
    m.src = src;
    m.tag = tag;
    m.eager = eager;
    m.bytes = bytes;
    m.at = nullptr;
    if (!eager) return m;
    char* to = m.tiny;
    if (bytes > kTinyBytes) {
      if (pool_.alloc(bytes, &m.poolOff)) {
        to = poolBase_ + m.poolOff;
      } else {  // the pool is full: the message still never waits (the owner's ring carries later traffic too)
        m.heap.reset(new char[bytes]);
        to = m.heap.get();
      }
    }
    if (bytes) std::memcpy(to, payload, bytes);
    m.at = to;
    return m;
  }
  // The first message in arrival order that a receive wanting (pe, tag) takes, moved into *out (emptied first);
  // false when none fits.
  bool take(int pe, int tag, Taken* out) {
    out->reset();
    for (auto it = queue_.begin(); it != queue_.end(); ++it) {
      if (!msgFits(pe, it->src) || !msgFits(tag, it->tag)) continue;
      out->q_ = this;
      out->node_.splice(out->node_.end(), queue_, it);
      return true;
    }
    return false;
  }
  size_t size() const { return queue_.size(); }
  const FirstFitPool& pool() const { return pool_; }

 private:
  char* poolBase_ = nullptr;
  FirstFitPool pool_{0};
  std::list<Msg> queue_;  // in arrival order
  std::list<Msg> spare_;  // nodes of taken messages, reused by later arrivals
};

}  // namespace tether
