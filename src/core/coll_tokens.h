// CollTokens: the token rings of the team data collectives (core/collectives.h "Tokens" has the protocol they carry):
// per team slot, in every member's HOST segment, a ring of kEagerDepth token slots after a 64-byte line of the
// member's done and close words, and the member's staging ring (kEagerStageTeamBytes) for copies too large for a
// token. This room owns their layout and the waits on them; what a token means (the agreement, the eager forms, the
// one-shot reads) stays with Collectives.
//
// Contracts
//  - A team is a token team (team()) when it has 2+ members and every member's HOST segment is load/store mapped
//    here; the answer and each member's ring address are cached in the Team (tokens, rings) at the first ask.
//  - post() writes this member's token of call c: flags, the record's hash and full words, up to kEagerDataBytes of
//    inline data, then the call number c + 1, stored last with release (the member's earlier stores, a staged copy
//    included, are visible to whoever sees it). It reuses the slot of call c - kEagerDepth only once every member's
//    done word passed that call; a member that has to wait waits until half the ring is free.
//  - await() waits for member m's token of call c (TETHER_TIMEOUT; the team is lost on expiry: Links::lose);
//    token() reads it afterwards (valid until that member posts call c + kEagerDepth, which it does only after this
//    member's done word passed call c).
//  - stageRoom() hands out the next room in this member's staging ring, once the calls whose copies it overwrites
//    are done on every member (waitDone).
//  - The done word of a member is the number of calls it completed on the team (stored by the caller as each call
//    returns); tokenBase() and start() carry token numbers across the lifetimes of the teams of one slot.
//  - It knows no World: the segments' mapping, the team's loss and the timeout come in as Links (tests/unit's
//    test_coll_tokens drives two members in one process). Not thread-safe: collective calls on one team do not race.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "base/cpu.h"
#include "base/status.h"
#include "core/coll_layout.h"
#include "core/coll_record.h"
#include "core/teams.h"
#include "core/wakeups.h"

namespace tether {

class CollTokens {
 public:
  // A token's flags.
  static constexpr uint64_t kEager = 1;   // an eager form's token
  static constexpr uint64_t kInline = 2;  // the data is inline (data())
  static constexpr uint64_t kStaged = 8;  // the data word is an offset in the member's staging ring

  // A posted token as this PE reads it (a view of member m's slot).
  class Token {
   public:
    bool valid() const { return (s_[kMeta] & kValidFlag) != 0; }  // the poster's record was valid
    bool inlined() const { return (s_[kMeta] & kInline) != 0; }
    bool staged() const { return (s_[kMeta] & kStaged) != 0; }
    uint64_t hash() const { return s_[kHash]; }
    const char* data() const { return reinterpret_cast<const char*>(s_ + kData); }
    uint64_t dataWord() const { return s_[kData]; }
    CollRecord record() const;  // the full record (read only to explain a mismatch)

   private:
    friend class CollTokens;
    explicit Token(const uint64_t* s) : s_(s) {}
    const uint64_t* s_;
  };

  struct Links {
    int me = 0;  // this PE (world)
    // PE pe's HOST segment at offset off as this PE loads and stores it (its own included), or null where it cannot.
    std::function<char*(int pe, uint64_t off)> host;
    // The team loses its collective state with status s (Teams::lose), which it returns.
    std::function<Status(Team& t, Status s)> lose;
    double timeout = 0;  // TETHER_TIMEOUT, seconds
    // This host's sleep words (core/wakeups.h): a member's stores that others wait for (its token, done and close
    // words, in its own segment) wake every other member; the waits sleep on this PE's. Null: plain sleeps.
    const Wakeups* wakeups = nullptr;
  };

  void attach(Links links) { links_ = std::move(links); }  // before the first call

