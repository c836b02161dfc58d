// Helpers shared by the non-contiguous put/get tests (tests/mp/mp_rma_typed.cpp, tests/gpu/gpu_rma_typed.cu): one side
// of a transfer (type, count, the bytes it touches), deterministic data and poison patterns, and the expected target
// computed with the host reference pack/unpack. A failed datatype call fails the test through mp::fail.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "mp_util.h"
#include "tether/datatype.h"

#define TK(call) MP_CHECK((call) == TETHER_SUCCESS || (std::fprintf(stderr, "%s\n", tether_type_last_error()), false))

namespace typed_test {

constexpr int64_t kPad = 64;  // margin around every buffer, poisoned and checked

struct Side {
  tether_type_t type = nullptr;
  int64_t count = 0;
  int64_t lo = 0, hi = 0;  // bytes touched relative to the buffer origin (true extent over the instances)
  int64_t bytes() const { return hi - lo + 2 * kPad; }  // allocation covering them plus the margins
  int64_t origin() const { return kPad - lo; }           // offset of the buffer origin in that allocation
};

inline Side side(tether_type_t t, int64_t count) {
  Side s{t, count};
  int64_t size = 0, lb = 0, ext = 0, tlb = 0, text = 0;
  TK(tether_type_size(t, &size));
  TK(tether_type_extent(t, &lb, &ext));
  TK(tether_type_true_extent(t, &tlb, &text));
  if (count > 0 && size > 0) {
    const int64_t last = (count - 1) * ext;
    s.lo = tlb + std::min<int64_t>(0, last);
    s.hi = tlb + text + std::max<int64_t>(0, last);
  }
  return s;
}

inline int64_t packed(const Side& s) {
  int64_t b = 0;
  TK(tether_type_packed_size(s.type, s.count, &b));
  return b;
}

// Data of (seed, owner) and the poison pattern, as whole allocations of n bytes.
inline std::vector<unsigned char> data(int64_t n, uint64_t seed, int owner) {
  std::vector<unsigned char> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = static_cast<unsigned char>(
        (seed * 2654435761u + static_cast<uint64_t>(owner) * 977u + static_cast<uint64_t>(i) * 131u +
         (static_cast<uint64_t>(i) >> 9)) & 0xff);
  return v;
}
inline std::vector<unsigned char> poison(int64_t n) {
  std::vector<unsigned char> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<unsigned char>(0xA5 ^ (i * 7));
  return v;
}

// The packed bytes of `from` (its allocation holding src).
inline std::vector<unsigned char> packedOf(const Side& from, const std::vector<unsigned char>& src) {
  const int64_t n = packed(from);
  std::vector<unsigned char> pk(static_cast<size_t>(std::max<int64_t>(n, 1)));
  int64_t done = 0;
  TK(tether_type_pack(from.type, from.count, src.data() + from.origin(), 0, n, pk.data(), &done));
  MP_CHECK(done == n);
  return pk;
}

// The target allocation (poisoned, to.bytes()) after moving `from` (its allocation holding src) into it: the host
// reference, where a byte the target's type map names twice keeps the later entry.
inline std::vector<unsigned char> expected(const Side& from, const std::vector<unsigned char>& src, const Side& to) {
  std::vector<unsigned char> out = poison(to.bytes());
  const int64_t n = packed(from);
  int64_t done = 0;
  TK(tether_type_unpack(to.type, to.count, packedOf(from, src).data(), 0, n, out.data() + to.origin(), &done));
  MP_CHECK(done == n);
  return out;
}

// Fails the test naming byte i of n and `what`; want < 0: a byte named by several type-map entries that holds the
// value of none of them.
[[noreturn]] inline void failAt(const char* what, size_t i, size_t n, unsigned got, int want) {
  char w[64] = "the value of one of the entries naming it";
  if (want >= 0) std::snprintf(w, sizeof w, "0x%02x", static_cast<unsigned>(want));
  std::fprintf(stderr, "FAIL PE %d %s: byte %zu of %zu is 0x%02x, expected %s\n", tether_my_pe(mp::world()), what, i, n,
               got, w);
  std::exit(1);
}

// Fails the test at the first byte that differs, naming it and `what`.
inline void compare(const unsigned char* got, const std::vector<unsigned char>& want, const char* what) {
  for (size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i]) failAt(what, i, want.size(), got[i], want[i]);
}

// Offset in the target allocation of each packed byte of `to`, in pack order (four packs of the offsets' bytes).
inline std::vector<int64_t> placement(const Side& to) {
  const int64_t n = packed(to);
  std::vector<int64_t> at(static_cast<size_t>(n), 0);
  std::vector<unsigned char> user(static_cast<size_t>(to.bytes())), pk(static_cast<size_t>(std::max<int64_t>(n, 1)));
  MP_CHECK(to.bytes() < (int64_t{1} << 32));
  for (int k = 0; k < 4; ++k) {
    for (size_t i = 0; i < user.size(); ++i) user[i] = static_cast<unsigned char>(i >> (8 * k));
    int64_t done = 0;
    TK(tether_type_pack(to.type, to.count, user.data() + to.origin(), 0, n, pk.data(), &done));
    MP_CHECK(done == n);
    for (size_t i = 0; i < at.size(); ++i) at[i] |= static_cast<int64_t>(pk[i]) << (8 * k);
  }
  return at;
}

// As compare(got, expected(from, src, to), what), for a target written in parallel (the GPU engine: docs/datatype.md
// "Overlapping type maps"): a byte that `to`'s type map names more than once may hold the value of any of its
// entries; every other byte (named once, gaps, margins) must match exactly.
inline void compareAnyEntry(const unsigned char* got, const Side& from, const std::vector<unsigned char>& src,
                            const Side& to, const char* what) {
  const std::vector<unsigned char> want = expected(from, src, to), pk = packedOf(from, src);
  const std::vector<int64_t> at = placement(to);
  std::vector<unsigned char> named(want.size(), 0), matched(want.size(), 0);  // entries per byte (saturating at 2)
  for (size_t i = 0; i < at.size(); ++i) {
    const size_t b = static_cast<size_t>(at[i]);
    named[b] = static_cast<unsigned char>(std::min(named[b] + 1, 2));
    matched[b] |= got[b] == pk[i];
  }
  for (size_t b = 0; b < want.size(); ++b)
    if (named[b] < 2 ? got[b] != want[b] : !matched[b]) failAt(what, b, want.size(), got[b], named[b] < 2 ? want[b] : -1);
}

}  // namespace typed_test
