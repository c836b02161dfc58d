// Random datatype constructions (tether/datatype.h) with arguments drawn from ordinary, extreme and bad values --
// counts, lengths, strides, displacements, bounds from 0 and small numbers to INT64_MIN / INT64_MAX, NULL arrays and
// handles, uncommitted old types, bad enums -- nested on earlier results. Checked for every call (docs/datatype.md:
// "every product and sum is checked"):
//  - a bad argument (negative count or length, NULL handle or array, bad enum) fails with TETHER_ERR_INVALID_ARG and
//    no handle; every failure names the call in tether_type_last_error();
//  - a type whose size (count x lengths x the old types' sizes) does not fit in int64 is refused (OVERFLOW); one that
//    is made has exactly that size;
//  - on a made type: commit works; the queries agree (packed_size(count) = count x size or OVERFLOW); and where its
//    bytes span at most 256 KiB, a pack in random pieces (resumed at each offset) equals the whole pack and an unpack
//    in random pieces equals the whole unpack;
//  - nothing crashes, and under the asan preset UBSan finds no signed overflow (the checks must come first).
// Prints its seed (TETHER_TEST_SEED repeats a run).
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../unit/test_seed.h"
#include "tether/datatype.h"

namespace {

constexpr int kSteps = 10000;
constexpr int64_t kSpanMax = 256 << 10;  // bytes a pack check may touch

struct Made {
  tether_type_t t = nullptr;
  int64_t size = 0;  // the size the test computed
  bool committed = false;
};

class TypeFuzz {
 public:
  explicit TypeFuzz(uint64_t seed) : rng_(seed) {
    const tether_basic_t basics[] = {TETHER_BASIC_BYTE, TETHER_BASIC_INT16, TETHER_BASIC_INT32, TETHER_BASIC_DOUBLE,
                                     TETHER_BASIC_DOUBLE_COMPLEX};
    for (tether_basic_t b : basics) {
      Made m;
      EXPECT_EQ(tether_type_basic(b, &m.t), TETHER_SUCCESS) << tether_type_last_error();
      EXPECT_EQ(tether_type_size(m.t, &m.size), TETHER_SUCCESS);
      m.committed = true;
      pool_.push_back(m);
    }
  }
  ~TypeFuzz() {
    for (Made& m : pool_) tether_type_free(&m.t);
  }

  void run(int steps) {
    for (int i = 0; i < steps && !::testing::Test::HasFailure(); ++i) {
      step_ = i;
      construct();
    }
    std::printf("datatype fuzz: %d constructions, %d made, %d refused as bad, %d overflows, %d commits past the "
                "canonical bound, %d packs checked\n", steps, nMade_, nBad_, nOverflow_, nTooBig_, nPacks_);
  }

 private:
  uint64_t uni(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }
  bool coin(unsigned percent) { return uni(100) < percent; }
  std::string at() const { return "step " + std::to_string(step_) + " " + what_ + ": "; }

  // Counts and lengths: mostly small, sometimes huge, sometimes negative (bad).
  int64_t count(bool* bad) {
    const int64_t v[] = {0, 1, 2, 3, 5, 8, 1 << 20, INT64_C(1) << 40, INT64_MAX / 3, INT64_MAX, -1, INT64_MIN};
    const size_t i = coin(75) ? uni(6) : 6 + uni(6);
    *bad = *bad || v[i] < 0;
    return v[i];
  }
  // Strides, displacements, bounds: any sign, small to extreme.
  int64_t offset() {
    const int64_t v[] = {0, 1, -1, 3, -3, 16, -40, 100, INT64_C(1) << 31, -(INT64_C(1) << 31), INT64_C(1) << 50,
                         -(INT64_C(1) << 50), INT64_MAX / 2, INT64_MIN / 2, INT64_MAX, INT64_MIN};
    return v[coin(80) ? uni(8) : 8 + uni(8)];
  }
  // An old type from the pool (sometimes NULL: bad).
  const Made* old(bool* bad) {
    if (coin(3)) {
      *bad = true;
      return nullptr;
    }
    return &pool_[uni(pool_.size())];
  }
  static bool mul(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }
  static bool add(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }

