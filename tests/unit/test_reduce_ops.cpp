// The collectives' CPU reductions (core/reduce_ops.h): binary16 and bfloat16 conversions (every bit pattern round
// trips; rounding to nearest even at ties, subnormals, overflow, NaN), reduceInto per type class and op, and
// reduceTo (out = a op b) and reduceInto against element-by-element reduceInto for every type and op, aligned or not
// (random bytes; the seed is printed).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "core/reduce_ops.h"
#include "test_seed.h"

namespace tether {
namespace {

TEST(ReduceOps, HalfRoundTripsEveryPattern) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = halfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(f)))) << std::hex << h;
      continue;
    }
    EXPECT_EQ(floatToHalf(f), h) << std::hex << h;
  }
}

TEST(ReduceOps, HalfRoundsToNearestEven) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie: to the even 1.0
  EXPECT_EQ(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie: to the even 1 + 2^-9
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3c01);  // above the tie
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65519.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);  // rounds to infinity
  EXPECT_EQ(floatToHalf(-1e30f), 0xfc00);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001);             // smallest subnormal
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);             // tie: to the even 0
  EXPECT_EQ(floatToHalf(3 * std::ldexp(1.0f, -26)), 0x0001);
  EXPECT_EQ(floatToHalf(std::ldexp(1023.5f, -24)), 0x0400);          // tie at the top of the subnormals: to 2^-14
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(NAN))));
}

TEST(ReduceOps, Bf16RoundTripsAndRounds) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = bf16ToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(floatToBf16(f), h) << std::hex << h;
  }
  EXPECT_EQ(floatToBf16(bitsToFloat(0x3f808000u)), 0x3f80);  // tie: to even
  EXPECT_EQ(floatToBf16(bitsToFloat(0x3f818000u)), 0x3f82);
  EXPECT_EQ(floatToBf16(bitsToFloat(0x3f808001u)), 0x3f81);
  EXPECT_EQ(floatToBf16(bitsToFloat(0x7f7fffffu)), 0x7f80);  // max float rounds to infinity
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(NAN))));
}

template <class T>
T reduce2(tether_dtype_t t, tether_red_op_t op, T a, T b) {
  reduceInto(t, op, &a, &b, 1);
  return a;
}

TEST(ReduceOps, IntegersWrapAndCompareBySign) {
  EXPECT_EQ(reduce2<int8_t>(TETHER_INT8, TETHER_RED_SUM, 127, 1), -128);
  EXPECT_EQ(reduce2<uint8_t>(TETHER_UINT8, TETHER_RED_PROD, 16, 17), static_cast<uint8_t>(16 * 17));
  EXPECT_EQ(reduce2<int16_t>(TETHER_SHORT, TETHER_RED_PROD, 300, 300), static_cast<int16_t>(90000 & 0xffff));
  EXPECT_EQ(reduce2<int8_t>(TETHER_INT8, TETHER_RED_MIN, 5, -3), -3);
  EXPECT_EQ(reduce2<uint8_t>(TETHER_UINT8, TETHER_RED_MAX, 5, 250), 250);
  EXPECT_EQ(reduce2<int64_t>(TETHER_INT64, TETHER_RED_SUM, INT64_MAX, 1), INT64_MIN);
  EXPECT_EQ(reduce2<uint64_t>(TETHER_UINT64, TETHER_RED_XOR, 0xf0f0, 0xff00), 0x0ff0u);
  EXPECT_EQ(reduce2<uint32_t>(TETHER_UINT32, TETHER_RED_AND, 0xf0f0, 0xff00), 0xf000u);
  EXPECT_EQ(reduce2<int32_t>(TETHER_INT32, TETHER_RED_OR, 1, 4), 5);
}

TEST(ReduceOps, FloatsAndNarrowFloats) {
  EXPECT_EQ(reduce2<double>(TETHER_DOUBLE, TETHER_RED_SUM, 1.5, 2.25), 3.75);
  EXPECT_EQ(reduce2<float>(TETHER_FLOAT, TETHER_RED_MIN, 1.0f, -2.0f), -2.0f);
  EXPECT_EQ(reduce2<float>(TETHER_FLOAT, TETHER_RED_MIN, 1.0f, NAN), 1.0f);  // NaN in `in` never replaces acc
  EXPECT_EQ(reduce2<uint16_t>(TETHER_HALF, TETHER_RED_SUM, 0x3c00, 0x4000), 0x4200);      // 1 + 2 = 3
  EXPECT_EQ(reduce2<uint16_t>(TETHER_HALF, TETHER_RED_PROD, 0x5c00, 0x5c00), 0x7c00);     // 256^2 overflows
  EXPECT_EQ(reduce2<uint16_t>(TETHER_HALF, TETHER_RED_MAX, 0xbc00, 0x3c00), 0x3c00);
  EXPECT_EQ(reduce2<uint16_t>(TETHER_BFLOAT16, TETHER_RED_SUM, 0x3f80, 0x4000), 0x4040);  // 1 + 2 = 3
  // 2048 + 1 in half is a tie between 2048 and 2050: rounds to the even 2048 after the step.
  EXPECT_EQ(reduce2<uint16_t>(TETHER_HALF, TETHER_RED_SUM, floatToHalf(2048.0f), 0x3c00), floatToHalf(2048.0f));
}

