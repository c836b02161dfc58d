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
  RingCredit(int pes, uint64_t slots) : slots_(slots), peers_(static_cast<size_t>(pes)) {}
  // This PE's ack words (acked[d]: d's consumed count of this PE's slots, written by d), before any credit().
  void attach(const uint64_t* acked) { acked_ = acked; }
  uint64_t slots() const { return slots_; }

  // ---- sending to d
  uint64_t sent(int d) const { return at(d).sent; }
  uint64_t credit(int d) const { return std::max(__atomic_load_n(acked_ + d, __ATOMIC_ACQUIRE), at(d).heard); }
  uint64_t free(int d) const { return slots_ - (at(d).sent - credit(d)); }
  uint32_t carry(int d) const { return static_cast<uint32_t>(at(d).next); }  // for the head of a slot to d
  // span slots written to d at sent(d); they carried carry(d).
  void wrote(int d, uint64_t span) {
    Peer& p = at(d);
    p.sent += span;
    p.carried = p.next;
  }

  // ---- receiving from s
  uint64_t next(int s) const { return at(s).next; }  // the index of s's next slot here
  void hear(int s, uint32_t ack) {
    uint64_t& h = at(s).heard;
    h += static_cast<uint32_t>(ack - static_cast<uint32_t>(h));
  }
  void consumed(int s, uint64_t span) { at(s).next += span; }
  bool mustPublish(int s) const {
    const Peer& p = at(s);
    return p.next - std::max(p.published, p.carried) >= slots_ / 2;
  }
  // *value: the count to store in s's ack word for this PE; returns the step since the last publish (to ADD).
  uint64_t publish(int s, uint64_t* value) {
    Peer& p = at(s);
    *value = p.next;
    const uint64_t step = p.next - p.published;
    p.published = p.next;
    return step;
  }

 private:
  // One peer's counts, together (a slot written or consumed touches one line).
  struct Peer {
    uint64_t sent = 0;       // as destination: slots written to it
    uint64_t heard = 0;      // as destination: the count of its slots consumed that it carried here last
    uint64_t next = 0;       // as source: slots consumed from it
    uint64_t published = 0;  // as source: the consumed count last published (the ack word: the ADDs' sum)
    uint64_t carried = 0;    // as source: the consumed count carried in the last slot written to it
  };
  Peer& at(int pe) { return peers_[static_cast<size_t>(pe)]; }
  const Peer& at(int pe) const { return peers_[static_cast<size_t>(pe)]; }
  const uint64_t slots_;
  const uint64_t* acked_ = nullptr;
  std::vector<Peer> peers_;
};

}  // namespace tether
