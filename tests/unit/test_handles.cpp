// Handles that are not live: every call on a finalized, never-initialised or garbage tether_t fails with
// TETHER_ERR_INVALID_ARG and a message naming the call, instead of dereferencing freed memory (issue 24 §3).
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tether/datatype.h"
#include "tether/tether.h"

namespace {

const char* const kConfig[] = {"TETHER_HEAP_SIZE=1M", "TETHER_HEAP_MAX=8M", "TETHER_TIMEOUT=2",
                               "TETHER_DEFAULT_SEGMENT=host", "TETHER_GPU=none", nullptr};

tether_t initOne() {
  tether_init_attr_t a;
  tether_init_attr_default(&a);
  a.rank = 0;
  a.size = 1;
  a.config = kConfig;
  tether_t w = nullptr;
  EXPECT_EQ(tether_init_attr(&a, &w), TETHER_SUCCESS) << tether_last_error();
  return w;
}

using Call = std::pair<const char*, std::function<tether_status_t(tether_t)>>;

// One call of every group of the C API (setup, heap, RMA, typed forms, datatype RMA and route, atomics, signals,
// waits, collectives, stream operations, prepared sets, device handles). sym: an address that was symmetric.
std::vector<Call> everyGroup(void* sym) {
  auto* l = static_cast<long*>(sym);
  auto* u = static_cast<uint64_t*>(sym);
  static tether_type_t dbl = nullptr;
  if (!dbl) tether_type_basic(TETHER_BASIC_DOUBLE, &dbl);
  return {
      {"tether_finalize", [](tether_t w) { return tether_finalize(w); }},
      {"tether_malloc", [](tether_t w) { void* p; return tether_malloc(w, 64, &p); }},
      {"tether_calloc", [](tether_t w) { void* p; return tether_calloc(w, 8, 8, &p); }},
      {"tether_malloc_kind", [](tether_t w) { void* p; return tether_malloc_kind(w, TETHER_SEG_HOST, 0, 64, &p); }},
      {"tether_realloc", [=](tether_t w) { void* p; return tether_realloc(w, sym, 128, &p); }},
      {"tether_free", [=](tether_t w) { return tether_free(w, sym); }},
      {"tether_register_program_data", [](tether_t w) { return tether_register_program_data(w); }},
      {"tether_put", [=](tether_t w) { long v = 1; return tether_put(w, l, &v, sizeof v, 0); }},
      {"tether_get", [=](tether_t w) { long v; return tether_get(w, &v, l, sizeof v, 0); }},
      {"tether_put_nbi", [=](tether_t w) { static long v = 1; return tether_put_nbi(w, l, &v, sizeof v, 0); }},
      {"tether_put", [=](tether_t w) { return tether_long_p(w, l, 7, 0); }},
      {"tether_get", [=](tether_t w) { long v; return tether_long_get(w, &v, l, 1, 0); }},
      {"tether_quiet", [](tether_t w) { return tether_quiet(w); }},
      {"tether_fence", [](tether_t w) { return tether_fence(w); }},
      {"tether_atomic", [=](tether_t w) { return tether_long_atomic_add(w, l, 1, 0); }},
      {"tether_put_signal",
       [=](tether_t w) { long v = 1; return tether_put_signal(w, l, &v, sizeof v, u + 1, 1, TETHER_SIGNAL_SET, 0); }},
      {"tether_signal_fetch", [=](tether_t w) { uint64_t v; return tether_signal_fetch(w, u, &v); }},
      {"tether_signal_wait_until",
       [=](tether_t w) { return tether_signal_wait_until(w, u, TETHER_CMP_GE, 0, nullptr); }},
      {"tether_wait_until", [=](tether_t w) { return tether_long_wait_until(w, l, TETHER_CMP_GE, 0); }},
      {"tether_test_any", [=](tether_t w) {
         long v = 0;
         size_t i;
         return tether_test_any(w, l, 1, nullptr, TETHER_LONG, TETHER_CMP_GE, &v, &i);
       }},
      {"tether_barrier_all", [](tether_t w) { return tether_barrier_all(w); }},
      {"tether_sync_all", [](tether_t w) { return tether_sync_all(w); }},
      {"tether_put_typed", [=](tether_t w) { return tether_put_typed(w, sym, dbl, 1, sym, dbl, 1, 0); }},
      {"tether_get_typed_nbi", [=](tether_t w) { return tether_get_typed_nbi(w, sym, dbl, 1, sym, dbl, 1, 0); }},
      {"tether_typed_route", [=](tether_t w) {
         const char* r;
         return tether_typed_route(w, 1, sym, dbl, 1, sym, dbl, 1, 0, &r);
       }},
      {"tether_putmem_on_stream", [=](tether_t w) { return tether_putmem_on_stream(w, l, l, 8, 0, nullptr); }},
      {"tether_barrier_all_on_stream", [](tether_t w) { return tether_barrier_all_on_stream(w, nullptr); }},
      {"tether_atomic_on_stream",
       [=](tether_t w) { return tether_atomic_add_on_stream(w, u, 1, 0, nullptr); }},
      {"tether_prepare", [](tether_t w) { tether_op_set_t s; return tether_prepare(w, nullptr, 0, &s); }},
      {"tether_device_handle", [](tether_t w) { tether_device_handle_t h; return tether_device_handle(w, &h); }},
      {"tether_device_handle_cpu",
       [](tether_t w) { tether_device_handle_t h; return tether_device_handle_cpu(w, &h); }},
  };
}

// Every call on w fails with TETHER_ERR_INVALID_ARG, naming itself and containing `why`; the queries return -1 /
// NULL / TETHER_SEG_DEFAULT.
void expectRefused(tether_t w, void* sym, const std::string& why) {
  for (const Call& c : everyGroup(sym)) {
    EXPECT_EQ(c.second(w), TETHER_ERR_INVALID_ARG) << c.first;
    const std::string msg = tether_last_error();
    EXPECT_NE(msg.find(c.first), std::string::npos) << c.first << ": " << msg;
    EXPECT_NE(msg.find(why), std::string::npos) << c.first << ": " << msg;
  }
  EXPECT_EQ(tether_my_pe(w), -1);
  EXPECT_NE(std::string(tether_last_error()).find("tether_my_pe: world"), std::string::npos) << tether_last_error();
  EXPECT_EQ(tether_n_pes(w), -1);
  EXPECT_EQ(tether_local_pe(w), -1);
  EXPECT_EQ(tether_local_size(w), -1);
  EXPECT_EQ(tether_ptr(w, sym, 0), nullptr);
  EXPECT_EQ(tether_segment_kind(w, sym), TETHER_SEG_DEFAULT);
}

TEST(Handles, FinalizedHandleIsRefusedByEveryCall) {
  tether_t w = initOne();
  ASSERT_NE(w, nullptr);
  void* sym = nullptr;
  ASSERT_EQ(tether_calloc(w, 64, 8, &sym), TETHER_SUCCESS) << tether_last_error();
  ASSERT_EQ(tether_finalize(w), TETHER_SUCCESS) << tether_last_error();
  expectRefused(w, sym, "was finalized");
}

TEST(Handles, SecondFinalizeFails) {
  tether_t w = initOne();
  ASSERT_EQ(tether_finalize(w), TETHER_SUCCESS) << tether_last_error();
  EXPECT_EQ(tether_finalize(w), TETHER_ERR_INVALID_ARG);
  EXPECT_NE(std::string(tether_last_error()).find("tether_finalize: world"), std::string::npos)
      << tether_last_error();
  EXPECT_EQ(tether_finalize(nullptr), TETHER_SUCCESS) << "NULL stays a documented no-op";
}

TEST(Handles, NeverInitialisedOrGarbageHandleIsRefused) {
  long local = 0;
  static char notAWorld[64];
  const tether_t bad[] = {reinterpret_cast<tether_t>(uintptr_t{1}), reinterpret_cast<tether_t>(uintptr_t{0x2a}),
                          reinterpret_cast<tether_t>(uintptr_t{0xdeadbeef}),
                          reinterpret_cast<tether_t>(static_cast<void*>(notAWorld)),
                          reinterpret_cast<tether_t>(static_cast<void*>(&local)),
                          reinterpret_cast<tether_t>(~uintptr_t{0})};
  for (tether_t w : bad) {
    SCOPED_TRACE(testing::Message() << "handle " << static_cast<void*>(w));
    expectRefused(w, &local, "is not a live instance");
  }
}

TEST(Handles, StaleHandleStaysDeadWhenTheSlotIsReused) {
  tether_t a = initOne();
  ASSERT_EQ(tether_finalize(a), TETHER_SUCCESS) << tether_last_error();
  tether_t b = initOne();  // may take a's slot: a new id all the same
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  EXPECT_EQ(tether_barrier_all(a), TETHER_ERR_INVALID_ARG);
  EXPECT_EQ(tether_my_pe(a), -1);
  EXPECT_EQ(tether_barrier_all(b), TETHER_SUCCESS) << tether_last_error();
  EXPECT_EQ(tether_my_pe(b), 0);
  EXPECT_EQ(tether_finalize(a), TETHER_ERR_INVALID_ARG) << "finalizing the stale handle must not touch b";
  EXPECT_EQ(tether_n_pes(b), 1);
  EXPECT_EQ(tether_finalize(b), TETHER_SUCCESS) << tether_last_error();
}

TEST(Handles, SeveralLiveInstancesKeepTheirOwnHandles) {
  tether_t w[3];
  for (tether_t& x : w) x = initOne();
  ASSERT_EQ(tether_finalize(w[1]), TETHER_SUCCESS) << tether_last_error();
  EXPECT_EQ(tether_barrier_all(w[0]), TETHER_SUCCESS) << tether_last_error();
  EXPECT_EQ(tether_barrier_all(w[1]), TETHER_ERR_INVALID_ARG);
  EXPECT_EQ(tether_barrier_all(w[2]), TETHER_SUCCESS) << tether_last_error();
  EXPECT_EQ(tether_finalize(w[0]), TETHER_SUCCESS) << tether_last_error();
  EXPECT_EQ(tether_finalize(w[2]), TETHER_SUCCESS) << tether_last_error();
}

}  // namespace