TEST(ReduceOps, OpsAllowedPerType) {
  EXPECT_TRUE(redOpAllowed(TETHER_INT8, TETHER_RED_XOR));
  EXPECT_TRUE(redOpAllowed(TETHER_LONG, TETHER_RED_AND));
  EXPECT_FALSE(redOpAllowed(TETHER_HALF, TETHER_RED_OR));
  EXPECT_FALSE(redOpAllowed(TETHER_DOUBLE, TETHER_RED_XOR));
  EXPECT_TRUE(redOpAllowed(TETHER_BFLOAT16, TETHER_RED_PROD));
}

// Whether n elements of type t at got equal those at want: bit for bit, except that two NaNs are equal whatever
// their payloads -- with both operands NaN, which one's payload the result carries follows the operand order the
// compiler picked for that loop (a vectorised add may swap them), so it can differ between the paths (seen with
// TETHER_TEST_SEED=7: a float sum of two NaNs).
size_t mismatches(tether_dtype_t t, const unsigned char* got, const unsigned char* want, size_t n) {
  const size_t es = dtypeInfo(t).size;
  auto isNan = [&](const unsigned char* p) {
    if (dtypeInfo(t).cls != DtypeClass::Float) return false;
    if (es == 8) { double v; std::memcpy(&v, p, 8); return std::isnan(v); }
    if (es == 4) { float v; std::memcpy(&v, p, 4); return std::isnan(v); }
    uint16_t h;
    std::memcpy(&h, p, 2);
    return std::isnan(t == TETHER_BFLOAT16 ? bf16ToFloat(h) : halfToFloat(h));
  };
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char* g = got + i * es;
    const unsigned char* w = want + i * es;
    if (std::memcmp(g, w, es) != 0 && !(isNan(g) && isNan(w))) ++bad;
  }
  return bad;
}

// reduceTo's and reduceInto's vectorised and unaligned loops give what one element at a time gives: every type and
// allowed op, random bytes (NaNs included: bit for bit but for the payload of a NaN from two NaNs), n across vector
// widths.
TEST(ReduceOps, ReduceToMatchesElementByElement) {
  const uint64_t seed = testSeed("ReduceOps.ReduceToMatchesElementByElement");
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(static_cast<unsigned>(seed));
  for (int ti = 0; ti < TETHER_DTYPE_COUNT; ++ti) {
    const auto t = static_cast<tether_dtype_t>(ti);
    const size_t es = dtypeInfo(t).size;
    for (int oi = 0; oi < TETHER_RED_COUNT; ++oi) {
      const auto op = static_cast<tether_red_op_t>(oi);
      if (!redOpAllowed(t, op)) continue;
      for (size_t n : {size_t{1}, size_t{7}, size_t{33}, size_t{100}}) {
        for (size_t shift : {size_t{0}, size_t{1}}) {  // 1: every buffer off its type's alignment
          std::vector<unsigned char> a(n * es + 16), b(n * es + 16), out(n * es + 16), want(n * es);
          for (auto* v : {&a, &b, &out}) for (auto& c : *v) c = static_cast<unsigned char>(rng());
          unsigned char* pa = a.data() + 8 + shift;  // (vector data: aligned for every type at + 8)
          unsigned char* pb = b.data() + 8 + shift;
          unsigned char* po = out.data() + 8 + shift;
          for (size_t i = 0; i < n; ++i) {  // the reference: one element at a time, in aligned locals
            alignas(8) unsigned char x[8], y[8];
            std::memcpy(x, pa + i * es, es);
            std::memcpy(y, pb + i * es, es);
            reduceInto(t, op, x, y, 1);
            std::memcpy(want.data() + i * es, x, es);
          }
          const std::vector<unsigned char> guard(out);
          reduceTo(t, op, po, pa, pb, n);
          EXPECT_EQ(mismatches(t, po, want.data(), n), 0u) << dtypeInfo(t).name << " " << redOpName(op) << " n " << n
                                                            << " shift " << shift << " (out apart)";
          EXPECT_EQ(std::memcmp(out.data(), guard.data(), 8 + shift), 0) << "wrote before out";
          EXPECT_EQ(std::memcmp(po + n * es, guard.data() + 8 + shift + n * es, 8 - shift), 0) << "wrote past out";
          reduceInto(t, op, pa, pb, n);  // a op= b
          EXPECT_EQ(mismatches(t, pa, want.data(), n), 0u) << dtypeInfo(t).name << " " << redOpName(op) << " n " << n
                                                            << " shift " << shift << " (into a)";
        }
      }
    }
  }
}

}  // namespace
}  // namespace tether
