// GoogleTest fixture base: one 1-PE instance shared by the tests of a suite, with the CPU emulation of the stream-op
// layer installed (so the *_on_stream calls and prepared sets run), one emulated stream, and kWords zeroed symmetric
// 64-bit words (HOST heap). Used by test_enum_args_core and test_op.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/stream_ops.h"
#include "tether/tether.h"

template <size_t kWords>
class CpuStreamWorld : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(tether_init(&w_), TETHER_SUCCESS) << tether_last_error();
    std::unique_ptr<tether::StreamOps> ops = tether::createCpuStreamOps(60);
    so_ = ops.get();
    ASSERT_TRUE(tether::useStreamOpsForTesting(w_, std::move(ops)).isOk());
    ASSERT_TRUE(so_->createStream(&stream_).isOk());
    void* p = nullptr;
    ASSERT_EQ(tether_calloc(w_, kWords, sizeof(uint64_t), &p), TETHER_SUCCESS) << tether_last_error();
    words_ = static_cast<uint64_t*>(p);
  }
  static void TearDownTestSuite() {
    if (so_ && stream_) {
      EXPECT_TRUE(so_->destroyStream(stream_).isOk());
    }
    if (words_) {
      EXPECT_EQ(tether_free(w_, words_), TETHER_SUCCESS);
    }
    EXPECT_EQ(tether_finalize(w_), TETHER_SUCCESS);
  }
  void sync() { ASSERT_TRUE(so_->synchronize(stream_).isOk()); }

  static inline tether_t w_ = nullptr;
  static inline tether::StreamOps* so_ = nullptr;
  static inline void* stream_ = nullptr;
  static inline uint64_t* words_ = nullptr;
};
