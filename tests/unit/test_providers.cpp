// Transport providers and the path table (src/transport/provider.h, path_table.h): the registry takes the cheapest
// available provider, TETHER_PATHS forces one, an unreachable PE gets the UNREACHABLE message, the local registry
// chooses exactly what the closed switch of World::setUpPaths chose, and the remote-key exchange hands every PE the
// key each peer's provider registered (2-4 PEs as threads over the TCP bootstrap).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "transport/path_table.h"
#include "transport/provider.h"
#include "transport/ucx/ucx.h"

using namespace tether;

#ifndef TETHER_TOPO_DIR
#error "TETHER_TOPO_DIR must name tests/unit/topologies"
#endif

namespace {

Topology load(const std::string& name) {
  std::ifstream f(std::string(TETHER_TOPO_DIR) + "/" + name);
  std::stringstream ss;
  ss << f.rdbuf();
  Topology t;
  Status s = Topology::parse(ss.str(), &t);
  EXPECT_TRUE(s.isOk()) << name << ": " << s.message();
  if (t.pairs.empty()) t.pairs.assign(t.pes.size() * t.pes.size(), PairRecord{});
  return t;
}

PathOverrides overrides(const char* spec) {
  PathOverrides o;
  EXPECT_TRUE(PathOverrides::parse(spec, &o).isOk()) << spec;
  return o;
}

// A provider with a fixed answer; counts progress calls; registers "<tag>:<kind>:<bytes>" as its key when keyed.
class FakeProvider final : public Provider {
 public:
  FakeProvider(const char* name, bool available, int cost, std::string keyTag = "")
      : name_(name), available_(available), cost_(cost), keyTag_(std::move(keyTag)) {}
  const char* name() const override { return name_; }
  Status probe(const Topology&, int, int, SegKind, const PathOverrides&, ProbeResult* out) const override {
    *out = ProbeResult{available_, cost_, PathKind::Shm, std::string(name_) + (available_ ? " can" : " cannot")};
    return Status::ok();
  }
  Status connect(const Topology&, int, int, SegKind, Connection* out) override {
    *out = Connection{&shmTransportOps(), this};
    return Status::ok();
  }
  Status registerSegment(SegKind kind, const void*, uint64_t bytes, std::vector<char>* key) override {
    key->clear();
    if (keyTag_.empty()) return Status::ok();
    const std::string k = keyTag_ + ":" + segKindName(kind) + ":" + std::to_string(bytes);
    key->assign(k.begin(), k.end());
    return Status::ok();
  }
  bool progress() override {
    progressed.fetch_add(1);
    return false;
  }
  std::atomic<int> progressed{0};

 private:
  const char* name_;
  bool available_;
  int cost_;
  std::string keyTag_;
};

std::string chosenName(const ProviderRegistry& r, const Topology& t, int me, int pe, SegKind k,
                       const PathOverrides& ov, Status* s = nullptr, ProbeResult* res = nullptr) {
  size_t i = 0;
  ProbeResult p;
  Status st = r.choose(t, me, pe, k, ov, &i, &p);
  if (s) *s = st;
  if (res) *res = p;
  return st.isOk() ? r.at(i).name() : "";
}

// The registry a World with (gpu) or without a GPU context builds; probes never touch the context.
ProviderRegistry localRegistry(bool gpu) {
  ProviderRegistry r;
  if (gpu) {
    r.add(makeP2pProvider(nullptr));
    r.add(makeStagedProvider(nullptr));
  }
  r.add(makeShmProvider());
  return r;
}

}  // namespace

TEST(ProviderRegistry, CheapestAvailableWins) {
  const Topology t = load("h200x2_nv18.topo");
  const PathOverrides ov;
  ProviderRegistry r;
  r.add(std::unique_ptr<Provider>(new FakeProvider("dear", true, 50)));
  r.add(std::unique_ptr<Provider>(new FakeProvider("free-but-absent", false, 1)));
  r.add(std::unique_ptr<Provider>(new FakeProvider("cheap", true, 10)));
  r.add(std::unique_ptr<Provider>(new FakeProvider("cheap-too", true, 10)));  // tie: registry order keeps "cheap"
  ProbeResult p;
  EXPECT_EQ(chosenName(r, t, 0, 1, SegKind::Host, ov, nullptr, &p), "cheap");
  EXPECT_EQ(p.reason, "cheap can");
  EXPECT_EQ(p.cost, 10);
}

