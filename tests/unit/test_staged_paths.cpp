// The staged provider's policy (transport/staged/staged.h) over a fake GPU service: which GPU's stream runs each
// copy, the hop through pinned memory for a buffer on this PE's GPU (chunked, complete on return), nbi completion at
// quiet, signals after earlier copies, atomics on the target GPU, one set of streams per target GPU. The fake models
// what the policy may rely on: a stream's copies land only when that stream is synchronised (or at quiet), and every
// primitive call is recorded in order.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gpu/gpu.h"
#include "transport/provider.h"
#include "transport/staged/staged.h"
#include "transport/transport.h"

namespace tether {
namespace {

class FakeGpu;

struct Event {
  std::string what;  // "stream", "pinned", "copy", "sync", "amo", "signal", "pool-copy", "pool-amo", "pool-signal", "quiet"
  int dev = -1;
  const void* dst = nullptr;
  const void* src = nullptr;
  size_t n = 0;
};

struct Copy {
  void* dst;
  const void* src;
  size_t n;
};

class FakeStream : public GpuStream {
 public:
  FakeStream(std::vector<Event>* log, int dev) : log_(log), dev_(dev) {}
  int device() const override { return dev_; }
  Status copyAsync(void* dst, const void* src, size_t n) override {
    log_->push_back({"copy", dev_, dst, src, n});
    queued_.push_back({dst, src, n});
    return Status::ok();
  }
  Status sync() override {
    log_->push_back({"sync", dev_});
    land();
    return Status::ok();
  }
  Status atomic(void* target, const AmoArgs& a, uint64_t* fetched) override {
    log_->push_back({"amo", dev_, target});
    uint64_t* w = static_cast<uint64_t*>(target);
    if (fetched) *fetched = *w;
    if (a.op == TETHER_AMO_FETCH_ADD || a.op == TETHER_AMO_ADD) *w += a.value;
    return Status::ok();
  }
  Status signal(void* target, uint64_t value, tether_signal_op_t op) override {
    log_->push_back({"signal", dev_, target});
    uint64_t* w = static_cast<uint64_t*>(target);
    *w = op == TETHER_SIGNAL_ADD ? *w + value : value;
    return Status::ok();
  }
  bool pending() const { return !queued_.empty(); }
  void land() {
    for (const Copy& c : queued_) std::memcpy(c.dst, c.src, c.n);
    queued_.clear();
  }

 private:
  std::vector<Event>* log_;
  int dev_;
  std::vector<Copy> queued_;
};

// This PE's GPU is ordinal `me`; the GPU with bus id "0000:0N:00.0" is ordinal N; memory is device memory of the GPU
// it was marked with (onDevice), host memory otherwise.
class FakeGpu : public GpuContext {
 public:
  explicit FakeGpu(int me) : me_(me) {}
  std::vector<Event> log;

  void onDevice(const void* p, size_t n, int dev) { ranges_.push_back({static_cast<const char*>(p), n, dev}); }
  int streamsMade() const { return static_cast<int>(streams_.size()); }
  const void* staging() const { return pinned_.empty() ? nullptr : pinned_.back()->data(); }

