// Unit tests of the datatype host side (#7): constructors, queries, canonical form, pack/unpack, errors.
// The byte-for-byte comparison with a real MPI is datatype_oracle.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "datatype/canonical.h"
#include "datatype/handle.h"
#include "random_types.h"
#include "tether/datatype.h"

namespace {

// Owns a handle for the test's duration.
class T {
 public:
  T() = default;
  explicit T(tether_type_t h) : h_(h) {}
  T(const T&) = delete;
  T& operator=(const T&) = delete;
  ~T() { tether_type_free(&h_); }
  tether_type_t* out() { return &h_; }
  tether_type_t get() const { return h_; }
  operator tether_type_t() const { return h_; }

 private:
  tether_type_t h_ = nullptr;
};

#define OK(expr) ASSERT_EQ((expr), TETHER_SUCCESS) << tether_type_last_error()

void committed(T* t) { ASSERT_EQ(tether_type_commit(t->get()), TETHER_SUCCESS) << tether_type_last_error(); }

// Canonical form without the type-level header (size/extent/width): what two layouts of the same bytes share.
std::string body(const T& t) {
  std::string s = tether::dt::describe(*t.get()->canonical);
  return s.substr(s.find('|'));
}
std::string full(const T& t) { return tether::dt::describe(*t.get()->canonical); }

struct Q {
  int64_t size, lb, extent, tlb, text;
};
Q query(const T& t) {
  Q q{};
  EXPECT_EQ(tether_type_size(t, &q.size), TETHER_SUCCESS);
  EXPECT_EQ(tether_type_extent(t, &q.lb, &q.extent), TETHER_SUCCESS);
  EXPECT_EQ(tether_type_true_extent(t, &q.tlb, &q.text), TETHER_SUCCESS);
  return q;
}

std::vector<unsigned char> packAll(const T& t, int64_t count, const void* buf) {
  int64_t bytes = 0, done = 0;
  EXPECT_EQ(tether_type_packed_size(t, count, &bytes), TETHER_SUCCESS);
  std::vector<unsigned char> out(static_cast<size_t>(bytes));
  EXPECT_EQ(tether_type_pack(t, count, buf, 0, bytes, out.data(), &done), TETHER_SUCCESS) << tether_type_last_error();
  EXPECT_EQ(done, bytes);
  return out;
}

TEST(Datatype, BasicTypes) {
  const int64_t sizes[] = {1, 1, 1, 1, 1, 1, 2, 2, 4, 4, 8, 8};
  for (int b = 0; b < 12; ++b) {
    T t;
    OK(tether_type_basic(static_cast<tether_basic_t>(b), t.out()));
    Q q = query(t);
    EXPECT_EQ(q.size, sizes[b]);
    EXPECT_EQ(q.lb, 0);
    EXPECT_EQ(q.extent, sizes[b]);
    EXPECT_EQ(q.text, sizes[b]);
  }
  T d;
  OK(tether_type_basic(TETHER_BASIC_DOUBLE_COMPLEX, d.out()));
  EXPECT_EQ(query(d).size, 16);
}

TEST(Datatype, VectorBoundsAndNegativeStride) {
  T i32, v, neg;
  OK(tether_type_basic(TETHER_BASIC_INT32, i32.out()));
  OK(tether_type_vector(3, 2, 5, i32, v.out()));  // blocks at 0, 20, 40 of 8 bytes
  Q q = query(v);
  EXPECT_EQ(q.size, 24);
  EXPECT_EQ(q.lb, 0);
  EXPECT_EQ(q.extent, 48);
  OK(tether_type_vector(3, 1, -2, i32, neg.out()));  // as MPI: lb -16, extent 20
  q = query(neg);
  EXPECT_EQ(q.lb, -16);
  EXPECT_EQ(q.extent, 20);
  EXPECT_EQ(q.tlb, -16);
}

TEST(Datatype, StructPaddingAndStickyMarkers) {
  T dbl, chr, i32, st, rs, st2;
  OK(tether_type_basic(TETHER_BASIC_DOUBLE, dbl.out()));
  OK(tether_type_basic(TETHER_BASIC_CHAR, chr.out()));
  OK(tether_type_basic(TETHER_BASIC_INT32, i32.out()));
  int64_t bl[2] = {1, 1}, d[2] = {0, 8};
  tether_type_t ts[2] = {dbl, chr};
  OK(tether_type_struct(2, bl, d, ts, st.out()));
  EXPECT_EQ(query(st).extent, 16);  // padded to double alignment
  EXPECT_EQ(query(st).text, 9);
  // Standard reading: explicit markers of resized are sticky inside a struct (MPICH says lb -4, extent 20 here).
  OK(tether_type_resized(i32, -4, 16, rs.out()));
  int64_t d2[2] = {0, 13};
  tether_type_t ts2[2] = {rs, chr};
  OK(tether_type_struct(2, bl, d2, ts2, st2.out()));
  Q q = query(st2);
  EXPECT_EQ(q.lb, -4);
  EXPECT_EQ(q.extent, 16);
  EXPECT_EQ(q.tlb, 0);
  EXPECT_EQ(q.text, 14);
}

// Struct padding follows MPICH (4.0.2): a struct pads unless its members are all one type (basic types of one padding
// class, or one derived node seen through single-instance wrappers). Expected extents measured with MPICH.
TEST(Datatype, StructPaddingFollowsMpich) {
  T byte, i32, u32, i32b, flt, dbl, i64;
  OK(tether_type_basic(TETHER_BASIC_BYTE, byte.out()));
  OK(tether_type_basic(TETHER_BASIC_INT, i32.out()));
  OK(tether_type_basic(TETHER_BASIC_INT32, i32b.out()));
  OK(tether_type_basic(TETHER_BASIC_UINT32, u32.out()));
  OK(tether_type_basic(TETHER_BASIC_FLOAT, flt.out()));
  OK(tether_type_basic(TETHER_BASIC_DOUBLE, dbl.out()));
  OK(tether_type_basic(TETHER_BASIC_INT64, i64.out()));
  auto st = [](std::vector<tether_type_t> ts, std::vector<int64_t> d, std::vector<int64_t> bl = {}) {
    if (bl.empty()) bl.assign(ts.size(), 1);
    tether_type_t t = nullptr;
    EXPECT_EQ(tether_type_struct(static_cast<int64_t>(ts.size()), bl.data(), d.data(), ts.data(), &t), TETHER_SUCCESS)
        << tether_type_last_error();
    return t;
  };
  auto extentOf = [](tether_type_t t) {
    int64_t lb = 0, ext = 0;
    EXPECT_EQ(tether_type_extent(t, &lb, &ext), TETHER_SUCCESS);
    return ext;
  };
  // The case: struct(1, {1}, {0}, [hindexed(2, {1,1}, {0,1}, struct{BYTE@0, INT@0})]): 5 in MPICH, was 8.
  T s, h, outer;
  *s.out() = st({byte, i32}, {0, 0});
  EXPECT_EQ(extentOf(s), 4);
  int64_t bl2[2] = {1, 1}, d01[2] = {0, 1};
  OK(tether_type_hindexed(2, bl2, d01, s, h.out()));
  EXPECT_EQ(extentOf(h), 5);
  *outer.out() = st({h}, {0});
  EXPECT_EQ(extentOf(outer), 5);
  struct Case {
    const char* what;
    std::vector<tether_type_t> ts;
    std::vector<int64_t> d;
    int64_t mpich;
  };
  T c2, c2b, c1s, c1i, dupc2, v1c2, s2, c2f;
  OK(tether_type_contiguous(2, i32b, c2.out()));
  OK(tether_type_contiguous(2, i32b, c2b.out()));  // built like c2, but another type
  OK(tether_type_contiguous(1, s, c1s.out()));
  OK(tether_type_contiguous(1, i32b, c1i.out()));
  OK(tether_type_dup(c2, dupc2.out()));
  OK(tether_type_vector(1, 1, 5, c2, v1c2.out()));
  OK(tether_type_contiguous(2, flt, c2f.out()));
  *s2.out() = st({byte, i32}, {0, 0});
  const Case cases[] = {
      {"{H@0, H@0}", {h, h}, {0, 0}, 5},
      {"{H@0, BYTE@0}", {h, byte}, {0, 0}, 8},
      {"{S@0, S@1}", {s, s}, {0, 1}, 5},
      {"{S@0, S2@1} (S2 built like S)", {s, s2}, {0, 1}, 8},
      {"{contig(1,S)@0, S@1}", {c1s, s}, {0, 1}, 5},
      {"{int32@0, uint32@9}", {i32b, u32}, {0, 9}, 13},
      {"{int@0, int32@9}", {i32, i32b}, {0, 9}, 13},
      {"{int32@0, float@9}", {i32b, flt}, {0, 9}, 16},
      {"{double@0, int64@9}", {dbl, i64}, {0, 9}, 24},
      {"{contig(1,int32)@0, uint32@9}", {c1i, u32}, {0, 9}, 13},
      {"{contig(1,int32)@0, float@9}", {c1i, flt}, {0, 9}, 16},
      {"{C2@0, C2@9}", {c2, c2}, {0, 9}, 17},
      {"{C2@0, C2b@9} (C2b built like C2)", {c2, c2b}, {0, 9}, 20},
      {"{C2@0, int32@9}", {c2, i32b}, {0, 9}, 16},
      {"{C2@0, uint32@9}", {c2, u32}, {0, 9}, 16},
      {"{dup(C2)@0, C2@9}", {dupc2, c2}, {0, 9}, 17},
      {"{vector(1,1,5,C2)@0, C2@9}", {v1c2, c2}, {0, 9}, 17},
      {"{contig(2,float)@0, C2@9}", {c2f, c2}, {0, 9}, 20},
  };
  for (const Case& c : cases) {
    T t;
    *t.out() = st(c.ts, c.d);
    EXPECT_EQ(extentOf(t), c.mpich) << c.what;
  }
}

TEST(Datatype, SubarrayBounds) {
  T d, c, f;
  OK(tether_type_basic(TETHER_BASIC_DOUBLE, d.out()));
  int64_t sz[2] = {4, 5}, sub[2] = {2, 3}, st[2] = {1, 1};
  OK(tether_type_subarray(2, sz, sub, st, TETHER_ORDER_C, d, c.out()));
  OK(tether_type_subarray(2, sz, sub, st, TETHER_ORDER_FORTRAN, d, f.out()));
  Q qc = query(c), qf = query(f);  // values from MPICH
  EXPECT_EQ(qc.size, 48);
  EXPECT_EQ(qc.extent, 160);
  EXPECT_EQ(qc.tlb, 48);
  EXPECT_EQ(qc.text, 64);
  EXPECT_EQ(qf.tlb, 40);
  EXPECT_EQ(qf.text, 80);
}

// A 3-D face of a 8x6x10 double array, described four ways, must reach one canonical form.
// One instance's bytes of t, numbered from `first` (mod 256), with 32 bytes of margin below its true lb; origin is
// where the type's displacements start.
struct Arena {
  Arena(const T& t, unsigned char first) {
    const Q q = query(t);
    mem.resize(static_cast<size_t>(q.text) + 64);
    std::iota(mem.begin(), mem.end(), first);
    origin = mem.data() + 32 - q.tlb;
  }
  std::vector<unsigned char> mem;
  const unsigned char* origin = nullptr;
};

// Seeded generator of a randomized test: TETHER_TEST_DT_SEED overrides the default seed; the seed is printed.
struct Rng {
  Rng(const char* test, uint64_t fallback) : seed(fallback) {
    if (const char* e = std::getenv("TETHER_TEST_DT_SEED")) seed = std::strtoull(e, nullptr, 0);
    std::printf("%s: seed %llu\n", test, static_cast<unsigned long long>(seed));
    gen.seed(seed);
  }
  int64_t operator()(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(gen); }
  uint64_t seed;
  std::mt19937_64 gen;
};

TEST(Datatype, SameLayoutSameCanonicalForm) {
  T d, row, plane, vv, sa, hi, st;
  OK(tether_type_basic(TETHER_BASIC_DOUBLE, d.out()));
  // rows of 4 doubles (x 2..5), 3 rows (y 1..3) per plane, 5 planes (z 2..6): array [z=8][y=6][x=10]
  OK(tether_type_vector(3, 4, 10, d, row.out()));                // one plane's rows
  OK(tether_type_hvector(5, 1, 6 * 10 * 8, row, plane.out()));   // 5 planes
  int64_t origin = (2 * 60 + 1 * 10 + 2) * 8;
  int64_t one = 1;
  OK(tether_type_hindexed(1, &one, &origin, plane, vv.out()));
  int64_t sz[3] = {8, 6, 10}, sub[3] = {5, 3, 4}, stt[3] = {2, 1, 2};
  OK(tether_type_subarray(3, sz, sub, stt, TETHER_ORDER_C, d, sa.out()));
  std::vector<int64_t> bls, ds;  // every row listed
  for (int z = 0; z < 5; ++z)
    for (int y = 0; y < 3; ++y) bls.push_back(4), ds.push_back(((2 + z) * 60 + (1 + y) * 10 + 2) * 8);
  OK(tether_type_hindexed(static_cast<int64_t>(ds.size()), bls.data(), ds.data(), d, hi.out()));
  // struct of the rows, each as 4 doubles
  std::vector<tether_type_t> ts(ds.size(), d.get());
  OK(tether_type_struct(static_cast<int64_t>(ds.size()), bls.data(), ds.data(), ts.data(), st.out()));
  for (T* t : {&vv, &sa, &hi, &st}) committed(t);
  EXPECT_EQ(body(vv), body(sa));
  EXPECT_EQ(body(vv), body(hi));
  EXPECT_EQ(body(vv), body(st));
  EXPECT_EQ(body(vv), "| { [1056+32 3x80 5x480] }");
  EXPECT_EQ(tether_type_t(vv)->canonical->width, 16);
}

TEST(Datatype, StructOfEqualBlocksIsStrided) {
  T i64, hv, st, ix;
  OK(tether_type_basic(TETHER_BASIC_INT64, i64.out()));
  OK(tether_type_hvector(6, 2, 40, i64, hv.out()));
  int64_t bl[6], d[6], de[6];
  tether_type_t ts[6];
  for (int i = 0; i < 6; ++i) bl[i] = 2, d[i] = 40 * i, de[i] = 5 * i, ts[i] = i64;
  OK(tether_type_struct(6, bl, d, ts, st.out()));
  OK(tether_type_indexed(6, bl, de, i64, ix.out()));  // regular run in an indexed type
  for (T* t : {&hv, &st, &ix}) committed(t);
  EXPECT_EQ(body(hv), "| { [0+16 6x40] }");
  EXPECT_EQ(body(st), body(hv));
  EXPECT_EQ(body(ix), body(hv));
  EXPECT_EQ(tether_type_t(hv)->canonical->width, 8);
}

// Particle structs: a vector of {int32 @0, double @8} and the hindexed list of the same blocks share one form (a
// repeated two-piece body), and that form keeps the pack order (not the address order).
TEST(Datatype, RepeatedIrregularBodyAndPackOrder) {
  T i32, dbl, particle, many, bytes, listed;
  OK(tether_type_basic(TETHER_BASIC_INT32, i32.out()));
  OK(tether_type_basic(TETHER_BASIC_DOUBLE, dbl.out()));
  OK(tether_type_basic(TETHER_BASIC_BYTE, bytes.out()));
  int64_t bl[2] = {1, 1}, d[2] = {8, 0};  // double first in pack order, at the higher address
  tether_type_t ts[2] = {i32, dbl};
  OK(tether_type_struct(2, bl, d, ts, particle.out()));
  OK(tether_type_contiguous(100, particle, many.out()));
  std::vector<int64_t> lens, offs;
  for (int i = 0; i < 100; ++i) lens.push_back(4), offs.push_back(16 * i + 8), lens.push_back(8), offs.push_back(16 * i);
  OK(tether_type_hindexed(200, lens.data(), offs.data(), bytes, listed.out()));
  committed(&many);
  committed(&listed);
  EXPECT_EQ(body(many), "| x100@16 { [8+4] [0+8] }");
  EXPECT_EQ(body(listed), body(many));
  std::vector<unsigned char> buf(1600);
  std::iota(buf.begin(), buf.end(), 0);
  std::vector<unsigned char> p = packAll(many, 1, buf.data());
  EXPECT_EQ(p[0], 8);   // the int32 at offset 8 comes first
  EXPECT_EQ(p[4], 0);   // then the double at offset 0
  EXPECT_EQ(p[12], 24);
}

TEST(Datatype, HugeCountsStayConstantSize) {
  T b, v, i32, dbl, particle, vp;
  OK(tether_type_basic(TETHER_BASIC_BYTE, b.out()));
  OK(tether_type_vector(1000000000, 3, 7, b, v.out()));
  committed(&v);
  EXPECT_EQ(tether_type_t(v)->canonical->pieces.size(), 1u);
  EXPECT_EQ(query(v).size, 3000000000LL);
  OK(tether_type_basic(TETHER_BASIC_INT32, i32.out()));
  OK(tether_type_basic(TETHER_BASIC_DOUBLE, dbl.out()));
  int64_t bl[2] = {1, 1}, d[2] = {0, 8};
  tether_type_t ts[2] = {i32, dbl};
  OK(tether_type_struct(2, bl, d, ts, particle.out()));
  OK(tether_type_contiguous(1000000000, particle, vp.out()));
  committed(&vp);
  EXPECT_EQ(tether_type_t(vp)->canonical->pieces.size(), 2u);
  EXPECT_EQ(tether_type_t(vp)->canonical->segments.size(), 1u);
  EXPECT_EQ(tether_type_t(vp)->canonical->segments[0].repeat, 1000000000);
  int64_t packed = 0;
  OK(tether_type_packed_size(vp, 1, &packed));
  EXPECT_EQ(packed, 12000000000LL);
}

// Types above the exact-canonicalisation limit keep the structural form; their pack must still be the type map.
TEST(Datatype, StructuralFormPacksTheTypeMap) {
  T i32, dbl, i8, vec, particle, many, st;
  OK(tether_type_basic(TETHER_BASIC_INT32, i32.out()));
  OK(tether_type_basic(TETHER_BASIC_DOUBLE, dbl.out()));
  OK(tether_type_basic(TETHER_BASIC_INT8, i8.out()));
  OK(tether_type_vector(20000, 1, 2, i32, vec.out()));  // int32 at 8k
  int64_t bl[2] = {1, 1}, d[2] = {8, 0};
  tether_type_t ts[2] = {i32, dbl};
  OK(tether_type_struct(2, bl, d, ts, particle.out()));  // {int32 @8, double @0}, extent 16
  OK(tether_type_contiguous(9000, particle, many.out()));
  int64_t bl3[3] = {1, 1, 1}, d3[3] = {0, -3, 160000};
  tether_type_t ts3[3] = {vec, i8, many};
  OK(tether_type_struct(3, bl3, d3, ts3, st.out()));
  committed(&st);
  EXPECT_NE(full(st).find("(structural)"), std::string::npos) << full(st);
  Q q = query(st);
  std::vector<unsigned char> mem(static_cast<size_t>(2 * q.extent + 64));
  std::mt19937 rng(3);
  for (auto& b : mem) b = static_cast<unsigned char>(rng());
  const unsigned char* origin = mem.data() + 16 - q.tlb;
  std::vector<unsigned char> expect;
  auto take = [&](int64_t off, int64_t n) { expect.insert(expect.end(), origin + off, origin + off + n); };
  for (int64_t inst = 0; inst < 2; ++inst) {
    int64_t base = inst * q.extent;
    for (int64_t k = 0; k < 20000; ++k) take(base + 8 * k, 4);
    take(base - 3, 1);
    for (int64_t k = 0; k < 9000; ++k) take(base + 160000 + 16 * k + 8, 4), take(base + 160000 + 16 * k, 8);
  }
  EXPECT_EQ(packAll(st, 2, origin), expect);
}

TEST(Datatype, ResumablePackEqualsWholePack) {
  T i16, v, st, rs, top;
  OK(tether_type_basic(TETHER_BASIC_INT16, i16.out()));
  OK(tether_type_vector(5, 3, -4, i16, v.out()));
  OK(tether_type_resized(v, -40, 64, rs.out()));
  int64_t bl[2] = {2, 1}, d[2] = {0, 200};
  tether_type_t ts[2] = {rs, i16};
  OK(tether_type_struct(2, bl, d, ts, st.out()));
  committed(&st);
  std::vector<unsigned char> mem(2048);
  std::iota(mem.begin(), mem.end(), 1);
  const unsigned char* origin = mem.data() + 512;
  std::vector<unsigned char> whole = packAll(st, 3, origin);
  for (int64_t step : {1, 2, 3, 7, 64}) {
    std::vector<unsigned char> parts(whole.size());
    for (int64_t off = 0, n = 0; off < static_cast<int64_t>(whole.size()); off += n)
      OK(tether_type_pack(st, 3, origin, off, step, parts.data() + off, &n));
    EXPECT_EQ(parts, whole) << "step " << step;
  }
}

// Dense instances (one block each, extent == size) are one run whatever the count: the staged put/get walks them as
// one transfer, and packs of any fragment are one copy from displacement + offset (here a block 8 bytes past the
// origin, resized so instances abut).
TEST(Datatype, DenseCountsAreOneRun) {
  T byte, blk, rs;
  OK(tether_type_basic(TETHER_BASIC_BYTE, byte.out()));
  committed(&byte);
  const int64_t n = int64_t{1} << 20;
  std::vector<std::pair<int64_t, int64_t>> runs;
  ASSERT_TRUE(tether::dt::hostWalk(*byte.get()->canonical, 5, n - 9, [&](int64_t d, int64_t len) {
    runs.emplace_back(d, len);
    return tether::Status::ok();
  }).isOk());
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0], std::make_pair(int64_t{5}, n - 9));

  int64_t disp = 8;
  OK(tether_type_hindexed_block(1, 16, &disp, byte, blk.out()));
  OK(tether_type_resized(blk, 8, 16, rs.out()));
  committed(&rs);
  std::vector<unsigned char> mem(8 + 16 * 10);
  std::iota(mem.begin(), mem.end(), 0);
  runs.clear();
  ASSERT_TRUE(tether::dt::hostWalk(*rs.get()->canonical, 3, 100, [&](int64_t d, int64_t len) {
    runs.emplace_back(d, len);
    return tether::Status::ok();
  }).isOk());
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0], std::make_pair(int64_t{11}, int64_t{100}));
  std::vector<unsigned char> part(100), back(mem.size(), 0xEE);
  int64_t done = 0;
  OK(tether_type_pack(rs, 10, mem.data(), 3, 100, part.data(), &done));
  ASSERT_EQ(done, 100);
  EXPECT_TRUE(std::equal(part.begin(), part.end(), mem.begin() + 11));
  OK(tether_type_unpack(rs, 10, part.data(), 3, 100, back.data(), &done));
  for (size_t i = 0; i < back.size(); ++i)
    EXPECT_EQ(back[i], i >= 11 && i < 111 ? mem[i] : 0xEE) << "byte " << i;
}

