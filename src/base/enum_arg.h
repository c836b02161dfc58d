// Enum arguments of the C API, checked before they become the enum (issue 24 §5).
//
// A C caller may pass any int as an enum argument (C makes the enum compatible with its integer type), but in C++
// loading a value outside the enum's range of values is undefined, and the sanitizer build (-fsanitize=enum) halts on
// it. So an entry point reads the argument's integer without loading the enum (enumValue: a memcpy from the object,
// parameter or struct field, never an rvalue of the enum type), checks it against the enumerators
// (EnumRange<E>), and only then uses the argument as the enum. The check must come before the argument is copied,
// switched on, compared or passed by value; capturing it by reference is fine.
//
// Usage (the C API, src/core/api.cpp):
//   TETHER_TRY(enumArg("tether_atomic", "op", op));   // INVALID_ARG: "tether_atomic: op -1 is not a tether_amo_t ..."
#pragma once

#include <cstring>

#include "base/status.h"
#include "tether/tether.h"

namespace tether {

// The integer value of the enum object e, read without loading the enum.
template <typename E>
int enumValue(const E& e) {
  static_assert(sizeof(E) == sizeof(int), "C API enums are int-sized");
  int v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

// The enumerators of a C API enum: the values [lo, hi] (each enum of tether.h is contiguous) and its C name.
template <typename E>
struct EnumRange;
template <>
struct EnumRange<tether_status_t> {
  static constexpr const char* name = "tether_status_t";
  static constexpr int lo = TETHER_SUCCESS, hi = TETHER_ERR_TRUNCATED;
};
template <>
struct EnumRange<tether_seg_kind_t> {
  static constexpr const char* name = "tether_seg_kind_t";
  static constexpr int lo = TETHER_SEG_DEFAULT, hi = TETHER_SEG_DEVICE;
};
template <>
struct EnumRange<tether_dtype_t> {
  static constexpr const char* name = "tether_dtype_t";
  static constexpr int lo = 0, hi = TETHER_DTYPE_COUNT - 1;
};
template <>
struct EnumRange<tether_amo_t> {
  static constexpr const char* name = "tether_amo_t";
  static constexpr int lo = 0, hi = TETHER_AMO_COUNT - 1;
};
template <>
struct EnumRange<tether_cmp_t> {
  static constexpr const char* name = "tether_cmp_t";
  static constexpr int lo = TETHER_CMP_EQ, hi = TETHER_CMP_LE;
};
template <>
struct EnumRange<tether_signal_op_t> {
  static constexpr const char* name = "tether_signal_op_t";
  static constexpr int lo = TETHER_SIGNAL_SET, hi = TETHER_SIGNAL_ADD;
};
template <>
struct EnumRange<tether_red_op_t> {
  static constexpr const char* name = "tether_red_op_t";
  static constexpr int lo = TETHER_RED_SUM, hi = TETHER_RED_COUNT - 1;
};
template <>
struct EnumRange<tether_op_kind_t> {
  static constexpr const char* name = "tether_op_kind_t";
  static constexpr int lo = TETHER_OP_PUT, hi = TETHER_OP_SYNC_ALL;
};

// True when v is an enumerator of E.
template <typename E>
bool enumValid(int v) {
  return v >= EnumRange<E>::lo && v <= EnumRange<E>::hi;
}
template <typename E>
bool enumValid(const E& e) {
  return enumValid<E>(enumValue(e));
}

// TETHER_ERR_INVALID_ARG naming the call, the parameter and the value, for a value v that is not an enumerator of E.
template <typename E>
Status badEnum(const char* call, const char* param, int v) {
  return Status(TETHER_ERR_INVALID_ARG, strprintf("%s: %s %d is not a %s (valid: %d .. %d)", call, param, v,
                                                  EnumRange<E>::name, EnumRange<E>::lo, EnumRange<E>::hi));
}

// ok when the enum argument e (parameter `param` of `call`) holds an enumerator of E, else badEnum.
template <typename E>
Status enumArg(const char* call, const char* param, const E& e) {
  const int v = enumValue(e);
  return enumValid<E>(v) ? Status::ok() : badEnum<E>(call, param, v);
}

}  // namespace tether
