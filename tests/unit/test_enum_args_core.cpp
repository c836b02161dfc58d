// Enum arguments of the core C API (tether.h) with out-of-range values (issue 24 §5): every call that takes an enum,
// or reads one from the caller's structs (tether_prepare), validates the integer before using it as the enum, so the
// asan/UBSan build (-fsanitize=enum halts on loading an invalid enum value) reports TETHER_ERR_INVALID_ARG naming the
// call, the parameter and the value, as the release build does. The values come from C (enum_args_core.c), where
// passing them is well defined. One 1-PE instance, with the CPU emulation of the stream-op layer so the stream calls
// also run with valid values.
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "core/stream_ops.h"
#include "cpu_stream_world.h"
#include "tether/tether.h"

extern "C" {
const char* enum_status_string(int s);
size_t enum_dtype_size(int type);
tether_status_t enum_malloc_kind(tether_t w, int kind, void** ptr);
tether_status_t enum_atomic(tether_t w, int op, int type, void* dest, int on_stream, void* stream);
tether_status_t enum_wait(tether_t w, int form, void* ivar, int type, int cmp);
tether_status_t enum_signal_op(tether_t w, int form, void* buf, uint64_t* sig, int sig_op, void* stream);
tether_status_t enum_signal_wait(tether_t w, int form, uint64_t* sig, int type, int cmp, void* stream);
tether_status_t enum_prepare(tether_t w, int kind, int sig_op, int cmp, void* buf, uint64_t* sig,
                             tether_op_set_t* set);
}

namespace {

// Out of range for every enum of tether.h; the negative ones are outside the C++ range of values of each of them (the
// values UBSan halts on), the others are representable but no enumerator.
const int kBad[] = {-1, INT_MIN, 1000, INT_MAX};

std::vector<int> badValues(int justPast) {
  std::vector<int> v(std::begin(kBad), std::end(kBad));
  v.push_back(justPast);
  return v;
}

const char* const kWaitForms[] = {
    "tether_wait_until",         "tether_test",           "tether_wait_until_all",
    "tether_wait_until_any",     "tether_wait_until_some", "tether_test_all",
    "tether_test_any",           "tether_test_some",      "tether_wait_until_all_vector",
    "tether_wait_until_any_vector", "tether_wait_until_some_vector", "tether_test_all_vector",
    "tether_test_any_vector",    "tether_test_some_vector"};

class EnumArgsCore : public CpuStreamWorld<4> {
 protected:
  void SetUp() override {
    ASSERT_NE(words_, nullptr);
    for (int i = 0; i < 4; ++i) words_[i] = 0;
  }

