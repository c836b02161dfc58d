// Topology record: text form, overrides, path choice on recorded topologies (tests/unit/topologies/*.topo) and
// discovery through a fake GpuQuery. Runs on CPU; the system query must work with zero GPUs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "topology/pci.h"
#include "topology/topology.h"

using namespace tether;

#ifndef TETHER_TOPO_DIR
#error "TETHER_TOPO_DIR must name tests/unit/topologies"
#endif

namespace {

std::string readTopoFile(const std::string& name) {
  std::ifstream f(std::string(TETHER_TOPO_DIR) + "/" + name);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Topology load(const std::string& name) {
  Topology t;
  std::string text = readTopoFile(name);
  EXPECT_FALSE(text.empty()) << name << " not found in " << TETHER_TOPO_DIR;
  Status s = Topology::parse(text, &t);
  EXPECT_TRUE(s.isOk()) << name << ": " << s.message();
  return t;
}

::testing::AssertionResult sameTopology(const Topology& a, const Topology& b) {
  if (a.pes.size() != b.pes.size())
    return ::testing::AssertionFailure() << "PE count " << a.pes.size() << " vs " << b.pes.size();
  for (size_t i = 0; i < a.pes.size(); ++i) {
    const PeRecord& x = a.pes[i];
    const PeRecord& y = b.pes[i];
    if (x.host != y.host || x.localIndex != y.localIndex || x.cpuNumaNode != y.cpuNumaNode ||
        x.gpu.present != y.gpu.present || x.gpu.device != y.gpu.device || x.gpu.busId != y.gpu.busId ||
        x.gpu.name != y.gpu.name || x.gpu.numaNode != y.gpu.numaNode || x.gpu.vmm != y.gpu.vmm)
      return ::testing::AssertionFailure() << "pe " << i << " differs";
  }
  if (a.pairs.size() != b.pairs.size())
    return ::testing::AssertionFailure() << "pair count " << a.pairs.size() << " vs " << b.pairs.size();
  for (size_t k = 0; k < a.pairs.size(); ++k) {
    const PairRecord& x = a.pairs[k];
    const PairRecord& y = b.pairs[k];
    if (x.p2pAccess != y.p2pAccess || x.nativeAtomics != y.nativeAtomics || x.link != y.link ||
        x.nvlinkCount != y.nvlinkCount)
      return ::testing::AssertionFailure() << "pair record " << k << " differs";
  }
  return ::testing::AssertionSuccess();
}

bool contains(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

const char* const kTopoFiles[] = {"h200x2_nv18.topo", "h200x2_vm_recorded.topo", "pcie_only.topo",
                                  "no_peer_access.topo", "two_hosts.topo", "shared_gpu.topo",
                                  "mixed_gpu_nogpu.topo"};

}  // namespace

// ---- names and bus ids -------------------------------------------------------------------------------------------

TEST(Topology, Names) {
  EXPECT_STREQ(linkTypeName(LinkType::None), "none");
  EXPECT_STREQ(linkTypeName(LinkType::Pcie), "pcie");
  EXPECT_STREQ(linkTypeName(LinkType::NvLink), "nvlink");
  EXPECT_STREQ(linkTypeName(LinkType::SameGpu), "same_gpu");
  EXPECT_STREQ(pathKindName(PathKind::Self), "self");
  EXPECT_STREQ(pathKindName(PathKind::Shm), "shm");
  EXPECT_STREQ(pathKindName(PathKind::P2p), "p2p");
  EXPECT_STREQ(pathKindName(PathKind::Staged), "staged");
  EXPECT_STREQ(pathKindName(PathKind::Proxy), "proxy");
  EXPECT_STREQ(pathKindName(PathKind::None), "none");
}

TEST(Topology, CanonicalPciBusId) {
  EXPECT_EQ(canonicalPciBusId("0000:3B:00.0"), "0000:3b:00.0");      // CUDA
  EXPECT_EQ(canonicalPciBusId("00000000:3B:00.0"), "0000:3b:00.0");  // NVML
  EXPECT_EQ(canonicalPciBusId("3b:00.0"), "0000:3b:00.0");
  EXPECT_EQ(canonicalPciBusId("0001:19:00.0"), "0001:19:00.0");
  EXPECT_EQ(canonicalPciBusId(""), "");
}

// ---- text form ---------------------------------------------------------------------------------------------------

TEST(Topology, SerializeParseRoundTrip) {
  Topology t;
  t.pes.resize(3);
  t.pes[0].host = "alpha/boot-1";
  t.pes[0].cpuNumaNode = 1;
  t.pes[0].gpu = {true, 0, "0000:19:00.0", "NVIDIA H200", 0, true};
  t.pes[1].host = "alpha/boot-1";
  t.pes[1].localIndex = 1;
  t.pes[1].gpu = {true, 3, "0000:3b:00.0", "odd \"name\" with \\ and # and x=y", 1, false};
  t.pes[2].host = "host with spaces";  // awkward values must survive quoting
  t.pairs.resize(9);
  t.pairs[1] = {true, true, LinkType::NvLink, 18};
  t.pairs[3] = {true, false, LinkType::Pcie, 0};
  t.pairs[4] = {true, true, LinkType::SameGpu, 0};
  t.pairs[5] = {false, false, LinkType::None, 2};

  const std::string text = t.serialize();
  Topology back;
  Status s = Topology::parse(text, &back);
  ASSERT_TRUE(s.isOk()) << s.message() << "\n" << text;
  EXPECT_TRUE(sameTopology(t, back)) << text;
  EXPECT_EQ(back.serialize(), text);

  Topology empty, emptyBack;
  ASSERT_TRUE(Topology::parse(empty.serialize(), &emptyBack).isOk());
  EXPECT_EQ(emptyBack.size(), 0);
}

TEST(Topology, RecordedFilesRoundTrip) {
  for (const char* f : kTopoFiles) {
    SCOPED_TRACE(f);
    Topology t = load(f);
    EXPECT_EQ(t.size(), 2);
    EXPECT_EQ(t.pairs.size(), 4u);
    Topology back;
    ASSERT_TRUE(Topology::parse(t.serialize(), &back).isOk());
    EXPECT_TRUE(sameTopology(t, back));
  }
  Topology nv = load("h200x2_nv18.topo");
  EXPECT_EQ(nv.pes[1].gpu.busId, "0000:3b:00.0");
  EXPECT_EQ(nv.pes[1].gpu.name, "NVIDIA H200");
  EXPECT_EQ(nv.pair(0, 1).nvlinkCount, 18);
  EXPECT_EQ(nv.pair(1, 0).link, LinkType::NvLink);
}

TEST(Topology, ParseHandWritten) {
  const std::string text =
      "# hand-written: comments, blank lines, PEs out of order, omitted and unknown keys\r\n"
      "\n"
      "   pe 1 host=h local=1 gpu=1 dev=1 bus=0000:3b:00.0 name=\"GPU # one\" future_key=42   # trailing comment\n"
      "pe 0 host=h gpu=1 dev=0 bus=0000:19:00.0 vmm=1 numa=0 gpu_numa=0\r\n"
      "pair 0 1 p2p=1 atomics=1 link=nvlink nvlinks=4 bandwidth=100\n"
      "pair 1 0 link=pcie p2p=1\n";
  Topology t;
  Status s = Topology::parse(text, &t);
  ASSERT_TRUE(s.isOk()) << s.message();
  ASSERT_EQ(t.size(), 2);
  EXPECT_EQ(t.pes[0].host, "h");
  EXPECT_EQ(t.pes[0].localIndex, 0);
  EXPECT_EQ(t.pes[0].cpuNumaNode, 0);
  EXPECT_TRUE(t.pes[0].gpu.vmm);
  EXPECT_EQ(t.pes[1].localIndex, 1);
  EXPECT_EQ(t.pes[1].cpuNumaNode, -1);  // omitted: default
  EXPECT_EQ(t.pes[1].gpu.numaNode, -1);
  EXPECT_FALSE(t.pes[1].gpu.vmm);
  EXPECT_EQ(t.pes[1].gpu.name, "GPU # one");
  EXPECT_TRUE(t.sameHost(0, 1));
  EXPECT_EQ(t.pair(0, 1).nvlinkCount, 4);
  EXPECT_TRUE(t.pair(0, 1).nativeAtomics);
  EXPECT_EQ(t.pair(1, 0).link, LinkType::Pcie);
  EXPECT_FALSE(t.pair(1, 0).nativeAtomics);
  EXPECT_FALSE(t.pair(0, 0).p2pAccess);  // unlisted: default
}

// someGpuShared: two PEs on one GPU of one host; the same bus id on two hosts is two GPUs; no GPU is no GPU.
TEST(Topology, SomeGpuShared) {
  EXPECT_TRUE(load("shared_gpu.topo").someGpuShared());
  EXPECT_FALSE(load("two_hosts.topo").someGpuShared());
  EXPECT_FALSE(load("h200x2_nv18.topo").someGpuShared());
  Topology t = load("shared_gpu.topo");
  t.pes[1].gpu.present = false;  // a PE without a GPU shares nothing
  EXPECT_FALSE(t.someGpuShared());
  t = load("shared_gpu.topo");
  t.pes[1].gpu.busId = "0000:2a:00.0";
  EXPECT_FALSE(t.someGpuShared());
  t.pes.push_back(t.pes[0]);  // a third PE on PE 0's GPU
  EXPECT_TRUE(t.someGpuShared());
}

TEST(Topology, ParseMalformedNamesTheLine) {
  struct Case {
    const char* text;
    int line;
    const char* detail;
  };
  const Case cases[] = {
      {"pe x host=h\n", 1, "pe index='x'"},
      {"# c\npe 0 numa=abc\n", 2, "numa='abc'"},
      {"pe 0\npe 1 gpu=2\n", 2, "gpu='2'"},
      {"pe 0 host\n", 1, "'host' is not key=value"},
      {"pe 0 =3\n", 1, "'=3' is not key=value"},
      {"pe 0\n\n\npair 0 1 link=infiniband\n", 4, "link='infiniband'"},
      {"pe 0\npair 0\n", 2, "expected 'pair <i> <j>"},
      {"pe 0\nnic 0 name=mlx5_0\n", 2, "unknown record 'nic'"},
      {"pe 0 name=\"unterminated\n", 1, "unterminated"},
      {"pe 0\npe 0\n", 2, "already described on line 1"},
      {"pe 0\npe 2\n", 2, "pe 1 is missing"},
      {"pe 0\npe 1\npair 0 5 p2p=1\n", 3, "outside 0..1"},
      {"pe 0\npair 0 1 nvlinks=-3\n", 2, "nvlinks='-3'"},
      {"pe 0 local=99999999999\n", 1, "local="},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Topology t;
    t.pes.resize(7);  // untouched on failure
    Status s = Topology::parse(c.text, &t);
    ASSERT_FALSE(s.isOk());
    EXPECT_EQ(s.code(), TETHER_ERR_INVALID_ARG);
    EXPECT_TRUE(contains(s.message(), "topology line " + std::to_string(c.line) + ":")) << s.message();
    EXPECT_TRUE(contains(s.message(), c.detail)) << s.message();
    EXPECT_EQ(t.size(), 7);
  }
}

// ---- overrides ---------------------------------------------------------------------------------------------------

TEST(PathOverrides, ParseGood) {
  struct Case {
    const char* spec;
    const char* host;
    const char* device;
  };
  const Case cases[] = {
      {"auto", "auto", "auto"},
      {"", "auto", "auto"},
      {"host=shm", "shm", "auto"},
      {"device=staged", "auto", "staged"},
      {"device=p2p,host=shm", "shm", "p2p"},
      {" device = p2p , host=auto ", "auto", "p2p"},
      {"shm", "shm", "auto"},  // the older spelling
      {"device=p2p,device=auto", "auto", "auto"},
      {"host=ucx", "ucx", "auto"},
      {"device=staged,host=ucx", "ucx", "staged"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.spec);
    PathOverrides ov;
    Status s = PathOverrides::parse(c.spec, &ov);
    ASSERT_TRUE(s.isOk()) << s.message();
    EXPECT_EQ(ov.host, c.host);
    EXPECT_EQ(ov.device, c.device);
  }
}

TEST(PathOverrides, ParseBadNamesTheToken) {
  struct Case {
    const char* spec;
    const char* token;
  };
  const Case cases[] = {
      {"device=nvlink", "'device=nvlink'"}, {"host=p2p", "'host=p2p'"}, {"warp", "'warp'"},
      {"device", "'device'"},               {"host=shm,gpu=p2p", "'gpu=p2p'"}, {"device=staged,host=", "'host='"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.spec);
    PathOverrides ov;
    ov.device = "p2p";  // untouched on failure
    Status s = PathOverrides::parse(c.spec, &ov);
    ASSERT_FALSE(s.isOk());
    EXPECT_EQ(s.code(), TETHER_ERR_INVALID_ARG);
    EXPECT_TRUE(contains(s.message(), c.token)) << s.message();
    EXPECT_TRUE(contains(s.message(), "TETHER_PATHS")) << s.message();
    EXPECT_EQ(ov.device, "p2p");
  }
}

// ---- path choice on the recorded topologies ---------------------------------------------------------------------

TEST(ChoosePath, RecordedTopologies) {
  struct Case {
    const char* file;
    int me, pe;
    SegKind kind;
    PathKind expect;
    std::vector<const char*> reason;  // substrings
  };
  const Case cases[] = {
      // 2x H200 NV18
      {"h200x2_nv18.topo", 0, 0, SegKind::Device, PathKind::Self, {"same PE"}},
      {"h200x2_nv18.topo", 1, 1, SegKind::Host, PathKind::Self, {"same PE"}},
      {"h200x2_nv18.topo", 0, 1, SegKind::Host, PathKind::Shm, {"same host", "host segments"}},
      {"h200x2_nv18.topo", 0, 1, SegKind::Device, PathKind::P2p,
       {"same host, GPUs 0000:19:00.0 -> 0000:3b:00.0 joined by NVLink x18, native atomics"}},
      {"h200x2_nv18.topo", 1, 0, SegKind::Device, PathKind::P2p, {"0000:3b:00.0 -> 0000:19:00.0", "NVLink x18"}},
      // the same machine as recorded on the VM
      {"h200x2_vm_recorded.topo", 1, 0, SegKind::Device, PathKind::P2p,
       {"same host, GPUs 0000:00:07.0 -> 0000:00:06.0 joined by NVLink x18, native atomics"}},
      // PCIe only
      {"pcie_only.topo", 0, 1, SegKind::Host, PathKind::Shm, {"same host"}},
      {"pcie_only.topo", 0, 1, SegKind::Device, PathKind::P2p,
       {"GPUs 0000:41:00.0 -> 0000:42:00.0 joined by PCIe", "no native peer atomics"}},
      {"pcie_only.topo", 1, 0, SegKind::Device, PathKind::P2p, {"PCIe"}},
      // no peer access
      {"no_peer_access.topo", 0, 1, SegKind::Host, PathKind::Shm, {"same host"}},
      {"no_peer_access.topo", 0, 1, SegKind::Device, PathKind::Staged,
       {"same host, no peer access between GPUs 0000:18:00.0 -> 0000:af:00.0: staging through host memory"}},
      {"no_peer_access.topo", 1, 0, SegKind::Device, PathKind::Staged, {"no peer access", "staging"}},
      // two hosts
      {"two_hosts.topo", 0, 1, SegKind::Host, PathKind::Net, {"another host", "node-b/", "network"}},
      {"two_hosts.topo", 1, 0, SegKind::Device, PathKind::None,
       {"another host", "node-a/", "DEVICE segments across hosts need a CUDA-aware network transport"}},
      {"two_hosts.topo", 1, 1, SegKind::Device, PathKind::Self, {"same PE"}},
      // two PEs on one GPU
      {"shared_gpu.topo", 0, 1, SegKind::Host, PathKind::Shm, {"same host"}},
      {"shared_gpu.topo", 0, 1, SegKind::Device, PathKind::P2p,
       {"both PEs on GPU 0000:19:00.0 (same device), native atomics"}},
      {"shared_gpu.topo", 1, 0, SegKind::Device, PathKind::P2p, {"both PEs on GPU"}},
      // one PE without a GPU
      {"mixed_gpu_nogpu.topo", 0, 1, SegKind::Host, PathKind::Shm, {"same host"}},
      {"mixed_gpu_nogpu.topo", 1, 0, SegKind::Host, PathKind::Shm, {"same host"}},
      {"mixed_gpu_nogpu.topo", 0, 1, SegKind::Device, PathKind::None, {"no DEVICE segment: PE 1 has no GPU"}},
      {"mixed_gpu_nogpu.topo", 1, 0, SegKind::Device, PathKind::None, {"no DEVICE segment: PE 1 has no GPU"}},
  };
  const PathOverrides autoOv;
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.file) + " " + std::to_string(c.me) + "->" + std::to_string(c.pe) +
                 (c.kind == SegKind::Host ? " host" : " device"));
    Topology t = load(c.file);
    PathChoice ch;
    Status s = choosePath(t, c.me, c.pe, c.kind, autoOv, &ch);
    ASSERT_TRUE(s.isOk()) << s.message();
    EXPECT_EQ(ch.kind, c.expect) << pathKindName(ch.kind) << ": " << ch.reason;
    for (const char* sub : c.reason) EXPECT_TRUE(contains(ch.reason, sub)) << ch.reason;
    EXPECT_FALSE(contains(ch.reason, "\n"));
  }
}