  bool team(Team& t) const;  // t is a token team (cached in t)
  bool peer(int pe) const;   // world PE pe's HOST segment (its token rings) is load/store mapped here
  // Member m's words (token teams; m a team PE number).
  uint64_t* done(const Team& t, size_t m) const { return t.rings[m]; }
  uint64_t* close(const Team& t, size_t m) const { return t.rings[m] + 1; }
  // This PE finished its part of the team's first `calls` calls: its done word, then the other members' wakes.
  void markDone(const Team& t, uint64_t calls) const {
    __atomic_store_n(done(t, static_cast<size_t>(t.me)), calls, __ATOMIC_RELEASE);
    wakeTeam(t);
  }
  char* stage(const Team& t, size_t m, uint64_t off) const;  // member m's staging ring at off
  Token token(const Team& t, size_t m, uint64_t c) const { return Token(slot(t, m, c)); }

  Status post(const char* call, Team& t, uint64_t c, const CollRecord& r, uint64_t flags, const void* data,
              size_t bytes) const;
  // Waits for member m's token of call c; role says what for, in the error.
  Status await(const char* call, Team& t, size_t m, uint64_t c, const char* role) const;
  // Starts loading (write: taking for writing) the lines of member m's token of call c that hold its head and bytes
  // of inline data, and the head of call c + 1.
  void prefetch(const Team& t, size_t m, uint64_t c, size_t bytes, bool write) const {
    const size_t lines = bytes <= kEagerDataBytes ? (kData * sizeof(uint64_t) + bytes + 63) / 64 : 1;
    char* head = reinterpret_cast<char*>(slot(t, m, c));
    for (size_t l = 0; l < lines; ++l) {
      if (write) prefetchWrite(head + l * 64);
      else prefetchRead(head + l * 64);
    }
    if (write) prefetchWrite(slot(t, m, c + 1));
    else prefetchRead(slot(t, m, c + 1));
  }
  // Room for bytes in this member's staging ring for call c: *off (contracts above).
  Status stageRoom(const char* call, Team& t, size_t bytes, uint64_t c, uint64_t* off) const;
  // Waits until every other member's done word reaches calls; updateMin: t.minDone = the least seen.
  Status waitDone(const char* call, Team& t, uint64_t calls, bool updateMin) const;
  // The closing of call t.callSeq's pulled data phase (in place of a closing barrier) by the close words: this
  // member's is (call << 2) | (phase << 1) | failed, phase 0 the middle of a two-shot allreduce, 1 the close; it
  // waits until every member's shows the same call and phase (or later); *flagged: some member failed.
  Status closeCall(const char* call, Team& t, bool middle, bool failed, bool* flagged) const;
  // Teams::destroy's settle hook: every member's done word has passed every call this PE made on t.
  Status settle(const char* call, Team& t) const;
  // Token numbers across team lifetimes (Collectives::tokenBase, startTokens).
  uint64_t tokenBase() const;
  void start(Team& t, uint64_t base) const;

 private:
  void wakeTeam(const Team& t) const {
    if (links_.wakeups && links_.wakeups->any())
      for (int pe : t.pes)
        if (pe != links_.me) links_.wakeups->wake(pe);
  }
  SleepWord* sleepWord() const { return links_.wakeups ? links_.wakeups->mine() : nullptr; }
  // Slot layout, so that a small collective reads as few cache lines of each member as its data needs (one up to 40
  // bytes): word 0 the call number + 1 (stored last), word 1 flags | inline bytes << 8, word 2 the record's hash,
  // then the inline data (up to kEagerDataBytes); the full record in the slot's last cache line.
  enum : size_t { kSeq, kMeta, kHash, kData };
  static constexpr size_t kRec = (kEagerSlotBytes - 64) / sizeof(uint64_t);
  static constexpr uint64_t kValidFlag = 4;
  static_assert(kRec + CollRecord::kWords <= kEagerSlotBytes / 8, "a token's record fits its slot");
  static_assert(kData * 8 + kEagerDataBytes <= kRec * 8, "a token's inline data ends before its record");

  uint64_t* slot(const Team& t, size_t m, uint64_t c) const {
    return t.rings[m] + (64 + (c % kEagerDepth) * kEagerSlotBytes) / sizeof(uint64_t);
  }
  static uint64_t ringOffset(int teamSlot) {
    return kEagerOffset + static_cast<uint64_t>(teamSlot) * kEagerTeamBytes;
  }

  Links links_;
};

}  // namespace tether
