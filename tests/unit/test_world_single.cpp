// One-PE worlds (explicit rank 0 of 1): every host operation on self, and the bad-input cases with their messages.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "tether/tether.h"

namespace {

const char* const kSmallHeap[] = {"TETHER_HEAP_SIZE=1M", "TETHER_HEAP_MAX=16M", "TETHER_TIMEOUT=0.3",
                                  "TETHER_DEFAULT_SEGMENT=host", "TETHER_GPU=none", nullptr};

class Single : public ::testing::Test {
 protected:
  void SetUp() override {
    tether_init_attr_t a;
    tether_init_attr_default(&a);
    a.rank = 0;
    a.size = 1;
    a.config = kSmallHeap;
    ASSERT_EQ(tether_init_attr(&a, &w), TETHER_SUCCESS) << tether_last_error();
  }
  void TearDown() override { EXPECT_EQ(tether_finalize(w), TETHER_SUCCESS) << tether_last_error(); }
  template <typename T>
  T* alloc(size_t n) {
    void* p = nullptr;
    EXPECT_EQ(tether_calloc(w, n, sizeof(T), &p), TETHER_SUCCESS) << tether_last_error();
    return static_cast<T*>(p);
  }
  std::string err() const { return tether_last_error(); }
  tether_t w = nullptr;
};

TEST_F(Single, Identity) {
  EXPECT_EQ(tether_my_pe(w), 0);
  EXPECT_EQ(tether_n_pes(w), 1);
  EXPECT_EQ(tether_local_pe(w), 0);
  EXPECT_EQ(tether_local_size(w), 1);
}

TEST_F(Single, PutGetSelfAllForms) {
  char* buf = alloc<char>(4096);
  char src[4096], dst[4096];
  for (int i = 0; i < 4096; ++i) src[i] = static_cast<char>(i * 7);
  ASSERT_EQ(tether_put(w, buf, src, sizeof src, 0), TETHER_SUCCESS) << err();
  ASSERT_EQ(tether_get(w, dst, buf, sizeof dst, 0), TETHER_SUCCESS) << err();
  EXPECT_EQ(std::memcmp(src, dst, sizeof src), 0);
  ASSERT_EQ(tether_put_nbi(w, buf + 100, src, 10, 0), TETHER_SUCCESS);
  ASSERT_EQ(tether_quiet(w), TETHER_SUCCESS);
  EXPECT_EQ(std::memcmp(buf + 100, src, 10), 0);
  long* l = alloc<long>(4);
  ASSERT_EQ(tether_long_p(w, &l[2], -77, 0), TETHER_SUCCESS);
  long got = 0;
  ASSERT_EQ(tether_long_g(w, &got, &l[2], 0), TETHER_SUCCESS);
  EXPECT_EQ(got, -77);
  double d[3] = {1.5, 2.5, 3.5}, e[3] = {};
  double* sd = alloc<double>(3);
  ASSERT_EQ(tether_double_put(w, sd, d, 3, 0), TETHER_SUCCESS);
  ASSERT_EQ(tether_double_get_nbi(w, e, sd, 3, 0), TETHER_SUCCESS);
  ASSERT_EQ(tether_quiet(w), TETHER_SUCCESS);
  EXPECT_EQ(e[2], 3.5);
  EXPECT_EQ(tether_put(w, buf, nullptr, 0, 0), TETHER_SUCCESS) << "zero bytes is a no-op";
  EXPECT_EQ(tether_ptr(w, buf, 0), buf);
  EXPECT_EQ(tether_segment_kind(w, buf), TETHER_SEG_HOST);
  EXPECT_EQ(tether_segment_kind(w, src), TETHER_SEG_DEFAULT);
}

TEST_F(Single, AtomicsEveryOp) {
  int64_t* x = alloc<int64_t>(1);
  int64_t old = 0;
  ASSERT_EQ(tether_int64_atomic_set(w, x, 10, 0), TETHER_SUCCESS);
  ASSERT_EQ(tether_int64_atomic_fetch(w, x, 0, &old), TETHER_SUCCESS);
  EXPECT_EQ(old, 10);
  ASSERT_EQ(tether_int64_atomic_add(w, x, 5, 0), TETHER_SUCCESS);
  ASSERT_EQ(tether_int64_atomic_fetch_add(w, x, -3, 0, &old), TETHER_SUCCESS);
  EXPECT_EQ(old, 15);
  ASSERT_EQ(tether_int64_atomic_inc(w, x, 0), TETHER_SUCCESS);
  ASSERT_EQ(tether_int64_atomic_fetch_inc(w, x, 0, &old), TETHER_SUCCESS);
  EXPECT_EQ(old, 13);
  ASSERT_EQ(tether_int64_atomic_swap(w, x, 100, 0, &old), TETHER_SUCCESS);
  EXPECT_EQ(old, 14);
  ASSERT_EQ(tether_int64_atomic_compare_swap(w, x, 99, 1, 0, &old), TETHER_SUCCESS);
  EXPECT_EQ(old, 100);
  EXPECT_EQ(*x, 100) << "failed compare must not store";
  ASSERT_EQ(tether_int64_atomic_compare_swap(w, x, 100, 1, 0, &old), TETHER_SUCCESS);
  EXPECT_EQ(*x, 1);
  ASSERT_EQ(tether_int64_atomic_or(w, x, 0x10, 0), TETHER_SUCCESS);
  ASSERT_EQ(tether_int64_atomic_fetch_xor(w, x, 0x1, 0, &old), TETHER_SUCCESS);
  EXPECT_EQ(old, 0x11);
  ASSERT_EQ(tether_int64_atomic_fetch_and(w, x, 0x30, 0, &old), TETHER_SUCCESS);
  EXPECT_EQ(old, 0x10);
  EXPECT_EQ(*x, 0x10);
  ASSERT_EQ(tether_int64_atomic_and(w, x, 0, 0), TETHER_SUCCESS);
  ASSERT_EQ(tether_int64_atomic_xor(w, x, 7, 0), TETHER_SUCCESS);
  ASSERT_EQ(tether_int64_atomic_fetch_or(w, x, 8, 0, &old), TETHER_SUCCESS);
  EXPECT_EQ(old, 7);
  EXPECT_EQ(*x, 15);

  uint32_t* u = alloc<uint32_t>(1);
  uint32_t uo = 0;
  ASSERT_EQ(tether_uint32_atomic_set(w, u, 0xffffffffu, 0), TETHER_SUCCESS);
  ASSERT_EQ(tether_uint32_atomic_fetch_inc(w, u, 0, &uo), TETHER_SUCCESS);
  EXPECT_EQ(uo, 0xffffffffu);
  EXPECT_EQ(*u, 0u) << "32-bit atomics wrap at 32 bits";

  double* d = alloc<double>(1);
  double dold = 0;
  ASSERT_EQ(tether_double_atomic_set(w, d, 2.25, 0), TETHER_SUCCESS);
  ASSERT_EQ(tether_double_atomic_swap(w, d, -1.0, 0, &dold), TETHER_SUCCESS);
  EXPECT_EQ(dold, 2.25);
  float* f = alloc<float>(1);
  float fold = 0;
  ASSERT_EQ(tether_float_atomic_set(w, f, 0.5f, 0), TETHER_SUCCESS);
  ASSERT_EQ(tether_float_atomic_fetch(w, f, 0, &fold), TETHER_SUCCESS);
  EXPECT_EQ(fold, 0.5f);
}

TEST_F(Single, AtomicTypeRulesAreEnforced) {
  double* d = alloc<double>(2);
  double one = 1;
  EXPECT_EQ(tether_atomic(w, TETHER_AMO_ADD, TETHER_DOUBLE, d, &one, nullptr, nullptr, 0), TETHER_ERR_INVALID_ARG);
  EXPECT_NE(err().find("double"), std::string::npos) << err();
  int* i = alloc<int>(2);
  int v = 1, o;
  EXPECT_EQ(tether_atomic(w, TETHER_AMO_FETCH_AND, TETHER_INT, i, &v, nullptr, &o, 0), TETHER_ERR_INVALID_ARG);
  EXPECT_EQ(tether_atomic(w, TETHER_AMO_FETCH_ADD, TETHER_INT, i, &v, nullptr, nullptr, 0), TETHER_ERR_INVALID_ARG)
      << "fetching op without a result pointer";
  EXPECT_EQ(tether_atomic(w, TETHER_AMO_ADD, TETHER_INT, reinterpret_cast<char*>(i) + 1, &v, nullptr, nullptr, 0),
            TETHER_ERR_INVALID_ARG);
  EXPECT_NE(err().find("aligned"), std::string::npos) << err();
  EXPECT_EQ(tether_atomic(w, static_cast<tether_amo_t>(99), TETHER_INT, i, &v, nullptr, nullptr, 0),
            TETHER_ERR_INVALID_ARG);
  EXPECT_EQ(tether_atomic(w, TETHER_AMO_ADD, static_cast<tether_dtype_t>(99), i, &v, nullptr, nullptr, 0),
            TETHER_ERR_INVALID_ARG);
}

TEST_F(Single, WaitAndTestForms) {
  int64_t* iv = alloc<int64_t>(4);
  iv[0] = 1;
  iv[1] = 5;
  iv[2] = 0;
  iv[3] = 9;
  ASSERT_EQ(tether_int64_wait_until(w, &iv[1], TETHER_CMP_GE, 5), TETHER_SUCCESS) << err();
  int r = -1;
  ASSERT_EQ(tether_int64_test(w, &iv[2], TETHER_CMP_NE, 0, &r), TETHER_SUCCESS);
  EXPECT_EQ(r, 0);
  int64_t v = 0;
  int status[4] = {0, 0, 1, 0};  // exclude iv[2]
  ASSERT_EQ(tether_wait_until_all(w, iv, 4, status, TETHER_INT64, TETHER_CMP_GT, &v), TETHER_SUCCESS) << err();
  size_t idx = 77;
  v = 6;
  ASSERT_EQ(tether_wait_until_any(w, iv, 4, nullptr, TETHER_INT64, TETHER_CMP_GE, &v, &idx), TETHER_SUCCESS);
  EXPECT_EQ(idx, 3u);
  size_t indices[4], count = 0;
  v = 1;
  ASSERT_EQ(tether_wait_until_some(w, iv, 4, nullptr, TETHER_INT64, TETHER_CMP_GE, &v, indices, &count),
            TETHER_SUCCESS);
  ASSERT_EQ(count, 3u);
  EXPECT_EQ(indices[0], 0u);
  EXPECT_EQ(indices[1], 1u);
  EXPECT_EQ(indices[2], 3u);
  int64_t vals[4] = {1, 5, 0, 9};
  ASSERT_EQ(tether_wait_until_all_vector(w, iv, 4, nullptr, TETHER_INT64, TETHER_CMP_EQ, vals), TETHER_SUCCESS);
  ASSERT_EQ(tether_test_all(w, iv, 4, nullptr, TETHER_INT64, TETHER_CMP_GT, &v, &r), TETHER_SUCCESS);
  EXPECT_EQ(r, 0);
  int all_excluded[4] = {1, 1, 1, 1};
  ASSERT_EQ(tether_test_any(w, iv, 4, all_excluded, TETHER_INT64, TETHER_CMP_EQ, &v, &idx), TETHER_SUCCESS);
  EXPECT_EQ(idx, SIZE_MAX);
  ASSERT_EQ(tether_test_some_vector(w, iv, 4, nullptr, TETHER_INT64, TETHER_CMP_NE, vals, indices, &count),
            TETHER_SUCCESS);
  EXPECT_EQ(count, 0u);
  short* s = alloc<short>(1);
  *s = 3;
  ASSERT_EQ(tether_short_wait_until(w, s, TETHER_CMP_LT, 4), TETHER_SUCCESS);
}

TEST_F(Single, WaitThatIsNeverSatisfiedTimesOutNamingAddressExpectedAndSeen) {
  int64_t* iv = alloc<int64_t>(1);
  *iv = 3;
  ASSERT_EQ(tether_int64_wait_until(w, iv, TETHER_CMP_GE, 5), TETHER_ERR_TIMEOUT);
  std::string m = err();
  char addr[32];
  std::snprintf(addr, sizeof addr, "%p", static_cast<void*>(iv));
  EXPECT_NE(m.find("tether_wait_until"), std::string::npos) << m;
  EXPECT_NE(m.find(addr), std::string::npos) << m;
  EXPECT_NE(m.find("GE 5"), std::string::npos) << m;
  EXPECT_NE(m.find("last seen 3"), std::string::npos) << m;
  uint64_t* sig = alloc<uint64_t>(1);
  ASSERT_EQ(tether_signal_wait_until(w, sig, TETHER_CMP_EQ, 1, nullptr), TETHER_ERR_TIMEOUT);
  EXPECT_NE(err().find("tether_signal_wait_until"), std::string::npos) << err();
}

TEST_F(Single, SignalsSelf) {
  char* buf = alloc<char>(64);
  uint64_t* sig = alloc<uint64_t>(1);
  ASSERT_EQ(tether_put_signal(w, buf, "hello", 6, sig, 1, TETHER_SIGNAL_ADD, 0), TETHER_SUCCESS) << err();
  ASSERT_EQ(tether_put_signal_nbi(w, buf, "hello", 6, sig, 2, TETHER_SIGNAL_ADD, 0), TETHER_SUCCESS) << err();
  uint64_t seen = 0;
  ASSERT_EQ(tether_signal_wait_until(w, sig, TETHER_CMP_EQ, 3, &seen), TETHER_SUCCESS) << err();
  EXPECT_EQ(seen, 3u);
  EXPECT_STREQ(buf, "hello");
  ASSERT_EQ(tether_signal_op(w, sig, 42, TETHER_SIGNAL_SET, 0), TETHER_SUCCESS);
  ASSERT_EQ(tether_signal_fetch(w, sig, &seen), TETHER_SUCCESS);
  EXPECT_EQ(seen, 42u);
  EXPECT_EQ(tether_signal_op(w, reinterpret_cast<uint64_t*>(buf + 4), 1, TETHER_SIGNAL_SET, 0),
            TETHER_ERR_INVALID_ARG);
}

TEST_F(Single, BadPeAddressAndSize) {
  char* buf = alloc<char>(64);
  char local[64] = {};
  EXPECT_EQ(tether_put(w, buf, local, 8, 5), TETHER_ERR_INVALID_PE);
  EXPECT_NE(err().find("PE 5"), std::string::npos) << err();
  EXPECT_NE(err().find("tether_put"), std::string::npos) << err();
  EXPECT_EQ(tether_get(w, local, buf, 8, -1), TETHER_ERR_INVALID_PE);
  EXPECT_EQ(tether_put(w, local, local, 8, 0), TETHER_ERR_NOT_SYMMETRIC);
  EXPECT_NE(err().find("not inside the symmetric heap"), std::string::npos) << err();
  EXPECT_EQ(tether_put(w, buf, local, 64ull << 20, 0), TETHER_ERR_NOT_SYMMETRIC) << "range runs past the heap";
  EXPECT_EQ(tether_put_elems(w, buf, local, SIZE_MAX / 2, 4, 0), TETHER_ERR_OVERFLOW);
  EXPECT_EQ(tether_int_put(w, reinterpret_cast<int*>(buf), reinterpret_cast<int*>(local), SIZE_MAX / 2, 0),
            TETHER_ERR_OVERFLOW);
  EXPECT_EQ(tether_put(w, reinterpret_cast<void*>(UINTPTR_MAX - 4), local, 8, 0), TETHER_ERR_OVERFLOW);
  EXPECT_EQ(tether_put(w, buf, nullptr, 8, 0), TETHER_ERR_INVALID_ARG);
  EXPECT_EQ(tether_ptr(w, local, 0), nullptr);
  EXPECT_EQ(tether_ptr(w, buf, 3), nullptr);
  EXPECT_EQ(tether_put(nullptr, buf, local, 8, 0), TETHER_ERR_INVALID_ARG);
  EXPECT_NE(err().find("world is NULL"), std::string::npos);
}

TEST_F(Single, HeapGrowsOnDemandAndReportsExhaustion) {
  void* big = nullptr;
  ASSERT_EQ(tether_malloc(w, 3 << 20, &big), TETHER_SUCCESS) << err() << " (initial heap is 1M, growth expected)";
  std::memset(big, 0xab, 3 << 20);  // touching every byte proves the memory is committed
  char probe[16];
  ASSERT_EQ(tether_get(w, probe, static_cast<char*>(big) + (3 << 20) - 16, 16, 0), TETHER_SUCCESS) << err();
  EXPECT_EQ(static_cast<unsigned char>(probe[15]), 0xab);
  void* huge = nullptr;
  ASSERT_EQ(tether_malloc(w, 16 << 20, &huge), TETHER_ERR_NO_MEMORY);
  EXPECT_EQ(huge, nullptr);
  EXPECT_NE(err().find(std::to_string(16 << 20)), std::string::npos) << err();
  EXPECT_NE(err().find("TETHER_HEAP_MAX"), std::string::npos) << err();
  ASSERT_EQ(tether_free(w, big), TETHER_SUCCESS);
  // 4M: more than the 3M freed, less than what the 16M maximum leaves after the control area (kControlBytes, ~11.3M).
  ASSERT_EQ(tether_malloc(w, 4 << 20, &big), TETHER_SUCCESS) << err() << " (freed space must be reusable)";
  ASSERT_EQ(tether_free(w, big), TETHER_SUCCESS);
}

TEST_F(Single, CallocReallocAlignFree) {
  void* p = nullptr;
  ASSERT_EQ(tether_align(w, 4096, 100, &p), TETHER_SUCCESS);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 4096, 0u);
  EXPECT_EQ(tether_align(w, 48, 100, &p), TETHER_ERR_INVALID_ARG);
  int* a = alloc<int>(1000);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(a[i], 0);
  for (int i = 0; i < 1000; ++i) a[i] = i;
  void* blocker = nullptr;
  ASSERT_EQ(tether_malloc(w, 64, &blocker), TETHER_SUCCESS);  // forces realloc to move
  void* b = nullptr;
  ASSERT_EQ(tether_realloc(w, a, 100000 * sizeof(int), &b), TETHER_SUCCESS) << err();
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(static_cast<int*>(b)[i], i);
  EXPECT_EQ(tether_free(w, a), TETHER_ERR_INVALID_ARG) << "old block was released by realloc";
  ASSERT_EQ(tether_realloc(w, b, 0, &b), TETHER_SUCCESS);
  EXPECT_EQ(b, nullptr);
  EXPECT_EQ(tether_free(w, nullptr), TETHER_SUCCESS);
  char local;
  EXPECT_EQ(tether_free(w, &local), TETHER_ERR_NOT_SYMMETRIC);
  size_t huge = SIZE_MAX / 2;
  EXPECT_EQ(tether_calloc(w, huge, 4, &p), TETHER_ERR_OVERFLOW);
  EXPECT_EQ(tether_malloc_kind(w, TETHER_SEG_DEVICE, 0, 64, &p), TETHER_ERR_UNSUPPORTED);
  EXPECT_NE(err().find("DEVICE"), std::string::npos);
  EXPECT_EQ(tether_barrier_all(w), TETHER_SUCCESS);
  EXPECT_EQ(tether_sync_all(w), TETHER_SUCCESS);
}

