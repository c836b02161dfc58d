// The barriers of the team collectives on their words (core/coll_rounds.h has the contracts).
#include "core/coll_rounds.h"

#include <atomic>
#include <cstring>

#include "base/clock.h"
#include "base/log.h"
#include "core/sync_failure.h"

namespace tether {

namespace {

constexpr uint64_t kTagMask = (uint64_t{1} << 62) - 1;
// A barrier value that passes a member's failure on (core/sync_failure.h): this tag above the status code (12 bits),
// flagged. Read as one only where it is not the barrier's own tag.
constexpr uint64_t kTagFailed = 0x6c011ec7;
constexpr uint64_t failedValue(tether_status_t code) {
  return (kTagFailed << 12 | (static_cast<uint64_t>(code) & 0xfff)) << 2 | 2 | 1;
}

}  // namespace

Status CollRounds::rounds(const char* call, Team& t, uint64_t tag, bool raise, bool* flagged) const {
  *flagged = raise;
  if (t.pes.size() == 1) return Status::ok();
  // A barrier that fails part-way leaves the members out of step: the team's collective state is lost.
  return links_.lose(t, roundsOnce(call, t, tag, raise, flagged));
}

Status CollRounds::roundsOnce(const char* call, Team& t, uint64_t tag, bool raise, bool* flagged) const {
  const size_t n = t.pes.size();
  const size_t set = (t.collSeq++ & 1) * kCollRounds;
  uint64_t* mine = words(t.slot) + set;
  const uint64_t setOffset = wordsOffset(t.slot) + set * sizeof(uint64_t);
  bool flag = raise;
  tag &= kTagMask;
  // A failure part-way goes on to the members on this host that this PE still owes a value (core/sync_failure.h).
  auto failed = [&](size_t i, const Status& s) {
    links_.passFailure(t, i, setOffset, failedValue(s.code()));
    return s;
  };
  // The team's schedule (core/sync_schedule.h: dissemination, or by host, where a leader's release carries its
  // verdict to its host's other members). A value carries the sender's flag as it is when sent.
  for (size_t i = 0; i < t.sync.steps.size(); ++i) {
    const SyncStep& s = t.sync.steps[i];
    if (s.to >= 0) {
      const int to = t.pes[static_cast<size_t>(s.to)];
      const uint64_t value = tag << 2 | uint64_t{flag} << 1 | 1;
      const Status sent = links_.signal(to, setOffset + s.word * sizeof(uint64_t), value);
      if (!sent.isOk()) return failed(i, sent.withContext(call));
    }
    if (s.from < 0) continue;
    const int from = t.pes[static_cast<size_t>(s.from)];
    uint64_t* own = mine + s.word;
    SpinWait spin(links_.timeout, links_.sleepWord);
    uint64_t got;
    while ((got = __atomic_load_n(own, __ATOMIC_ACQUIRE)) == 0) {
      if (links_.progress()) spin.busy();
      if (!spin.next())
        return failed(i, Status(TETHER_ERR_TIMEOUT, strprintf(
            "%s: timed out after %.1f s (TETHER_TIMEOUT) on PE %d (team PE %d of %zu, team index %d), round %d, "
            "waiting for world PE %d; did PE %d exit or skip the call?", call, links_.timeout, links_.me, t.me, n,
            t.slot, s.word, from, from)));
      if (spin.noteDue())
        TETHER_LOG_WARN(LogSys::Sync, "%s: PE %d still waiting for PE %d (team index %d, round %d); %.0f s so far, "
                        "%.0f s left of TETHER_TIMEOUT", call, links_.me, from, t.slot, s.word,
                        spin.elapsedSeconds(), spin.secondsLeft());
    }
    __atomic_store_n(own, 0, __ATOMIC_RELAXED);  // consumed; the same set is next used two barriers on
    if ((got >> 2) != tag && (got >> 14) == kTagFailed) {
      const auto code = static_cast<tether_status_t>((got >> 2) & 0xfff);
      return failed(i, syncFailurePassed(call, links_.me, from, s.word, code));
    }
    if ((got >> 2) != tag || (got & 2)) flag = true;
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  *flagged = flag;
  return Status::ok();
}

Status CollRounds::gatherWords(const char* call, Team& t, const uint64_t* mine, size_t nw,
                               std::vector<uint64_t>* all) const {
  const size_t n = t.pes.size();
  uint64_t* values = words(t.slot) + 2 * kCollRounds;
  std::memcpy(values, mine, nw * sizeof(uint64_t));
  bool flagged = false;
  TETHER_TRY(rounds(call, t, kTagExplain, false, &flagged));
  all->assign(n * nw, 0);
  for (size_t m = 0; m < n; ++m)
    TETHER_TRY(links_.lose(t, links_.get(t.pes[m], wordsOffset(t.slot) + 2 * kCollRounds * 8, all->data() + m * nw,
                                         nw * sizeof(uint64_t)).withContext(call)));
  TETHER_TRY(rounds(call, t, kTagExplain, false, &flagged));  // nobody reads this PE's words any more
  std::memset(values, 0, nw * sizeof(uint64_t));
  return Status::ok();
}

Status CollRounds::failedTogether(const char* call, Team& t, const Status& mine) const {
  const uint64_t code = mine.isOk() ? 0 : static_cast<uint64_t>(mine.code());
  std::vector<uint64_t> codes;
  TETHER_TRY(gatherWords(call, t, &code, 1, &codes));
  if (!mine.isOk()) return mine;
  for (size_t m = 0; m < codes.size(); ++m)
    if (codes[m] != 0)
      return Status(static_cast<tether_status_t>(codes[m]),
                    strprintf("%s: team PE %zu (world PE %d) failed while moving data (its own error says why); dest "
                              "is undefined on this PE", call, m, t.pes[m]));
  TETHER_FAIL(TETHER_ERR_INTERNAL, "%s: the closing barrier was flagged but no member reports a failure", call);
}

Status CollRounds::explain(const char* call, Team& t, const CollRecord& mine, const Status& localError) const {
  const size_t n = t.pes.size();
  std::vector<uint64_t> words;
  TETHER_TRY(gatherWords(call, t, mine.w, CollRecord::kWords, &words));
  std::vector<CollRecord> all(n);
  for (size_t m = 0; m < n; ++m) std::memcpy(all[m].w, words.data() + m * CollRecord::kWords, sizeof all[m].w);

  if (!localError.isOk()) return localError;
  for (size_t m = 0; m < n; ++m)
    if (!all[m].valid())
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: team PE %zu (world PE %d) passed invalid arguments or failed an "
                  "earlier step of a collective by host (its own error says which); no member ran the collective",
                  call, m, t.pes[m]);
  for (size_t m = 0; m < n; ++m)
    if (std::memcmp(all[m].w, mine.w, sizeof mine.w) != 0)
      return recordMismatch(call, t.me, links_.me, mine, m, t.pes[m], all[m]);
  TETHER_FAIL(TETHER_ERR_INTERNAL, "%s: the agreement barrier was flagged but every member's record is the same",
              call);
}

}  // namespace tether