TEST(ChoosePath, Overrides) {
  auto ov = [](const char* spec) {
    PathOverrides o;
    EXPECT_TRUE(PathOverrides::parse(spec, &o).isOk());
    return o;
  };
  PathChoice c;
  Topology nv = load("h200x2_nv18.topo");
  ASSERT_TRUE(choosePath(nv, 0, 1, SegKind::Host, ov("host=shm"), &c).isOk());
  EXPECT_EQ(c.kind, PathKind::Shm);
  EXPECT_TRUE(contains(c.reason, "forced by TETHER_PATHS host=shm")) << c.reason;
  ASSERT_TRUE(choosePath(nv, 0, 1, SegKind::Device, ov("device=staged"), &c).isOk());
  EXPECT_EQ(c.kind, PathKind::Staged);
  EXPECT_TRUE(contains(c.reason, "forced by TETHER_PATHS device=staged")) << c.reason;
  EXPECT_TRUE(contains(c.reason, "NVLink x18")) << c.reason;
  ASSERT_TRUE(choosePath(nv, 0, 1, SegKind::Device, ov("device=p2p"), &c).isOk());
  EXPECT_EQ(c.kind, PathKind::P2p);
  EXPECT_TRUE(contains(c.reason, "forced by TETHER_PATHS device=p2p")) << c.reason;
  ASSERT_TRUE(choosePath(nv, 0, 0, SegKind::Device, ov("device=staged"), &c).isOk());
  EXPECT_EQ(c.kind, PathKind::Self);  // an override never replaces self

  Topology np = load("no_peer_access.topo");
  ASSERT_TRUE(choosePath(np, 0, 1, SegKind::Device, ov("device=staged"), &c).isOk());
  EXPECT_EQ(c.kind, PathKind::Staged);
  c = PathChoice();
  Status s = choosePath(np, 0, 1, SegKind::Device, ov("device=p2p"), &c);
  EXPECT_EQ(s.code(), TETHER_ERR_INVALID_ARG);
  EXPECT_TRUE(contains(s.message(), "TETHER_PATHS device=p2p is impossible")) << s.message();
  EXPECT_TRUE(contains(s.message(), "0000:18:00.0")) << s.message();
  EXPECT_EQ(c.kind, PathKind::None);  // untouched
  // The impossible override concerns DEVICE segments only.
  ASSERT_TRUE(choosePath(np, 0, 1, SegKind::Host, ov("device=p2p"), &c).isOk());
  EXPECT_EQ(c.kind, PathKind::Shm);

  // Overrides apply to same-host peers with GPUs; elsewhere the automatic answer stands.
  Topology th = load("two_hosts.topo");
  ASSERT_TRUE(choosePath(th, 0, 1, SegKind::Device, ov("device=p2p,host=shm"), &c).isOk());
  EXPECT_EQ(c.kind, PathKind::None);
  ASSERT_TRUE(choosePath(th, 0, 1, SegKind::Host, ov("host=shm"), &c).isOk());
  EXPECT_EQ(c.kind, PathKind::Net);

  // host=ucx puts HOST segments of same-host PEs on the network path (how the UCX provider is tested on one host);
  // never self, never DEVICE segments.
  ASSERT_TRUE(choosePath(nv, 0, 1, SegKind::Host, ov("host=ucx"), &c).isOk());
  EXPECT_EQ(c.kind, PathKind::Net);
  EXPECT_TRUE(contains(c.reason, "forced onto the network path by TETHER_PATHS host=ucx")) << c.reason;
  ASSERT_TRUE(choosePath(nv, 0, 1, SegKind::Static, ov("host=ucx"), &c).isOk());
  EXPECT_EQ(c.kind, PathKind::Net);
  ASSERT_TRUE(choosePath(nv, 1, 1, SegKind::Host, ov("host=ucx"), &c).isOk());
  EXPECT_EQ(c.kind, PathKind::Self);
  ASSERT_TRUE(choosePath(nv, 0, 1, SegKind::Device, ov("host=ucx"), &c).isOk());
  EXPECT_EQ(c.kind, PathKind::P2p);
  Topology mx = load("mixed_gpu_nogpu.topo");
  ASSERT_TRUE(choosePath(mx, 0, 1, SegKind::Device, ov("device=p2p"), &c).isOk());
  EXPECT_EQ(c.kind, PathKind::None);
}