TEST(Init, BadConfigIsNamed) {
  const char* const cfg[] = {"TETHER_HEAP_SIZE=lots", nullptr};
  tether_init_attr_t a;
  tether_init_attr_default(&a);
  a.rank = 0;
  a.size = 1;
  a.config = cfg;
  tether_t w = nullptr;
  EXPECT_EQ(tether_init_attr(&a, &w), TETHER_ERR_INVALID_ARG);
  EXPECT_EQ(w, nullptr);
  EXPECT_NE(std::string(tether_last_error()).find("TETHER_HEAP_SIZE"), std::string::npos) << tether_last_error();
  const char* const cfg2[] = {"TETHER_NO_SUCH=1", nullptr};
  a.config = cfg2;
  EXPECT_EQ(tether_init_attr(&a, &w), TETHER_ERR_INVALID_ARG);
  EXPECT_NE(std::string(tether_last_error()).find("TETHER_NO_SUCH"), std::string::npos);
  const char* const cfg3[] = {"TETHER_UCX_AMO=sometimes", "TETHER_GPU=none", nullptr};  // native or owner
  a.config = cfg3;
  EXPECT_EQ(tether_init_attr(&a, &w), TETHER_ERR_INVALID_ARG);
  EXPECT_NE(std::string(tether_last_error()).find("TETHER_UCX_AMO=sometimes: expected native or owner"),
            std::string::npos) << tether_last_error();
  const char* const cfg5[] = {"TETHER_SYNC_BY_HOST=sometimes", "TETHER_GPU=none", nullptr};  // auto, 1 or 0
  a.config = cfg5;
  EXPECT_EQ(tether_init_attr(&a, &w), TETHER_ERR_INVALID_ARG);
  EXPECT_NE(std::string(tether_last_error()).find("TETHER_SYNC_BY_HOST=sometimes: expected auto, 1 or 0"),
            std::string::npos) << tether_last_error();
  const char* const cfg6[] = {"TETHER_STREAM_BARRIER=memops", "TETHER_GPU=none", nullptr};  // auto, kernel, reset
  a.config = cfg6;
  EXPECT_EQ(tether_init_attr(&a, &w), TETHER_ERR_INVALID_ARG);
  EXPECT_NE(std::string(tether_last_error()).find("TETHER_STREAM_BARRIER=memops: expected auto, kernel or reset"),
            std::string::npos) << tether_last_error();
  const char* const cfg4[] = {"TETHER_UCX_AMO=owner", "TETHER_GPU=none", "TETHER_HEAP_SIZE=1M", nullptr};
  a.config = cfg4;
  ASSERT_EQ(tether_init_attr(&a, &w), TETHER_SUCCESS) << tether_last_error();
  EXPECT_EQ(tether_finalize(w), TETHER_SUCCESS);
  w = nullptr;
  a.config = nullptr;
  a.rank = 3;
  EXPECT_EQ(tether_init_attr(&a, &w), TETHER_ERR_INVALID_ARG);
  EXPECT_EQ(tether_init_attr(&a, nullptr), TETHER_ERR_INVALID_ARG);
  EXPECT_EQ(tether_finalize(nullptr), TETHER_SUCCESS);
  EXPECT_STREQ(tether_status_string(TETHER_ERR_TIMEOUT), "TETHER_ERR_TIMEOUT");
  EXPECT_EQ(tether_dtype_size(TETHER_INT64), 8u);
  EXPECT_EQ(tether_dtype_size(static_cast<tether_dtype_t>(1000)), 0u);
}

}  // namespace
