// CPU cache hints: prefetches that start a cache line's transfer early (no fault, no effect on results).
//
// Who calls it: code that knows a line it will soon load or store lives in another core's cache (the token rings of
// core/collectives.cpp). Thread-safety: stateless but for a flag set once (CPUID), read-only after.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace tether {

// Starts loading the line at p for reading.
inline void prefetchRead(const void* p) { __builtin_prefetch(p, 0, 3); }

// Starts taking the line at p for writing (x86: PREFETCHW where CPUID has it, else nothing: a read prefetch would
// fetch the line shared, and the store would still wait for the other copies to go). A store that follows finds the
// line owned instead of waiting for another core to give it up; a locked instruction after the store (a mutex, a
// reference count) then does not wait for that transfer.
inline void prefetchWrite(void* p) {
#if defined(__x86_64__) || defined(__i386__)
  static const bool has = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(0x80000001u, &a, &b, &c, &d) && (c & (1u << 8));  // ECX bit 8: PRFCHW (3DNowPrefetch)
  }();
  if (has) asm volatile("prefetchw %0" ::"m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 1, 3);
#endif
}

}  // namespace tether
