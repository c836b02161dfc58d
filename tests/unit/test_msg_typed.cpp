// MsgTyped (core/msg_typed.h): typed messages' packed bytes, host buffers (no GPU here), with the CPU emulation of the
// stream layer: make()'s argument checks, the packed size, a pack and an unpack through the host packer against a
// plain reference of the vector layout, an unpack of a shorter message (only what came), the pack enqueued on a
// stream (not before the stream gets there, and from the user's bytes as they are then), and close().
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/msg_typed.h"
#include "core/stream_ops.h"
#include "tether/datatype.h"

namespace tether {
namespace {

constexpr int64_t kBlocks = 5, kLen = 3, kStride = 7;  // a vector of 5 blocks of 3 uint32 every 7

class MsgTypedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ops_ = createCpuStreamOps(10);
    room_.attach({nullptr, [this](StreamOps** so) {
                    *so = ops_.get();
                    return Status::ok();
                  }});
    tether_type_t u32 = nullptr;
    ASSERT_EQ(tether_type_basic(TETHER_BASIC_UINT32, &u32), TETHER_SUCCESS);
    ASSERT_EQ(tether_type_vector(kBlocks, kLen, kStride, u32, &vec_), TETHER_SUCCESS);
    ASSERT_EQ(tether_type_free(&u32), TETHER_SUCCESS);
    ASSERT_EQ(tether_type_commit(vec_), TETHER_SUCCESS);
    user_.resize(2 * kBlocks * kStride);  // room for count 2 (the second instance starts at the vector's extent)
    for (size_t i = 0; i < user_.size(); ++i) user_[i] = static_cast<uint32_t>(1000 + i);
  }
  void TearDown() override {
    room_.close();
    if (vec_) {
      EXPECT_EQ(tether_type_free(&vec_), TETHER_SUCCESS);
    }
  }
  // The packed form of count vectors at user: each instance's blocks in order (the vector's extent is
  // ((kBlocks - 1) * kStride + kLen) elements).
  std::vector<uint32_t> reference(const std::vector<uint32_t>& user, int64_t count) const {
    std::vector<uint32_t> out;
    const int64_t extent = (kBlocks - 1) * kStride + kLen;
    for (int64_t c = 0; c < count; ++c)
      for (int64_t b = 0; b < kBlocks; ++b)
        for (int64_t e = 0; e < kLen; ++e) out.push_back(user[static_cast<size_t>(c * extent + b * kStride + e)]);
    return out;
  }
  std::vector<uint32_t> packed(const MsgTyped::Typed& t) const {
    std::vector<uint32_t> v(t.bytes / sizeof(uint32_t));
    std::memcpy(v.data(), t.packed(), t.bytes);
    return v;
  }

  std::unique_ptr<StreamOps> ops_;
  MsgTyped room_;
  tether_type_t vec_ = nullptr;
  std::vector<uint32_t> user_;
};

TEST_F(MsgTypedTest, MakeChecksItsArguments) {
  std::unique_ptr<MsgTyped::Typed> t;
  Status s = room_.make("call", user_.data(), 1, nullptr, &t);
  EXPECT_EQ(s.code(), TETHER_ERR_INVALID_ARG);
  EXPECT_NE(s.message().find("type is NULL"), std::string::npos) << s.message();
  tether_type_t u32 = nullptr, raw = nullptr;
  ASSERT_EQ(tether_type_basic(TETHER_BASIC_UINT32, &u32), TETHER_SUCCESS);
  ASSERT_EQ(tether_type_vector(2, 1, 2, u32, &raw), TETHER_SUCCESS);  // not committed
  s = room_.make("call", user_.data(), 1, raw, &t);
  EXPECT_EQ(s.code(), TETHER_ERR_INVALID_ARG);
  EXPECT_NE(s.message().find("not committed"), std::string::npos) << s.message();
  s = room_.make("call", user_.data(), -1, vec_, &t);
  EXPECT_EQ(s.code(), TETHER_ERR_INVALID_ARG);
  EXPECT_NE(s.message().find("negative"), std::string::npos) << s.message();
  s = room_.make("call", user_.data(), INT64_MAX / 2, vec_, &t);
  EXPECT_EQ(s.code(), TETHER_ERR_OVERFLOW);
  s = room_.make("call", nullptr, 1, vec_, &t);
  EXPECT_EQ(s.code(), TETHER_ERR_INVALID_ARG);
  EXPECT_FALSE(t);
  EXPECT_TRUE(room_.make("call", nullptr, 0, vec_, &t).isOk());  // nothing to pack: no buffer needed
  ASSERT_TRUE(t);
  EXPECT_EQ(t->bytes, 0u);
  EXPECT_TRUE(room_.pack("call", *t).isOk());
  EXPECT_EQ(tether_type_free(&raw), TETHER_SUCCESS);
  EXPECT_EQ(tether_type_free(&u32), TETHER_SUCCESS);
}

