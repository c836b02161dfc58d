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

TEST(HeapAlias, NetworkPeerHasNoGpuViewOfItsHostSegment) {
  Topology topo;
  topo.pes.resize(2);
  topo.pes[0].host = "host-a";
  topo.pes[0].localIndex = 0;
  topo.pes[0].gpu.present = true;
  topo.pes[1].host = "host-b";
  topo.pes[1].localIndex = 0;  // first (only) PE of ITS host
  JobInfo job;
  job.rank = 0;
  job.size = 2;
  job.secret = "test-heap-alias";
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

}  // namespace
