// GpuStages (core/gpu_stages.h): stages come from the memory kind asked for (GPU memory or pinned host memory), the
// smallest idle one that fits is reused, a busy one never is, and an allocation failure names the user. A pinned
// pool with a budget frees idle stages (the largest first) to make room, never a busy one, and refuses what does not
// fit.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/gpu_stages.h"
#include "null_gpu.h"

using namespace tether;

namespace {

// Allocations only: each is host memory of the fake's own, recorded with its kind.
class AllocGpu final : public NullGpu {
 public:
  std::vector<std::string> kinds;
  bool refuse = false;
  Status allocDevice(size_t n, void** out) override { return alloc("device", n, out); }
  Status allocPinned(size_t n, void** out) override { return alloc("pinned", n, out); }
  std::vector<size_t> freed;  // the sizes freePinned was called with, in order
  Status freePinned(void* p) override {
    for (auto it = blocks_.begin(); it != blocks_.end(); ++it)
      if (it->first.get() == p) {
        freed.push_back(it->second);
        blocks_.erase(it);
        return Status::ok();
      }
    ADD_FAILURE() << "freePinned of a pointer the fake never handed out";
    return Status(TETHER_ERR_INVALID_ARG, "unknown pointer");
  }

 private:
  Status alloc(const char* kind, size_t n, void** out) {
    if (refuse) return Status(TETHER_ERR_NO_MEMORY, "the fake refuses");
    kinds.push_back(std::string(kind) + " " + std::to_string(n));
    blocks_.emplace_back(std::unique_ptr<char[]>(new char[n]), n);
    *out = blocks_.back().first.get();
    return Status::ok();
  }
  std::vector<std::pair<std::unique_ptr<char[]>, size_t>> blocks_;
};

TEST(GpuStages, MemoryKindAndMinimumSize) {
  AllocGpu gpu;
  GpuStages device(1024), pinned(4096, GpuStages::Memory::PinnedHost);
  GpuStages::Stage *a = nullptr, *b = nullptr;
  ASSERT_TRUE(device.acquire(gpu, 100, "test", &a).isOk());
  ASSERT_TRUE(pinned.acquire(gpu, 10000, "test", &b).isOk());
  EXPECT_EQ(gpu.kinds, (std::vector<std::string>{"device 1024", "pinned 10000"}));
  EXPECT_EQ(a->bytes, 1024u);
  EXPECT_EQ(b->bytes, 10000u);
}

TEST(GpuStages, BusyNeverReusedIdleBestFitReused) {
  AllocGpu gpu;
  GpuStages stages(64, GpuStages::Memory::PinnedHost);
  GpuStages::Stage *big = nullptr, *small = nullptr, *again = nullptr;
  ASSERT_TRUE(stages.acquire(gpu, 1000, "test", &big).isOk());
  ASSERT_TRUE(stages.acquire(gpu, 100, "test", &small).isOk());  // big is busy: a new one
  EXPECT_NE(big, small);
  EXPECT_NE(big->p, small->p);
  big->release();
  small->release();
  ASSERT_TRUE(stages.acquire(gpu, 50, "test", &again).isOk());  // both idle: the smaller one
  EXPECT_EQ(again, small);
  GpuStages::Stage* next = nullptr;
  ASSERT_TRUE(stages.acquire(gpu, 500, "test", &next).isOk());  // small busy again; big fits
  EXPECT_EQ(next, big);
  EXPECT_EQ(gpu.kinds.size(), 2u);  // nothing allocated after the first two
  GpuStages::Stage* third = nullptr;
  ASSERT_TRUE(stages.acquire(gpu, 2000, "test", &third).isOk());  // none fits: a third
  EXPECT_EQ(gpu.kinds.back(), "pinned 2000");
}

TEST(GpuStages, RefusalNamesTheUser) {
  AllocGpu gpu;
  gpu.refuse = true;
  GpuStages stages(64, GpuStages::Memory::PinnedHost);
  GpuStages::Stage* s = nullptr;
  const Status st = stages.acquire(gpu, 100, "a pinned stage", &s);
  EXPECT_EQ(st.code(), TETHER_ERR_NO_MEMORY);
  EXPECT_NE(st.message().find("a pinned stage"), std::string::npos) << st.message();
  EXPECT_EQ(s, nullptr);
}

TEST(GpuStages, BudgetFreesIdleStagesLargestFirst) {
  AllocGpu gpu;
  GpuStages stages(64, GpuStages::Memory::PinnedHost, 1000);
  GpuStages::Stage *a = nullptr, *b = nullptr, *c = nullptr, *d = nullptr;
  ASSERT_TRUE(stages.acquire(gpu, 100, "test", &a).isOk());
  ASSERT_TRUE(stages.acquire(gpu, 300, "test", &b).isOk());
  ASSERT_TRUE(stages.acquire(gpu, 400, "test", &c).isOk());
  EXPECT_EQ(stages.heldBytes(), 800u);
  a->release();
  b->release();
  c->release();
  // 500 more: 300 over the budget; freeing the largest idle one (400) is enough, the small ones stay
  ASSERT_TRUE(stages.acquire(gpu, 500, "test", &d).isOk());
  EXPECT_EQ(gpu.freed, (std::vector<size_t>{400}));
  EXPECT_EQ(stages.heldBytes(), 900u);
  EXPECT_EQ(gpu.kinds.back(), "pinned 500");
  GpuStages::Stage* again = nullptr;  // the idle 100 and 300 are still there to reuse
  ASSERT_TRUE(stages.acquire(gpu, 80, "test", &again).isOk());
  EXPECT_EQ(again->bytes, 100u);
  EXPECT_EQ(gpu.kinds.size(), 4u);
}

TEST(GpuStages, BudgetNeverFreesBusyStages) {
  AllocGpu gpu;
  GpuStages stages(64, GpuStages::Memory::PinnedHost, 1000);
  GpuStages::Stage *a = nullptr, *b = nullptr, *c = nullptr;
  ASSERT_TRUE(stages.acquire(gpu, 600, "test", &a).isOk());
  ASSERT_TRUE(stages.acquire(gpu, 200, "test", &b).isOk());
  b->release();
  // 600 busy: 500 more cannot fit even with the idle 200 freed -- refused, and the idle one is not freed for nothing
  const Status st = stages.acquire(gpu, 500, "a pinned stage", &c);
  EXPECT_EQ(st.code(), TETHER_ERR_NO_MEMORY);
  EXPECT_NE(st.message().find("a pinned stage"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("600 held by stages in use"), std::string::npos) << st.message();
  EXPECT_EQ(c, nullptr);
  EXPECT_TRUE(gpu.freed.empty());
  EXPECT_EQ(stages.heldBytes(), 800u);
  // 400 fits once the idle 200 goes
  ASSERT_TRUE(stages.acquire(gpu, 400, "test", &c).isOk());
  EXPECT_EQ(gpu.freed, (std::vector<size_t>{200}));
  EXPECT_EQ(stages.heldBytes(), 1000u);
  EXPECT_TRUE(a->busy.load());
}

TEST(GpuStages, BudgetRefusesWhatIsLargerThanIt) {
  AllocGpu gpu;
  GpuStages stages(64, GpuStages::Memory::PinnedHost, 1000);
  GpuStages::Stage *a = nullptr, *big = nullptr;
  ASSERT_TRUE(stages.acquire(gpu, 100, "test", &a).isOk());
  a->release();
  EXPECT_EQ(stages.acquire(gpu, 1001, "test", &big).code(), TETHER_ERR_NO_MEMORY);
  EXPECT_TRUE(gpu.freed.empty());  // the idle stage stays: freeing it would not have helped
  GpuStages::Stage* exact = nullptr;  // exactly the budget: the idle 100 makes way
  ASSERT_TRUE(stages.acquire(gpu, 1000, "test", &exact).isOk());
  EXPECT_EQ(gpu.freed, (std::vector<size_t>{100}));
}

}  // namespace