  // status is INVALID_ARG with the message "<call>: <param> <v> is not a <enumName>".
  static void expectBad(tether_status_t status, const std::string& call, const char* param, int v,
                        const char* enumName) {
    const std::string want = call + ": " + param + " " + std::to_string(v) + " is not a " + enumName;
    EXPECT_EQ(status, TETHER_ERR_INVALID_ARG) << want;
    EXPECT_NE(std::string(tether_last_error()).find(want), std::string::npos)
        << "want '" << want << "' in '" << tether_last_error() << "'";
  }

};

TEST_F(EnumArgsCore, StatusStringAndDtypeSize) {
  for (int v : badValues(TETHER_ERR_TRUNCATED + 1)) EXPECT_STREQ(enum_status_string(v), "TETHER_ERR_(unknown)") << v;
  EXPECT_STREQ(enum_status_string(TETHER_ERR_TIMEOUT), "TETHER_ERR_TIMEOUT");
  for (int v : badValues(TETHER_DTYPE_COUNT)) EXPECT_EQ(enum_dtype_size(v), 0u) << v;
  EXPECT_EQ(enum_dtype_size(TETHER_INT64), 8u);
}

TEST_F(EnumArgsCore, MallocKind) {
  for (int v : badValues(TETHER_SEG_DEVICE + 1)) {
    void* p = reinterpret_cast<void*>(1);
    expectBad(enum_malloc_kind(w_, v, &p), "tether_malloc_kind", "kind", v, "tether_seg_kind_t");
    EXPECT_EQ(p, nullptr);
  }
  void* p = nullptr;
  ASSERT_EQ(enum_malloc_kind(w_, TETHER_SEG_HOST, &p), TETHER_SUCCESS) << tether_last_error();
  EXPECT_EQ(tether_free(w_, p), TETHER_SUCCESS);
}

TEST_F(EnumArgsCore, Atomic) {
  for (int onStream : {0, 1}) {
    const std::string call = onStream ? "tether_atomic_on_stream" : "tether_atomic";
    for (int v : badValues(TETHER_AMO_COUNT))
      expectBad(enum_atomic(w_, v, TETHER_INT64, words_, onStream, stream_), call, "op", v, "tether_amo_t");
    for (int v : badValues(TETHER_DTYPE_COUNT))
      expectBad(enum_atomic(w_, TETHER_AMO_ADD, v, words_, onStream, stream_), call, "type", v, "tether_dtype_t");
    ASSERT_EQ(enum_atomic(w_, TETHER_AMO_ADD, TETHER_INT64, words_, onStream, stream_), TETHER_SUCCESS)
        << tether_last_error();
  }
  sync();
  EXPECT_EQ(words_[0], 2u);
}

TEST_F(EnumArgsCore, WaitAndTestForms) {
  for (int form = 0; form < 14; ++form) {
    for (int v : badValues(TETHER_DTYPE_COUNT))
      expectBad(enum_wait(w_, form, words_, v, TETHER_CMP_EQ), kWaitForms[form], "type", v, "tether_dtype_t");
    for (int v : badValues(TETHER_CMP_LE + 1))
      expectBad(enum_wait(w_, form, words_, TETHER_INT64, v), kWaitForms[form], "cmp", v, "tether_cmp_t");
    EXPECT_EQ(enum_wait(w_, form, words_, TETHER_INT64, TETHER_CMP_EQ), TETHER_SUCCESS)
        << kWaitForms[form] << ": " << tether_last_error();
  }
}

TEST_F(EnumArgsCore, SignalOps) {
  const char* const calls[] = {"tether_put_signal", "tether_put_signal_nbi", "tether_signal_op",
                               "tether_putmem_signal_on_stream", "tether_signal_op_on_stream"};
  for (int form = 0; form < 5; ++form) {
    for (int v : badValues(TETHER_SIGNAL_ADD + 1))
      expectBad(enum_signal_op(w_, form, words_ + 1, words_, v, stream_), calls[form], "sig_op", v,
                "tether_signal_op_t");
    ASSERT_EQ(enum_signal_op(w_, form, words_ + 1, words_, TETHER_SIGNAL_ADD, stream_), TETHER_SUCCESS)
        << calls[form] << ": " << tether_last_error();
  }
  sync();
  ASSERT_EQ(tether_quiet(w_), TETHER_SUCCESS);
  EXPECT_EQ(words_[0], 5u);
  EXPECT_EQ(words_[1], 7u);
}

TEST_F(EnumArgsCore, SignalWaits) {
  const char* const calls[] = {"tether_signal_wait_until", "tether_signal_wait_until_on_stream",
                               "tether_wait_until_on_stream"};
  for (int form = 0; form < 3; ++form) {
    for (int v : badValues(TETHER_CMP_LE + 1))
      expectBad(enum_signal_wait(w_, form, words_, TETHER_UINT64, v, stream_), calls[form], "cmp", v, "tether_cmp_t");
    EXPECT_EQ(enum_signal_wait(w_, form, words_, TETHER_UINT64, TETHER_CMP_EQ, stream_), TETHER_SUCCESS)
        << calls[form] << ": " << tether_last_error();
  }
  for (int v : badValues(TETHER_DTYPE_COUNT))
    expectBad(enum_signal_wait(w_, 2, words_, v, TETHER_CMP_EQ, stream_), "tether_wait_until_on_stream", "type", v,
              "tether_dtype_t");
  sync();
}

TEST_F(EnumArgsCore, PrepareReadsOnlyValidatedFields) {
  tether_op_set_t set = nullptr;
  for (int v : badValues(TETHER_OP_SYNC_ALL + 1)) {
    expectBad(enum_prepare(w_, v, TETHER_SIGNAL_SET, TETHER_CMP_EQ, words_ + 1, words_, &set), "tether_prepare",
              "ops[0].kind", v, "tether_op_kind_t");
    EXPECT_EQ(set, nullptr);
  }
  expectBad(enum_prepare(w_, 0, TETHER_SIGNAL_SET, TETHER_CMP_EQ, words_ + 1, words_, &set), "tether_prepare",
            "ops[0].kind", 0, "tether_op_kind_t");  // kinds start at 1
  for (int kind : {TETHER_OP_PUT_SIGNAL, TETHER_OP_SIGNAL})
    for (int v : badValues(TETHER_SIGNAL_ADD + 1))
      expectBad(enum_prepare(w_, kind, v, TETHER_CMP_EQ, words_ + 1, words_, &set), "tether_prepare",
                "ops[0].sig_op", v, "tether_signal_op_t");
  for (int v : badValues(TETHER_CMP_LE + 1))
    expectBad(enum_prepare(w_, TETHER_OP_SIGNAL_WAIT, TETHER_SIGNAL_SET, v, words_ + 1, words_, &set),
              "tether_prepare", "ops[0].cmp", v, "tether_cmp_t");
  EXPECT_EQ(set, nullptr);
  // Fields the kind does not use are not read: a PUT with garbage sig_op and cmp, a SIGNAL_WAIT with a garbage sig_op.
  ASSERT_EQ(enum_prepare(w_, TETHER_OP_PUT, -1, INT_MIN, words_ + 1, words_, &set), TETHER_SUCCESS)
      << tether_last_error();
  ASSERT_EQ(tether_post_on_stream(set, stream_, nullptr), TETHER_SUCCESS) << tether_last_error();
  EXPECT_EQ(tether_op_set_free(set), TETHER_SUCCESS);
  ASSERT_EQ(enum_prepare(w_, TETHER_OP_SIGNAL_WAIT, -1, TETHER_CMP_EQ, words_ + 1, words_, &set), TETHER_SUCCESS)
      << tether_last_error();
  ASSERT_EQ(tether_post_on_stream(set, stream_, nullptr), TETHER_SUCCESS) << tether_last_error();
  sync();
  EXPECT_EQ(tether_op_set_free(set), TETHER_SUCCESS);
  EXPECT_EQ(words_[1], 7u);
}

}  // namespace
