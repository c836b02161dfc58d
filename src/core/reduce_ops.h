// Element-wise reduction of the team collectives on the CPU (core/collectives.cpp): acc[i] = acc[i] op in[i] and
// out[i] = a[i] op b[i] for every element type of tether_dtype_t (the collective-only INT8, UINT8, HALF, BFLOAT16
// included) and every tether_red_op_t the type allows (redOpAllowed).
//
// Contract: integer SUM and PROD wrap around (computed in the unsigned type of the same width); MIN/MAX keep acc when
// the comparison is false (so a NaN in `in` never replaces acc, a NaN in acc stays); HALF and BFLOAT16 are widened to
// float, combined, and rounded back to nearest even after every step, so a reduction in a fixed member order gives
// the same bits everywhere -- but for the payload of a NaN made from two NaNs (SUM, PROD): the CPU keeps one
// operand's, and which one follows the operand order the compiler chose for the loop (a vectorised add may swap
// them), so the aligned and unaligned paths may differ there. Pure functions of their arguments; no state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/dtype.h"
#include "tether/device.cuh"
#include "tether/tether.h"

namespace tether {

// ---- 16-bit floating-point formats: the device API's (include/tether/device.cuh), one definition for host and GPU --

using Half = device::Half;
using BFloat16 = device::BFloat16;
using device::bitsToFloat;
using device::floatToBits;
inline float halfToFloat(uint16_t h) { return Half::widen(Half{h}); }
inline uint16_t floatToHalf(float x) { return Half::narrow(x).bits; }
inline float bf16ToFloat(uint16_t h) { return BFloat16::widen(BFloat16{h}); }
inline uint16_t floatToBf16(float x) { return BFloat16::narrow(x).bits; }

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

// One element op for host and device: the device API's (wrap-around integers, min/max keep acc unless the
// comparison holds, 16-bit floats widened and narrowed per step).
template <class T>
T apply(tether_red_op_t op, T a, T b) {
  return device::detail::redApply(static_cast<device::RedOp>(op), a, b);
}

// out[i] = a[i] op b[i] element by element through memcpy (any alignment; out may be a: each element is read
// before it is written).
template <class T>
void unaligned(tether_red_op_t op, void* out, const void* a, const void* b, size_t n) {
  char* o = static_cast<char*>(out);
  const char* x = static_cast<const char*>(a);
  const char* y = static_cast<const char*>(b);
  for (size_t i = 0; i < n; ++i) {
    T u, v;
    std::memcpy(&u, x + i * sizeof(T), sizeof(T));
    std::memcpy(&v, y + i * sizeof(T), sizeof(T));
    u = apply(op, u, v);
    std::memcpy(o + i * sizeof(T), &u, sizeof(T));
  }
}

}  // namespace reduce_detail

// Calls f(std::integral_constant<int, op>) (op must be a tether_red_op_t), so that each op is a constant in f.
template <typename F>
int withRedOp(tether_red_op_t op, F&& f) {
  switch (op) {
    case TETHER_RED_SUM: f(std::integral_constant<int, TETHER_RED_SUM>{}); break;
    case TETHER_RED_PROD: f(std::integral_constant<int, TETHER_RED_PROD>{}); break;
    case TETHER_RED_MIN: f(std::integral_constant<int, TETHER_RED_MIN>{}); break;
    case TETHER_RED_MAX: f(std::integral_constant<int, TETHER_RED_MAX>{}); break;
    case TETHER_RED_AND: f(std::integral_constant<int, TETHER_RED_AND>{}); break;
    case TETHER_RED_OR: f(std::integral_constant<int, TETHER_RED_OR>{}); break;
    default: f(std::integral_constant<int, TETHER_RED_XOR>{}); break;
  }
  return 0;
}

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
    reduce_detail::unaligned<T>(kOp, acc, acc, in, n);
  };
  withElemType(t, [&](auto zero) { return withRedOp(op, [&](auto opc) { loop(zero, opc); }); });
}

// out[i] = a[i] op b[i], i < n (element type t; redOpAllowed(t, op)): reduceInto with the first operand read from a,
// where acc would otherwise start as a copy of a (one pass less). out overlaps neither a nor b (any may be unaligned).
inline void reduceTo(tether_dtype_t t, tether_red_op_t op, void* out, const void* a, const void* b, size_t n) {
  auto loop = [&](auto zero, auto opc) {
    using T = decltype(zero);
    constexpr auto kOp = static_cast<tether_red_op_t>(decltype(opc)::value);
    const auto aligned = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % alignof(T) == 0; };
    if (aligned(out) && aligned(a) && aligned(b)) {  // the usual case: typed, so the loop vectorises
      T* __restrict o = static_cast<T*>(out);
      const T* __restrict x = static_cast<const T*>(a);
      const T* __restrict y = static_cast<const T*>(b);
      for (size_t i = 0; i < n; ++i) o[i] = reduce_detail::apply(kOp, x[i], y[i]);
      return;
    }
    reduce_detail::unaligned<T>(kOp, out, a, b, n);
  };
  withElemType(t, [&](auto zero) { return withRedOp(op, [&](auto opc) { loop(zero, opc); }); });
}

}  // namespace tether
