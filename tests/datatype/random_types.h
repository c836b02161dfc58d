// Seeded random datatype trees built with the C API (every constructor, nesting, zero counts, negative
// displacements and strides, resized, subarrays in both orders, structs of mixed basic types), for tests that compare
// two implementations of pack/unpack (GPU engine vs host reference, emulated kernels vs host reference).
// Gen(seed).make(depth, &text) returns an uncommitted handle and a printable description of the tree.
#pragma once

#include <cinttypes>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "tether/datatype.h"

namespace dt_test {

struct Fail {
  std::string msg;
};
inline void tk(tether_status_t s, const char* what) {
  if (s != TETHER_SUCCESS) throw Fail{std::string(what) + ": " + tether_type_last_error()};
}

constexpr int64_t kMaxBytes = 1 << 20;  // data bytes per instance

class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}
  int64_t uni(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  bool chance(int pct) { return uni(0, 99) < pct; }

  tether_type_t leaf(std::string* text) {
    static const tether_basic_t b[] = {TETHER_BASIC_CHAR, TETHER_BASIC_INT16, TETHER_BASIC_INT32, TETHER_BASIC_FLOAT,
                                       TETHER_BASIC_DOUBLE, TETHER_BASIC_INT64, TETHER_BASIC_DOUBLE_COMPLEX};
    const int i = static_cast<int>(uni(0, 6));
    tether_type_t t;
    tk(tether_type_basic(b[i], &t), "basic");
    *text = "b" + std::to_string(i);
    return t;
  }
  int64_t count(int64_t child, int64_t hi) {
    if (chance(5)) return 0;
    int64_t c = uni(1, hi);
    while (c > 1 && child * c > kMaxBytes) c /= 2;
    return c;
  }
  tether_type_t make(int depth, std::string* text) {
    if (depth == 0) return leaf(text);
    std::string ct;
    tether_type_t c = make(depth - 1, &ct);
    int64_t size = 0, lb = 0, ext = 0;
    tk(tether_type_size(c, &size), "size");
    tk(tether_type_extent(c, &lb, &ext), "extent");
    const int64_t e = ext ? ext : 1;
    tether_type_t t = nullptr;
    char buf[128];
    switch (uni(0, 8)) {
      case 0: {
        const int64_t n = count(size, 64);
        tk(tether_type_contiguous(n, c, &t), "contiguous");
        std::snprintf(buf, sizeof buf, "contig(%" PRId64 ",", n);
        break;
      }
      case 1: {
        const int64_t n = count(size, 200), bl = uni(1, 4), st = uni(-6, 8);
        tk(tether_type_vector(n, bl, st, c, &t), "vector");
        std::snprintf(buf, sizeof buf, "vector(%" PRId64 ",%" PRId64 ",%" PRId64 ",", n, bl, st);
        break;
      }
      case 2: {
        const int64_t n = count(size, 200), bl = uni(1, 3), st = uni(-3, 6) * e + uni(0, 1) * 8;
        tk(tether_type_hvector(n, bl, st, c, &t), "hvector");
        std::snprintf(buf, sizeof buf, "hvector(%" PRId64 ",%" PRId64 ",%" PRId64 ",", n, bl, st);
        break;
      }
      case 3:
      case 4: {
        const int64_t n = count(size * 2, 40);
        std::vector<int64_t> bl(static_cast<size_t>(n)), d(static_cast<size_t>(n));
        const bool regular = chance(40);
        for (int64_t i = 0; i < n; ++i) {
          bl[static_cast<size_t>(i)] = regular ? 2 : uni(0, 3);
          d[static_cast<size_t>(i)] = regular ? 3 * i : uni(-10, 30);
        }
        if (chance(50)) {
          tk(tether_type_indexed(n, bl.data(), d.data(), c, &t), "indexed");
          std::snprintf(buf, sizeof buf, "indexed(%" PRId64 ",", n);
        } else {
          for (int64_t& x : d) x *= e;
          tk(tether_type_hindexed_block(n, 1, d.data(), c, &t), "hindexed_block");
          std::snprintf(buf, sizeof buf, "hindexed_block(%" PRId64 ",", n);
        }
        break;
      }
      case 5: {
        std::string ot;
        tether_type_t o = make(depth - 1, &ot);
        int64_t osz = 0, olb = 0, oext = 0;
        tk(tether_type_size(o, &osz), "size");
        tk(tether_type_extent(o, &olb, &oext), "extent");
        const int64_t bl[3] = {count(size, 3), count(osz, 3), count(8, 5)};
        const int64_t d[3] = {0, (bl[0] * e + 7) / 8 * 8 + uni(0, 2) * 8, uni(-64, 256)};
        tether_type_t dd;
        tk(tether_type_basic(TETHER_BASIC_DOUBLE, &dd), "basic");
        const tether_type_t ts[3] = {c, o, dd};
        tk(tether_type_struct(3, bl, d, ts, &t), "struct");
        tether_type_free(&o);
        tether_type_free(&dd);
        std::snprintf(buf, sizeof buf, "struct(%s;", ot.c_str());
        break;
      }
      case 6: {
        const int64_t nlb = uni(-16, 16), next = ext + uni(0, 24);
        tk(tether_type_resized(c, nlb, next, &t), "resized");
        std::snprintf(buf, sizeof buf, "resized(%" PRId64 ",%" PRId64 ",", nlb, next);
        break;
      }
      case 7: {
        const int nd = static_cast<int>(uni(1, 3));
        int64_t sizes[3], subs[3], starts[3];
        for (int k = 0; k < nd; ++k) {
          sizes[k] = uni(1, 24);
          subs[k] = uni(1, sizes[k]);
          starts[k] = uni(0, sizes[k] - subs[k]);
        }
        tk(tether_type_subarray(nd, sizes, subs, starts, chance(50) ? TETHER_ORDER_C : TETHER_ORDER_FORTRAN, c, &t),
           "subarray");
        std::snprintf(buf, sizeof buf, "subarray(%d,", nd);
        break;
      }
      default: {
        const int64_t n = count(size, 30);
        std::vector<int64_t> d(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) d[static_cast<size_t>(i)] = 4 * i + uni(0, 1);
        tk(tether_type_indexed_block(n, 2, d.data(), c, &t), "indexed_block");
        std::snprintf(buf, sizeof buf, "indexed_block(%" PRId64 ",", n);
        break;
      }
    }
    tether_type_free(&c);
    *text = buf + ct + ")";
    return t;
  }

 private:
  std::mt19937_64 rng_;
};

}  // namespace dt_test