TEST(ChoosePath, BadArguments) {
  Topology t = load("h200x2_nv18.topo");
  PathChoice c;
  EXPECT_EQ(choosePath(t, 0, 2, SegKind::Host, PathOverrides(), &c).code(), TETHER_ERR_INVALID_PE);
  EXPECT_EQ(choosePath(t, -1, 0, SegKind::Host, PathOverrides(), &c).code(), TETHER_ERR_INVALID_PE);
  t.pairs.clear();  // pairs never discovered
  Status s = choosePath(t, 0, 1, SegKind::Device, PathOverrides(), &c);
  EXPECT_EQ(s.code(), TETHER_ERR_INVALID_ARG);
  EXPECT_TRUE(contains(s.message(), "pair records")) << s.message();
  EXPECT_TRUE(choosePath(t, 0, 1, SegKind::Host, PathOverrides(), &c).isOk());  // host paths need no pairs
}

// ---- discovery with a fake machine -------------------------------------------------------------------------------

namespace {

// A machine described by bus ids (as CUDA spells them, upper-case hex) and per-pair facts. Records every device pair
// it was asked about, so tests can check that only this host's GPUs are looked up.
class FakeGpuQuery : public GpuQuery {
 public:
  struct Link {
    bool p2p = false;
    bool atomics = false;
    int nvlinks = 0;
  };
  explicit FakeGpuQuery(std::vector<std::string> busIds) : bus_(std::move(busIds)) {}
  void link(int a, int b, Link l) { links_[{a, b}] = l; }

