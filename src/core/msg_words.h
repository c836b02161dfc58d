// StreamWords: the stream area of Messaging's region (core/messaging.h) -- word indices, each naming a trigger word
// and a done word (uint64 each, in symmetric host memory that streams, kernels, transports and peers store to and wait
// on) -- and the generations written into them.
//
// Contracts
//  - take() hands out a free index (false when every one is in use); release() gives it back. Who holds an index owns
//    both its words: a prepared send's trigger, a request's done word, a persistent request's start and done words, a
//    direct send's claim word, a transport's landing word, a group word.
//  - Generations only grow (next, nextRange; passed() moves them past a value a word was left at), so a word needs no
//    reset between holders: a late stream wait on an old value is satisfied by a newer one.
//  - Group words (one stream wait for m requests): openGroup sets the done word to a fresh generation s and returns
//    s + m as the value to wait for; each member's count() adds 1; the m-th frees the index.
//  - Not thread-safe: the owner's lock guards it. The area is the owner's; it outlives every holder.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace tether {

class StreamWords {
 public:
  // The area: triggers[count] and dones[count]; every index free, handed out lowest first.
  void attach(uint64_t* triggers, uint64_t* dones, uint32_t count) {
    triggers_ = triggers;
    dones_ = dones;
    count_ = count;
    free_.clear();
    for (uint32_t i = count; i-- > 0;) free_.push_back(i);
  }
  uint32_t count() const { return count_; }
  bool any() const { return !free_.empty(); }
  bool take(uint32_t* index) {
    if (free_.empty()) return false;
    *index = free_.back();
    free_.pop_back();
    return true;
  }
  void release(uint32_t index) { free_.push_back(index); }
  uint64_t* trigger(uint32_t i) const { return triggers_ + i; }
  uint64_t* done(uint32_t i) const { return dones_ + i; }

  uint64_t next() { return ++gen_; }
  // m + 1 fresh generations: returns the first, s; every later one exceeds s + m.
  uint64_t nextRange(uint64_t m) {
    const uint64_t s = gen_ + 1;
    gen_ += m + 1;
    return s;
  }
  void passed(uint64_t v) { gen_ = std::max(gen_, v); }

  // A group word for m members (m > 0): *g its index, *target the done word's value once all m counted; false when no
  // index is free.
  bool openGroup(uint64_t m, uint32_t* g, uint64_t* target) {
    if (!take(g)) return false;
    const uint64_t s = nextRange(m);
    __atomic_store_n(dones_ + *g, s, __ATOMIC_RELEASE);
    groupLeft_[*g] = m;
    *target = s + m;
    return true;
  }
  void count(uint32_t g) {
    __atomic_fetch_add(dones_ + g, 1, __ATOMIC_RELEASE);
    auto it = groupLeft_.find(g);
    if (--it->second == 0) {
      groupLeft_.erase(it);
      release(g);
    }
  }
  size_t openGroups() const { return groupLeft_.size(); }

 private:
  uint64_t* triggers_ = nullptr;
  uint64_t* dones_ = nullptr;
  uint32_t count_ = 0;
  std::vector<uint32_t> free_;  // a stack: the most recently freed index first
  uint64_t gen_ = 0;
  std::unordered_map<uint32_t, uint64_t> groupLeft_;  // group word -> members not yet counted
};

}  // namespace tether