TEST(ProviderRegistry, UnavailableEverywhereIsUnreachable) {
  const Topology t = load("two_hosts.topo");
  const PathOverrides ov;
  for (bool gpu : {false, true}) {
    SCOPED_TRACE(gpu ? "with GPU" : "without GPU");
    ProviderRegistry r = localRegistry(gpu);
    Status s;
    EXPECT_EQ(chosenName(r, t, 0, 1, SegKind::Host, ov, &s), "");
    EXPECT_EQ(s.code(), TETHER_ERR_UNREACHABLE);
    PathChoice c;
    ASSERT_TRUE(choosePath(t, 0, 1, SegKind::Host, ov, &c).isOk());
    EXPECT_EQ(s.message(), "no usable path from PE 0 to the HOST segment of PE 1: " + c.reason);
    EXPECT_NE(s.message().find("runs on another host"), std::string::npos) << s.message();
  }
  ProviderRegistry none;
  none.add(std::unique_ptr<Provider>(new FakeProvider("never", false, 1)));
  Status s;
  chosenName(none, t, 0, 1, SegKind::Device, ov, &s);
  EXPECT_EQ(s.code(), TETHER_ERR_UNREACHABLE);
  EXPECT_EQ(s.message(), "no usable path from PE 0 to the DEVICE segment of PE 1: never cannot");
}

TEST(ProviderRegistry, OverrideForcesAProvider) {
  const Topology nv = load("h200x2_nv18.topo");
  ProviderRegistry r = localRegistry(true);
  EXPECT_EQ(chosenName(r, nv, 0, 1, SegKind::Device, overrides("auto")), "p2p");
  ProbeResult p;
  EXPECT_EQ(chosenName(r, nv, 0, 1, SegKind::Device, overrides("device=staged"), nullptr, &p), "staged");
  EXPECT_EQ(p.path, PathKind::Staged);
  EXPECT_NE(p.reason.find("forced by TETHER_PATHS device=staged"), std::string::npos) << p.reason;
  EXPECT_EQ(chosenName(r, nv, 0, 1, SegKind::Device, overrides("device=p2p"), nullptr, &p), "p2p");
  EXPECT_NE(p.reason.find("forced by TETHER_PATHS device=p2p"), std::string::npos) << p.reason;
  // An impossible override fails as choosePath does.
  const Topology split = load("no_peer_access.topo");
  Status s;
  EXPECT_EQ(chosenName(r, split, 0, 1, SegKind::Device, overrides("device=p2p"), &s), "");
  EXPECT_EQ(s.code(), TETHER_ERR_INVALID_ARG);
  EXPECT_NE(s.message().find("device=p2p is impossible"), std::string::npos) << s.message();
}

// Every recorded topology, pair, segment kind and override: the registry picks the provider, path kind and reason
// the closed switch of the old World::setUpPaths picked (self/shm/p2p: p2p ops with a GPU context, else shm;
// staged: staged; none: TETHER_ERR_UNREACHABLE).
TEST(ProviderRegistry, LocalRegistryMatchesTheOldSwitch) {
  int checked = 0;
  for (const char* file : {"h200x2_nv18.topo", "h200x2_vm_recorded.topo", "mixed_gpu_nogpu.topo", "no_peer_access.topo",
                           "pcie_only.topo", "shared_gpu.topo", "two_hosts.topo"}) {
    const Topology t = load(file);
    for (const char* spec : {"auto", "host=shm", "device=staged", "device=p2p"}) {
      const PathOverrides ov = overrides(spec);
      for (int me = 0; me < t.size(); ++me) {
        const bool gpu = t.pes[static_cast<size_t>(me)].gpu.present;
        ProviderRegistry r = localRegistry(gpu);
        for (int pe = 0; pe < t.size(); ++pe)
          for (SegKind k : {SegKind::Host, SegKind::Device}) {
            SCOPED_TRACE(std::string(file) + " " + spec + " " + std::to_string(me) + "->" + std::to_string(pe) + " " +
                         segKindName(k));
            PathChoice c;
            const Status want = choosePath(t, me, pe, k, ov, &c);
            Status s;
            ProbeResult p;
            const std::string name = chosenName(r, t, me, pe, k, ov, &s, &p);
            ++checked;
            if (!want.isOk()) {
              EXPECT_EQ(s.code(), want.code());
              EXPECT_EQ(s.message(), want.message());
              continue;
            }
            if (c.kind == PathKind::None || c.kind == PathKind::Net) {  // the network path: no local provider
              EXPECT_EQ(s.code(), TETHER_ERR_UNREACHABLE);
              EXPECT_EQ(s.message(), strprintf("no usable path from PE %d to the %s segment of PE %d: %s", me,
                                               segKindName(k), pe, c.reason.c_str()));
              continue;
            }
            ASSERT_TRUE(s.isOk()) << s.message();
            EXPECT_EQ(name, c.kind == PathKind::Staged ? "staged" : gpu ? "p2p" : "shm");
            EXPECT_EQ(p.path, c.kind);
            EXPECT_EQ(p.reason, c.reason);
          }
      }
    }
  }
  EXPECT_GE(checked, 7 * 4 * 2 * 2 * 2);  // files x overrides x (me, pe) pairs of 2 PEs x kinds
}