  int deviceCount() override { return static_cast<int>(bus_.size()); }
  std::string busId(int dev) override { return bus_.at(static_cast<size_t>(dev)); }
  std::string name(int dev) override { return "Fake GPU " + std::to_string(dev); }
  bool vmmSupported(int dev) override { return dev % 2 == 0; }
  bool canAccessPeer(int dev, int peer) override {
    asked.insert({dev, peer});
    return get(dev, peer).p2p;
  }
  bool nativeAtomics(int dev, int peer) override { return get(dev, peer).atomics; }
  int nvlinkCount(int dev, int peer) override { return get(dev, peer).nvlinks; }
  int deviceByBusId(const std::string& busId) override {
    for (size_t d = 0; d < bus_.size(); ++d) {
      if (canonicalPciBusId(bus_[d]) == canonicalPciBusId(busId)) return static_cast<int>(d);
    }
    return -1;
  }

  std::set<std::pair<int, int>> asked;

 private:
  Link get(int a, int b) const {
    auto it = links_.find({a, b});
    return it == links_.end() ? Link() : it->second;
  }
  std::vector<std::string> bus_;
  std::map<std::pair<int, int>, Link> links_;
};

PeRecord gpuPe(const std::string& host, int local, const std::string& bus) {
  PeRecord p;
  p.host = host;
  p.localIndex = local;
  p.gpu.present = true;
  p.gpu.device = local;
  p.gpu.busId = bus;
  return p;
}

}  // namespace