TEST(Datatype, UnpackLeavesGapsUntouched) {
  T i32, v;
  OK(tether_type_basic(TETHER_BASIC_INT32, i32.out()));
  OK(tether_type_vector(4, 1, 3, i32, v.out()));
  committed(&v);
  std::vector<unsigned char> src(256), dst(256, 0xEE);
  std::iota(src.begin(), src.end(), 0);
  std::vector<unsigned char> p = packAll(v, 2, src.data());
  int64_t done = 0;
  OK(tether_type_unpack(v, 2, p.data(), 0, static_cast<int64_t>(p.size()), dst.data(), &done));
  int64_t extent = query(v).extent;  // 40
  for (int64_t i = 0; i < 256; ++i) {
    int64_t inst = i / extent, r = i % extent;
    bool data = inst < 2 && r % 12 < 4 && r / 12 < 4;
    EXPECT_EQ(dst[i], data ? src[i] : 0xEE) << "byte " << i;
  }
}

// A vector with no instances (count 0) but a blocklength whose block alone would overflow int64 is an empty type (size
// 0): it commits, packs nothing, and nests -- found by test_datatype_fuzz under UBSan: the commit built the block
// before applying the count and overflowed there (signed overflow in canonical.cpp's normalize).
TEST(Datatype, EmptyVectorWithHugeBlocklengthCommits) {
  T cplx, v, h, outer;
  OK(tether_type_basic(TETHER_BASIC_DOUBLE_COMPLEX, cplx.out()));
  OK(tether_type_vector(0, INT64_MAX / 3, 1, cplx, v.out()));
  OK(tether_type_hvector(0, INT64_MAX, -3, cplx, h.out()));
  OK(tether_type_contiguous(5, v, outer.out()));
  for (T* t : {&v, &h, &outer}) {
    committed(t);
    int64_t size = -1, n = -1;
    OK(tether_type_size(*t, &size));
    EXPECT_EQ(size, 0);
    unsigned char buf[16] = {0}, packed[16];
    OK(tether_type_pack(*t, 3, buf, 0, 16, packed, &n));
    EXPECT_EQ(n, 0);
  }
}

