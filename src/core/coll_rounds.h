// CollRounds: the barriers of the team data collectives on their per-team-slot words (core/collectives.h step 2 on
// teams that are not token teams, the closing barrier there, and the slow record exchange of step 3 everywhere): the
// team's schedule (core/sync_schedule.h) walked with values that carry a tag and the sender's flag, consumed by
// zeroing; kCollRounds words per set, two sets used alternately (Team::collSeq), then kCollValueWords value words
// (core/coll_layout.h; the words of slot s lie at wordsOffset(s) of every PE's HOST segment).
//
// Contracts
//  - rounds(): one barrier over t whose values carry tag; *flagged: this member's raise, or some member's flag, or a
//    different tag reached it (every member hears from every other through a chain of rounds, so after the last
//    round every member's flag is up exactly when some member raised it or sent another tag). A failure part-way
//    (a timeout, a signal that failed, a failure passed on) goes on to the members on this host still owed a value
//    (Links::passFailure) and loses the team (Links::lose): the members are out of step.
//  - gatherWords(): every member publishes nw <= kCollValueWords words and reads every member's (two barriers).
//  - failedTogether() / explain(): after a flagged closing / agreement barrier, every member returns the same kind of
//    error (its own first, then the first failing or differing member's, recordMismatch naming the field).
//  - It knows no World: its ways out come in as Links (tests/unit's test_coll_rounds runs members on threads).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "base/sleep_word.h"
#include "base/status.h"
#include "core/coll_layout.h"
#include "core/coll_record.h"
#include "core/teams.h"

namespace tether {

class CollRounds {
 public:
  // Tags of the barriers after the agreement: any value works (all members send the same); distinct ones make a
  // protocol slip show as a flagged barrier instead of a silent pairing.
  static constexpr uint64_t kTagMiddle = 0x2c011ec7;
  static constexpr uint64_t kTagClose = 0x3c011ec7;
  static constexpr uint64_t kTagExplain = 0x4c011ec7;

  struct Links {
    int me = 0;          // this PE (world)
    double timeout = 0;  // TETHER_TIMEOUT, seconds
    uint64_t base = 0;   // offset of team slot 0's words in every PE's HOST segment (ControlBlock::coll)
    char* mine = nullptr;  // this PE's HOST segment (its own words at base + ...)
    // SET world PE pe's HOST word at offset off to value (posted where the transport can).
    std::function<Status(int pe, uint64_t off, uint64_t value)> signal;
    // bytes of world PE pe's HOST segment at offset off into dst (blocking).
    std::function<Status(int pe, uint64_t off, void* dst, size_t bytes)> get;
    // Drives the transports while waiting; true when something moved.
    std::function<bool()> progress;
    // The schedule's steps after step `failed` that signal a member on this host get value (core/sync_failure.h).
    std::function<void(const Team& t, size_t failed, uint64_t off, uint64_t value)> passFailure;
    // The team loses its collective state with status s (Teams::lose), which it returns.
    std::function<Status(Team& t, Status s)> lose;
    SleepWord* sleepWord = nullptr;  // this PE's (core/wakeups.h; signal wakes the target's): the waits sleep on it
  };

  void attach(Links links) { links_ = std::move(links); }  // before the first call
  uint64_t wordsOffset(int slot) const { return links_.base + static_cast<uint64_t>(slot) * kCollWords * 8; }

  Status rounds(const char* call, Team& t, uint64_t tag, bool raise, bool* flagged) const;
  Status gatherWords(const char* call, Team& t, const uint64_t* mine, size_t nw, std::vector<uint64_t>* all) const;
  Status failedTogether(const char* call, Team& t, const Status& mine) const;
  Status explain(const char* call, Team& t, const CollRecord& mine, const Status& localError) const;

 private:
  Status roundsOnce(const char* call, Team& t, uint64_t tag, bool raise, bool* flagged) const;
  uint64_t* words(int slot) const { return reinterpret_cast<uint64_t*>(links_.mine + wordsOffset(slot)); }

  Links links_;
};

}  // namespace tether