  void construct() {
    bool bad = false, fits = true;
    int64_t size = 0;
    tether_type_t t = nullptr;
    tether_status_t st = TETHER_SUCCESS;
    const char* call = "";
    const bool nullOut = coin(2);
    tether_type_t* out = nullOut ? nullptr : &t;
    bad = nullOut;
    const unsigned kind = static_cast<unsigned>(uni(10));
    switch (kind) {
      case 0: {
        call = "tether_type_contiguous";
        const int64_t c = count(&bad);
        const Made* o = old(&bad);
        fits = o && mul(c, o->size, &size);
        st = tether_type_contiguous(c, o ? o->t : nullptr, out);
        what_ = std::string(call) + "(" + std::to_string(c) + ")";
        break;
      }
      case 1: case 2: {
        const bool h = kind == 2;
        call = h ? "tether_type_hvector" : "tether_type_vector";
        const int64_t c = count(&bad), bl = count(&bad), stride = offset();
        const Made* o = old(&bad);
        int64_t per = 0;
        fits = o && (c == 0 || (mul(bl, o->size, &per) && mul(c, per, &size)));  // (count 0: empty)
        st = (h ? tether_type_hvector : tether_type_vector)(c, bl, stride, o ? o->t : nullptr, out);
        what_ = std::string(call) + "(" + std::to_string(c) + ", " + std::to_string(bl) + ", " +
                std::to_string(stride) + ")";
        break;
      }
      case 3: case 4: case 5: {  // indexed, hindexed, indexed_block / hindexed_block
        const bool block = kind == 5, h = coin(50);
        call = block ? (h ? "tether_type_hindexed_block" : "tether_type_indexed_block")
                     : (h ? "tether_type_hindexed" : "tether_type_indexed");
        const int64_t n = coin(5) ? -1 : static_cast<int64_t>(uni(5));
        bad = bad || n < 0;
        std::vector<int64_t> bls(std::max<int64_t>(n, 0)), ds(bls.size());
        const int64_t blockLen = block ? count(&bad) : 0;
        for (size_t i = 0; i < bls.size(); ++i) {
          bls[i] = block ? blockLen : count(&bad);
          ds[i] = offset();
        }
        const bool nullArr = n > 0 && coin(5);
        bad = bad || nullArr;
        const Made* o = old(&bad);
        fits = o != nullptr;
        for (size_t i = 0; i < bls.size() && fits; ++i) {  // size = sum of blocklength x old size
          int64_t part = 0;
          fits = mul(bls[i] < 0 ? 0 : bls[i], o->size, &part) && add(size, part, &size);
        }
        const int64_t* bp = nullArr && !block ? nullptr : bls.data();
        const int64_t* dp = nullArr ? nullptr : ds.data();
        if (block) {
          st = (h ? tether_type_hindexed_block : tether_type_indexed_block)(n, blockLen, dp, o ? o->t : nullptr, out);
        } else {
          st = (h ? tether_type_hindexed : tether_type_indexed)(n, bp, dp, o ? o->t : nullptr, out);
        }
        what_ = std::string(call) + "(" + std::to_string(n) + " blocks)";
        break;
      }
      case 6: {
        call = "tether_type_struct";
        const int64_t n = coin(5) ? -1 : static_cast<int64_t>(uni(4));
        bad = bad || n < 0;
        std::vector<int64_t> bls(std::max<int64_t>(n, 0)), ds(bls.size());
        std::vector<tether_type_t> ts(bls.size());
        for (size_t i = 0; i < bls.size(); ++i) {
          bls[i] = count(&bad);
          ds[i] = offset();
          const Made* o = old(&bad);
          ts[i] = o ? o->t : nullptr;
          int64_t part = 0;
          fits = fits && o && mul(bls[i] < 0 ? 0 : bls[i], o->size, &part) && add(size, part, &size);
        }
        st = tether_type_struct(n, bls.data(), ds.data(), ts.data(), out);
        what_ = std::string(call) + "(" + std::to_string(n) + " blocks)";
        break;
      }
      case 7: {
        call = "tether_type_resized";
        const Made* o = old(&bad);
        const int64_t lb = offset(), extent = offset();
        size = o ? o->size : 0;
        st = tether_type_resized(o ? o->t : nullptr, lb, extent, out);
        what_ = std::string(call) + "(" + std::to_string(lb) + ", " + std::to_string(extent) + ")";
        break;
      }
      case 8: {
        call = "tether_type_subarray";
        const int nd = coin(5) ? 0 : 1 + static_cast<int>(uni(3));
        bad = bad || nd < 1;
        std::vector<int64_t> sizes(std::max(nd, 1)), subs(sizes.size()), starts(sizes.size());
        int64_t elems = 1;
        for (size_t i = 0; i < sizes.size(); ++i) {
          sizes[i] = coin(85) ? 1 + static_cast<int64_t>(uni(6)) : count(&bad);
          // (0 .. 6 elements of the box, starting 0 .. 6 elements in, inside the array)
          auto upTo = [&](int64_t n) {
            return static_cast<int64_t>(uni(static_cast<uint64_t>(std::min<int64_t>(n, 6)) + 1));
          };
          subs[i] = sizes[i] > 0 ? upTo(sizes[i]) : 0;
          starts[i] = sizes[i] > 0 ? upTo(sizes[i] - subs[i]) : 0;
          if (coin(3) && sizes[i] > 0 && sizes[i] < INT64_MAX) starts[i] = sizes[i] + 1;  // beyond the array: bad
          bad = bad || sizes[i] <= 0 || starts[i] < 0 || starts[i] > sizes[i] - subs[i];
          fits = fits && mul(elems, subs[i], &elems);
        }
        bool badOrder = coin(5);
        bad = bad || badOrder;
        const tether_order_t order = badOrder ? static_cast<tether_order_t>(7) : static_cast<tether_order_t>(uni(2));
        const Made* o = old(&bad);
        fits = fits && o && mul(elems, o->size, &size);
        st = tether_type_subarray(nd, sizes.data(), subs.data(), starts.data(), order, o ? o->t : nullptr, out);
        what_ = std::string(call) + "(" + std::to_string(nd) + " dims)";
        break;
      }
      default: {
        call = "tether_type_dup";
        const Made* o = old(&bad);
        size = o ? o->size : 0;
        st = tether_type_dup(o ? o->t : nullptr, out);
        what_ = call;
      }
    }
    const std::string msg = st == TETHER_SUCCESS ? "" : tether_type_last_error();
    if (st != TETHER_SUCCESS) {
      ASSERT_NE(msg.find(call), std::string::npos) << at() << "the message does not name the call: " << msg;
      ASSERT_EQ(t, nullptr) << at() << "a failed constructor gave a handle";
    }
    if (bad) {  // (INVALID_ARG, or OVERFLOW where a value is checked before the bad one)
      ++nBad_;
      ASSERT_TRUE(st == TETHER_ERR_INVALID_ARG || st == TETHER_ERR_OVERFLOW)
          << at() << "a bad argument gave status " << static_cast<int>(st) << " " << msg;
      return;
    }
    if (!fits) {
      ++nOverflow_;
      ASSERT_EQ(st, TETHER_ERR_OVERFLOW) << at() << "a size beyond int64 gave status " << static_cast<int>(st) << " "
                                         << msg;
      return;
    }
    ASSERT_TRUE(st == TETHER_SUCCESS || st == TETHER_ERR_OVERFLOW || st == TETHER_ERR_INVALID_ARG)
        << at() << "status " << static_cast<int>(st) << " " << msg;
    if (st != TETHER_SUCCESS) return;
    ++nMade_;
    int64_t got = -1;
    ASSERT_EQ(tether_type_size(t, &got), TETHER_SUCCESS) << at() << tether_type_last_error();
    EXPECT_EQ(got, size) << at() << "size";
    Made m{t, size, false};
    check(m);
    if (pool_.size() < 64) {
      pool_.push_back(m);
    } else {
      std::swap(pool_[5 + uni(pool_.size() - 5)], m);  // (the basic types stay)
      tether_type_free(&m.t);
    }
  }