TEST(Datatype, FreeKeepsReferencedTypesAlive) {
  tether_type_t i32 = nullptr, c = nullptr, v = nullptr;
  OK(tether_type_basic(TETHER_BASIC_INT32, &i32));
  OK(tether_type_contiguous(2, i32, &c));
  OK(tether_type_vector(3, 1, 4, c, &v));
  OK(tether_type_free(&i32));
  OK(tether_type_free(&c));
  EXPECT_EQ(c, nullptr);
  OK(tether_type_commit(v));
  T owner(v);
  EXPECT_EQ(query(owner).size, 24);
  EXPECT_EQ(query(owner).extent, 72);
  T dup;
  OK(tether_type_dup(owner, dup.out()));
  int64_t n = 0, buf[32] = {0};
  unsigned char out[24];
  OK(tether_type_pack(dup, 1, buf, 0, 24, out, &n));  // dup of a committed type is committed
  EXPECT_EQ(n, 24);
}

TEST(Datatype, Errors) {
  T i32, v, big;
  tether_type_t bad = nullptr;
  OK(tether_type_basic(TETHER_BASIC_INT32, i32.out()));
  EXPECT_EQ(tether_type_contiguous(-1, i32, &bad), TETHER_ERR_INVALID_ARG);
  EXPECT_NE(std::string(tether_type_last_error()).find("count is negative (-1)"), std::string::npos);
  EXPECT_EQ(tether_type_vector(2, -3, 1, i32, &bad), TETHER_ERR_INVALID_ARG);
  EXPECT_EQ(tether_type_contiguous(2, nullptr, &bad), TETHER_ERR_INVALID_ARG);
  EXPECT_EQ(tether_type_contiguous(2, i32, nullptr), TETHER_ERR_INVALID_ARG);
  EXPECT_EQ(tether_type_basic(static_cast<tether_basic_t>(999), &bad), TETHER_ERR_INVALID_ARG);
  EXPECT_EQ(tether_type_indexed(2, nullptr, nullptr, i32, &bad), TETHER_ERR_INVALID_ARG);
  int64_t bl[1] = {-1}, d[1] = {0};
  EXPECT_EQ(tether_type_indexed(1, bl, d, i32, &bad), TETHER_ERR_INVALID_ARG);
  int64_t sz[1] = {4}, sub[1] = {3}, st[1] = {2};
  EXPECT_EQ(tether_type_subarray(1, sz, sub, st, TETHER_ORDER_C, i32, &bad), TETHER_ERR_INVALID_ARG);
  EXPECT_EQ(bad, nullptr);
  // 64-bit overflow of the size and of displacements: reported, never wrapped.
  EXPECT_EQ(tether_type_contiguous(INT64_C(1) << 62, i32, &bad), TETHER_ERR_OVERFLOW);
  EXPECT_EQ(tether_type_hvector(3, 1, INT64_MAX / 2, i32, &bad), TETHER_ERR_OVERFLOW);
  OK(tether_type_contiguous(INT64_C(1) << 60, i32, big.out()));
  int64_t bytes = 0;
  EXPECT_EQ(tether_type_packed_size(big, 8, &bytes), TETHER_ERR_OVERFLOW);
  // Pack needs a committed type and a valid range.
  OK(tether_type_vector(2, 1, 2, i32, v.out()));
  int32_t buf[8] = {0};
  unsigned char out[8];
  int64_t n = 0;
  EXPECT_EQ(tether_type_pack(v, 1, buf, 0, 8, out, &n), TETHER_ERR_INVALID_ARG);
  EXPECT_NE(std::string(tether_type_last_error()).find("not committed"), std::string::npos);
  committed(&v);
  EXPECT_EQ(tether_type_pack(v, 1, buf, 9, 8, out, &n), TETHER_ERR_INVALID_ARG);
  EXPECT_EQ(tether_type_pack(v, -1, buf, 0, 8, out, &n), TETHER_ERR_INVALID_ARG);
  EXPECT_EQ(tether_type_pack(v, 1, buf, 0, -1, out, &n), TETHER_ERR_INVALID_ARG);
  EXPECT_EQ(tether_type_pack(v, 1, nullptr, 0, 8, out, &n), TETHER_ERR_INVALID_ARG);
  OK(tether_type_pack(v, 1, buf, 8, 8, out, &n));  // at the end: nothing left, not an error
  EXPECT_EQ(n, 0);
  // Forcing a GPU scheme per handle: names checked at the call (the GPU is not touched).
  for (const char* name : {"thread", "warp", "elem", "copy2d", "copy3d", "auto"}) OK(tether_type_set_gpu_scheme(v, name));
  EXPECT_EQ(tether_type_set_gpu_scheme(v, "host"), TETHER_ERR_INVALID_ARG);
  EXPECT_EQ(tether_type_set_gpu_scheme(v, "fastest"), TETHER_ERR_INVALID_ARG);
  EXPECT_NE(std::string(tether_type_last_error()).find("scheme \"fastest\""), std::string::npos);
  EXPECT_EQ(tether_type_set_gpu_scheme(v, nullptr), TETHER_ERR_INVALID_ARG);
  EXPECT_EQ(tether_type_set_gpu_scheme(nullptr, "warp"), TETHER_ERR_INVALID_ARG);
  EXPECT_EQ(tether_type_free(nullptr), TETHER_ERR_INVALID_ARG);
  tether_type_t none = nullptr;
  OK(tether_type_free(&none));
}

