// RingCredit: the slot accounting of Messaging's inbox rings (core/messaging.h) -- one ring of K slots per ordered PE
// pair, written only by its sender and consumed in order only by its receiver -- seen from one PE: for each
// destination the slots it wrote and what it knows the destination consumed; for each source the slots it consumed
// and what it has told that source.
//
// Contracts
//  - The sender may write slot n of its ring at d while n - credit(d) < K (free(d) slots from `sent(d)` on): credit is
//    the larger of d's ack word here (d's stores, or posted ADDs that sum to d's count) and the count d carried in the
//    last slot it wrote here (heard); both only grow and never exceed d's true count, so no unconsumed slot is ever
//    overwritten.
//  - Every slot written to d carries the low 32 bits of this PE's consumed count of d's slots (carry); the receiver
//    widens it against what it heard last (hear: slots come in order, so the count only grows; a step of 2^32 or more
//    would read smaller -- credit under-counted, which is safe).
//  - The receiver publishes its count into the sender's ack word (publish: the value, and the step since the last
//    publish for a transport that can only ADD) once the sender knows of neither for half a ring (mustPublish); a
//    full ring always gets there, so a sender waiting for credit is never left waiting.
//  - Not thread-safe: the owner's lock guards it. The ack words are the owner's (its symmetric region): acked[d] is
//    written by d only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace tether {

class RingCredit {
 public:
  RingCredit(int pes, uint64_t slots)
      : slots_(slots), sent_(size(pes)), next_(size(pes)), published_(size(pes)), carried_(size(pes)),
        heard_(size(pes)) {}
  // This PE's ack words (acked[d]: d's consumed count of this PE's slots, written by d), before any credit().
  void attach(const uint64_t* acked) { acked_ = acked; }
  uint64_t slots() const { return slots_; }

  // ---- sending to d
  uint64_t sent(int d) const { return sent_[size(d)]; }
  uint64_t credit(int d) const { return std::max(__atomic_load_n(acked_ + d, __ATOMIC_ACQUIRE), heard_[size(d)]); }
  uint64_t free(int d) const { return slots_ - (sent_[size(d)] - credit(d)); }
  uint32_t carry(int d) const { return static_cast<uint32_t>(next_[size(d)]); }  // for the head of a slot to d
  // span slots written to d at sent(d); they carried carry(d).
  void wrote(int d, uint64_t span) {
    sent_[size(d)] += span;
    carried_[size(d)] = next_[size(d)];
  }

  // ---- receiving from s
  uint64_t next(int s) const { return next_[size(s)]; }  // the index of s's next slot here
  void hear(int s, uint32_t ack) {
    uint64_t& h = heard_[size(s)];
    h += static_cast<uint32_t>(ack - static_cast<uint32_t>(h));
  }
  void consumed(int s, uint64_t span) { next_[size(s)] += span; }
  bool mustPublish(int s) const {
    return next_[size(s)] - std::max(published_[size(s)], carried_[size(s)]) >= slots_ / 2;
  }
  // *value: the count to store in s's ack word for this PE; returns the step since the last publish (to ADD).
  uint64_t publish(int s, uint64_t* value) {
    *value = next_[size(s)];
    const uint64_t step = *value - published_[size(s)];
    published_[size(s)] = *value;
    return step;
  }

 private:
  static size_t size(int v) { return static_cast<size_t>(v); }
  const uint64_t slots_;
  const uint64_t* acked_ = nullptr;
  std::vector<uint64_t> sent_;       // per destination: slots written
  std::vector<uint64_t> next_;       // per source: slots consumed
  std::vector<uint64_t> published_;  // per source: the consumed count last published (the ack word: the ADDs' sum)
  std::vector<uint64_t> carried_;    // per source: the consumed count carried in the last slot written to it
  std::vector<uint64_t> heard_;      // per destination: the count of its slots consumed that it carried here last
};

}  // namespace tether