TEST(DiscoverPairs, TwoGpusNvLink) {
  FakeGpuQuery q({"0000:19:00.0", "0000:3B:00.0"});
  q.link(0, 1, {true, true, 18});
  q.link(1, 0, {true, true, 18});
  Topology t;
  t.pes = {gpuPe("h", 0, "0000:19:00.0"), gpuPe("h", 1, "0000:3b:00.0")};
  ASSERT_TRUE(discoverPairs(q, 0, &t).isOk());
  ASSERT_EQ(t.pairs.size(), 4u);
  for (auto ij : {std::make_pair(0, 1), std::make_pair(1, 0)}) {
    const PairRecord& p = t.pair(ij.first, ij.second);
    EXPECT_TRUE(p.p2pAccess);
    EXPECT_TRUE(p.nativeAtomics);
    EXPECT_EQ(p.link, LinkType::NvLink);
    EXPECT_EQ(p.nvlinkCount, 18);
  }
  EXPECT_FALSE(t.pair(0, 0).p2pAccess);  // i == j is not a pair
  // The discovered record serialises like the recorded one.
  Topology rec = load("h200x2_nv18.topo");
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(t.pairs[k].nvlinkCount, rec.pairs[k].nvlinkCount);
    EXPECT_EQ(t.pairs[k].link, rec.pairs[k].link);
  }
  PathChoice c;
  ASSERT_TRUE(choosePath(t, 1, 0, SegKind::Device, PathOverrides(), &c).isOk());
  EXPECT_EQ(c.kind, PathKind::P2p);
  EXPECT_TRUE(contains(c.reason, "NVLink x18")) << c.reason;
}

