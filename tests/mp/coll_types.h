// Element types of the team collectives for the host tests (mp_coll_team, mp_coll_fuzz): the tests' own encodings of
// every tether_dtype_t (exact for the small integers the float inputs are), the inputs drawn from a seed, and the
// reference combination, written here independently of the library's reduction code (core/reduce_ops.h).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fuzz_common.h"
#include "tether/tether.h"

namespace coll_types {


struct TypeInfo {
  tether_dtype_t t;
  const char* name;
  size_t size;
  enum Cls { S, U, F } cls;
};
inline const TypeInfo kTypes[] = {
    {TETHER_INT, "int", sizeof(int), TypeInfo::S},        {TETHER_LONG, "long", sizeof(long), TypeInfo::S},
    {TETHER_LONGLONG, "longlong", 8, TypeInfo::S},       {TETHER_UINT, "uint", 4, TypeInfo::U},
    {TETHER_ULONG, "ulong", sizeof(long), TypeInfo::U},  {TETHER_ULONGLONG, "ulonglong", 8, TypeInfo::U},
    {TETHER_INT32, "int32", 4, TypeInfo::S},             {TETHER_INT64, "int64", 8, TypeInfo::S},
    {TETHER_UINT32, "uint32", 4, TypeInfo::U},           {TETHER_UINT64, "uint64", 8, TypeInfo::U},
    {TETHER_SIZE, "size", sizeof(size_t), TypeInfo::U},  {TETHER_PTRDIFF, "ptrdiff", 8, TypeInfo::S},
    {TETHER_FLOAT, "float", 4, TypeInfo::F},             {TETHER_DOUBLE, "double", 8, TypeInfo::F},
    {TETHER_SHORT, "short", 2, TypeInfo::S},             {TETHER_USHORT, "ushort", 2, TypeInfo::U},
    {TETHER_INT8, "int8", 1, TypeInfo::S},               {TETHER_UINT8, "uint8", 1, TypeInfo::U},
    {TETHER_HALF, "half", 2, TypeInfo::F},               {TETHER_BFLOAT16, "bfloat16", 2, TypeInfo::F},
};

// Float inputs are integers in [-2, 2]: every sum and product of <= 8 of them is exact in every float type.
inline uint64_t encodeFloat(tether_dtype_t t, double v) {
  const float f = static_cast<float>(v);
  uint32_t b;
  std::memcpy(&b, &f, 4);
  if (t == TETHER_DOUBLE) {
    uint64_t d;
    std::memcpy(&d, &v, 8);
    return d;
  }
  if (t == TETHER_FLOAT) return b;
  if (t == TETHER_BFLOAT16) return b >> 16;  // exact: the values have few mantissa bits
  // half: sign, exponent rebiased 127 -> 15, 10 mantissa bits (exact for these values); zero stays zero
  const uint32_t sign = (b >> 16) & 0x8000u;
  if ((b & 0x7fffffffu) == 0) return sign;
  return sign | ((((b >> 23) & 0xffu) - 112) << 10) | ((b >> 13) & 0x3ffu);
}
inline double decodeFloat(tether_dtype_t t, uint64_t bits) {
  if (t == TETHER_DOUBLE) {
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }
  uint32_t b = static_cast<uint32_t>(bits);
  if (t == TETHER_BFLOAT16) b <<= 16;
  if (t == TETHER_HALF) {
    const uint32_t sign = (b & 0x8000u) << 16, e = (b >> 10) & 0x1fu, m = b & 0x3ffu;
    if (e == 0 && m == 0) b = sign;
    else if (e == 0 || e == 31) return NAN;  // never produced by these inputs
    else b = sign | ((e + 112) << 23) | (m << 13);
  }
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// Element i of team PE m's input for test case c of a run with this seed: integers any bits, floats an integer in
// [-2, 2].
inline uint64_t input(uint64_t seed, const TypeInfo& ti, uint64_t c, int m, size_t i) {
  const uint64_t r = fuzz::mix(seed ^ fuzz::mix(c * 1000003u + static_cast<uint64_t>(m)) ^ (i * 0x632be59bd9b4e019ull));
  if (ti.cls == TypeInfo::F) return encodeFloat(ti.t, static_cast<double>(static_cast<int>(r % 5) - 2));
  return ti.size == 8 ? r : r & ((uint64_t{1} << (8 * ti.size)) - 1);
}

inline void store(void* p, size_t i, size_t size, uint64_t v) {
  std::memcpy(static_cast<char*>(p) + i * size, &v, size);
}
inline uint64_t load(const void* p, size_t i, size_t size) {
  uint64_t v = 0;
  std::memcpy(&v, static_cast<const char*>(p) + i * size, size);
  return v;
}

// a op b on the element bits of type ti (integers: wrap-around in the type's width, signed compare for S).
inline uint64_t combine(const TypeInfo& ti, tether_red_op_t op, uint64_t a, uint64_t b) {
  if (ti.cls == TypeInfo::F) {
    const double x = decodeFloat(ti.t, a), y = decodeFloat(ti.t, b);
    double r = 0;
    switch (op) {
      case TETHER_RED_SUM: r = x + y; break;
      case TETHER_RED_PROD: r = x * y; break;
      case TETHER_RED_MIN: r = y < x ? y : x; break;
      default: r = y > x ? y : x; break;
    }
    return encodeFloat(ti.t, r);
  }
  const unsigned bits = static_cast<unsigned>(8 * ti.size);
  const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  auto sx = [&](uint64_t v) {  // sign-extended value for comparisons
    if (ti.cls == TypeInfo::U || bits == 64) return static_cast<int64_t>(v);
    return static_cast<int64_t>(v << (64 - bits)) >> (64 - bits);
  };
  const bool lessBA = ti.cls == TypeInfo::U ? b < a : sx(b) < sx(a);
  const bool lessAB = ti.cls == TypeInfo::U ? a < b : sx(a) < sx(b);
  switch (op) {
    case TETHER_RED_SUM: return (a + b) & mask;
    case TETHER_RED_PROD: return (a * b) & mask;
    case TETHER_RED_MIN: return lessBA ? b : a;
    case TETHER_RED_MAX: return lessAB ? b : a;
    case TETHER_RED_AND: return a & b;
    case TETHER_RED_OR: return a | b;
    default: return a ^ b;
  }
}

inline bool sameValue(const TypeInfo& ti, uint64_t a, uint64_t b) {
  return ti.cls == TypeInfo::F ? decodeFloat(ti.t, a) == decodeFloat(ti.t, b) : a == b;
}

}  // namespace coll_types