// Every derived bound is checked: a type whose extent (ub - lb) or true extent would not fit in int64 is refused with
// TETHER_ERR_OVERFLOW naming the constructor and the values, never built with a wrapped extent (issue 24 §5).
TEST(Datatype, DerivedBoundsOverflowIsReported) {
  T i32, chr, dbl, hugeNeg, lowData, zeroRs;
  OK(tether_type_basic(TETHER_BASIC_INT, i32.out()));
  OK(tether_type_basic(TETHER_BASIC_CHAR, chr.out()));
  OK(tether_type_basic(TETHER_BASIC_DOUBLE, dbl.out()));
  tether_type_t bad = nullptr;
  auto refused = [&](tether_status_t s, const char* call, const char* what) {
    EXPECT_EQ(s, TETHER_ERR_OVERFLOW) << call;
    const std::string m = tether_type_last_error();
    EXPECT_NE(m.find(call), std::string::npos) << m;
    EXPECT_NE(m.find(what), std::string::npos) << m;
    EXPECT_EQ(bad, nullptr);
  };
  // The two cases of the issue: lb INT64_MIN, ub INT64_MAX; and lb INT64_MIN, ub 4.
  int64_t bl2[2] = {1, 1}, d2[2] = {INT64_MIN, INT64_MAX - 4};
  refused(tether_type_hindexed(2, bl2, d2, i32, &bad), "tether_type_hindexed", "extent overflows int64 (lb -9223372036854775808, ub 9223372036854775807)");
  refused(tether_type_hvector(3, 1, INT64_MIN / 2, i32, &bad), "tether_type_hvector", "extent overflows int64 (lb -9223372036854775808, ub 4)");
  refused(tether_type_hindexed_block(2, 1, d2, i32, &bad), "tether_type_hindexed_block", "extent overflows");
  int64_t e2[2] = {-(INT64_C(1) << 61), INT64_C(1) << 61};  // in extents of int: +-2^63 bytes
  refused(tether_type_indexed(2, bl2, e2, i32, &bad), "tether_type_indexed", "overflows int64");
  int64_t e3[2] = {-(INT64_C(1) << 60), (INT64_C(1) << 61) - 2};  // bytes -2^62 .. 2^63 - 4: the extent wraps
  refused(tether_type_indexed_block(2, 1, e3, i32, &bad), "tether_type_indexed_block", "extent overflows");
  refused(tether_type_vector(3, 1, INT64_MIN / 8, i32, &bad), "tether_type_vector", "extent overflows");
  tether_type_t two[2] = {i32, i32};
  refused(tether_type_struct(2, bl2, d2, two, &bad), "tether_type_struct", "extent overflows");
  // Struct padding pushes the extent over: lb -8, ub INT64_MAX - 8 (extent INT64_MAX), padded to 8 bytes.
  int64_t dp[2] = {-8, INT64_MAX - 16};
  tether_type_t mixed[2] = {chr, dbl};
  refused(tether_type_struct(2, bl2, dp, mixed, &bad), "tether_type_struct", "extent overflows");
  // Contiguous and subarray of an old type whose extent is half the range.
  OK(tether_type_resized(i32, INT64_MIN / 2, INT64_MAX / 2 + 1, hugeNeg.out()));  // lb -2^62, extent 2^62
  refused(tether_type_contiguous(3, hugeNeg, &bad), "tether_type_contiguous", "overflows int64");
  int64_t sz[1] = {3}, sub[1] = {1}, st[1] = {2};
  refused(tether_type_subarray(1, sz, sub, st, TETHER_ORDER_C, hugeNeg, &bad), "tether_type_subarray", "overflows int64");
  // Markers keep the extent at 0 while the data spans the whole range: the true extent overflows.
  int64_t one[1] = {1}, dmin[1] = {INT64_MIN};
  OK(tether_type_hindexed(1, one, dmin, i32, lowData.out()));  // data at INT64_MIN .. INT64_MIN + 4
  OK(tether_type_resized(lowData, 0, 0, zeroRs.out()));
  int64_t dz[2] = {0, INT64_MAX - 4};
  tether_type_t zm[2] = {zeroRs, i32};
  refused(tether_type_struct(2, bl2, dz, zm, &bad), "tether_type_struct", "true extent overflows int64");
  // Largest extents that fit are accepted and reported exactly.
  T edge, neg;
  int64_t dEdge[2] = {INT64_MIN, -4};  // lb INT64_MIN, ub 0: extent INT64_MAX + 1 does not fit ...
  refused(tether_type_hindexed(2, bl2, dEdge, i32, &bad), "tether_type_hindexed", "extent overflows");
  int64_t dFit[2] = {INT64_MIN + 1, -4};  // ... one byte less does
  OK(tether_type_hindexed(2, bl2, dFit, i32, edge.out()));
  Q q = query(edge);
  EXPECT_EQ(q.lb, INT64_MIN + 1);
  EXPECT_EQ(q.extent, INT64_MAX);
  EXPECT_EQ(q.text, INT64_MAX);
  OK(tether_type_resized(i32, 0, INT64_MIN, neg.out()));  // a negative extent of INT64_MIN fits
  EXPECT_EQ(query(neg).extent, INT64_MIN);
  // Pack of count instances at i * extent: the instances' memory must be addressable.
  T far;
  OK(tether_type_resized(i32, 0, INT64_C(1) << 62, far.out()));
  committed(&far);
  unsigned char out[16];
  int64_t n = -1;
  int32_t buf[1] = {0};
  EXPECT_EQ(tether_type_pack(far, 3, buf, 0, 12, out, &n), TETHER_ERR_OVERFLOW);
  EXPECT_NE(std::string(tether_type_last_error()).find("3 instances of extent 4611686018427387904"), std::string::npos)
      << tether_type_last_error();
  EXPECT_EQ(tether_type_unpack(far, 3, out, 0, 12, buf, &n), TETHER_ERR_OVERFLOW);
  OK(tether_type_pack(far, 1, buf, 0, 4, out, &n));
  EXPECT_EQ(n, 4);
}