TEST(DiscoverPairs, FourGpusMixedLinks) {
  // 0-1 NVLink x12, 2-3 NVLink x6 without native atomics, 0-2 and 2-0 PCIe peer access, 1-3 no peer access at all,
  // 0-3 NVLink present but peer access refused.
  FakeGpuQuery q({"0000:19:00.0", "0000:3B:00.0", "0000:4C:00.0", "0000:5D:00.0"});
  q.link(0, 1, {true, true, 12});
  q.link(1, 0, {true, true, 12});
  q.link(2, 3, {true, false, 6});
  q.link(3, 2, {true, false, 6});
  q.link(0, 2, {true, false, 0});
  q.link(2, 0, {true, false, 0});
  q.link(0, 3, {false, true, 2});
  Topology t;
  t.pes = {gpuPe("h", 0, "0000:19:00.0"), gpuPe("h", 1, "0000:3b:00.0"), gpuPe("h", 2, "0000:4c:00.0"),
           gpuPe("h", 3, "0000:5d:00.0")};
  ASSERT_TRUE(discoverPairs(q, 2, &t).isOk());
  ASSERT_EQ(t.pairs.size(), 16u);
  EXPECT_EQ(t.pair(0, 1).link, LinkType::NvLink);
  EXPECT_EQ(t.pair(0, 1).nvlinkCount, 12);
  EXPECT_TRUE(t.pair(0, 1).nativeAtomics);
  EXPECT_EQ(t.pair(3, 2).link, LinkType::NvLink);
  EXPECT_EQ(t.pair(3, 2).nvlinkCount, 6);
  EXPECT_FALSE(t.pair(3, 2).nativeAtomics);
  EXPECT_EQ(t.pair(0, 2).link, LinkType::Pcie);
  EXPECT_TRUE(t.pair(0, 2).p2pAccess);
  EXPECT_EQ(t.pair(0, 2).nvlinkCount, 0);
  EXPECT_EQ(t.pair(1, 3).link, LinkType::None);
  EXPECT_FALSE(t.pair(1, 3).p2pAccess);
  EXPECT_FALSE(t.pair(0, 3).p2pAccess);
  EXPECT_FALSE(t.pair(0, 3).nativeAtomics);  // no atomics without peer access
  EXPECT_EQ(t.pair(0, 3).link, LinkType::NvLink);
  EXPECT_EQ(q.asked.size(), 12u);  // every ordered pair of distinct GPUs, once

  PathChoice c;
  ASSERT_TRUE(choosePath(t, 2, 3, SegKind::Device, PathOverrides(), &c).isOk());
  EXPECT_EQ(c.kind, PathKind::P2p);
  EXPECT_TRUE(contains(c.reason, "NVLink x6, no native peer atomics")) << c.reason;
  ASSERT_TRUE(choosePath(t, 1, 3, SegKind::Device, PathOverrides(), &c).isOk());
  EXPECT_EQ(c.kind, PathKind::Staged);
  ASSERT_TRUE(choosePath(t, 0, 2, SegKind::Device, PathOverrides(), &c).isOk());
  EXPECT_EQ(c.kind, PathKind::P2p);
  EXPECT_TRUE(contains(c.reason, "PCIe")) << c.reason;

  Topology back;
  ASSERT_TRUE(Topology::parse(t.serialize(), &back).isOk());
  EXPECT_TRUE(sameTopology(t, back));
}

