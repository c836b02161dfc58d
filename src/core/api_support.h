// What every C entry point of the core shares (api.cpp, api_teams.cpp, api_stream.cpp, api_msg.cpp): the table of
// live handles, the check behind every tether_t, Status -> tether_status_t with the thread-local message that
// tether_last_error() returns, and exceptions kept from crossing into C. Internal to those files.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <string>

#include "base/enum_arg.h"
#include "core/world.h"
#include "tether/tether.h"

namespace tether::capi {

// OK -> TETHER_SUCCESS; otherwise keeps the message for tether_last_error() on this thread, logs it at info level and
// returns its code.
tether_status_t report(const Status& s);

// The message of this thread's last failed call ("" before any).
const char* lastError();

// The live instances of this process, by id. A tether_t is the id (slot index, generation) of a slot here, never the
// address of the World: tether_finalize cannot clear the caller's copies of the handle, so the handle must stay
// checkable after the World is gone. finalize bumps the slot's generation, so a finalized handle, a never-initialised
// one and garbage are all refused with TETHER_ERR_INVALID_ARG instead of dereferenced, and a slot reused by a later
// tether_init gives a new id. This table is the one process-wide object of the core (docs/architecture.md): it owns
// no runtime state (every World still owns all of its own), it only says which ids are live.
// Thread-safety: reserve/unreserve/publish/remove under mu_; find is lock-free (a slot's World is stored before the
// generation that makes its id valid). Using a handle while another thread finalizes it stays the caller's race.
class LiveWorlds {
 public:
  static constexpr unsigned kSlotBits = 10;  // at most 1024 instances live at once in one process
  static constexpr size_t kSlots = size_t{1} << kSlotBits;

  // A free slot for an instance being created, or kSlots when all are taken.
  size_t reserve() {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < kSlots; ++i)
      if (!slots_[i].taken) {
        slots_[i].taken = true;
        return i;
      }
    return kSlots;
  }
  void unreserve(size_t slot) {
    std::lock_guard<std::mutex> lock(mu_);
    slots_[slot].taken = false;
  }
  // Makes w live in a reserved slot; returns its id.
  tether_t publish(size_t slot, std::unique_ptr<World> w) {
    std::lock_guard<std::mutex> lock(mu_);
    Slot& s = slots_[slot];
    s.world.store(w.release(), std::memory_order_release);
    const uint64_t gen = s.gen.load(std::memory_order_relaxed) + 1;
    s.gen.store(gen, std::memory_order_release);
    return reinterpret_cast<tether_t>(static_cast<uintptr_t>(encode(slot, gen)));
  }
  // The World behind id, or nullptr with *finalized telling a handle that was live once from one that never was.
  World* find(tether_t id, bool* finalized) const {
    size_t slot = 0;
    uint64_t gen = 0;
    *finalized = false;
    if (!decode(id, &slot, &gen)) return nullptr;
    const Slot& s = slots_[slot];
    const uint64_t now = s.gen.load(std::memory_order_acquire);
    World* w = now == gen ? s.world.load(std::memory_order_acquire) : nullptr;
    *finalized = !w && gen <= now;
    return w;
  }
  // The World live in slot whose generation's low genBits bits are genLow, or nullptr (team handles: see TeamId).
  World* findLow(size_t slot, uint64_t genLow, unsigned genBits) const {
    if (slot >= kSlots) return nullptr;
    const Slot& s = slots_[slot];
    const uint64_t now = s.gen.load(std::memory_order_acquire);
    World* w = s.world.load(std::memory_order_acquire);
    return w && (now & ((uint64_t{1} << genBits) - 1)) == genLow ? w : nullptr;
  }
  // Retires id (its later uses fail as finalized) and hands back its World; nullptr when id is not live.
  std::unique_ptr<World> remove(tether_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    size_t slot = 0;
    uint64_t gen = 0;
    if (!decode(id, &slot, &gen) || slots_[slot].gen.load(std::memory_order_relaxed) != gen) return nullptr;
    Slot& s = slots_[slot];
    std::unique_ptr<World> w(s.world.exchange(nullptr, std::memory_order_acq_rel));
    if (!w) return nullptr;
    s.gen.fetch_add(1, std::memory_order_release);
    s.taken = false;
    return w;
  }

 private:
  struct Slot {
    std::atomic<uint64_t> gen{0};  // generation of the id last handed out for this slot
    std::atomic<World*> world{nullptr};
    bool taken = false;  // reserved or live (under mu_)
  };
  // Odd values only, so no aligned pointer is an id; generation 0 is never handed out.
  static uint64_t encode(size_t slot, uint64_t gen) { return gen << (kSlotBits + 1) | uint64_t{slot} << 1 | 1u; }

 public:
  static bool decode(tether_t id, size_t* slot, uint64_t* gen) {
    const uint64_t v = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(id));
    *slot = static_cast<size_t>(v >> 1) & (kSlots - 1);
    *gen = v >> (kSlotBits + 1);
    return (v & 1u) && *gen != 0;
  }

 private:
  std::mutex mu_;
  Slot slots_[kSlots];
};

// The one process-wide table (never destroyed: calls made while the process exits still find it).
LiveWorlds& liveWorlds();

// The one check behind every call on a tether_t: *out = the live World behind w, or a reported
// TETHER_ERR_INVALID_ARG naming the call (NULL, finalized, or not a handle from tether_init).
tether_status_t liveWorld(tether_t w, const char* call, World** out);

// Runs f() -> Status with exceptions contained.
template <typename F>
tether_status_t contained(const char* call, F&& f) {
  try {
    return report(f());
  } catch (const std::bad_alloc&) {
    return report(tether::Status(TETHER_ERR_NO_MEMORY, std::string(call) + ": out of host memory"));
  } catch (const std::exception& e) {
    return report(tether::Status(TETHER_ERR_INTERNAL, std::string(call) + ": " + e.what()));
  }
}

// Runs f(World&) -> Status with world checked and exceptions contained.
template <typename F>
tether_status_t guarded(tether_t w, const char* call, F&& f) {
  World* x = nullptr;
  const tether_status_t live = liveWorld(w, call, &x);
  if (live != TETHER_SUCCESS) return live;
  return contained(call, [&] { return f(*x); });
}

// Queries of a handle that is not live return -1; tether_last_error() says why, except for NULL (-1 silently, as
// always: a failure report may call tether_my_pe on a NULL world without losing the message it is about to print).
template <typename Q>
int query(tether_t w, const char* call, Q q) {
  World* x = nullptr;
  return w && liveWorld(w, call, &x) == TETHER_SUCCESS ? q(*x) : -1;
}

// The type and cmp arguments of every wait and test form.
Status waitArgs(const char* call, const tether_dtype_t& type, const tether_cmp_t& cmp);

}  // namespace tether::capi
