// Element-wise reduction of the team collectives on the CPU (core/collectives.cpp): acc[i] = acc[i] op in[i] for
// every element type of tether_dtype_t (the collective-only INT8, UINT8, HALF, BFLOAT16 included) and every
// tether_red_op_t the type allows (redOpAllowed).
//
// Contract: integer SUM and PROD wrap around (computed in the unsigned type of the same width); MIN/MAX keep acc when
// the comparison is false (so a NaN in `in` never replaces acc, a NaN in acc stays); HALF and BFLOAT16 are widened to
// float, combined, and rounded back to nearest even after every step, so a reduction in a fixed member order gives
// the same bits everywhere. Pure functions of their arguments; no state.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/dtype.h"
#include "tether/tether.h"

namespace tether {

// ---- 16-bit floating-point formats -------------------------------------------------------------------------------

inline float bitsToFloat(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
inline uint32_t floatToBits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

inline float halfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {  // zero or subnormal: m * 2^-24, exact in float
    const float v = std::ldexp(static_cast<float>(m), -24);
    return sign ? -v : v;
  }
  if (e == 31) return bitsToFloat(sign | 0x7f800000u | (m << 13));  // inf, NaN (payload kept)
  return bitsToFloat(sign | ((e + 112) << 23) | (m << 13));
}

// Round to nearest, ties to even; overflow to infinity; NaN stays NaN (quiet).
inline uint16_t floatToHalf(float x) {
  const uint32_t f = floatToBits(x);
  const uint16_t sign = static_cast<uint16_t>((f >> 16) & 0x8000u);
  const uint32_t a = f & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x1ffu));
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: rounds to infinity
  if (a < 0x38800000u) {  // below 2^-14: a subnormal half (or zero); units of 2^-24, scaled exactly
    const float units = std::nearbyint(bitsToFloat(a) * 16777216.0f);  // default rounding: nearest even
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(units));  // 1024 units is the smallest normal: right
  }
  const uint32_t r = a - 0x38000000u;  // exponent rebiased from 127 to 15
  return static_cast<uint16_t>(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));
}

inline float bf16ToFloat(uint16_t h) { return bitsToFloat(static_cast<uint32_t>(h) << 16); }

