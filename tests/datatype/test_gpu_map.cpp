// The GPU engine's work decomposition (src/datatype/gpu_map.h), run on the CPU: every lane of every warp of the thread
// and warp schemes is emulated with the same code the kernels run, for seeded random type trees, whole packs and
// random fragments, at two launch widths (2 and 132 SMs). Checks: every packed byte of the fragment is written exactly
// once, the bytes equal the host reference pack, unpack equals the host reference unpack, and every copy respects the
// access width the launcher would choose. This is what CI can verify of the kernels without a GPU; the kernels
// themselves run in tests/gpu/gpu_datatype.cu. Seed: TETHER_TEST_DT_SEED (default 1); failures print the tree's seed.
#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "datatype/gpu_map.h"
#include "datatype/handle.h"
#include "random_types.h"

namespace {

int userOrdered = 0;   // elem launches emulated with the user-order iteration (reported)
int inlinedTables = 0;  // ... with the table inside the descriptor (must happen)
int widePairs = 0;      // 16-byte stores of the paired elem unpack (must happen)

using tether::dt::DMeta;
using tether::dt::Shape;

int pow2Width(int64_t w, uint64_t x) {  // as the launcher: largest power of two <= w dividing x
  int r = 1;
  while (r * 2 <= w && (x % static_cast<uint64_t>(r * 2)) == 0) r *= 2;
  return r;
}

struct Emu {
  const DMeta& m;
  const unsigned char* user;  // type origin
  int64_t off, end;
  int width;
  std::vector<unsigned char> out;  // fragment bytes
  std::vector<int> hits;
  std::string error;