// The World's registry: the local providers, then ucx. Same-host pairs keep their local provider unless
// TETHER_PATHS host=ucx; PEs on another host get ucx for HOST/STATIC segments (a UCX build) or fail naming the
// missing UCX (a build without it); a remote DEVICE segment needs UCX with CUDA memory support on both PEs, which a
// provider that has not run start() (no CUDA record) never has: UNREACHABLE naming the fix.
TEST(ProviderRegistry, NetworkPathGoesToUcx) {
  auto withUcx = [](bool gpu) {
    ProviderRegistry r = localRegistry(gpu);
    r.add(makeUcxProvider(UcxOptions{}));
    return r;
  };
  const Topology split = load("two_hosts.topo");
  const Topology nv = load("h200x2_nv18.topo");
  for (bool gpu : {false, true}) {
    SCOPED_TRACE(gpu ? "gpu" : "no gpu");
    ProviderRegistry r = withUcx(gpu);
    Status s;
    ProbeResult p;
    const std::string name = chosenName(r, split, 0, 1, SegKind::Host, overrides("auto"), &s, &p);
    if (s.isOk()) {  // built with UCX
      EXPECT_EQ(name, "ucx");
      EXPECT_EQ(p.path, PathKind::Net);
      EXPECT_NE(p.reason.find("another host"), std::string::npos) << p.reason;
      EXPECT_EQ(chosenName(r, split, 0, 1, SegKind::Static, overrides("auto")), "ucx");
      chosenName(r, split, 1, 0, SegKind::Device, overrides("auto"), &s, &p);
      EXPECT_EQ(s.code(), TETHER_ERR_UNREACHABLE) << s.message();
      EXPECT_NE(s.message().find("on PE 1 this UCX has no CUDA memory support: build tether against a CUDA-aware "
                                 "UCX, e.g. the libucx-cu13 wheel"), std::string::npos) << s.message();
      EXPECT_EQ(chosenName(r, nv, 0, 1, SegKind::Host, overrides("host=ucx"), &s, &p), "ucx");
      EXPECT_NE(p.reason.find("TETHER_PATHS host=ucx"), std::string::npos) << p.reason;
    } else {
      EXPECT_EQ(s.code(), TETHER_ERR_UNREACHABLE);
      EXPECT_NE(s.message().find("another host"), std::string::npos) << s.message();
      EXPECT_NE(s.message().find("tether was built without UCX (install libucx-dev and rebuild)"),
                std::string::npos) << s.message();
    }
  }
  // Local pairs are untouched by ucx: self, shm/p2p, and DEVICE segments even with host=ucx.
  ProviderRegistry g = withUcx(true);
  EXPECT_EQ(chosenName(g, nv, 0, 0, SegKind::Host, overrides("host=ucx")), "p2p");
  EXPECT_EQ(chosenName(g, nv, 0, 1, SegKind::Host, overrides("auto")), "p2p");
  EXPECT_EQ(chosenName(g, nv, 0, 1, SegKind::Device, overrides("host=ucx")), "p2p");
  const Topology mixed = load("mixed_gpu_nogpu.topo");  // PE 1 has no GPU
  ProviderRegistry c = withUcx(false);
  EXPECT_EQ(chosenName(c, mixed, 1, 1, SegKind::Host, overrides("host=ucx")), "shm");
  EXPECT_EQ(chosenName(c, mixed, 1, 0, SegKind::Host, overrides("auto")), "shm");
}