TEST(DiscoverPairs, InvisibleSharedOtherHostAndNoGpu) {
  FakeGpuQuery q({"0000:19:00.0", "0000:3B:00.0"});
  q.link(0, 1, {true, true, 18});
  q.link(1, 0, {true, true, 18});
  Topology t;
  t.pes = {gpuPe("h", 0, "0000:19:00.0"),
           gpuPe("h", 1, "0000:3b:00.0"),
           gpuPe("h", 2, "0000:af:00.0"),   // hidden from this process (CUDA_VISIBLE_DEVICES)
           gpuPe("h", 3, "0000:19:00.0"),   // shares PE 0's GPU
           gpuPe("other", 0, "0000:3b:00.0"),  // another host: same bus id as PE 1, never looked up
           PeRecord()};
  t.pes[5].host = "h";  // no GPU
  ASSERT_TRUE(discoverPairs(q, 0, &t).isOk());
  EXPECT_TRUE(t.pair(0, 1).p2pAccess);
  EXPECT_FALSE(t.pair(0, 2).p2pAccess);
  EXPECT_FALSE(t.pair(2, 1).p2pAccess);
  EXPECT_EQ(t.pair(0, 2).link, LinkType::None);
  EXPECT_EQ(t.pair(0, 3).link, LinkType::SameGpu);
  EXPECT_TRUE(t.pair(3, 0).p2pAccess);
  EXPECT_TRUE(t.pair(3, 0).nativeAtomics);
  EXPECT_TRUE(t.pair(3, 1).p2pAccess);  // PE 3's GPU is device 0 here
  EXPECT_EQ(t.pair(3, 1).nvlinkCount, 18);
  EXPECT_FALSE(t.pair(1, 4).p2pAccess);
  EXPECT_FALSE(t.pair(4, 1).p2pAccess);
  EXPECT_FALSE(t.pair(0, 5).p2pAccess);
  EXPECT_EQ(q.asked, (std::set<std::pair<int, int>>{{0, 1}, {1, 0}}));

  PathChoice c;
  ASSERT_TRUE(choosePath(t, 0, 2, SegKind::Device, PathOverrides(), &c).isOk());
  EXPECT_EQ(c.kind, PathKind::Staged);
  ASSERT_TRUE(choosePath(t, 3, 0, SegKind::Device, PathOverrides(), &c).isOk());
  EXPECT_EQ(c.kind, PathKind::P2p);

  EXPECT_EQ(discoverPairs(q, 6, &t).code(), TETHER_ERR_INVALID_PE);
}

// ---- this PE ----------------------------------------------------------------------------------------------------