  void move(int64_t u, int64_t pk, int64_t lo, int64_t hi) {
    if (lo >= hi) {
      error = "empty copy";
      return;
    }
    if ((lo - off) % width || (hi - lo) % width || (u + (lo - pk)) % width) error = "copy not aligned to the width";
    for (int64_t b = lo; b < hi; ++b) {
      if (b < off || b >= end) {
        error = "copy outside the fragment";
        return;
      }
      out[static_cast<size_t>(b - off)] = user[u + (b - pk)];
      ++hits[static_cast<size_t>(b - off)];
    }
  }
};

// ElemUserOrder: whole packs (the unpack's order). ElemPair: the paired unpack's units (gpu_map.h elemPair), emulated
// as the same unit-to-bytes mapping; launches that cannot pair (width not 8, inline table) emulate plain elem.
enum class Emulated { Thread, Warp, Elem, ElemUserOrder, ElemPair };

void runScheme(const tether::dt::Canonical& c, const DMeta& m, const tether::dt::ElemForm& elem, int64_t count,
               const unsigned char* user, int64_t off, int64_t end, Emulated scheme, int sms,
               const std::vector<unsigned char>& want, const std::string& where) {
  const int width = pow2Width(c.width, static_cast<uint64_t>(off) | static_cast<uint64_t>(end - off));
  Emu e{m, user, off, end, width, std::vector<unsigned char>(static_cast<size_t>(end - off)),
        std::vector<int>(static_cast<size_t>(end - off)), ""};
  if (scheme == Emulated::Elem || scheme == Emulated::ElemUserOrder || scheme == Emulated::ElemPair) {
    // As packElem: unit t of the fragment at elemUser(t); the table as the host form (int64_t entries).
    // The launcher keeps only the device copy of the table: describe the launch without the host one.
    tether::dt::ElemForm launched = elem;
    if (launched.entries > tether::dt::kElemInline) launched.offsets.clear();  // tiny tables stay (inline)
    tether::dt::EDesc d;
    const bool userOrder = scheme == Emulated::ElemUserOrder;
    ASSERT_TRUE(tether::dt::elemDesc(launched, c, count, width, elem.offsets.data(), &d, userOrder)) << where;
    if (scheme == Emulated::ElemPair && width == 8 && !d.inlined) {
      // Both phases over the fragments: the user buffer's address taken as 0 or 8 mod 16 (only the pairing reads it).
      const uint64_t addr = (static_cast<uint64_t>(off / 8) & 1) * 8;
      const uint32_t t0 = static_cast<uint32_t>(off / 8), t1 = static_cast<uint32_t>(end / 8);
      for (uint32_t q = 0; q < tether::dt::elemPairThreads(t0, t1); ++q) {
        const tether::dt::PairUnits p = tether::dt::elemPair<int64_t>(d, addr, t0, t1, q);
        if (p.wide && (!p.has[0] || !p.has[1] || p.at[1] != p.at[0] + 8 ||
                       ((addr + static_cast<uint64_t>(p.at[0])) & 15) != 0))
          e.error = "16-byte store of units not adjacent or not aligned";
        widePairs += p.wide;
        for (int k = 0; k < 2; ++k)
          if (p.has[k]) e.move(p.at[k], int64_t{p.unit[k]} * 8, int64_t{p.unit[k]} * 8, (int64_t{p.unit[k]} + 1) * 8);
      }
    } else {
    for (int64_t t = off / width; t < end / width; ++t) {
      int64_t pu = t;
      const uint32_t tt = static_cast<uint32_t>(t);
      const int64_t u = d.userOrder  ? tether::dt::elemUser<int64_t, true>(d, tt, &pu)
                        : d.inlined ? tether::dt::elemUser<int64_t, false, true>(d, tt)
                                    : tether::dt::elemUser<int64_t>(d, tt);
      e.move(u, pu * width, pu * width, (pu + 1) * width);
    }
    }
    userOrdered += d.userOrder;
    inlinedTables += d.inlined;
  } else if (scheme == Emulated::Thread) {
    // The warp's lanes in lock step, as packThread: blocks per lane, prefix sums, then unit q to lane q mod 32.
    const Shape sh = tether::dt::shapeThread(m, off, end, sms);
    for (int64_t w = 0; w < sh.warps; ++w) {
      tether::dt::Cursor cur[32];
      for (int lane = 0; lane < 32; ++lane) tether::dt::cursorStart(m, sh, w, lane, cur[lane]);
      for (int r = 0; r < sh.K && tether::dt::roundFirst(sh, w, r) < sh.last; ++r) {
        int64_t u[32], pk[32], len[32], excl[32], total = 0;
        for (int lane = 0; lane < 32; ++lane) {
          tether::dt::cursorBlock(m, cur[lane], off, end, &u[lane], &pk[lane], &len[lane]);
          if (cur[lane].live && len[lane] <= 0) e.error = "live lane with an empty block";
          excl[lane] = total;
          if (len[lane] > 0 && pk[lane] != pk[0] + total) e.error = "round not contiguous in packed order";
          total += len[lane];
        }
        for (int64_t q = 0; q < total; q += width) {
          const int o = tether::dt::ownerLane([&](int l) { return excl[l]; }, q);
          if (q < excl[o] || q >= excl[o] + len[o]) e.error = "unit owned by the wrong lane";
          // One unit: user bytes at u[o] + (q - excl[o]), packed bytes at pk[0] + q.
          e.move(u[o] + (q - excl[o]), pk[0] + q, pk[0] + q, pk[0] + q + width);
        }
        for (int lane = 0; lane < 32; ++lane) tether::dt::cursorNext(m, sh, cur[lane]);
      }
    }
  } else {
    const Shape sh = tether::dt::shapeWarp(m, off, end, sms, width);
    for (int64_t w = 0; w < sh.warps; ++w)
      tether::dt::warpItems(m, sh, w, off, end, [&](int64_t u, int64_t pk, int64_t lo, int64_t hi) {
        if (hi - lo > sh.chunk) e.error = "chunk longer than the chunk size";
        e.move(u, pk, lo, hi);
      });
  }
  ASSERT_EQ(e.error, "") << where;
  for (size_t i = 0; i < e.hits.size(); ++i)
    ASSERT_EQ(e.hits[i], 1) << where << ": packed byte " << off + static_cast<int64_t>(i) << " written "
                            << e.hits[i] << " times";
  ASSERT_EQ(std::memcmp(e.out.data(), want.data() + off, e.out.size()), 0) << where << ": bytes differ";
}

// batchList on the host: pack (whole and three random fragments) and a whole unpack, each as the list's copies.
void batchCheck(const tether::dt::Canonical& c, unsigned char* user, int64_t packed,
                const std::vector<unsigned char>& want, dt_test::Gen& g, const std::string& where) {
  tether::dt::BatchList list;
  for (int f = 0; f < 4; ++f) {
    const int64_t a = f == 0 ? 0 : g.uni(0, packed - 1), b = f == 0 ? packed : g.uni(a + 1, packed);
    std::vector<unsigned char> out(static_cast<size_t>(b - a), 0);
    ASSERT_TRUE(tether::dt::batchList(c, reinterpret_cast<char*>(user), reinterpret_cast<char*>(out.data()), a, b - a,
                                      false, SIZE_MAX, &list)) << where;
    int64_t total = 0;
    for (size_t i = 0; i < list.size.size(); ++i) {
      std::memcpy(list.dst[i], list.src[i], list.size[i]);
      total += static_cast<int64_t>(list.size[i]);
      if (i) {
        ASSERT_NE(static_cast<const char*>(list.src[i - 1]) + list.size[i - 1], list.src[i])
            << where << ": runs " << i - 1 << " and " << i << " abut (not merged)";
      }
    }
    ASSERT_EQ(total, b - a) << where;
    ASSERT_EQ(std::memcmp(out.data(), want.data() + a, out.size()), 0) << where << " batch [" << a << "," << b << ")";
  }
  // Unpack lists the same runs with source and destination exchanged.
  std::vector<unsigned char> scratch(static_cast<size_t>(packed));
  tether::dt::BatchList pk, up;
  ASSERT_TRUE(tether::dt::batchList(c, reinterpret_cast<char*>(user), reinterpret_cast<char*>(scratch.data()), 0,
                                    packed, false, SIZE_MAX, &pk));
  ASSERT_TRUE(tether::dt::batchList(c, reinterpret_cast<char*>(user), reinterpret_cast<char*>(scratch.data()), 0,
                                    packed, true, SIZE_MAX, &up));
  ASSERT_EQ(pk.size, up.size) << where;
  for (size_t i = 0; i < pk.size.size(); ++i) {
    ASSERT_EQ(pk.src[i], static_cast<const void*>(up.dst[i])) << where;
    ASSERT_EQ(static_cast<const void*>(pk.dst[i]), up.src[i]) << where;
  }
  // A list longer than maxRuns is refused.
  if (pk.size.size() > 1) {
    ASSERT_FALSE(tether::dt::batchList(c, reinterpret_cast<char*>(user), nullptr, 0, packed, false,
                                       pk.size.size() - 1, &list))
        << where;
  }
}

TEST(GpuMap, EmulatedKernelsMatchHostReference) {
  uint64_t seed = 1;
  if (const char* s = std::getenv("TETHER_TEST_DT_SEED")) seed = std::strtoull(s, nullptr, 0);
  // Replay of one tree packed by gpu_datatype:
  //   TETHER_TEST_DT_SEED=S TETHER_TEST_DT_TREES=1 TETHER_TEST_DT_MAX_PACKED=0 (no size cap).
  const char* nt = std::getenv("TETHER_TEST_DT_TREES");
  const char* mp = std::getenv("TETHER_TEST_DT_MAX_PACKED");
  const int trees = nt ? std::atoi(nt) : 400;
  const int64_t maxPacked = mp && std::atoll(mp) == 0 ? INT64_MAX : mp ? std::atoll(mp) : int64_t{1} << 17;
  const bool replay = nt != nullptr;
  std::printf("GpuMap: seed %" PRIu64 ", %d trees (tree i uses seed + i; replay with TETHER_TEST_DT_SEED)\n", seed,
              trees);
  int checked = 0, elemTables = 0;
  for (int i = 0; i < trees; ++i) {
    const uint64_t ts = seed + static_cast<uint64_t>(i);
    dt_test::Gen g(ts);
    std::string text;
    tether_type_t t = nullptr;
    try {
      t = g.make(static_cast<int>(g.uni(1, 5)), &text);
      dt_test::tk(tether_type_commit(t), "commit");
    } catch (const dt_test::Fail& f) {
      FAIL() << "seed " << ts << ": " << f.msg;
    }
    const tether::dt::Canonical& c = *t->canonical;
    const int64_t count = g.uni(1, 3), packed = c.size * count;
    if (packed == 0 || packed > maxPacked) {  // byte-by-byte emulation: keep CI time small
      tether_type_free(&t);
      continue;
    }
    int64_t tlb = 0, text2 = 0;
    ASSERT_EQ(tether_type_true_extent(t, &tlb, &text2), TETHER_SUCCESS);
    const int64_t lo = std::min<int64_t>(0, std::min(tlb, tlb + (count - 1) * c.extent));
    const int64_t hi = std::max<int64_t>(1, std::max(tlb + text2, tlb + text2 + (count - 1) * c.extent));
    const int64_t origin = -lo + 32;
    std::vector<unsigned char> user(static_cast<size_t>(hi - lo + 64)), want(static_cast<size_t>(packed));
    std::mt19937_64 r(ts);
    for (auto& b : user) b = static_cast<unsigned char>(r());
    tether::dt::hostPack(c, user.data() + origin, 0, packed, want.data());

    const tether::dt::MapTables tabs = tether::dt::buildTables(c);
    const DMeta m = tether::dt::metaOf(c, tabs, tabs.segs.data(), tabs.pieces.data(), tabs.flatOff.data(),
                                        tabs.flatPacked.data());
    ++checked;
    const std::string where = "seed " + std::to_string(ts) + " tree " + text + " count " + std::to_string(count) +
                              " [" + tether::dt::describe(c) + "]";
    const tether::dt::ElemForm elem = tether::dt::elemForm(c);
    if (replay) std::printf("  %s\n  elem form: %s\n", where.c_str(), elem.ok ? (elem.table ? "table" : "strided") : "none");
    // Small types always have an elem form (strided, or a table of at most size / width items).
    ASSERT_TRUE(elem.ok) << where;
    elemTables += elem.table;
    // The batch scheme's copy list (batchList): applied as plain copies, whole and in fragments, it must give the
    // host reference's packed bytes, and unpack into a poisoned buffer must match the host reference's unpack.
    batchCheck(c, user.data() + origin, packed, want, g, where);
    if (HasFatalFailure()) return;
    for (int sms : {2, 132})
      for (Emulated scheme :
           {Emulated::Thread, Emulated::Warp, Emulated::Elem, Emulated::ElemUserOrder, Emulated::ElemPair}) {
        if (scheme >= Emulated::Elem && sms != 2) continue;  // no launch shape
        runScheme(c, m, elem, count, user.data() + origin, 0, packed, scheme, sms, want, where + " whole");
        if (HasFatalFailure()) return;
        if (scheme == Emulated::ElemUserOrder) continue;  // whole packs only
        for (int f = 0; f < 3; ++f) {
          const int64_t a = g.uni(0, packed - 1), b = g.uni(a + 1, packed);
          runScheme(c, m, elem, count, user.data() + origin, a, b, scheme, sms, want,
                    where + " fragment [" + std::to_string(a) + "," + std::to_string(b) + ")");
          if (HasFatalFailure()) return;
        }
      }
    tether_type_free(&t);
  }
  std::printf("GpuMap: %d of %d trees emulated (the others pack nothing or more than 128 KiB); elem scheme: %d table "
              "forms, %d strided, %d emulated launches in user order, %d with inline tables, %d paired 16-byte stores\n",
              checked, trees, elemTables, checked - elemTables, userOrdered, inlinedTables, widePairs);
  if (replay) return;  // the coverage floors below hold for the full run only
  EXPECT_GE(inlinedTables, 5);
  EXPECT_GE(widePairs, 100);
  // Random trees seldom transpose (user order differs from pack order): ElemTransposeInUserOrder covers that.
  EXPECT_GE(checked, trees / 3);
  EXPECT_GE(elemTables, checked / 10);  // both forms exercised
  EXPECT_GE(checked - elemTables, checked / 10);
}

// fdiv against plain division: every divisor up to 4096 and powers of two and their neighbours, with dividends at
// the edges of the 32-bit range and random ones (seeded, printed).
TEST(GpuMap, FastDivisionIsExact) {
  std::mt19937_64 r(7);
  std::printf("FastDiv: seed 7\n");
  std::vector<uint32_t> divisors;
  for (uint32_t d = 1; d <= 4096; ++d) divisors.push_back(d);
  for (int k = 12; k < 32; ++k)
    for (int64_t x : {-1, 0, 1}) divisors.push_back(static_cast<uint32_t>((int64_t{1} << k) + x));
  divisors.push_back(0xffffffffu);
  for (int i = 0; i < 2000; ++i) divisors.push_back(static_cast<uint32_t>(r() % 0xffffffffu) + 1);
  for (uint32_t d : divisors) {
    const tether::dt::FastDiv f = tether::dt::fastDiv(d);
    std::vector<uint32_t> ns = {0, 1, d - 1, d, d + 1, 0x7fffffffu, 0x80000000u, 0xfffffffeu, 0xffffffffu};
    for (int i = 0; i < 200; ++i) ns.push_back(static_cast<uint32_t>(r()));
    for (uint64_t q : {uint64_t{3}, uint64_t{1000}, uint64_t{0xffffffffu} / d})
      if (q * d <= 0xffffffffu) ns.push_back(static_cast<uint32_t>(q * d)), ns.push_back(static_cast<uint32_t>(q * d - 1));
    for (uint32_t n : ns) ASSERT_EQ(tether::dt::fdiv(f, n), n / d) << n << " / " << d;
  }
}

// Elem forms of common layouts: a vector folds to one strided dimension, a contiguous run to one item, a struct of
// two fields to a table of items of their gcd.
TEST(GpuMap, ElemForms) {
  tether_type_t d = nullptr, f = nullptr, v = nullptr, c = nullptr, st = nullptr;
  ASSERT_EQ(tether_type_basic(TETHER_BASIC_DOUBLE, &d), TETHER_SUCCESS);
  ASSERT_EQ(tether_type_basic(TETHER_BASIC_FLOAT, &f), TETHER_SUCCESS);
  ASSERT_EQ(tether_type_vector(100, 3, 7, d, &v), TETHER_SUCCESS);
  ASSERT_EQ(tether_type_contiguous(1000, d, &c), TETHER_SUCCESS);
  const int64_t bl[2] = {3, 1}, disp[2] = {0, 48};
  const tether_type_t ts[2] = {d, f};
  ASSERT_EQ(tether_type_struct(2, bl, disp, ts, &st), TETHER_SUCCESS);
  for (tether_type_t t : {v, c, st}) ASSERT_EQ(tether_type_commit(t), TETHER_SUCCESS);
  const tether::dt::ElemForm fv = tether::dt::elemForm(*v->canonical), fc = tether::dt::elemForm(*c->canonical),
                             fs = tether::dt::elemForm(*st->canonical);
  ASSERT_TRUE(fv.ok && !fv.table);
  EXPECT_EQ(fv.item, 24);
  EXPECT_EQ(fv.dims, (std::vector<int64_t>{100, 56}));
  ASSERT_TRUE(fc.ok && !fc.table);
  EXPECT_EQ(fc.item, 8000);
  EXPECT_TRUE(fc.dims.empty());
  ASSERT_TRUE(fs.ok && fs.table);
  EXPECT_EQ(fs.item, 4);
  EXPECT_EQ(fs.offsets, (std::vector<int64_t>{0, 4, 8, 12, 16, 20, 48}));
  // 3 instances of the vector: the instance dimension is the slowest; unit 8 of instance 2 sits at 2 * extent + ...
  tether::dt::EDesc e;
  ASSERT_TRUE(tether::dt::elemDesc(fv, *v->canonical, 3, 8, nullptr, &e));
  EXPECT_EQ(e.nd, 2);
  const int64_t ext = v->canonical->extent;
  EXPECT_EQ(tether::dt::elemUser<int64_t>(e, 300 + 3 * 5 + 1), ext + 5 * 56 + 8);
  // Beyond 2^31 units the scheme declines (the thread and warp schemes take such packs).
  EXPECT_FALSE(tether::dt::elemDesc(fc, *c->canonical, int64_t{1} << 29, 1, nullptr, &e));
  // The launch shape (units per thread) of these forms, per the measured rule of gpu_map.h elemItems(): short strided
  // items one per thread, 8 kB rows of 8-byte units four on pack and one on unpack; the struct's table form four on
  // pack (runs of 12 B on average, longer than the 4-byte unit), one on unpack.
  EXPECT_EQ(tether::dt::elemItems(fv, 24, 8, false), 1);
  EXPECT_EQ(tether::dt::elemItems(fc, 8000, 8, false), 4);
  EXPECT_EQ(tether::dt::elemItems(fc, 8000, 8, true), 1);
  EXPECT_EQ(tether::dt::elemItems(fc, 8000, 16, false), 1);
  EXPECT_EQ(tether::dt::elemItems(fs, 14, 4, false), 4);
  EXPECT_EQ(tether::dt::elemItems(fs, 14, 4, true), 1);
  EXPECT_EQ(tether::dt::elemItems(fs, 4, 4, false), 1);
  for (tether_type_t* t : {&d, &f, &v, &c, &st}) tether_type_free(t);
}

// A transpose (FFT2D's layout: columns of an n x n matrix of 16-byte elements, one after the other): whole unpacks
// iterate in the user buffer's order; every unit must map to the same (user, packed) pair as in pack order, and every
// packed unit be visited once.
// The paired elem unpack (gpu_map.h elemPair, elemPairs): COSMO north's rows (250 doubles at x = 3 of 256, 3 rows
// per plane of 32) take it from kElemPairMinBytes on, and all but one pair per row is one 16-byte store; rows of an
// odd unit count, or with a pitch that is not a multiple of 16 bytes, do not take it (their pairs would not line up
// row after row), nor do small unpacks.
TEST(GpuMap, ElemPairsOnCosmoNorthRows) {
  tether_type_t d = nullptr;
  ASSERT_EQ(tether_type_basic(TETHER_BASIC_DOUBLE, &d), TETHER_SUCCESS);
  auto face = [&](int64_t nx, int64_t wx) {
    const int64_t sizes[3] = {4, 32, nx}, sub[3] = {4, 3, wx}, starts[3] = {0, 26, 3};
    tether_type_t t = nullptr;
    EXPECT_EQ(tether_type_subarray(3, sizes, sub, starts, TETHER_ORDER_C, d, &t), TETHER_SUCCESS);
    EXPECT_EQ(tether_type_commit(t), TETHER_SUCCESS);
    return t;
  };
  tether_type_t north = face(256, 250), odd = face(256, 249), pitch = face(255, 250);
  for (tether_type_t t : {north, odd, pitch}) {
    const tether::dt::ElemForm f = tether::dt::elemForm(*t->canonical);
    ASSERT_TRUE(f.ok && !f.table);
    tether::dt::EDesc e;
    ASSERT_TRUE(tether::dt::elemDesc(f, *t->canonical, 2, 8, nullptr, &e));
    EXPECT_EQ(tether::dt::elemPairs(f, e, tether::dt::kElemPairMinBytes), t == north)
        << tether::dt::describe(*t->canonical);
    EXPECT_FALSE(tether::dt::elemPairs(f, e, tether::dt::kElemPairMinBytes - 8));
    if (t != north) continue;
    const uint32_t t1 = static_cast<uint32_t>(2 * t->canonical->size / 8);  // 2 instances x 4 planes x 3 rows
    int wide = 0, units = 0;
    std::vector<int> hits(t1);
    for (uint32_t q = 0; q < tether::dt::elemPairThreads(0, t1); ++q) {
      const tether::dt::PairUnits p = tether::dt::elemPair<int64_t>(e, 0, 0, t1, q);
      for (int k = 0; k < 2; ++k)
        if (p.has[k]) {
          ++hits[p.unit[k]];
          EXPECT_EQ(p.at[k], tether::dt::elemUser<int64_t>(e, p.unit[k]));
          ++units;
        }
      wide += p.wide;
    }
    EXPECT_EQ(units, static_cast<int>(t1));
    for (uint32_t i = 0; i < t1; ++i) ASSERT_EQ(hits[i], 1) << "unit " << i;
    EXPECT_EQ(wide, 24 * 124);  // 24 rows: units 1..248 in 124 aligned pairs; units 0 and 249 stored alone
  }
  for (tether_type_t* t : {&north, &odd, &pitch, &d}) tether_type_free(t);
}

TEST(GpuMap, ElemTransposeInUserOrder) {
  const int64_t n = 48;
  tether_type_t b = nullptr, e = nullptr, col = nullptr, colr = nullptr, all = nullptr;
  ASSERT_EQ(tether_type_basic(TETHER_BASIC_BYTE, &b), TETHER_SUCCESS);
  ASSERT_EQ(tether_type_contiguous(16, b, &e), TETHER_SUCCESS);
  ASSERT_EQ(tether_type_vector(n, 1, n, e, &col), TETHER_SUCCESS);
  ASSERT_EQ(tether_type_resized(col, 0, 16, &colr), TETHER_SUCCESS);
  ASSERT_EQ(tether_type_contiguous(n, colr, &all), TETHER_SUCCESS);
  ASSERT_EQ(tether_type_commit(all), TETHER_SUCCESS);
  const tether::dt::Canonical& c = *all->canonical;
  const tether::dt::ElemForm f = tether::dt::elemForm(c);
  ASSERT_TRUE(f.ok && !f.table) << tether::dt::describe(c);
  tether::dt::EDesc packOrder, userOrder;
  ASSERT_TRUE(tether::dt::elemDesc(f, c, 1, 16, nullptr, &packOrder));
  ASSERT_TRUE(tether::dt::elemDesc(f, c, 1, 16, nullptr, &userOrder, true));
  EXPECT_EQ(packOrder.userOrder, 0);
  ASSERT_EQ(userOrder.userOrder, 1);
  std::vector<int> seen(static_cast<size_t>(n * n));
  for (uint32_t t = 0; t < static_cast<uint32_t>(n * n); ++t) {
    int64_t pu = -1;
    const int64_t u = tether::dt::elemUser<int64_t, true>(userOrder, t, &pu);
    EXPECT_EQ(u, static_cast<int64_t>(t) * 16) << t;  // user order: consecutive units are consecutive in memory
    ASSERT_GE(pu, 0);
    ASSERT_LT(pu, n * n);
    ++seen[static_cast<size_t>(pu)];
    EXPECT_EQ(tether::dt::elemUser<int64_t>(packOrder, static_cast<uint32_t>(pu)), u) << t;
  }
  for (int v : seen) ASSERT_EQ(v, 1);
  for (tether_type_t* t : {&b, &e, &col, &colr, &all}) tether_type_free(t);
}

// Huge regular types stay cheap to map: a vector of 1e9 blocks locates any block directly.
TEST(GpuMap, HugeVectorLocatesDirectly) {
  tether_type_t d = nullptr, v = nullptr;
  ASSERT_EQ(tether_type_basic(TETHER_BASIC_DOUBLE, &d), TETHER_SUCCESS);
  ASSERT_EQ(tether_type_vector(1000000000, 1, 3, d, &v), TETHER_SUCCESS);
  ASSERT_EQ(tether_type_commit(v), TETHER_SUCCESS);
  const tether::dt::Canonical& c = *v->canonical;
  const tether::dt::MapTables tabs = tether::dt::buildTables(c);
  const DMeta m = tether::dt::metaOf(c, tabs, tabs.segs.data(), tabs.pieces.data(), tabs.flatOff.data(),
                                        tabs.flatPacked.data());
  EXPECT_EQ(m.blocksPerInst, 1000000000);
  EXPECT_EQ(tether::dt::blockAt(m, 8 * 123456789 + 5), 123456789);
  tether::dt::Pos p;
  tether::dt::locate(m, 987654321, p);
  int64_t u, pk, bl;
  tether::dt::addresses(m, p, &u, &pk, &bl);
  EXPECT_EQ(u, 987654321LL * 24);
  EXPECT_EQ(pk, 987654321LL * 8);
  tether::dt::advance(m, p, 32);
  tether::dt::addresses(m, p, &u, &pk, &bl);
  EXPECT_EQ(u, (987654321LL + 32) * 24);
  tether_type_free(&v);
  tether_type_free(&d);
}

}  // namespace