inline uint16_t floatToBf16(float x) {
  const uint32_t f = floatToBits(x);
  if ((f & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((f >> 16) | 0x40u);  // quiet NaN
  return static_cast<uint16_t>((f + 0x7fffu + ((f >> 16) & 1u)) >> 16);
}

struct Half {
  uint16_t bits;
  static float widen(Half h) { return halfToFloat(h.bits); }
  static Half narrow(float f) { return Half{floatToHalf(f)}; }
};
struct BFloat16 {
  uint16_t bits;
  static float widen(BFloat16 h) { return bf16ToFloat(h.bits); }
  static BFloat16 narrow(float f) { return BFloat16{floatToBf16(f)}; }
};

// ---- dispatch ----------------------------------------------------------------------------------------------------

// Calls f(T{}) with the C++ element type of t (Half, BFloat16 for the 16-bit floats). t must be valid.
template <typename F>
auto withElemType(tether_dtype_t t, F&& f) {
  if (t == TETHER_HALF) return f(Half{});
  if (t == TETHER_BFLOAT16) return f(BFloat16{});
  const DtypeInfo& d = dtypeInfo(t);
  if (d.cls == DtypeClass::Float) return d.size == 4 ? f(float{}) : f(double{});
  const bool s = d.cls == DtypeClass::Signed;
  switch (d.size) {
    case 1: return s ? f(int8_t{}) : f(uint8_t{});
    case 2: return s ? f(int16_t{}) : f(uint16_t{});
    case 4: return s ? f(int32_t{}) : f(uint32_t{});
    default: return s ? f(int64_t{}) : f(uint64_t{});
  }
}

inline bool redOpAllowed(tether_dtype_t t, tether_red_op_t op) {
  const bool bitwise = op == TETHER_RED_AND || op == TETHER_RED_OR || op == TETHER_RED_XOR;
  return !bitwise || dtypeInfo(t).cls != DtypeClass::Float;
}

inline const char* redOpName(tether_red_op_t op) {
  static const char* const names[] = {"sum", "prod", "min", "max", "and", "or", "xor"};
  return static_cast<unsigned>(op) < TETHER_RED_COUNT ? names[op] : "invalid";
}

namespace reduce_detail {

template <class T>
constexpr bool kNarrowFloat = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

template <class T>
T apply(tether_red_op_t op, T a, T b) {
  if constexpr (kNarrowFloat<T>) {
    const float x = T::widen(a), y = T::widen(b);
    switch (op) {
      case TETHER_RED_SUM: return T::narrow(x + y);
      case TETHER_RED_PROD: return T::narrow(x * y);
      case TETHER_RED_MIN: return y < x ? b : a;
      default: return y > x ? b : a;  // MAX (bitwise ops are refused for floats)
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case TETHER_RED_SUM: return a + b;
      case TETHER_RED_PROD: return a * b;
      case TETHER_RED_MIN: return b < a ? b : a;
      default: return b > a ? b : a;
    }
  } else {
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    switch (op) {
      case TETHER_RED_SUM: return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
      case TETHER_RED_PROD: return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
      case TETHER_RED_MIN: return b < a ? b : a;
      case TETHER_RED_MAX: return b > a ? b : a;
      case TETHER_RED_AND: return static_cast<T>(a & b);
      case TETHER_RED_OR: return static_cast<T>(a | b);
      default: return static_cast<T>(a ^ b);
    }
  }
}

}  // namespace reduce_detail

// acc[i] = acc[i] op in[i], i < n (element type t; redOpAllowed(t, op)); acc and in do not overlap (may be
// unaligned). The op is fixed before the loop, so each (type, op) pair is one simple loop the compiler can vectorise.
inline void reduceInto(tether_dtype_t t, tether_red_op_t op, void* acc, const void* in, size_t n) {
  auto loop = [&](auto zero, auto opc) {
    using T = decltype(zero);
    constexpr auto kOp = static_cast<tether_red_op_t>(decltype(opc)::value);
    if (reinterpret_cast<uintptr_t>(acc) % alignof(T) == 0 && reinterpret_cast<uintptr_t>(in) % alignof(T) == 0) {
      T* __restrict a = static_cast<T*>(acc);  // the usual case: typed, so the loop vectorises
      const T* __restrict b = static_cast<const T*>(in);
      for (size_t i = 0; i < n; ++i) a[i] = reduce_detail::apply(kOp, a[i], b[i]);
      return;
    }
    char* a = static_cast<char*>(acc);
    const char* b = static_cast<const char*>(in);
    for (size_t i = 0; i < n; ++i) {
      T x, y;
      std::memcpy(&x, a + i * sizeof(T), sizeof(T));
      std::memcpy(&y, b + i * sizeof(T), sizeof(T));
      x = reduce_detail::apply(kOp, x, y);
      std::memcpy(a + i * sizeof(T), &x, sizeof(T));
    }
  };
  withElemType(t, [&](auto zero) {
    using C = std::integral_constant<int, 0>;
    switch (op) {
      case TETHER_RED_SUM: loop(zero, std::integral_constant<int, TETHER_RED_SUM>{}); break;
      case TETHER_RED_PROD: loop(zero, std::integral_constant<int, TETHER_RED_PROD>{}); break;
      case TETHER_RED_MIN: loop(zero, std::integral_constant<int, TETHER_RED_MIN>{}); break;
      case TETHER_RED_MAX: loop(zero, std::integral_constant<int, TETHER_RED_MAX>{}); break;
      case TETHER_RED_AND: loop(zero, std::integral_constant<int, TETHER_RED_AND>{}); break;
      case TETHER_RED_OR: loop(zero, std::integral_constant<int, TETHER_RED_OR>{}); break;
      default: loop(zero, std::integral_constant<int, TETHER_RED_XOR>{}); break;
    }
    return C::value;
  });
}

}  // namespace tether