// The ucx probe for a DEVICE segment on another host, over the CUDA record start() exchanges (cudaPes): served only
// when both PEs' UCX moves CUDA memory; otherwise unavailable, serving the path (its reason is the error), naming
// the PE that lacks it and the fix. Both PEs of the pair get the same verdict.
TEST(UcxProbe, DeviceAcrossHostsNeedsCudaOnBothPes) {
  const Topology split = load("two_hosts.topo");
  const std::string fix = "this UCX has no CUDA memory support: build tether against a CUDA-aware UCX, e.g. the "
                          "libucx-cu13 wheel";
  const std::vector<std::vector<uint8_t>> records = {{}, {0, 0}, {1, 0}, {0, 1}, {1, 1}};
  for (const std::vector<uint8_t>& cuda : records) {
    for (int me : {0, 1}) {
      SCOPED_TRACE(testing::Message() << "cuda record size " << cuda.size() << ", me " << me);
      auto has = [&](int pe) { return static_cast<size_t>(pe) < cuda.size() && cuda[static_cast<size_t>(pe)]; };
      const int lacking = !has(me) ? me : !has(1 - me) ? 1 - me : -1;  // the PE the reason names (-1: served)
      ProbeResult p;
      ASSERT_TRUE(ucxProbe(split, me, 1 - me, SegKind::Device, overrides("auto"), "", cuda, &p).isOk());
      EXPECT_EQ(p.available, lacking < 0);
      EXPECT_EQ(p.path, PathKind::Net);
      if (lacking < 0) {
        EXPECT_NE(p.reason.find("another host"), std::string::npos) << p.reason;
        EXPECT_NE(p.reason.find("CUDA memory"), std::string::npos) << p.reason;
      } else {
        EXPECT_TRUE(p.serves);
        EXPECT_NE(p.reason.find(strprintf("on PE %d %s", lacking, fix.c_str())), std::string::npos) << p.reason;
      }
      // HOST segments do not depend on it.
      ASSERT_TRUE(ucxProbe(split, me, 1 - me, SegKind::Host, overrides("auto"), "", cuda, &p).isOk());
      EXPECT_TRUE(p.available);
    }
  }
  // A peer without a GPU has no DEVICE segment to serve.
  Topology noGpu = split;
  noGpu.pes[1].gpu.present = false;
  ProbeResult p;
  ASSERT_TRUE(ucxProbe(noGpu, 0, 1, SegKind::Device, overrides("auto"), "", {1, 1}, &p).isOk());
  EXPECT_FALSE(p.available);
  EXPECT_NE(p.reason.find("PE 1 has no GPU"), std::string::npos) << p.reason;
}

// ---- the path table over several PEs (threads, TCP bootstrap on loopback) ------------------------------------------

namespace {

int listenLoopback(int* port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 64) != 0) return -1;
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

// Counts allgathers (the key exchange must run even when every key is empty).
class CountingBootstrap final : public Bootstrap {
 public:
  explicit CountingBootstrap(std::unique_ptr<Bootstrap> b) : b_(std::move(b)) {}
  int rank() const override { return b_->rank(); }
  int size() const override { return b_->size(); }
  Status allgather(const void* in, void* out, size_t bytes) override {
    ++allgathers;
    return b_->allgather(in, out, bytes);
  }
  Status barrier() override { return b_->barrier(); }
  Status alltoall(const void* in, void* out, size_t bytes) override { return b_->alltoall(in, out, bytes); }
  Status broadcast(void* buf, size_t bytes, int root) override { return b_->broadcast(buf, bytes, root); }
  int allgathers = 0;

 private:
  std::unique_ptr<Bootstrap> b_;
};

// n PEs of one host without GPUs.
Topology oneHost(int n) {
  Topology t;
  for (int i = 0; i < n; ++i) {
    PeRecord p;
    p.host = "box/boot";
    p.localIndex = i;
    t.pes.push_back(p);
  }
  t.pairs.assign(static_cast<size_t>(n * n), PairRecord{});
  return t;
}

std::string keyOf(const SegPath& p) { return p.key ? std::string(p.key->data, p.key->size) : "<null>"; }

