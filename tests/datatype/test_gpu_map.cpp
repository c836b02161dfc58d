// The GPU engine's work decomposition (src/datatype/gpu_map.h), run on the CPU: every lane of every warp of the thread
// and warp schemes is emulated with the same code the kernels run, for seeded random type trees, whole packs and
// random fragments, at two launch widths (2 and 132 SMs). Checks: every packed byte of the fragment is written exactly
// once, the bytes equal the host reference pack, unpack equals the host reference unpack, and every copy respects the
// access width the launcher would choose. This is what CI can verify of the kernels without a GPU; the kernels
// themselves run in tests/gpu/gpu_datatype.cu. Seed: TETHER_DT_SEED (default 1); failures print the tree's seed.
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

void runScheme(const tether::dt::Canonical& c, const DMeta& m, const unsigned char* user, int64_t off, int64_t end,
               bool warpScheme, int sms, const std::vector<unsigned char>& want, const std::string& where) {
  const int width = pow2Width(c.width, static_cast<uint64_t>(off) | static_cast<uint64_t>(end - off));
  Emu e{m, user, off, end, width, std::vector<unsigned char>(static_cast<size_t>(end - off)),
        std::vector<int>(static_cast<size_t>(end - off)), ""};
  if (!warpScheme) {
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

TEST(GpuMap, EmulatedKernelsMatchHostReference) {
  uint64_t seed = 1;
  if (const char* s = std::getenv("TETHER_DT_SEED")) seed = std::strtoull(s, nullptr, 0);
  const int trees = 400;
  std::printf("GpuMap: seed %" PRIu64 ", %d trees (tree i uses seed + i; replay with TETHER_DT_SEED)\n", seed, trees);
  int checked = 0;
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
    if (packed == 0 || packed > (int64_t{1} << 17)) {  // byte-by-byte emulation: keep CI time small
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
    for (int sms : {2, 132})
      for (bool warpScheme : {false, true}) {
        runScheme(c, m, user.data() + origin, 0, packed, warpScheme, sms, want, where + " whole");
        if (HasFatalFailure()) return;
        for (int f = 0; f < 3; ++f) {
          const int64_t a = g.uni(0, packed - 1), b = g.uni(a + 1, packed);
          runScheme(c, m, user.data() + origin, a, b, warpScheme, sms, want,
                    where + " fragment [" + std::to_string(a) + "," + std::to_string(b) + ")");
          if (HasFatalFailure()) return;
        }
      }
    tether_type_free(&t);
  }
  std::printf("GpuMap: %d of %d trees emulated (the others pack nothing or more than 128 KiB)\n", checked, trees);
  EXPECT_GE(checked, trees / 3);
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