  // Commit, the queries, and a pack/unpack in pieces against whole ones where the bytes are few.
  void check(Made& m) {
    if (coin(50)) {
      // Commit works, or refuses a type past the canonical form's documented bound (docs/datatype.md).
      const tether_status_t st = tether_type_commit(m.t);
      const std::string msg = st == TETHER_SUCCESS ? "" : tether_type_last_error();
      ASSERT_TRUE(st == TETHER_SUCCESS ||
                  (st == TETHER_ERR_UNSUPPORTED && msg.find("the canonical form would exceed") != std::string::npos))
          << at() << "commit: " << msg;
      m.committed = st == TETHER_SUCCESS;
      if (!m.committed) ++nTooBig_;
    }
    int64_t lb = 0, extent = 0, tlb = 0, textent = 0, bytes = 0;
    ASSERT_EQ(tether_type_extent(m.t, &lb, &extent), TETHER_SUCCESS) << at() << tether_type_last_error();
    ASSERT_EQ(tether_type_true_extent(m.t, &tlb, &textent), TETHER_SUCCESS) << at() << tether_type_last_error();
    const int64_t counts[] = {0, 1, 3, INT64_C(1) << 40, INT64_MAX};
    for (int64_t c : counts) {
      int64_t want = 0;
      const tether_status_t st = tether_type_packed_size(m.t, c, &bytes);
      if (mul(c, m.size, &want)) {
        EXPECT_EQ(st, TETHER_SUCCESS) << at() << "packed_size(" << c << "): " << tether_type_last_error();
        EXPECT_EQ(bytes, want) << at() << "packed_size(" << c << ")";
      } else {
        EXPECT_EQ(st, TETHER_ERR_OVERFLOW) << at() << "packed_size(" << c << ") of size " << m.size;
      }
    }
    if (!m.committed || m.size == 0 || m.size > kSpanMax) return;
    // The bytes count instances touch: [lo, hi) around the origin.
    const int64_t count = 1 + static_cast<int64_t>(uni(3));
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int64_t i = 0; i < count; ++i) {
      int64_t base = 0, first = 0, last = 0;
      if (!mul(i, extent, &base) || !add(base, tlb, &first) || !add(first, textent, &last)) return;
      lo = std::min(lo, first), hi = std::max(hi, last);
    }
    int64_t span = 0;
    if (__builtin_sub_overflow(hi, lo, &span) || span > kSpanMax || span <= 0) return;
    std::vector<unsigned char> buf(static_cast<size_t>(span));
    for (auto& b : buf) b = static_cast<unsigned char>(uni(256));
    // The origin may lie outside buf (only bytes inside are touched): computed as an address, not pointer arithmetic.
    auto at0 = [&](std::vector<unsigned char>& v) {
      return reinterpret_cast<unsigned char*>(reinterpret_cast<uintptr_t>(v.data()) - static_cast<uintptr_t>(lo));
    };
    const unsigned char* origin = at0(buf);
    const int64_t total = count * m.size;
    std::vector<unsigned char> whole(static_cast<size_t>(total)), pieces(whole.size());
    int64_t done = 0;
    ASSERT_EQ(tether_type_pack(m.t, count, origin, 0, total, whole.data(), &done), TETHER_SUCCESS)
        << at() << tether_type_last_error();
    ASSERT_EQ(done, total) << at();
    for (int64_t off = 0; off < total; off += done) {
      const int64_t want = 1 + static_cast<int64_t>(uni(static_cast<uint64_t>(std::min<int64_t>(total - off, 4096))));
      ASSERT_EQ(tether_type_pack(m.t, count, origin, off, want, pieces.data() + off, &done), TETHER_SUCCESS)
          << at() << "pack at " << off << ": " << tether_type_last_error();
      ASSERT_GT(done, 0) << at() << "no progress at " << off;
    }
    ASSERT_EQ(whole, pieces) << at() << "a pack in pieces differs from the whole pack";
    // Unpack the packed bytes, whole and in pieces, into two copies of the same buffer.
    std::vector<unsigned char> a(buf.size(), 0x5a), b(buf.size(), 0x5a);
    ASSERT_EQ(tether_type_unpack(m.t, count, whole.data(), 0, total, at0(a), &done), TETHER_SUCCESS)
        << at() << tether_type_last_error();
    for (int64_t off = 0; off < total; off += done) {
      const int64_t want = 1 + static_cast<int64_t>(uni(static_cast<uint64_t>(std::min<int64_t>(total - off, 4096))));
      ASSERT_EQ(tether_type_unpack(m.t, count, whole.data() + off, off, want, at0(b), &done), TETHER_SUCCESS)
          << at() << "unpack at " << off << ": " << tether_type_last_error();
      ASSERT_GT(done, 0) << at();
    }
    ASSERT_EQ(a, b) << at() << "an unpack in pieces differs from the whole unpack";
    ++nPacks_;
  }

  std::mt19937_64 rng_;
  std::vector<Made> pool_;
  int step_ = 0;
  std::string what_;
  int nMade_ = 0, nBad_ = 0, nOverflow_ = 0, nPacks_ = 0, nTooBig_ = 0;
};

TEST(DatatypeFuzz, RandomConstructionsKeepTheirContract) {
  TypeFuzz f(tether::testSeed("test_datatype_fuzz"));
  f.run(kSteps);
}

}  // namespace