  int device() const override { return me_; }
  std::string busId() const override { return "0000:0" + std::to_string(me_) + ":00.0"; }
  Status registerHost(void*, size_t, char**) override { return unsupported(); }
  Status unregisterHost(void*) override { return unsupported(); }
  bool isDeviceMemory(const void* p) override { return deviceOf(p) >= 0; }
  Status copy(void* dst, const void* src, size_t n, bool nbi) override {
    log.push_back({"pool-copy", me_, dst, src, n});
    if (nbi)
      pool_.push_back({dst, src, n});
    else
      std::memcpy(dst, src, n);
    return Status::ok();
  }
  Status settleDefaultStream() override { return Status::ok(); }
  Status quiet() override {
    log.push_back({"quiet", me_});
    for (const Copy& c : pool_) std::memcpy(c.dst, c.src, c.n);
    pool_.clear();
    for (auto& s : streams_)
      if (s->pending()) TETHER_TRY(s->sync());
    return Status::ok();
  }
  Status atomic(void* target, const AmoArgs&, uint64_t*) override {
    log.push_back({"pool-amo", me_, target});
    return Status::ok();
  }
  Status signal(void* target, uint64_t, tether_signal_op_t) override {
    TETHER_TRY(quiet());
    log.push_back({"pool-signal", me_, target});
    return Status::ok();
  }
  bool hostService() const override { return false; }
  Status putSmall(void*, const void*, size_t, bool) override { return Status(TETHER_ERR_UNSUPPORTED, "no service"); }
  Status getSmall(void*, const void*, size_t) override { return Status(TETHER_ERR_UNSUPPORTED, "no service"); }
  void noteGpuShared(int) override {}
  Status deviceByBusId(const std::string& busId, int* dev) override {
    *dev = busId[6] - '0';
    return Status::ok();
  }
  int deviceOf(const void* p) override {
    const char* c = static_cast<const char*>(p);
    for (const Range& r : ranges_)
      if (c >= r.base && c < r.base + r.n) return r.dev;
    return -1;
  }
  Status createStream(int dev, GpuStream** out) override {
    log.push_back({"stream", dev});
    streams_.emplace_back(new FakeStream(&log, dev));
    *out = streams_.back().get();
    return Status::ok();
  }
  Status allocPinned(size_t n, void** out) override {
    log.push_back({"pinned", -1, nullptr, nullptr, n});
    pinned_.emplace_back(new std::vector<char>(n));
    *out = pinned_.back()->data();
    return Status::ok();
  }
  Status memset(void*, int, size_t) override { return unsupported(); }
  Status allocDevice(size_t, void**) override { return unsupported(); }
  Status allocHostMapped(size_t, void**, void**) override { return unsupported(); }
  Status createSibling(std::unique_ptr<GpuContext>*) override { return unsupported(); }
  Status createDeviceHeap(const DeviceHeapParams&, Bootstrap&, std::unique_ptr<DeviceHeap>*) override {
    return unsupported();
  }
  Status exportRegion(const void*, size_t, GpuIpcRef*) override { return unsupported(); }
  Status openRegion(uint64_t, const GpuIpcRef&, char**) override { return unsupported(); }