// Random layouts: the canonical form of a type equals the canonical form of the hindexed list of its contiguous
// blocks (in pack order), and pack through both is identical. Seed: TETHER_TEST_DT_SEED (printed).
TEST(Datatype, RandomTreesMatchTheirBlockLists) {
  Rng uni("RandomTreesMatchTheirBlockLists", 7);
  const uint64_t seed = uni.seed;
  T byte;
  OK(tether_type_basic(TETHER_BASIC_BYTE, byte.out()));
  for (int iter = 0; iter < 300; ++iter) {
    T base, a, b, c;
    OK(tether_type_basic(uni(0, 1) ? TETHER_BASIC_INT32 : TETHER_BASIC_DOUBLE, base.out()));
    OK(tether_type_vector(uni(1, 4), uni(1, 3), uni(-5, 6), base, a.out()));
    OK(tether_type_hvector(uni(1, 5), uni(1, 2), uni(-3, 3) * 64 + uni(0, 1) * 8, a, b.out()));
    OK(tether_type_contiguous(uni(1, 3), b, c.out()));
    committed(&c);
    // The blocks of c in pack order, walked from its canonical form.
    const tether::dt::Canonical& k = *tether_type_t(c)->canonical;
    std::vector<int64_t> lens, offs;
    for (const auto& s : k.segments)
      for (int64_t r = 0; r < s.repeat; ++r)
        for (int64_t p = s.firstPiece; p < s.firstPiece + s.numPieces; ++p) {
          const auto& pc = k.pieces[static_cast<size_t>(p)];
          int64_t idx[4] = {0, 0, 0, 0};
          for (int64_t e = 0; e < pc.elements(); ++e) {
            int64_t off = pc.offset + r * s.stride;
            for (int q = 0; q < pc.nd; ++q) off += idx[q] * pc.stride[q];
            lens.push_back(pc.block), offs.push_back(off);
            for (int q = 0; q < pc.nd; ++q) {
              if (++idx[q] < pc.count[q]) break;
              idx[q] = 0;
            }
          }
        }
    T listed;
    OK(tether_type_hindexed(static_cast<int64_t>(lens.size()), lens.data(), offs.data(), byte, listed.out()));
    committed(&listed);
    EXPECT_EQ(body(listed), body(c)) << "seed " << seed << " iteration " << iter << ": " << full(c);
    const Arena arena(c, 3);
    const unsigned char* origin = arena.origin;
    EXPECT_EQ(packAll(listed, 1, origin), packAll(c, 1, origin)) << "seed " << seed << " iteration " << iter;
  }
}