TEST_F(MsgTypedTest, PackAndUnpackOnTheHost) {
  std::unique_ptr<MsgTyped::Typed> t;
  ASSERT_TRUE(room_.make("call", user_.data(), 2, vec_, &t).isOk());
  EXPECT_EQ(t->bytes, 2 * kBlocks * kLen * sizeof(uint32_t));
  EXPECT_EQ(t->gpu, nullptr);
  EXPECT_EQ(t->stage, nullptr);
  ASSERT_TRUE(room_.pack("call", *t).isOk());
  EXPECT_EQ(packed(*t), reference(user_, 2));
  // A progress pass's pack of the same bytes (copy) agrees.
  std::memset(t->packed(), 0, t->bytes);
  ASSERT_TRUE(room_.copy("call", *t, false, t->bytes).isOk());
  EXPECT_EQ(packed(*t), reference(user_, 2));

  // Unpack into a receive buffer: the blocks land, the gaps stay.
  std::vector<uint32_t> dst(user_.size(), 7);
  std::unique_ptr<MsgTyped::Typed> r;
  ASSERT_TRUE(room_.make("call", dst.data(), 2, vec_, &r).isOk());
  std::memcpy(r->packed(), t->packed(), t->bytes);
  ASSERT_TRUE(room_.copy("call", *r, true, r->bytes).isOk());
  std::vector<uint32_t> want(user_.size(), 7);
  const int64_t extent = (kBlocks - 1) * kStride + kLen;
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t b = 0; b < kBlocks; ++b)
      for (int64_t e = 0; e < kLen; ++e) {
        const size_t i = static_cast<size_t>(c * extent + b * kStride + e);
        want[i] = user_[i];
      }
  EXPECT_EQ(dst, want);
}

TEST_F(MsgTypedTest, AShorterMessageUnpacksOnlyWhatCame) {
  std::vector<uint32_t> dst(user_.size(), 7);
  std::unique_ptr<MsgTyped::Typed> r;
  ASSERT_TRUE(room_.make("call", dst.data(), 1, vec_, &r).isOk());
  const std::vector<uint32_t> ref = reference(user_, 1);
  std::memcpy(r->packed(), ref.data(), r->bytes);
  const size_t came = 4 * sizeof(uint32_t);  // the first block and one element of the second
  ASSERT_TRUE(room_.copy("call", *r, true, came).isOk());
  std::vector<uint32_t> want(user_.size(), 7);
  for (size_t i : {0, 1, 2, 7}) want[i] = user_[i];
  EXPECT_EQ(dst, want);
  ASSERT_TRUE(room_.copy("call", *r, true, 0).isOk());  // an empty message into a typed receive
  EXPECT_EQ(dst, want);
}

TEST_F(MsgTypedTest, APackOnAStreamRunsWhenTheStreamGetsThere) {
  void* stream = nullptr;
  ASSERT_TRUE(ops_->createStream(&stream).isOk());
  std::unique_ptr<MsgTyped::Typed> t;
  ASSERT_TRUE(room_.make("call", user_.data(), 1, vec_, &t).isOk());
  std::memset(t->packed(), 0, t->bytes);
  // The stream first waits for a word, then packs: the pack must not run before the word is set, and must read the
  // user's bytes as they are then.
  uint64_t gate = 0;
  ASSERT_TRUE(ops_->hostCall(stream, [&gate] {  // (bounded: 10 s)
                   const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
                   while (__atomic_load_n(&gate, __ATOMIC_ACQUIRE) == 0 && std::chrono::steady_clock::now() < end) {
                   }
                 }).isOk());
  ASSERT_TRUE(room_.onStream("call", *t, stream).isOk());
  EXPECT_EQ(packed(*t), std::vector<uint32_t>(t->bytes / sizeof(uint32_t), 0));  // not yet
  for (auto& v : user_) v += 1;  // before the stream gets there
  __atomic_store_n(&gate, uint64_t{1}, __ATOMIC_RELEASE);
  ASSERT_TRUE(ops_->synchronize(stream).isOk());
  EXPECT_EQ(packed(*t), reference(user_, 1));
  EXPECT_TRUE(ops_->destroyStream(stream).isOk());
}

}  // namespace
}  // namespace tether
