// collCheck (core/coll_check.h): a team collective's local checks alone, with a fake symmetric heap (one buffer of
// this process). The sizes and refs it fills, the in-place forms it recognises, and each refusal: an unknown type, an
// op the type does not take, a root outside the team, a size that overflows, an object outside the heap, elements
// out of alignment, overlapping dest and src outside the in-place forms, alltoallv's arrays.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/coll_check.h"

namespace tether {
namespace {

class CollCheck : public ::testing::Test {
 protected:
  char* at(size_t off) { return heap_ + off; }
  Status check(const CollArgs& a, size_t n = 4, size_t me = 1) {
    CollSymCheck sym;
    sym.fn = &CollCheck::symmetric;
    sym.ctx = heap_;
    return collCheck("t", n, me, a, sym, &p_);
  }
  // The fake heap: heap_ itself (ctx).
  static Status symmetric(const void* ctx, const char* what, const void* addr, uint64_t n, SymRef* ref) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr), b = reinterpret_cast<uintptr_t>(ctx);
    if (a < b || a - b > kHeapBytes || n > kHeapBytes - (a - b))
      return Status(TETHER_ERR_INVALID_ARG, std::string(what) + " is not symmetric");
    *ref = SymRef{SegKind::Host, a - b};
    return Status::ok();
  }
  static CollArgs args(CollKind kind, void* dest, const void* src, size_t count, tether_dtype_t type = TETHER_INT) {
    CollArgs a;
    a.kind = kind;
    a.dest = dest;
    a.src = src;
    a.count = count;
    a.type = type;
    return a;
  }
  static constexpr size_t kHeapBytes = 8192;
  alignas(64) char heap_[kHeapBytes] = {};
  CollPlan p_;
};

TEST_F(CollCheck, SizesRefsAndInPlaceForms) {
  ASSERT_TRUE(check(args(CollKind::Allgather, at(1024), at(64), 3)).isOk());
  EXPECT_EQ(p_.n, 4u);
  EXPECT_EQ(p_.me, 1u);
  EXPECT_EQ(p_.es, sizeof(int));
  EXPECT_EQ(p_.block, 12u);
  EXPECT_EQ(p_.destBytes, 48u);  // every member's block
  EXPECT_EQ(p_.srcBytes, 12u);
  EXPECT_FALSE(p_.inPlace);
  EXPECT_EQ(p_.dref.offset, 1024u);
  EXPECT_EQ(p_.sref.offset, 64u);
  // In place: allgather's src is this member's block of dest; reduce_scatter's dest this member's block of src.
  ASSERT_TRUE(check(args(CollKind::Allgather, at(1024), at(1024 + 12), 3)).isOk());
  EXPECT_TRUE(p_.inPlace);
  ASSERT_TRUE(check(args(CollKind::ReduceScatter, at(1024 + 12), at(1024), 3)).isOk());
  EXPECT_TRUE(p_.inPlace);
  EXPECT_EQ(p_.srcBytes, 48u);
  ASSERT_TRUE(check(args(CollKind::Allreduce, at(256), at(256), 5, TETHER_DOUBLE)).isOk());
  EXPECT_TRUE(p_.inPlace);
  EXPECT_EQ(p_.block, 40u);
  // Nothing moves: no object needed.
  ASSERT_TRUE(check(args(CollKind::Alltoall, nullptr, nullptr, 0)).isOk());
  EXPECT_EQ(p_.block, 0u);
}

TEST_F(CollCheck, RefusesBadArguments) {
  CollArgs a = args(CollKind::Allreduce, at(0), at(512), 4);
  a.type = static_cast<tether_dtype_t>(99);
  EXPECT_EQ(check(a).code(), TETHER_ERR_INVALID_ARG);
  a = args(CollKind::Allreduce, at(0), at(512), 4, TETHER_FLOAT);
  a.op = TETHER_RED_XOR;  // bitwise ops take integer types
  EXPECT_EQ(check(a).code(), TETHER_ERR_INVALID_ARG);
  a = args(CollKind::Broadcast, at(0), at(512), 4);
  a.root = 4;  // a team of 4
  Status s = check(a);
  EXPECT_EQ(s.code(), TETHER_ERR_INVALID_ARG);
  EXPECT_NE(s.message().find("root 4"), std::string::npos) << s.message();
  EXPECT_EQ(check(args(CollKind::Alltoall, at(0), at(512), SIZE_MAX / 2)).code(), TETHER_ERR_OVERFLOW);
  s = check(args(CollKind::Allreduce, at(0), &a, 4));  // src not in the heap
  EXPECT_EQ(s.code(), TETHER_ERR_INVALID_ARG);
  EXPECT_NE(s.message().find("src is not symmetric"), std::string::npos) << s.message();
  EXPECT_EQ(check(args(CollKind::Allreduce, at(2), at(512), 4)).code(), TETHER_ERR_INVALID_ARG);  // misaligned
  s = check(args(CollKind::Allreduce, at(0), at(8), 4));  // 16 bytes each, overlapping, not in place
  EXPECT_EQ(s.code(), TETHER_ERR_INVALID_ARG);
  EXPECT_NE(s.message().find("overlap"), std::string::npos) << s.message();
  a = args(CollKind::Allreduce, at(0), at(512), 4);
  a.invalid = Status(TETHER_ERR_INVALID_ARG, "the caller found a bad enum");
  EXPECT_EQ(check(a).message(), "the caller found a bad enum");
  EXPECT_EQ(check(args(CollKind::Allreduce, at(0), at(512), 1), size_t{1} << 17, 0).code(), TETHER_ERR_UNSUPPORTED);
}

TEST_F(CollCheck, AlltoallvArrays) {
  auto* sc = reinterpret_cast<size_t*>(at(4096));  // scounts and sdispls live in the heap (the receivers read them)
  auto* sd = sc + 4;
  std::vector<size_t> rc = {1, 2, 0, 3}, rd = {0, 1, 100, 3};
  for (size_t m = 0; m < 4; ++m) sc[m] = 2, sd[m] = 2 * m;
  CollArgs a = args(CollKind::Alltoallv, at(0), at(1024), 0);
  a.rcounts = rc.data();
  a.rdispls = rd.data();
  a.scounts = sc;
  a.sdispls = sd;
  ASSERT_TRUE(check(a).isOk());
  EXPECT_EQ(p_.destBytes, 6 * sizeof(int));  // the furthest non-empty block ends at element 6 (rd 100 is empty)
  EXPECT_EQ(p_.srcBytes, 8 * sizeof(int));
  EXPECT_EQ(p_.scRef.offset, 4096u);
  EXPECT_EQ(p_.sdRef.offset, 4096u + 4 * sizeof(size_t));
  CollArgs b = a;
  b.rcounts = nullptr;
  EXPECT_EQ(check(b).code(), TETHER_ERR_INVALID_ARG);
  std::vector<size_t> privateCounts(4, 1);
  b = a;
  b.scounts = privateCounts.data();  // not symmetric
  EXPECT_EQ(check(b).code(), TETHER_ERR_INVALID_ARG);
  rd[3] = SIZE_MAX;
  EXPECT_EQ(check(a).code(), TETHER_ERR_OVERFLOW);
  rd[3] = 3;
  b = a;
  b.src = at(8);  // src's 32 bytes over dest's 24
  EXPECT_EQ(check(b).code(), TETHER_ERR_INVALID_ARG);
}

}  // namespace
}  // namespace tether