// Irregular layouts whose exact stage folds many runs at a time (rows and planes continuing a piece, a run growing
// until it matches the piece before): a struct of strided parts and odd blocks reaches the same form as the
// hindexed list of its contiguous blocks (which the structural stage folds one block at a time), and packs the same.
TEST(Datatype, BatchedFoldingMatchesBlockLists) {
  std::mt19937_64 rng(11);
  auto uni = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  T byte, i32;
  OK(tether_type_basic(TETHER_BASIC_BYTE, byte.out()));
  OK(tether_type_basic(TETHER_BASIC_INT32, i32.out()));
  for (int iter = 0; iter < 300; ++iter) {
    const int parts = static_cast<int>(uni(1, 4));
    std::vector<T> owned(static_cast<size_t>(2 * parts));
    std::vector<tether_type_t> ts;
    std::vector<int64_t> bl, disp, lens, offs;
    for (int q = 0; q < parts; ++q) {
      // part q: hvector(c1, 1, s1, vector(c0, b, s0 ints)) at displacement o, or one odd block of ints
      const int64_t b = uni(1, 3), c0 = uni(1, 9), c1 = uni(1, 7), s0 = uni(0, 4) == 0 ? b : uni(-6, 8);
      const int64_t s1 = uni(0, 3) == 0 ? c0 * s0 * 4 : uni(-40, 80), o = uni(-100, 100) * 4;
      T& v = owned[static_cast<size_t>(2 * q)];
      T& h = owned[static_cast<size_t>(2 * q + 1)];
      const bool odd = uni(0, 4) == 0;
      OK(tether_type_vector(odd ? 1 : c0, b, s0, i32, v.out()));
      OK(tether_type_hvector(odd ? 1 : c1, 1, s1, v, h.out()));
      ts.push_back(h), bl.push_back(1), disp.push_back(o);
      for (int64_t j = 0; j < (odd ? 1 : c1); ++j)
        for (int64_t i = 0; i < (odd ? 1 : c0); ++i) lens.push_back(4 * b), offs.push_back(o + j * s1 + i * s0 * 4);
    }
    T st, listed;
    OK(tether_type_struct(parts, bl.data(), disp.data(), ts.data(), st.out()));
    OK(tether_type_hindexed(static_cast<int64_t>(lens.size()), lens.data(), offs.data(), byte, listed.out()));
    committed(&st);
    committed(&listed);
    EXPECT_EQ(body(listed), body(st)) << "iteration " << iter << ": " << full(st);
    const Arena arena(st, 5);
    const unsigned char* origin = arena.origin;
    EXPECT_EQ(packAll(listed, 1, origin), packAll(st, 1, origin)) << "iteration " << iter;
  }
}