 private:
  struct Range {
    const char* base;
    size_t n;
    int dev;
  };
  static Status unsupported() { return Status(TETHER_ERR_UNSUPPORTED, "not in the fake"); }
  int me_;
  std::vector<Range> ranges_;
  std::vector<Copy> pool_;
  std::vector<std::unique_ptr<FakeStream>> streams_;
  std::vector<std::unique_ptr<std::vector<char>>> pinned_;
};

// PE 0 on GPU `me`; PE i > 0 on GPU gpus[i - 1].
Topology topology(int me, const std::vector<int>& gpus) {
  Topology t;
  t.pes.resize(gpus.size() + 1);
  for (size_t i = 0; i < t.pes.size(); ++i) {
    const int dev = i == 0 ? me : gpus[i - 1];
    t.pes[i].host = "h";
    t.pes[i].localIndex = static_cast<int>(i);
    t.pes[i].gpu.present = true;
    t.pes[i].gpu.busId = "0000:0" + std::to_string(dev) + ":00.0";
  }
  return t;
}

Connection connectTo(Provider& p, const Topology& t, int peer) {
  Connection c;
  EXPECT_TRUE(p.connect(t, 0, peer, SegKind::Device, &c).isOk());
  EXPECT_EQ(c.ops, &stagedTransportOps());
  return c;
}

RemoteAddr at(void* p) { return RemoteAddr{static_cast<char*>(p), 0, SegKind::Device, nullptr}; }

std::vector<std::string> kinds(const std::vector<Event>& log) {
  std::vector<std::string> k;
  for (const Event& e : log) k.push_back(e.what + (e.dev >= 0 ? std::to_string(e.dev) : ""));
  return k;
}

std::vector<char> pattern(size_t n, int seed) {
  std::vector<char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<char>((i * 131 + static_cast<size_t>(seed)) & 0xff);
  return v;
}

TEST(StagedPath, HostBufferIsOneCopyOnTheTargetGpusStream) {
  FakeGpu gpu(0);
  std::unique_ptr<Provider> p = makeStagedProvider(&gpu);
  const Connection c = connectTo(*p, topology(0, {1}), 1);
  EXPECT_EQ(static_cast<StagedGpu*>(c.ctx)->device(), 1);
  EXPECT_EQ(gpu.streamsMade(), 0) << "nothing is made before the first operation";
  std::vector<char> target(4096, 0), src = pattern(4096, 1);
  gpu.onDevice(target.data(), target.size(), 1);

  ASSERT_TRUE(c.ops->put(c.ctx, 1, at(target.data()), src.data(), src.size(), false).isOk());
  EXPECT_EQ(target, src) << "a blocking put is complete on return";
  EXPECT_EQ(kinds(gpu.log), (std::vector<std::string>{"stream1", "stream0", "pinned", "copy1", "sync1"}));
  EXPECT_EQ(gpu.log[3].dst, target.data());
  EXPECT_EQ(gpu.log[3].src, src.data());

  gpu.log.clear();
  std::vector<char> back(4096, 0);
  ASSERT_TRUE(c.ops->get(c.ctx, 1, back.data(), at(target.data()), back.size(), false).isOk());
  EXPECT_EQ(back, src);
  EXPECT_EQ(kinds(gpu.log), (std::vector<std::string>{"copy1", "sync1"}));
}

TEST(StagedPath, NbiCompletesAtQuiet) {
  FakeGpu gpu(0);
  std::unique_ptr<Provider> p = makeStagedProvider(&gpu);
  const Connection c = connectTo(*p, topology(0, {1}), 1);
  std::vector<char> target(1000, 0), src = pattern(1000, 2);
  gpu.onDevice(target.data(), target.size(), 1);
  ASSERT_TRUE(c.ops->put(c.ctx, 1, at(target.data()), src.data(), src.size(), true).isOk());
  EXPECT_NE(target, src) << "the fake lands a stream's copies only when it is synchronised";
  ASSERT_TRUE(c.ops->quiet(c.ctx).isOk());
  EXPECT_EQ(target, src);
  std::vector<char> src2 = pattern(1000, 3);
  ASSERT_TRUE(c.ops->put(c.ctx, 1, at(target.data()), src2.data(), src2.size(), true).isOk());
  ASSERT_TRUE(c.ops->fence(c.ctx).isOk());
  EXPECT_EQ(target, src2) << "fence completes like quiet";
}

TEST(StagedPath, BufferOnThisGpuHopsThroughPinnedMemoryInChunks) {
  FakeGpu gpu(0);
  std::unique_ptr<Provider> p = makeStagedProvider(&gpu);
  const Connection c = connectTo(*p, topology(0, {1}), 1);
  const size_t n = 2 * StagedGpu::kStageBytes + 100;
  std::vector<char> target(n, 0), mine = pattern(n, 4);
  gpu.onDevice(target.data(), n, 1);
  gpu.onDevice(mine.data(), n, 0);

  ASSERT_TRUE(c.ops->put(c.ctx, 1, at(target.data()), mine.data(), n, true).isOk());
  EXPECT_EQ(target, mine) << "the hop completes on return, nbi or not";
  std::vector<std::string> want{"stream1", "stream0", "pinned"};
  for (int i = 0; i < 3; ++i) want.insert(want.end(), {"copy0", "sync0", "copy1", "sync1"});
  EXPECT_EQ(kinds(gpu.log), want);
  const size_t lens[3] = {StagedGpu::kStageBytes, StagedGpu::kStageBytes, 100};
  for (size_t i = 0; i < 3; ++i) {
    const Event& in = gpu.log[3 + 4 * i];
    const Event& out = gpu.log[5 + 4 * i];
    EXPECT_EQ(in.dst, gpu.staging());
    EXPECT_EQ(in.src, mine.data() + i * StagedGpu::kStageBytes);
    EXPECT_EQ(in.n, lens[i]);
    EXPECT_EQ(out.dst, target.data() + i * StagedGpu::kStageBytes);
    EXPECT_EQ(out.src, gpu.staging());
    EXPECT_EQ(out.n, lens[i]);
  }

  // A get into this GPU's memory: the target GPU's copy engine first, then this GPU's.
  gpu.log.clear();
  std::vector<char> back(n, 0);
  gpu.onDevice(back.data(), n, 0);
  ASSERT_TRUE(c.ops->get(c.ctx, 1, back.data(), at(target.data()), n, false).isOk());
  EXPECT_EQ(back, mine);
  want.clear();
  for (int i = 0; i < 3; ++i) want.insert(want.end(), {"copy1", "sync1", "copy0", "sync0"});
  EXPECT_EQ(kinds(gpu.log), want);
}

TEST(StagedPath, SignalFollowsEarlierCopiesAndRunsOnTheTargetGpu) {
  FakeGpu gpu(0);
  std::unique_ptr<Provider> p = makeStagedProvider(&gpu);
  const Connection c = connectTo(*p, topology(0, {1}), 1);
  std::vector<char> target(64, 0), src = pattern(64, 5);
  uint64_t sig = 7;
  gpu.onDevice(target.data(), target.size(), 1);
  gpu.onDevice(&sig, sizeof sig, 1);
  ASSERT_TRUE(c.ops->put(c.ctx, 1, at(target.data()), src.data(), src.size(), true).isOk());
  gpu.log.clear();
  ASSERT_TRUE(c.ops->signal(c.ctx, 1, at(&sig), 5, TETHER_SIGNAL_ADD).isOk());
  EXPECT_EQ(kinds(gpu.log), (std::vector<std::string>{"quiet0", "sync1", "signal1"}));
  EXPECT_EQ(target, src);
  EXPECT_EQ(sig, 12u);
  ASSERT_TRUE(c.ops->signal(c.ctx, 1, at(&sig), 3, TETHER_SIGNAL_SET).isOk());
  EXPECT_EQ(sig, 3u);
}

TEST(StagedPath, AtomicRunsOnTheTargetGpu) {
  FakeGpu gpu(0);
  std::unique_ptr<Provider> p = makeStagedProvider(&gpu);
  const Connection c = connectTo(*p, topology(0, {1}), 1);
  uint64_t word = 40, old = 0;
  gpu.onDevice(&word, sizeof word, 1);
  ASSERT_TRUE(c.ops->amo(c.ctx, 1, at(&word), AmoArgs{TETHER_AMO_FETCH_ADD, 8, 2, 0}, &old).isOk());
  EXPECT_EQ(old, 40u);
  EXPECT_EQ(word, 42u);
  EXPECT_EQ(kinds(gpu.log), (std::vector<std::string>{"stream1", "stream0", "pinned", "amo1"}));
}

TEST(StagedPath, TargetOnThisGpuUsesTheContextsPool) {
  FakeGpu gpu(0);
  std::unique_ptr<Provider> p = makeStagedProvider(&gpu);
  const Connection c = connectTo(*p, topology(0, {0}), 1);  // device=staged between PEs sharing GPU 0
  std::vector<char> target(256, 0), src = pattern(256, 6);
  uint64_t word = 0;
  gpu.onDevice(target.data(), target.size(), 0);
  ASSERT_TRUE(c.ops->put(c.ctx, 1, at(target.data()), src.data(), src.size(), false).isOk());
  ASSERT_TRUE(c.ops->amo(c.ctx, 1, at(&word), AmoArgs{TETHER_AMO_ADD, 8, 1, 0}, nullptr).isOk());
  ASSERT_TRUE(c.ops->signal(c.ctx, 1, at(&word), 1, TETHER_SIGNAL_SET).isOk());
  EXPECT_EQ(target, src);
  EXPECT_EQ(gpu.streamsMade(), 0);
  EXPECT_EQ(kinds(gpu.log), (std::vector<std::string>{"pool-copy0", "pool-amo0", "quiet0", "pool-signal0"}));
}

TEST(StagedPath, PeersOnOneGpuShareItsStreams) {
  FakeGpu gpu(0);
  std::unique_ptr<Provider> p = makeStagedProvider(&gpu);
  const Topology t = topology(0, {1, 1, 2});
  const Connection c1 = connectTo(*p, t, 1), c2 = connectTo(*p, t, 2), c3 = connectTo(*p, t, 3);
  EXPECT_EQ(c1.ctx, c2.ctx);
  EXPECT_NE(c1.ctx, c3.ctx);
  std::vector<char> a(32, 0), b(32, 0), src = pattern(32, 7);
  gpu.onDevice(a.data(), a.size(), 1);
  gpu.onDevice(b.data(), b.size(), 2);
  ASSERT_TRUE(c1.ops->put(c1.ctx, 1, at(a.data()), src.data(), src.size(), false).isOk());
  ASSERT_TRUE(c2.ops->put(c2.ctx, 2, at(a.data()), src.data(), src.size(), false).isOk());
  EXPECT_EQ(gpu.streamsMade(), 2);
  ASSERT_TRUE(c3.ops->put(c3.ctx, 3, at(b.data()), src.data(), src.size(), false).isOk());
  EXPECT_EQ(gpu.streamsMade(), 4);
  EXPECT_EQ(b, src);
}

}  // namespace
}  // namespace tether
