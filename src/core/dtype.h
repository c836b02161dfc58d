// Element types of the C API: size, class, and a typed dispatch used by atomics and waits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "tether/tether.h"

namespace tether {

enum class DtypeClass { Signed, Unsigned, Float, Invalid };

struct DtypeInfo {
  const char* name;
  size_t size;
  DtypeClass cls;
  bool bitwise;  // AND/OR/XOR allowed
  bool collOnly;  // an element type of the team collectives only (INT8, UINT8, HALF, BFLOAT16): not atomics, waits
};

inline const DtypeInfo& dtypeInfo(tether_dtype_t t) {
  static const DtypeInfo table[] = {
      {"int", sizeof(int), DtypeClass::Signed, false},
      {"long", sizeof(long), DtypeClass::Signed, false},
      {"longlong", sizeof(long long), DtypeClass::Signed, false},
      {"uint", sizeof(unsigned), DtypeClass::Unsigned, true},
      {"ulong", sizeof(unsigned long), DtypeClass::Unsigned, true},
      {"ulonglong", sizeof(unsigned long long), DtypeClass::Unsigned, true},
      {"int32", 4, DtypeClass::Signed, true},
      {"int64", 8, DtypeClass::Signed, true},
      {"uint32", 4, DtypeClass::Unsigned, true},
      {"uint64", 8, DtypeClass::Unsigned, true},
      {"size", sizeof(size_t), DtypeClass::Unsigned, false},
      {"ptrdiff", sizeof(ptrdiff_t), DtypeClass::Signed, false},
      {"float", sizeof(float), DtypeClass::Float, false},
      {"double", sizeof(double), DtypeClass::Float, false},
      {"short", sizeof(short), DtypeClass::Signed, false},
      {"ushort", sizeof(unsigned short), DtypeClass::Unsigned, false},
      {"int8", 1, DtypeClass::Signed, true, true},
      {"uint8", 1, DtypeClass::Unsigned, true, true},
      {"half", 2, DtypeClass::Float, false, true},
      {"bfloat16", 2, DtypeClass::Float, false, true},
  };
  // Every size is a power of two (the collectives check alignment with a mask).
  static const DtypeInfo invalid = {"invalid", 0, DtypeClass::Invalid, false};
  static_assert(sizeof(table) / sizeof(table[0]) == TETHER_DTYPE_COUNT, "dtype table out of sync");
  if (static_cast<unsigned>(t) >= TETHER_DTYPE_COUNT) return invalid;
  return table[t];
}

// Calls f(T{}) with T the C++ type matching (size, class) of t. t must be valid and not collOnly (the collectives
// dispatch those themselves: core/reduce_ops.h).
template <typename F>
auto withDtype(tether_dtype_t t, F&& f) {
  const DtypeInfo& d = dtypeInfo(t);
  if (d.cls == DtypeClass::Float) return d.size == 4 ? f(float{}) : f(double{});
  if (d.cls == DtypeClass::Signed) {
    switch (d.size) {
      case 2: return f(int16_t{});
      case 4: return f(int32_t{});
      default: return f(int64_t{});
    }
  }
  switch (d.size) {
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    default: return f(uint64_t{});
  }
}

// Value of `bits` (low d.size bytes, as stored in memory) formatted for messages.
inline std::string formatDtype(tether_dtype_t t, uint64_t bits) {
  return withDtype(t, [&](auto zero) {
    using T = decltype(zero);
    T v;
    std::memcpy(&v, &bits, sizeof v);
    if constexpr (std::is_floating_point<T>::value) return std::to_string(v);
    else if constexpr (std::is_signed<T>::value) return std::to_string(static_cast<long long>(v));
    else return std::to_string(static_cast<unsigned long long>(v));
  });
}

}  // namespace tether
