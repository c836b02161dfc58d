// The token rings of the team data collectives (core/coll_tokens.h has the contracts).
#include "core/coll_tokens.h"

#include <algorithm>
#include <cstring>

#include "base/clock.h"
#include "base/log.h"

namespace tether {

static_assert(sizeof(Team::hashedRecord) >= sizeof(CollRecord::w), "Team caches one record");

CollRecord CollTokens::Token::record() const {
  CollRecord r;
  std::memcpy(r.w, s_ + kRec, sizeof r.w);
  return r;
}

bool CollTokens::peer(int pe) const { return links_.host(pe, kEagerOffset) != nullptr; }

bool CollTokens::team(Team& t) const {
  if (t.tokens < 0) {
    bool all = t.pes.size() >= 2;
    for (int pe : t.pes) {
      if (!all || pe == links_.me) continue;
      all = peer(pe);
    }
    if (all) {  // every member's ring of the slot, as mapped here (the HOST segments' bases never move)
      t.rings.clear();
      for (int pe : t.pes) t.rings.push_back(reinterpret_cast<uint64_t*>(links_.host(pe, ringOffset(t.slot))));
    }
    t.tokens = all ? 1 : 0;
  }
  return t.tokens == 1;
}

char* CollTokens::stage(const Team& t, size_t m, uint64_t off) const {
  // In member m's HOST segment as mapped here, like its token ring: at the same distance from it in every segment.
  const uint64_t stage = kEagerStageOffset + static_cast<uint64_t>(t.slot) * kEagerStageTeamBytes + off;
  return reinterpret_cast<char*>(t.rings[m]) - ringOffset(t.slot) + stage;
}

Status CollTokens::settle(const char* call, Team& t) const {
  if (t.tokens != 1 || t.minDone >= t.callSeq) return Status::ok();  // no token calls, or all known to be done
  return waitDone(call, t, t.callSeq, true);
}

Status CollTokens::stageRoom(const char* call, Team& t, size_t bytes, uint64_t c, uint64_t* off) const {
  constexpr uint64_t kRing = kEagerStageTeamBytes;
  const uint64_t len = (bytes + 63) & ~uint64_t{63};
  uint64_t h = t.stageHead;
  if (h % kRing + len > kRing) h += kRing - h % kRing;  // it would wrap: it starts at the ring's start instead
  // An earlier copy starting at s lies (in part) where this one goes when s + kRing < h + len (the copies are in
  // order): the last such call, and every one before it, must be done on every member.
  bool wait = false;
  uint64_t last = 0;
  while (!t.staged.empty() && t.staged.front().first + kRing < h + len) {
    last = t.staged.front().second;
    wait = true;
    t.staged.pop_front();
  }
  if (wait && t.minDone < last + 1) TETHER_TRY(waitDone(call, t, last + 1, true));
  t.staged.emplace_back(h, c);
  t.stageHead = h + len;
  *off = h % kRing;
  return Status::ok();
}

uint64_t CollTokens::tokenBase() const {
  uint64_t most = 0;
  for (int slot = 0; slot < kTeamSlots; ++slot)
    most = std::max(most, __atomic_load_n(reinterpret_cast<const uint64_t*>(links_.host(links_.me, ringOffset(slot))),
                                          __ATOMIC_ACQUIRE));
  return most;
}

void CollTokens::start(Team& t, uint64_t base) const {
  t.callSeq = base;
  t.minDone = 0;
  __atomic_store_n(reinterpret_cast<uint64_t*>(links_.host(links_.me, ringOffset(t.slot))), base, __ATOMIC_RELEASE);
}

Status CollTokens::waitDone(const char* call, Team& t, uint64_t calls, bool updateMin) const {
  uint64_t least = UINT64_MAX;
  for (size_t m = 0; m < t.pes.size(); ++m) {
    if (m == static_cast<size_t>(t.me)) continue;
    const uint64_t* word = done(t, m);
    uint64_t got = __atomic_load_n(word, __ATOMIC_ACQUIRE);
    if (got >= calls) {  // no wait: no SpinWait (its deadline reads the clock)
      least = std::min(least, got);
      continue;
    }
    SpinWait spin(links_.timeout, sleepWord());
    while ((got = __atomic_load_n(word, __ATOMIC_ACQUIRE)) < calls) {
      if (!spin.next())
        TETHER_FAIL(TETHER_ERR_TIMEOUT, "%s: timed out after %.1f s (TETHER_TIMEOUT) on PE %d (team PE %d, team index "
                    "%d) waiting for team PE %zu (world PE %d) to finish collective call %llu; did it exit or skip a "
                    "call?", call, links_.timeout, links_.me, t.me, t.slot, m, t.pes[m],
                    static_cast<unsigned long long>(calls));
    }
    least = std::min(least, got);
  }
  if (updateMin) t.minDone = least;
  return Status::ok();
}

Status CollTokens::post(const char* call, Team& t, uint64_t c, const CollRecord& r, uint64_t flags,
                        const void* data, size_t bytes) const {
  // The slot was last used by call c - kEagerDepth: every member must have finished it (read that token). A member
  // that must wait (an eager root running ahead of its readers) waits until half the ring is free, so that it polls
  // the others' done words once per kEagerDepth / 2 calls instead of on every call: each poll takes the line away
  // from the member about to store its next done count.
  if (c >= kEagerDepth && t.minDone < c + 1 - kEagerDepth)
    TETHER_TRY(waitDone(call, t, c + 1 - kEagerDepth / 2, true));
  uint64_t* s = slot(t, static_cast<size_t>(t.me), c);
  s[kMeta] = (flags | (r.valid() ? kValidFlag : 0)) | uint64_t{bytes} << 8;
  // The hash is a serial chain of multiplies; the same record as the last call's (a stream of like calls) reuses it.
  if (!t.hashed || std::memcmp(t.hashedRecord, r.w, sizeof r.w) != 0) {
    std::memcpy(t.hashedRecord, r.w, sizeof r.w);
    t.recordHash = r.hash();
    t.hashed = true;
  }
  s[kHash] = t.recordHash;
  std::memcpy(s + kRec, r.w, sizeof r.w);
  if (bytes) std::memcpy(s + kData, data, bytes);
  __atomic_store_n(&s[kSeq], c + 1, __ATOMIC_RELEASE);
  wakeTeam(t);
  return Status::ok();
}

Status CollTokens::await(const char* call, Team& t, size_t m, uint64_t c, const char* role) const {
  const uint64_t* s = slot(t, m, c);
  if (__atomic_load_n(&s[kSeq], __ATOMIC_ACQUIRE) == c + 1) return Status::ok();  // posted: no SpinWait (clock)
  SpinWait spin(links_.timeout, sleepWord());
  while (__atomic_load_n(&s[kSeq], __ATOMIC_ACQUIRE) != c + 1) {
    if (!spin.next())
      return links_.lose(t, Status(TETHER_ERR_TIMEOUT, strprintf(
          "%s: timed out after %.1f s (TETHER_TIMEOUT) on PE %d (team PE %d of %zu, team index %d) in %s of call "
          "%llu, waiting for the token of world PE %d (team PE %zu); did PE %d exit or skip the call?", call,
          links_.timeout, links_.me, t.me, t.pes.size(), t.slot, role, static_cast<unsigned long long>(c), t.pes[m],
          m, t.pes[m])));
    if (spin.noteDue())
      TETHER_LOG_WARN(LogSys::Sync, "%s: PE %d still waiting for PE %d (team index %d, %s); %.0f s so far, %.0f s "
                      "left of TETHER_TIMEOUT", call, links_.me, t.pes[m], t.slot, role, spin.elapsedSeconds(),
                      spin.secondsLeft());
  }
  return Status::ok();
}

Status CollTokens::closeCall(const char* call, Team& t, bool middle, bool failed, bool* flagged) const {
  // (call << 2) | (phase << 1) | failed, phase 0 the middle, 1 the close: one member's values only grow, and a member
  // past the middle of call c shows a value at least its middle's (a failed middle makes its close fail too).
  const uint64_t want = t.callSeq << 2 | uint64_t{!middle} << 1;
  __atomic_store_n(close(t, static_cast<size_t>(t.me)), want | uint64_t{failed}, __ATOMIC_RELEASE);
  wakeTeam(t);
  bool any = failed;
  for (size_t m = 0; m < t.pes.size(); ++m) {
    if (m == static_cast<size_t>(t.me)) continue;
    const uint64_t* word = close(t, m);
    uint64_t got = __atomic_load_n(word, __ATOMIC_ACQUIRE);
    if (got < want) {
      SpinWait spin(links_.timeout, sleepWord());
      while ((got = __atomic_load_n(word, __ATOMIC_ACQUIRE)) < want) {
        if (!spin.next())
          TETHER_FAIL(TETHER_ERR_TIMEOUT, "%s: timed out after %.1f s (TETHER_TIMEOUT) on PE %d (team PE %d, team "
                      "index %d) waiting for team PE %zu (world PE %d) to %s; did it exit?", call,
                      links_.timeout, links_.me, t.me, t.slot, m, t.pes[m],
                      middle ? "finish the reduce-scatter half of a two-shot allreduce" : "finish moving data");
      }
    }
    if (got & 1) any = true;
  }
  *flagged = any;
  return Status::ok();
}

}  // namespace tether
