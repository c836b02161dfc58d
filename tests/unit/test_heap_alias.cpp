// GPU views of HOST segments (SymmetricHeap::hostGpuAlias) exist for same-host PEs only. A network peer's
// localIndex numbers the PEs of ITS host, so translating it like a same-host PE's named a view mapped here -- this
// PE's own segment for the first PE of the other host: stream-ordered puts/gets to a remote PE's HOST segment then
// ran as GPU copies on local memory (wrong data, no error: gpu_netns_stream_2pe, gpu_netns_stress_2pe, issue 19).
// Here: rank 0 of a 2-PE job over two hosts, with a fake GPU context (registerHost returns a recognisable alias)
// and a bootstrap that plays the absent peer (no GPU there: no DEVICE heap).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/config.h"
#include "bootstrap/bootstrap.h"
#include "core/symmetric_heap.h"
#include "gpu/gpu.h"
#include "topology/topology.h"
#include "null_gpu.h"

using namespace tether;

namespace {

constexpr intptr_t kAliasDelta = 0x100000000000;  // fake GPU address = CPU address + this

// Rank 0 of a 2-rank job whose rank 1 contributes zeros (it has no GPU) and never talks.
class LoneBootstrap final : public Bootstrap {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  Status allgather(const void* in, void* out, size_t bytes) override {
    std::memset(out, 0, 2 * bytes);
    std::memcpy(out, in, bytes);
    return Status::ok();
  }
  Status barrier() override { return Status::ok(); }
  Status alltoall(const void* in, void* out, size_t bytes) override {
    std::memset(out, 0, 2 * bytes);
    std::memcpy(out, in, bytes);
    return Status::ok();
  }
  Status broadcast(void*, size_t, int) override { return Status::ok(); }
};

// Registration only: the alias is never dereferenced.
class AliasGpu final : public NullGpu {
 public:
  Status registerHost(void* p, size_t, char** alias) override {
    *alias = static_cast<char*>(p) + kAliasDelta;
    return Status::ok();
  }
  Status unregisterHost(void*) override { return Status::ok(); }
};

// PE 0 (this one, with a GPU) on host-a, PE 1 on host-b (the first and only PE of ITS host).
Topology twoHosts() {
  Topology topo;
  topo.pes.resize(2);
  topo.pes[0].host = "host-a";
  topo.pes[0].localIndex = 0;
  topo.pes[0].gpu.present = true;
  topo.pes[1].host = "host-b";
  topo.pes[1].localIndex = 0;
  return topo;
}

JobInfo rankZero(const char* secret) {
  JobInfo job;
  job.rank = 0;
  job.size = 2;
  job.secret = secret;
  return job;
}

TEST(HeapAlias, NetworkPeerHasNoGpuViewOfItsHostSegment) {
  const Topology topo = twoHosts();
  const JobInfo job = rankZero("test-heap-alias");
  Config config = Config::fromEnvironment();
  config.set("TETHER_HEAP_SIZE", "4M");
  config.set("TETHER_DEFAULT_SEGMENT", "host");
  LoneBootstrap boot;
  AliasGpu gpu;
  SymmetricHeap heap;
  ASSERT_TRUE(heap.setUp(config, job, topo, 0, 1, 5, boot, &gpu).isOk());
  ASSERT_GT(heap.registered(), 0u);

  const SymRef ref{SegKind::Host, 4096};
  char* mine = heap.hostGpuAlias(0, ref);
  EXPECT_EQ(mine, heap.host()->myBase() + 4096 + kAliasDelta) << "this PE's own view: its registered alias";
  EXPECT_EQ(heap.hostGpuAlias(1, ref), nullptr)
      << "PE 1 runs on another host: its HOST segment is not mapped here (got this PE's own view back: "
      << (heap.hostGpuAlias(1, ref) == mine ? "yes" : "no") << ")";
  EXPECT_EQ(heap.hostGpuAlias(1, SymRef{SegKind::Static, 0}), nullptr);
  heap.close();
}

// Growth of the HOST heap: the added range is registered on its own and kept when its GPU address continues the
// view's (nothing unregistered, no quiet: cudaHostUnregister and a synchronize wait for every pending stream wait of
// the context); else the view is registered again as one range, after a quiet, and viewsEpoch moves.
class RecordingGpu final : public NullGpu {
 public:
  explicit RecordingGpu(bool contiguous) : contiguous_(contiguous) {}
  Status registerHost(void* p, size_t n, char** alias) override {
    registers.push_back({static_cast<char*>(p), n});
    // contiguous: one delta for every range; else each range its own (a fresh 1 TiB slot per call)
    const intptr_t delta = contiguous_ ? kAliasDelta : kAliasDelta * static_cast<intptr_t>(registers.size());
    *alias = static_cast<char*>(p) + delta;
    return Status::ok();
  }
  Status unregisterHost(void* p) override {
    unregisters.push_back(static_cast<char*>(p));
    return Status::ok();
  }
  Status quiet() override {
    ++quiets;
    return Status::ok();
  }
  std::vector<std::pair<char*, size_t>> registers;
  std::vector<char*> unregisters;
  int quiets = 0;