// Runs body(rank, bootstrap) on n threads, each a PE of one job; returns the errors (empty: all passed).
template <typename Body>
std::string runPes(int n, Body body) {
  int port = 0;
  const int lfd = listenLoopback(&port);
  if (lfd < 0) return "no loopback socket";
  std::vector<std::string> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      JobInfo job;
      job.rank = r;
      job.size = n;
      job.bootstrapAddr = "127.0.0.1:" + std::to_string(port);
      job.secret = "provider-test";
      job.listenFd = r == 0 ? lfd : -1;
      job.launcher = "explicit";
      std::unique_ptr<Bootstrap> b;
      Status s = createTcpBootstrap(job, 30, &b);
      if (!s.isOk()) {
        errors[static_cast<size_t>(r)] = "bootstrap: " + s.message();
        return;
      }
      CountingBootstrap cb(std::move(b));
      errors[static_cast<size_t>(r)] = body(r, cb);
    });
  for (auto& t : threads) t.join();
  std::string all;
  for (int r = 0; r < n; ++r)
    if (!errors[static_cast<size_t>(r)].empty()) all += "PE " + std::to_string(r) + ": " + errors[static_cast<size_t>(r)] + "\n";
  return all;
}

}  // namespace

TEST(PathTable, KeyExchangeRoundTripsBlobs) {
  for (int n : {2, 3, 4}) {
    SCOPED_TRACE(std::to_string(n) + " PEs");
    const std::string errors = runPes(n, [n](int r, CountingBootstrap& boot) -> std::string {
      const Topology t = oneHost(n);
      std::vector<char> host(4096), dev(8192);
      SegmentMap segs[kSegKinds];
      segs[0] = {true, host.data(), 4096 + static_cast<uint64_t>(r), [&](int) { return host.data(); }};
      segs[1] = {true, dev.data(), 8192, [&](int) { return dev.data(); }};
      ProviderRegistry reg;
      // Cheap and keyed: serves every path; PE r's key names it. The shm provider registers nothing.
      auto* keyed = new FakeProvider("keyed", true, 1, "pe" + std::to_string(r));
      reg.add(std::unique_ptr<Provider>(keyed));
      reg.add(makeShmProvider());
      PathTable table;
      Status s = table.setUp(t, r, PathOverrides{}, std::move(reg), segs, boot);
      if (!s.isOk()) return "setUp: " + s.message();
      if (!table.hasRemoteKeys()) return "hasRemoteKeys false";
      for (int pe = 0; pe < n; ++pe) {
        const std::string wantHost = "pe" + std::to_string(pe) + ":HOST:" + std::to_string(4096 + pe);
        const std::string wantDev = "pe" + std::to_string(pe) + ":DEVICE:8192";
        if (keyOf(table.path(pe, SegKind::Host)) != wantHost)
          return "HOST key of PE " + std::to_string(pe) + ": " + keyOf(table.path(pe, SegKind::Host));
        if (keyOf(table.path(pe, SegKind::Device)) != wantDev)
          return "DEVICE key of PE " + std::to_string(pe) + ": " + keyOf(table.path(pe, SegKind::Device));
        if (std::string(table.path(pe, SegKind::Host).provider->name()) != "keyed") return "provider not keyed";
      }
      // Growth: every PE re-registers (a new size) and the peers see the new keys.
      s = table.segmentsGrew(SegKind::Host, host.data(), 100000 + static_cast<uint64_t>(r), boot);
      if (!s.isOk()) return "segmentsGrew: " + s.message();
      for (int pe = 0; pe < n; ++pe) {
        const std::string want = "pe" + std::to_string(pe) + ":HOST:" + std::to_string(100000 + pe);
        if (keyOf(table.path(pe, SegKind::Host)) != want)
          return "HOST key after growth of PE " + std::to_string(pe) + ": " + keyOf(table.path(pe, SegKind::Host));
      }
      // STATIC mirrors HOST (same provider), keyless until exchanged.
      table.mirror(SegKind::Host, SegKind::Static, [&](int) { return host.data(); });
      if (table.path((r + 1) % n, SegKind::Static).key) return "mirrored STATIC path kept the HOST key";
      s = table.segmentsGrew(SegKind::Static, host.data(), 64, boot);
      if (!s.isOk()) return "segmentsGrew(STATIC): " + s.message();
      if (keyOf(table.path((r + 1) % n, SegKind::Static)) != "pe" + std::to_string((r + 1) % n) + ":STATIC:64")
        return "STATIC key: " + keyOf(table.path((r + 1) % n, SegKind::Static));
      // progress reaches the providers in use.
      const int before = keyed->progressed.load();
      table.progress();
      if (keyed->progressed.load() != before + 1) return "progress did not reach the keyed provider";
      return "";
    });
    EXPECT_EQ(errors, "");
  }
}