// Indexed entries over a basic type take a fast path at commit: one plain block per entry, and a list that repeats
// with a period of up to 8 entries becomes one repeated segment. The same blocks listed as a struct (the general
// path) reach the same form and pack the same, periodic or not, with remainders, zero lengths, negative and adjacent
// gaps; a periodic list beyond the exact-stage limit still packs its type map.
TEST(Datatype, PeriodicEntryListsMatchTheGeneralPath) {
  Rng uni("PeriodicEntryListsMatchTheGeneralPath", 23);
  const uint64_t seed = uni.seed;
  T i32;
  OK(tether_type_basic(TETHER_BASIC_INT32, i32.out()));
  for (int iter = 0; iter < 400; ++iter) {
    const int64_t p = uni(1, 9), reps = uni(1, 40), rest = uni(0, 2) ? 0 : uni(0, p - 1);
    std::vector<int64_t> len(static_cast<size_t>(p)), off(static_cast<size_t>(p));
    for (int64_t j = 0; j < p; ++j) {
      len[static_cast<size_t>(j)] = uni(0, 9) == 0 ? 0 : uni(1, 3);
      off[static_cast<size_t>(j)] = uni(0, 3) == 0 && j ? off[static_cast<size_t>(j - 1)] + len[static_cast<size_t>(j - 1)]
                                                       : uni(-20, 40);
    }
    const int64_t stride = uni(0, 3) == 0 ? -uni(1, 60) : uni(1, 80);
    std::vector<int64_t> bl, de, deBytes;
    for (int64_t r = 0; r < reps; ++r)
      for (int64_t j = 0; j < p; ++j) {
        bl.push_back(len[static_cast<size_t>(j)]);
        de.push_back(off[static_cast<size_t>(j)] + r * stride);
      }
    for (int64_t j = 0; j < rest; ++j)
      bl.push_back(len[static_cast<size_t>(j)]), de.push_back(off[static_cast<size_t>(j)] + reps * stride);
    for (int64_t d : de) deBytes.push_back(4 * d);
    const int64_t n = static_cast<int64_t>(bl.size());
    T ix, st;
    OK(tether_type_indexed(n, bl.data(), de.data(), i32, ix.out()));
    std::vector<tether_type_t> ts(static_cast<size_t>(n), i32.get());
    OK(tether_type_struct(n, bl.data(), deBytes.data(), ts.data(), st.out()));
    committed(&ix);
    committed(&st);
    EXPECT_EQ(body(ix), body(st)) << "seed " << seed << " iteration " << iter << ": " << full(st);
    if (query(st).size == 0) continue;
    const Arena arena(st, 1);
    const unsigned char* origin = arena.origin;
    std::vector<unsigned char> expect;
    for (int64_t i = 0; i < n; ++i)
      expect.insert(expect.end(), origin + deBytes[static_cast<size_t>(i)],
                    origin + deBytes[static_cast<size_t>(i)] + 4 * bl[static_cast<size_t>(i)]);
    EXPECT_EQ(packAll(ix, 1, origin), expect) << "seed " << seed << " iteration " << iter;
    // Nested: the periodic list (its repeated segment) inside an hvector and a struct reaches the nested struct's form.
    const int64_t copies = uni(2, 4), gap = uni(-3, 3) * 64 + 4 * uni(0, 40);
    T hix, hst, six, sst;
    OK(tether_type_hvector(copies, 1, gap, ix, hix.out()));
    OK(tether_type_hvector(copies, 1, gap, st, hst.out()));
    const int64_t two[2] = {1, 1}, at[2] = {0, gap};
    const tether_type_t pix[2] = {ix.get(), i32.get()}, pst[2] = {st.get(), i32.get()};
    OK(tether_type_struct(2, two, at, pix, six.out()));
    OK(tether_type_struct(2, two, at, pst, sst.out()));
    for (T* t : {&hix, &hst, &six, &sst}) committed(t);
    EXPECT_EQ(body(hix), body(hst)) << "seed " << seed << " iteration " << iter << ": " << full(hst);
    EXPECT_EQ(body(six), body(sst)) << "seed " << seed << " iteration " << iter << ": " << full(sst);
  }
  // 40000 blocks (above the exact-stage limit), period 2: a compact structural form that packs the type map.
  std::vector<int64_t> bl, de;
  for (int i = 0; i < 40000; ++i) bl.push_back(1 + i % 2), de.push_back(5 * i + (i % 2));
  T big;
  OK(tether_type_indexed(40000, bl.data(), de.data(), i32, big.out()));
  committed(&big);
  EXPECT_LE(tether_type_t(big)->canonical->pieces.size(), 4u) << full(big);
  const Arena arena(big, 7);
  const unsigned char* origin = arena.origin;
  std::vector<unsigned char> expect;
  for (int i = 0; i < 40000; ++i) expect.insert(expect.end(), origin + 4 * de[i], origin + 4 * de[i] + 4 * bl[i]);
  EXPECT_EQ(packAll(big, 1, origin), expect);
}

// A strided layout whose last block of a row ends where the next row starts (the wrap adjacency normalize() does
// not see): its vector form, the struct of its blocks and the hindexed list of its maximal runs reach one form (the
// runs joined), and pack the same. Random rows, planes and strides, with and without such a wrap.
TEST(Datatype, WrappedAdjacentRowsJoin) {
  Rng uni("WrappedAdjacentRowsJoin", 31);
  const uint64_t seed = uni.seed;
  T i32, byte;
  OK(tether_type_basic(TETHER_BASIC_INT32, i32.out()));
  OK(tether_type_basic(TETHER_BASIC_BYTE, byte.out()));
  for (int iter = 0; iter < 300; ++iter) {
    const int64_t b = uni(1, 3), c0 = uni(2, 5), c1 = uni(2, 9), c2 = uni(1, 3), o = uni(-50, 50);
    int64_t s0 = uni(-8, 8);
    if (s0 == b || s0 == 0) s0 = b + 1;
    // The row stride makes the wrap adjacent most of the time: the next row starts where this row's last block ends.
    const int64_t s1 = uni(0, 3) ? (c0 - 1) * s0 + b : uni(-60, 60);
    const int64_t s2 = uni(0, 2) ? (c1 - 1) * s1 + (c0 - 1) * s0 + b : uni(-200, 200);
    std::vector<int64_t> offs;  // blocks in pack order, in ints
    for (int64_t k = 0; k < c2; ++k)
      for (int64_t j = 0; j < c1; ++j)
        for (int64_t i = 0; i < c0; ++i) offs.push_back(o + k * s2 + j * s1 + i * s0);
    T row, plane, vol, vec, st, runs;
    OK(tether_type_vector(c0, b, s0, i32, row.out()));
    OK(tether_type_hvector(c1, 1, 4 * s1, row, plane.out()));
    OK(tether_type_hvector(c2, 1, 4 * s2, plane, vol.out()));
    const int64_t one = 1, at = 4 * o;
    OK(tether_type_hindexed(1, &one, &at, vol, vec.out()));
    std::vector<int64_t> bl(offs.size(), b), bytesAt, rl, ro;
    for (int64_t x : offs) {
      bytesAt.push_back(4 * x);
      if (!ro.empty() && ro.back() + rl.back() == 4 * x) rl.back() += 4 * b;
      else ro.push_back(4 * x), rl.push_back(4 * b);
    }
    std::vector<tether_type_t> ts(offs.size(), i32.get());
    OK(tether_type_struct(static_cast<int64_t>(offs.size()), bl.data(), bytesAt.data(), ts.data(), st.out()));
    OK(tether_type_hindexed(static_cast<int64_t>(ro.size()), rl.data(), ro.data(), byte, runs.out()));
    for (T* t : {&vec, &st, &runs}) committed(t);
    EXPECT_EQ(body(vec), body(runs)) << "seed " << seed << " iteration " << iter << ": " << full(vec);
    EXPECT_EQ(body(st), body(runs)) << "seed " << seed << " iteration " << iter << ": " << full(st);
    const Arena arena(vec, 9);
    const unsigned char* origin = arena.origin;
    EXPECT_EQ(packAll(vec, 1, origin), packAll(runs, 1, origin)) << "seed " << seed << " iteration " << iter;
  }
}