 private:
  bool contiguous_;
};

void growHostHeap(bool contiguous) {
  const Topology topo = twoHosts();  // PE 1 without a GPU: no DEVICE heap
  const JobInfo job = rankZero("test-heap-growth");
  Config config = Config::fromEnvironment();
  config.set("TETHER_HEAP_SIZE", "1M");
  config.set("TETHER_HEAP_MAX", "64M");
  config.set("TETHER_DEFAULT_SEGMENT", "host");
  LoneBootstrap boot;
  RecordingGpu gpu(contiguous);
  SymmetricHeap heap;
  const Status up = heap.setUp(config, job, topo, 0, 1, 5, boot, &gpu);
  ASSERT_TRUE(up.isOk()) << up.message();
  const uint64_t before = heap.registered();
  ASSERT_EQ(gpu.registers.size(), 1u);
  char* base = heap.host()->myBase();
  EXPECT_EQ(gpu.registers[0].first, base);
  const uint64_t epoch = heap.viewsEpoch();
  const int quiets = gpu.quiets;

  uint64_t off = 0;
  ASSERT_TRUE(heap.allocator(SegKind::Host).allocate(4u << 20, 64, &off).isOk());
  Status local;
  ASSERT_TRUE(heap.commit("test", SegKind::Host, off, 0, &local).isOk());
  ASSERT_TRUE(local.isOk()) << local.message();
  ASSERT_TRUE(heap.registerGrowth().isOk());
  ASSERT_GT(heap.registered(), before);
  ASSERT_GE(heap.registered(), off + (4u << 20));

  const SymRef early{SegKind::Host, 4096}, late{SegKind::Host, off + 100};
  if (contiguous) {
    ASSERT_EQ(gpu.registers.size(), 2u);
    EXPECT_EQ(gpu.registers[1].first, base + before) << "only the added range is registered";
    EXPECT_EQ(gpu.registers[1].second, heap.registered() - before);
    EXPECT_TRUE(gpu.unregisters.empty()) << "nothing registered before is unregistered";
    EXPECT_EQ(gpu.quiets, quiets) << "no quiet: nothing registered before changes";
    EXPECT_EQ(heap.viewsEpoch(), epoch);
    EXPECT_EQ(heap.hostGpuAlias(0, early), base + 4096 + kAliasDelta);
    EXPECT_EQ(heap.hostGpuAlias(0, late), base + off + 100 + kAliasDelta);
  } else {
    // the added range (its own delta), then both dropped and the view registered again as one range
    ASSERT_EQ(gpu.registers.size(), 3u);
    EXPECT_EQ(gpu.registers[1].first, base + before);
    EXPECT_EQ(gpu.registers[2].first, base);
    EXPECT_EQ(gpu.registers[2].second, heap.registered());
    ASSERT_EQ(gpu.unregisters.size(), 2u);
    EXPECT_EQ(gpu.unregisters[0], base);
    EXPECT_EQ(gpu.unregisters[1], base + before);
    EXPECT_EQ(gpu.quiets, quiets + 1) << "copies in flight end before the view is registered again";
    EXPECT_EQ(heap.viewsEpoch(), epoch + 1) << "prepared stream plans translate again";
    const intptr_t delta = kAliasDelta * 3;
    EXPECT_EQ(heap.hostGpuAlias(0, early), base + 4096 + delta);
    EXPECT_EQ(heap.hostGpuAlias(0, late), base + off + 100 + delta);
  }
  heap.close();
}

TEST(HeapAlias, GrowthRegistersOnlyTheAddedRangeWhenItsAliasContinues) { growHostHeap(true); }
TEST(HeapAlias, GrowthRegistersTheViewAgainWhenTheAliasDoesNotContinue) { growHostHeap(false); }

}  // namespace
