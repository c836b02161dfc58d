// Inputs and the reference combination shared by the team-collective tests that run on C++ element types
// (mp_coll_device.cpp on CPU threads, mp_coll_stream.cpp, tests/gpu/gpu_coll.cu on GPUs): every member generates
// every member's input from (seed, case, member, index), so each PE can compute the expected result of a collective
// itself. Written here, independently of the library's reduction code (core/reduce_ops.h, device.cuh's redApply).
// The host tests that dispatch on tether_dtype_t at run time use coll_types.h instead (the same math on each
// type's bit encoding, half and bfloat16 included, which have no C++ type here).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "fuzz_common.h"
#include "tether/device.cuh"

namespace coll_ref {

using fuzz::mix;

// MP_SEED (default 1); PE 0 prints it with the program's name, so a failing run can be repeated.
inline uint64_t seedFromEnv(const char* program, int me) {
  const char* s = std::getenv("MP_SEED");
  const uint64_t seed = s ? std::strtoull(s, nullptr, 10) : 1;
  if (me == 0) std::printf("%s: MP_SEED=%llu\n", program, static_cast<unsigned long long>(seed));
  return seed;
}

// Element i of member m's input in case c: any bits for integers; an integer in [-4, 4] for floating point, so that
// sums and products over the members are exact.
template <typename T>
T input(uint64_t seed, uint64_t c, int m, size_t i) {
  const uint64_t r = mix(seed ^ mix(c * 7919u + static_cast<uint64_t>(m)) ^ (i * 0x632be59bd9b4e019ull));
  if (std::is_floating_point<T>::value) return static_cast<T>(static_cast<int>(r % 9) - 4);
  T v;
  std::memcpy(&v, &r, sizeof v);
  return v;
}

// a op b: integers wrap in their width, min/max by <.
template <typename T>
T combine(tether::device::RedOp op, T a, T b) {
  using tether::device::RedOp;
  if (std::is_floating_point<T>::value) {
    switch (op) {
      case RedOp::Sum: return a + b;
      case RedOp::Prod: return a * b;
      case RedOp::Min: return b < a ? b : a;
      default: return b > a ? b : a;
    }
  }
  const uint64_t x = static_cast<uint64_t>(a), y = static_cast<uint64_t>(b);  // low bits are what matters
  switch (op) {
    case RedOp::Sum: return static_cast<T>(x + y);
    case RedOp::Prod: return static_cast<T>(x * y);
    case RedOp::Min: return b < a ? b : a;
    case RedOp::Max: return b > a ? b : a;
    case RedOp::And: return static_cast<T>(x & y);
    case RedOp::Or: return static_cast<T>(x | y);
    default: return static_cast<T>(x ^ y);
  }
}

}  // namespace coll_ref