TEST(DiscoverLocalPe, FakeQuery) {
  FakeGpuQuery q({"00000000:19:00.0", "00000000:3B:00.0"});  // NVML-style spelling: stored canonical
  PeRecord p;
  ASSERT_TRUE(discoverLocalPe(q, 1, &p).isOk());
  char name[256] = {};
  ASSERT_EQ(gethostname(name, sizeof name - 1), 0);
  EXPECT_EQ(p.host.compare(0, std::string(name).size(), name), 0) << p.host;
  EXPECT_GE(p.cpuNumaNode, -1);
  EXPECT_TRUE(p.gpu.present);
  EXPECT_EQ(p.gpu.device, 1);
  EXPECT_EQ(p.gpu.busId, "0000:3b:00.0");
  EXPECT_EQ(p.gpu.name, "Fake GPU 1");
  EXPECT_FALSE(p.gpu.vmm);
  EXPECT_GE(p.gpu.numaNode, -1);

  ASSERT_TRUE(discoverLocalPe(q, 0, &p).isOk());
  EXPECT_TRUE(p.gpu.vmm);
  ASSERT_TRUE(discoverLocalPe(q, -1, &p).isOk());
  EXPECT_FALSE(p.gpu.present);
  EXPECT_EQ(p.gpu.device, -1);
  EXPECT_TRUE(p.gpu.busId.empty());

  Status s = discoverLocalPe(q, 2, &p);
  EXPECT_EQ(s.code(), TETHER_ERR_INVALID_ARG);
  EXPECT_TRUE(contains(s.message(), "sees 2 GPU")) << s.message();
  EXPECT_EQ(discoverLocalPe(q, -2, &p).code(), TETHER_ERR_INVALID_ARG);
}

TEST(DiscoverLocalPe, SystemQuery) {
  std::unique_ptr<GpuQuery> q = createSystemGpuQuery();
  ASSERT_NE(q, nullptr);
  const int n = q->deviceCount();  // 0 on a machine without GPUs or driver, never an abort
  ASSERT_GE(n, 0);
  PeRecord p;
  ASSERT_TRUE(discoverLocalPe(*q, n > 0 ? 0 : -1, &p).isOk());
  EXPECT_FALSE(p.host.empty());
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::string boot;
  if (std::getline(f, boot) && !boot.empty()) {
    EXPECT_TRUE(contains(p.host, "/" + boot)) << p.host;
  }
  EXPECT_EQ(p.gpu.present, n > 0);
  if (n == 0) {
    EXPECT_EQ(q->deviceByBusId("0000:19:00.0"), -1);
    EXPECT_EQ(q->nvlinkCount(0, 1), 0);
    EXPECT_FALSE(q->canAccessPeer(0, 1));
  } else {
    EXPECT_EQ(p.gpu.busId, canonicalPciBusId(p.gpu.busId));
    EXPECT_EQ(q->deviceByBusId(p.gpu.busId), 0);
    EXPECT_FALSE(p.gpu.name.empty());
  }
  // A one-PE topology of this machine: discovery and path choice work end to end.
  Topology t;
  t.pes = {p};
  ASSERT_TRUE(discoverPairs(*q, 0, &t).isOk());
  PathChoice c;
  ASSERT_TRUE(choosePath(t, 0, 0, SegKind::Host, PathOverrides(), &c).isOk());
  EXPECT_EQ(c.kind, PathKind::Self);
}

// On a machine with two or more visible GPUs (the GPU machines), the system query's pair facts are self-consistent.
TEST(DiscoverPairs, SystemQueryAllVisibleGpus) {
  std::unique_ptr<GpuQuery> q = createSystemGpuQuery();
  const int n = q->deviceCount();
  if (n < 2) GTEST_SKIP() << "needs 2 visible GPUs, this machine has " << n;
  Topology t;
  for (int d = 0; d < n; ++d) {
    PeRecord p;
    ASSERT_TRUE(discoverLocalPe(*q, d, &p).isOk());
    p.localIndex = d;
    t.pes.push_back(p);
  }
  ASSERT_TRUE(discoverPairs(*q, 0, &t).isOk());
  std::printf("%s", t.serialize().c_str());
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      const PairRecord& p = t.pair(i, j);
      if (p.nativeAtomics) {
        EXPECT_TRUE(p.p2pAccess);
      }
      if (p.link == LinkType::NvLink) {
        EXPECT_GT(p.nvlinkCount, 0);
      }
      PathChoice c;
      ASSERT_TRUE(choosePath(t, i, j, SegKind::Device, PathOverrides(), &c).isOk());
      std::printf("PE %d -> PE %d: %s (%s)\n", i, j, pathKindName(c.kind), c.reason.c_str());
    }
  }
}