TEST(PathTable, LocalProvidersExchangeEmptyKeys) {
  const std::string errors = runPes(3, [](int r, CountingBootstrap& boot) -> std::string {
    const Topology t = oneHost(3);
    std::vector<char> host(4096);
    SegmentMap segs[kSegKinds];
    segs[0] = {true, host.data(), 4096, [&](int) { return host.data(); }};
    PathTable table;
    Status s = table.setUp(t, r, PathOverrides{}, localRegistry(false), segs, boot);
    if (!s.isOk()) return "setUp: " + s.message();
    if (boot.allgathers != 1) return "expected one key-exchange allgather, saw " + std::to_string(boot.allgathers);
    if (table.hasRemoteKeys()) return "hasRemoteKeys true without keys";
    for (int pe = 0; pe < 3; ++pe) {
      const SegPath& p = table.path(pe, SegKind::Host);
      if (p.key) return "a local path has a key";
      if (p.ops != &shmTransportOps() || p.kind != (pe == r ? PathKind::Self : PathKind::Shm)) return "wrong path";
      if (p.base != host.data()) return "wrong base";
    }
    if (!table.quiet().isOk() || !table.fence().isOk()) return "quiet/fence";
    table.progress();
    return "";
  });
  EXPECT_EQ(errors, "");
}

// A same-host path whose ops are not load/store (staged: the peer's DEVICE segment is mapped here for the owner's GPU,
// whose copy engine the ops drive) keeps the peer's base; only the network path has none. (Until this test, the table
// set the base only for load/store ops: every staged put got a null address, gpu_rma_staged failed on 4xH100.)
// (only: the one segment kind it serves; by default every kind.)
class KindProvider final : public Provider {
 public:
  KindProvider(PathKind kind, const TransportOps* ops, int only = -1) : kind_(kind), ops_(ops), only_(only) {}
  const char* name() const override { return ops_->name; }
  Status probe(const Topology&, int, int, SegKind k, const PathOverrides&, ProbeResult* out) const override {
    *out = ProbeResult{only_ < 0 || static_cast<int>(k) == only_, 1, kind_, "test"};
    return Status::ok();
  }
  Status connect(const Topology&, int, int, SegKind, Connection* out) override {
    *out = Connection{ops_, nullptr};
    return Status::ok();
  }

 private:
  PathKind kind_;
  const TransportOps* ops_;
  int only_;
};

TEST(PathTable, MappedPathsKeepTheirBaseWithoutLoadStore) {
  for (PathKind kind : {PathKind::Staged, PathKind::Net}) {
    const std::string errors = runPes(2, [kind](int r, CountingBootstrap& boot) -> std::string {
      const Topology t = oneHost(2);
      std::vector<char> host(4096);
      SegmentMap segs[kSegKinds];
      segs[0] = {true, host.data(), 4096, [&](int) { return host.data(); }};
      ProviderRegistry reg;
      reg.add(std::unique_ptr<Provider>(new KindProvider(kind, &stagedTransportOps())));
      PathTable table;
      Status s = table.setUp(t, r, PathOverrides{}, std::move(reg), segs, boot);
      if (!s.isOk()) return "setUp: " + s.message();
      const SegPath& p = table.path(1 - r, SegKind::Host);
      if (kind == PathKind::Staged && p.base != host.data()) return "staged path lost its base";
      if (kind == PathKind::Net && p.base) return "network path has a base";
      return "";
    });
    EXPECT_EQ(errors, "") << pathKindName(kind);
  }
}