// Uniqueness (docs/datatype.md "Uniqueness"): a random type tree (tests/datatype/random_types.h) whose form is exact,
// the hindexed list of its contiguous runs, the same runs cut at random points (bytes, in order), and a struct of
// those pieces all reach one canonical form. (Before the wrap-adjacency rule, 4 % of such trees did not.)
// The exact stage folds repeated bodies in O(period) once the fold is periodic (canonical.cpp, foldRepeated). Its
// result must be the one-by-one fold: repeated multi-piece bodies (periodic entry lists of 2-6 entries, and hvectors
// of small structs), 8-60 repetitions, with and without a non-periodic tail, against the same runs listed with random
// cuts (an irregular list: the one-by-one path).
TEST(Datatype, PeriodicFoldShortcutMatchesOneByOne) {
  Rng uni("PeriodicFoldShortcutMatchesOneByOne", 1);
  T byte;
  OK(tether_type_basic(TETHER_BASIC_BYTE, byte.out()));
  int checked = 0;
  for (int iter = 0; iter < 400; ++iter) {
    T t;
    std::string what;
    if (iter % 2 == 0) {  // periodic entries over bytes, equal lengths often (pairs form), then maybe a tail
      const int64_t per = uni(2, 6), reps = uni(8, 60);
      std::vector<int64_t> len, gap;
      for (int64_t j = 0; j < per; ++j) len.push_back(uni(0, 2) ? 8 : uni(1, 24)), gap.push_back(uni(0, 3) * 8);
      int64_t stride = 0;
      for (int64_t j = 0; j < per; ++j) stride += len[static_cast<size_t>(j)] + gap[static_cast<size_t>(j)];
      stride += uni(0, 2) * 8;
      std::vector<int64_t> bl, ds;
      for (int64_t r = 0; r < reps; ++r)
        for (int64_t j = 0, at = r * stride; j < per; ++j) {
          bl.push_back(len[static_cast<size_t>(j)]), ds.push_back(at);
          at += len[static_cast<size_t>(j)] + gap[static_cast<size_t>(j)];
        }
      for (int64_t e = uni(0, 1) ? uni(1, 3) : 0, at = reps * stride; e > 0; --e)
        bl.push_back(uni(1, 16)), ds.push_back(at), at += 40;
      OK(tether_type_hindexed(static_cast<int64_t>(bl.size()), bl.data(), ds.data(), byte, t.out()));
      what = "entries: period " + std::to_string(per) + " x " + std::to_string(reps);
    } else {  // hvector of a struct of 2-3 byte blocks
      const int64_t n = uni(2, 3), reps = uni(8, 60);
      std::vector<int64_t> bl, ds;
      for (int64_t j = 0, at = 0; j < n; ++j)
        bl.push_back(uni(1, 3) * 8), ds.push_back(at), at += bl.back() + uni(1, 4) * 8;
      std::vector<tether_type_t> ts(static_cast<size_t>(n), byte.get());
      T st;
      OK(tether_type_struct(n, bl.data(), ds.data(), ts.data(), st.out()));
      const int64_t ext = ds.back() + bl.back();
      OK(tether_type_hvector(reps, 1, ext + uni(0, 3) * 8, st, t.out()));
      what = "hvector(" + std::to_string(reps) + ") of a struct of " + std::to_string(n);
    }
    committed(&t);
    const tether::dt::Canonical& k = *tether_type_t(t)->canonical;
    std::vector<int64_t> so, sl;
    ASSERT_TRUE(tether::dt::hostWalk(k, 0, k.size, [&](int64_t d, int64_t len) {
                  for (int64_t at = 0; at < len;) {  // every run cut at random points: an irregular entry list
                    const int64_t c = std::min<int64_t>(len - at, uni(1, 12));
                    so.push_back(d + at), sl.push_back(c);
                    at += c;
                  }
                  return tether::Status::ok();
                }).isOk());
    T cut;
    OK(tether_type_hindexed(static_cast<int64_t>(so.size()), sl.data(), so.data(), byte, cut.out()));
    committed(&cut);
    ++checked;
    ASSERT_EQ(body(t), body(cut)) << "seed " << uni.seed << " iteration " << iter << " (" << what << ")\n  type "
                                  << full(t) << "\n  cut  " << full(cut);
  }
  EXPECT_EQ(checked, 400);
}

TEST(Datatype, DescriptionsOfTheSameBytesReachOneForm) {
  Rng uni("DescriptionsOfTheSameBytesReachOneForm", 1);
  const uint64_t seed = uni.seed;
  T byte;
  OK(tether_type_basic(TETHER_BASIC_BYTE, byte.out()));
  int checked = 0, differ = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    dt_test::Gen g(seed * 100003 + static_cast<uint64_t>(iter));
    std::string text;
    T t;
    try {
      *t.out() = g.make(static_cast<int>(g.uni(1, 4)), &text);
    } catch (const dt_test::Fail&) {
      continue;
    }
    if (tether_type_commit(t) != TETHER_SUCCESS) continue;  // beyond the size bound: not this test's subject
    const tether::dt::Canonical& k = *tether_type_t(t)->canonical;
    if (!k.exact || k.size == 0 || k.size > 200000) continue;
    std::vector<int64_t> ro, rl, so, sl;
    ASSERT_TRUE(tether::dt::hostWalk(k, 0, k.size, [&](int64_t d, int64_t n) {
                  ro.push_back(d), rl.push_back(n);
                  return tether::Status::ok();
                }).isOk());
    for (size_t i = 0; i < ro.size(); ++i)
      for (int64_t at = 0; at < rl[i];) {
        const int64_t len = uni(0, 2) ? std::min<int64_t>(rl[i] - at, uni(1, 16)) : rl[i] - at;
        so.push_back(ro[i] + at), sl.push_back(len);
        at += len;
      }
    if (so.size() > 16000) continue;  // keep the cut list within the exact stage's scope
    T runs, cut, st;
    OK(tether_type_hindexed(static_cast<int64_t>(ro.size()), rl.data(), ro.data(), byte, runs.out()));
    OK(tether_type_hindexed(static_cast<int64_t>(so.size()), sl.data(), so.data(), byte, cut.out()));
    std::vector<tether_type_t> ts(so.size(), byte.get());
    OK(tether_type_struct(static_cast<int64_t>(so.size()), sl.data(), so.data(), ts.data(), st.out()));
    for (T* x : {&runs, &cut, &st}) committed(x);
    ++checked;
    const std::string f = body(t);
    if ((body(runs) != f || body(cut) != f || body(st) != f) && ++differ <= 3)
      ADD_FAILURE() << "seed " << seed << " iteration " << iter << ": " << text << "\n  tree   " << full(t)
                    << "\n  runs   " << full(runs) << "\n  cut    " << full(cut) << "\n  struct " << full(st);
  }
  std::printf("DescriptionsOfTheSameBytesReachOneForm: %d trees checked, %d with differing forms\n", checked, differ);
  EXPECT_EQ(differ, 0);
  EXPECT_GT(checked, 800);
}

}  // namespace
