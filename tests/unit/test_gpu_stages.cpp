// GpuStages (core/gpu_stages.h): stages come from the memory kind asked for (GPU memory or pinned host memory), the
// smallest idle one that fits is reused, a busy one never is, and an allocation failure names the user. A pool with
// a budget refuses a new stage beyond it (and frees nothing).
#include <gtest/gtest.h>

#include <memory>
#include <string>
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

 private:
  Status alloc(const char* kind, size_t n, void** out) {
    if (refuse) return Status(TETHER_ERR_NO_MEMORY, "the fake refuses");
    kinds.push_back(std::string(kind) + " " + std::to_string(n));
    blocks_.emplace_back(new char[n]);
    *out = blocks_.back().get();
    return Status::ok();
  }
  std::vector<std::unique_ptr<char[]>> blocks_;
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

TEST(GpuStages, BudgetRefusesNewStagesBeyondItAndNeverFrees) {
  AllocGpu gpu;
  GpuStages stages(64, GpuStages::Memory::PinnedHost, 1000);
  GpuStages::Stage *a = nullptr, *b = nullptr, *c = nullptr;
  ASSERT_TRUE(stages.acquire(gpu, 600, "test", &a).isOk());
  ASSERT_TRUE(stages.acquire(gpu, 300, "test", &b).isOk());
  EXPECT_EQ(stages.heldBytes(), 900u);
  b->release();
  // 200: no idle stage fits (300 does: best fit takes it, nothing new)
  ASSERT_TRUE(stages.acquire(gpu, 200, "test", &c).isOk());
  EXPECT_EQ(c, b);
  c->release();
  // 400: no idle stage fits, and a new one would bring the pool to 1300: refused, naming the user and the budget
  GpuStages::Stage* d = nullptr;
  const Status st = stages.acquire(gpu, 400, "a pinned stage", &d);
  EXPECT_EQ(st.code(), TETHER_ERR_NO_MEMORY);
  EXPECT_NE(st.message().find("a pinned stage"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("budget of 1000"), std::string::npos) << st.message();
  EXPECT_EQ(d, nullptr);
  EXPECT_EQ(stages.heldBytes(), 900u);
  EXPECT_EQ(gpu.kinds.size(), 2u);
  // exactly up to the budget is allowed
  ASSERT_TRUE(stages.acquire(gpu, 100, "test", &d).isOk());
  EXPECT_EQ(d, b);  // the idle 300 first
  GpuStages::Stage* e = nullptr;
  ASSERT_TRUE(stages.acquire(gpu, 100, "test", &e).isOk());  // both busy: a new 100 makes 1000
  EXPECT_EQ(stages.heldBytes(), 1000u);
  EXPECT_EQ(gpu.kinds.back(), "pinned 100");
  GpuStages::Stage* f = nullptr;
  EXPECT_EQ(stages.acquire(gpu, 1, "test", &f).code(), TETHER_ERR_NO_MEMORY);  // 64 more (the minimum): over
  GpuStages unbounded(64, GpuStages::Memory::PinnedHost);
  ASSERT_TRUE(unbounded.acquire(gpu, 5000, "test", &f).isOk());
  EXPECT_EQ(unbounded.heldBytes(), 5000u);
}

TEST(GpuStages, BudgetRefusesWhatIsLargerThanIt) {
  AllocGpu gpu;
  GpuStages stages(64, GpuStages::Memory::PinnedHost, 1000);
  GpuStages::Stage *small = nullptr, *big = nullptr;
  ASSERT_TRUE(stages.acquire(gpu, 10, "test", &small).isOk());  // 64 held
  EXPECT_EQ(stages.acquire(gpu, 1001, "test", &big).code(), TETHER_ERR_NO_MEMORY);
  EXPECT_EQ(stages.acquire(gpu, ~size_t{0}, "test", &big).code(), TETHER_ERR_NO_MEMORY);  // 64 + that: no wrap-around
  EXPECT_EQ(gpu.kinds.size(), 1u);
  ASSERT_TRUE(stages.acquire(gpu, 936, "test", &big).isOk());
}

}  // namespace