namespace {

// getMany's fake transports (served by KindProvider, above): HOST paths through ops with getv, DEVICE paths through
// ops without; each call recorded.
struct GetLog {
  std::vector<size_t> getvSizes;  // items per getv call
  std::vector<int> getvPes;       // the PE of each item, in the order getv received them
  int gets = 0;                   // blocking gets
  bool failGetv = false;
};
thread_local GetLog* tGetLog = nullptr;

Status fakeGet(void*, int, void* dst, const RemoteAddr& src, size_t n, bool) {
  ++tGetLog->gets;
  std::memcpy(dst, src.ptr, n);
  return Status::ok();
}
Status fakeGetv(void*, const GetItem* items, size_t count) {
  tGetLog->getvSizes.push_back(count);
  for (size_t i = 0; i < count; ++i) {
    tGetLog->getvPes.push_back(items[i].pe);
    std::memcpy(items[i].dst, items[i].src.ptr, items[i].n);
  }
  return tGetLog->failGetv ? Status(TETHER_ERR_UNREACHABLE, "getv failed") : Status::ok();
}
TransportOps withGetv() {
  TransportOps o{};
  o.name = "with-getv";
  o.get = fakeGet;
  o.getv = fakeGetv;
  return o;
}
TransportOps withoutGetv() {
  TransportOps o{};
  o.name = "without-getv";
  o.get = fakeGet;
  return o;
}
const TransportOps kWithGetv = withGetv(), kWithoutGetv = withoutGetv();

}  // namespace

// PathTable::getMany: a batch spread over two transport contexts is one getv for the context that has it (its items
// in batch order) and one blocking get per item for the one that has not; every dst is written; a getv failure is
// returned while the other context's gets still run.
TEST(PathTable, GetManyBatchesByContext) {
  const std::string errors = runPes(3, [](int r, CountingBootstrap& boot) -> std::string {
    const Topology t = oneHost(3);
    std::vector<char> host(64, static_cast<char>('a' + r)), dev(64, static_cast<char>('A' + r));
    SegmentMap segs[kSegKinds];
    segs[0] = {true, host.data(), 64, [&](int) { return host.data(); }};
    segs[1] = {true, dev.data(), 64, [&](int) { return dev.data(); }};
    ProviderRegistry reg;
    const int hostOnly = static_cast<int>(SegKind::Host), deviceOnly = static_cast<int>(SegKind::Device);
    reg.add(std::unique_ptr<Provider>(new KindProvider(PathKind::Net, &kWithGetv, hostOnly)));
    reg.add(std::unique_ptr<Provider>(new KindProvider(PathKind::Net, &kWithoutGetv, deviceOnly)));
    PathTable table;
    Status s = table.setUp(t, r, PathOverrides{}, std::move(reg), segs, boot);
    if (!s.isOk()) return "setUp: " + s.message();
    for (bool fail : {false, true}) {
      GetLog log;
      log.failGetv = fail;
      tGetLog = &log;
      char out[5][4] = {};
      // HOST of PE 2, DEVICE of PE 1, HOST of PE 0, HOST of PE 1, DEVICE of PE 2 (every source is this thread's own
      // buffer: the fake ops copy from src.ptr).
      const SegKind kinds[5] = {SegKind::Host, SegKind::Device, SegKind::Host, SegKind::Host, SegKind::Device};
      const int pes[5] = {2, 1, 0, 1, 2};
      GetItem items[5];
      for (int i = 0; i < 5; ++i) {
        char* src = (kinds[i] == SegKind::Host ? host : dev).data() + i;
        items[i] = GetItem{pes[i], out[i], RemoteAddr{src, 0, kinds[i], nullptr, nullptr}, 4};
      }
      s = table.getMany(kinds, items, 5);
      tGetLog = nullptr;
      if (fail != !s.isOk()) return std::string("getMany returned ") + (s.isOk() ? "ok" : s.message());
      if (fail && s.code() != TETHER_ERR_UNREACHABLE) return "wrong error: " + s.message();
      if (log.getvSizes != std::vector<size_t>{3}) return "HOST items not one getv of 3";
      if (log.getvPes != std::vector<int>{2, 0, 1}) return "getv items out of batch order";
      if (log.gets != 2) return "DEVICE items: " + std::to_string(log.gets) + " blocking gets, expected 2";
      for (int i = 0; i < 5; ++i)
        if (out[i][0] != (kinds[i] == SegKind::Host ? 'a' + r : 'A' + r))
          return "dst " + std::to_string(i) + " unwritten";
    }
    return "";
  });
  EXPECT_EQ(errors, "");
}
