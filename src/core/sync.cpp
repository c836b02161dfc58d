// Waits (wait_until/test and their array forms, signal_wait_until) and the barrier.
#include <atomic>
#include <cstddef>
#include <cstring>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "core/dtype.h"
#include "core/op.h"
#include "core/sync_failure.h"
#include "core/world.h"

namespace tether {
namespace {

const char* cmpName(tether_cmp_t c) {
  static const char* const names[] = {"EQ", "NE", "GT", "GE", "LT", "LE"};
  return static_cast<unsigned>(c) <= TETHER_CMP_LE ? names[c] : "?";
}

template <typename T>
bool compare(T x, tether_cmp_t cmp, T v) {
  switch (cmp) {
    case TETHER_CMP_EQ: return x == v;
    case TETHER_CMP_NE: return x != v;
    case TETHER_CMP_GT: return x > v;
    case TETHER_CMP_GE: return x >= v;
    case TETHER_CMP_LT: return x < v;
    case TETHER_CMP_LE: return x <= v;
    case TETHER_CMP_MAX_ENUM_: break;
  }
  return false;
}

// Acquire-load of one element; returns its bits.
uint64_t loadBits(const void* p, size_t size) {
  switch (size) {
    case 2: return __atomic_load_n(static_cast<const uint16_t*>(p), __ATOMIC_ACQUIRE);
    case 4: return __atomic_load_n(static_cast<const uint32_t*>(p), __ATOMIC_ACQUIRE);
    default: return __atomic_load_n(static_cast<const uint64_t*>(p), __ATOMIC_ACQUIRE);
  }
}

bool holds(tether_dtype_t type, uint64_t bits, tether_cmp_t cmp, const void* value) {
  return withDtype(type, [&](auto zero) {
    using T = decltype(zero);
    T x, v;
    std::memcpy(&x, &bits, sizeof x);
    std::memcpy(&v, value, sizeof v);
    return compare(x, cmp, v);
  });
}

}  // namespace

size_t World::anyStart(const void* ivars, size_t n) {
  const size_t slot = (reinterpret_cast<uintptr_t>(ivars) >> 3) % kAnyCursors;
  std::lock_guard<std::mutex> lock(anyMu_);
  const AnyCursor& c = anyCursors_[slot];
  return c.ivars == ivars && n > 0 ? c.next % n : 0;
}

void World::anyReturned(const void* ivars, size_t index) {
  const size_t slot = (reinterpret_cast<uintptr_t>(ivars) >> 3) % kAnyCursors;
  std::lock_guard<std::mutex> lock(anyMu_);
  anyCursors_[slot] = AnyCursor{ivars, index + 1};
}

Status World::waitOrTest(const char* call, WaitMode mode, bool block, void* ivars, size_t n, const int* status,
                         tether_dtype_t type, tether_cmp_t cmp, const void* values, bool vector, int* allResult,
                         size_t* indices, size_t* count) {
  const DtypeInfo& d = dtypeInfo(type);
  if (d.cls == DtypeClass::Invalid) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: unknown type %d", call, type);
  if (d.collOnly)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: type %s is an element type of the team collectives only", call, d.name);
  if (static_cast<unsigned>(cmp) > TETHER_CMP_LE)
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: unknown comparison %d", call, static_cast<int>(cmp));
  if (!values) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: value is NULL", call);
  if (n > 0 && !ivars) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: ivars is NULL", call);
  if (n > SIZE_MAX / d.size) TETHER_FAIL(TETHER_ERR_OVERFLOW, "%s: %zu elements of %zu bytes overflow", call, n, d.size);
  SymRef ref{SegKind::Host, 0};
  if (n > 0) {
    TETHER_TRY(checkSymmetric(call, "ivars", ivars, n * d.size, &ref));
    if (reinterpret_cast<uintptr_t>(ivars) % d.size)
      TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: ivars %p is not aligned to %zu bytes", call, ivars, d.size);
  }
  if (mode == WaitMode::Any && !indices) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: index is NULL", call);
  if (mode == WaitMode::Some && (!indices || !count))
    TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: indices or count is NULL", call);
  if (mode == WaitMode::All && !block && !allResult) TETHER_FAIL(TETHER_ERR_INVALID_ARG, "%s: result is NULL", call);

  // HOST ivars are read in place (acquire loads); DEVICE ivars through a fresh copy of the array on every poll.
  std::vector<char> snapshot(ref.kind == SegKind::Device ? n * d.size : 0);
  const char* base = ref.kind == SegKind::Device ? snapshot.data() : static_cast<char*>(ivars);
  auto valueAt = [&](size_t i) { return static_cast<const char*>(values) + (vector ? i * d.size : 0); };
  size_t included = 0;
  for (size_t i = 0; i < n; ++i) included += !(status && status[i]);

  // _any: start after the entry this array last returned (fairness, see anyStart); the others scan from 0.
  const size_t start = mode == WaitMode::Any ? anyStart(ivars, n) : 0;
  SpinWait spin(timeout_, wakeups_.mine());
  size_t pending = SIZE_MAX;  // an entry not yet satisfied (for the timeout message)
  uint64_t pendingBits = 0;
  for (;;) {
    size_t satisfied = 0;
    size_t found = 0;
    pending = SIZE_MAX;
    if (ref.kind == SegKind::Device && n > 0)
      TETHER_TRY(heap_.readLocal(ref, snapshot.data(), snapshot.size()).withContext(call));
    for (size_t k = 0; k < n; ++k) {
      const size_t i = start + k < n ? start + k : start + k - n;
      if (status && status[i]) continue;
      uint64_t bits = loadBits(base + i * d.size, d.size);
      if (holds(type, bits, cmp, valueAt(i))) {
        ++satisfied;
        if (mode == WaitMode::Any) {
          indices[0] = i;
          anyReturned(ivars, i);
          return Status::ok();
        }
        if (mode == WaitMode::Some) indices[found++] = i;
      } else if (pending == SIZE_MAX) {
        pending = i;
        pendingBits = bits;
      }
    }
    bool done = mode == WaitMode::All ? satisfied == included : (included == 0 || satisfied > 0);
    if (done || !block) {
      if (mode == WaitMode::All && allResult) *allResult = done ? 1 : 0;
      if (mode == WaitMode::Any) indices[0] = SIZE_MAX;
      if (mode == WaitMode::Some) *count = found;
      return Status::ok();
    }
    if (paths_.progress()) spin.busy();  // serving a peer: stay hot (see SpinWait)
    if (!spin.next()) break;
    if (spin.noteDue())
      TETHER_LOG_WARN(LogSys::Sync, "%s: PE %d still waiting for ivars[%zu] at %p %s %s (%s); %.0f s so far, %.0f s "
                      "left of TETHER_TIMEOUT",
                      call, job_.rank, pending, static_cast<const void*>(static_cast<const char*>(ivars) +
                                                                         pending * d.size),
                      cmpName(cmp), formatDtype(type, [&] {
                        uint64_t b = 0;
                        std::memcpy(&b, valueAt(pending), d.size);
                        return b;
                      }()).c_str(),
                      d.name, spin.elapsedSeconds(), spin.secondsLeft());
  }
  const char* entry = static_cast<const char*>(ivars) + pending * d.size;
  TETHER_FAIL(TETHER_ERR_TIMEOUT,
              "%s: timed out after %.1f s (TETHER_TIMEOUT) on PE %d waiting for ivars[%zu] at %p (symmetric offset "
              "0x%llx, %s) %s %s; last seen %s",
              call, timeout_, job_.rank, pending, static_cast<const void*>(entry),
              static_cast<unsigned long long>(ref.offset + pending * d.size),
              d.name, cmpName(cmp), formatDtype(type, [&] {
                uint64_t b = 0;
                std::memcpy(&b, valueAt(pending), d.size);
                return b;
              }()).c_str(),
              formatDtype(type, pendingBits).c_str());
}

Status World::signalWaitUntil(uint64_t* sig, tether_cmp_t cmp, uint64_t value, uint64_t* seen) {
  const char* call = "tether_signal_wait_until";
  size_t index = 0;
  TETHER_TRY(waitOrTest(call, WaitMode::Any, true, sig, 1, nullptr, TETHER_UINT64, cmp, &value, false, nullptr,
                        &index, nullptr));
  // Signals only move forward under the documented use; report the value that satisfied (re-read if it moved on).
  if (seen) {
    SymRef ref;
    TETHER_TRY(checkSymmetric(call, "sig_addr", sig, sizeof *sig, &ref));
    if (isHostMemory(ref.kind))
      *seen = __atomic_load_n(sig, __ATOMIC_ACQUIRE);
    else
      TETHER_TRY(heap_.readLocal(ref, seen, sizeof *seen));
  }
  return Status::ok();
}

Status World::barrier(const char* call, bool quietFirst) {
  TETHER_TRY(collectiveState(call));
  // Any failure, quiet() included, leaves this PE out of step with the peers that went on into the rounds.
  return loseCollectiveState(barrierRounds(call, quietFirst));
}

Status World::barrierRounds(const char* call, bool quietFirst) {
  if (quietFirst) TETHER_TRY(quiet());
  const int n = job_.size, me = job_.rank;
  if (n == 1) return fence();
  const uint64_t epoch = ++barrierEpoch_;
  auto* ctl = reinterpret_cast<ControlBlock*>(heap_.host()->myBase());
  // The steps of barrierSchedule_ (core/sync_schedule.h: dissemination, or by host). Counters only grow, and each
  // word of a PE gets exactly one increment per barrier, so "counter >= epoch" means this barrier's signal arrived --
  // or a failure (core/sync_failure.h: far above any epoch), which this PE passes on to the members on its host that
  // it still owes a signal, as it does its own failure.
  const std::vector<SyncStep>& steps = barrierSchedule_.steps;
  const uint64_t slot0 = offsetof(ControlBlock, barrier);
  auto failed = [&](size_t i, const Status& s) {
    passSyncFailure(*this, barrierSchedule_, i, nullptr, slot0, sizeof(ControlBlock::Slot), syncFailureAdd(s.code()),
                    TETHER_SIGNAL_ADD);
    return s;
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    const SyncStep& s = steps[i];
    if (s.to >= 0) {
      // Posted where the transport can (UCX: no reply to wait for): `to` waits for it; quietFirst was done above.
      const uint64_t at = slot0 + static_cast<uint64_t>(s.word) * sizeof(ControlBlock::Slot);
      const Status sent = signalWord(*this, s.to, SymRef{SegKind::Host, at}, 1, TETHER_SIGNAL_ADD, /*post=*/true);
      if (!sent.isOk()) return failed(i, sent);
    }
    if (s.from < 0) continue;
    uint64_t* mine = &ctl->barrier[s.word].value;
    SpinWait spin(timeout_, wakeups_.mine());
    uint64_t seen;
    while ((seen = __atomic_load_n(mine, __ATOMIC_ACQUIRE)) < epoch) {
      if (paths_.progress()) spin.busy();
      if (!spin.next())
        return failed(i, Status(TETHER_ERR_TIMEOUT, strprintf(
            "%s: timed out after %.1f s (TETHER_TIMEOUT) on PE %d in barrier #%llu, round %d, waiting for PE %d "
            "(counter at %p expected >= %llu, seen %llu); did PE %d exit or skip the call?",
            call, timeout_, me, static_cast<unsigned long long>(epoch), s.word, s.from, static_cast<void*>(mine),
            static_cast<unsigned long long>(epoch), static_cast<unsigned long long>(seen), s.from)));
      if (spin.noteDue())
        TETHER_LOG_WARN(LogSys::Sync, "%s: PE %d still waiting for PE %d in barrier #%llu (round %d); %.0f s so far, "
                        "%.0f s left of TETHER_TIMEOUT",
                        call, me, s.from, static_cast<unsigned long long>(epoch), s.word, spin.elapsedSeconds(),
                        spin.secondsLeft());
    }
    if (isSyncFailure(seen)) return failed(i, syncFailurePassed(call, me, s.from, s.word, syncFailureCode(seen)));
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return Status::ok();
}

}  // namespace tether
