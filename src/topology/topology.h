// Topology record: what start-up knows about every PE and every same-host PE pair, and the pure path choice made
// from it. The record is serialisable (text) so path choice is unit-tested on CPU with recorded topologies
// (tests/unit/topologies/*.topo: this 2xH200 NV18 machine, a PCIe-only one, one with no peer access).
//
// Contract: discovery (discoverLocalPe, discoverPairs) runs once at init; choosePath is a pure function of the
// record and the overrides, called once per (PE pair, segment kind) — never on the hot path.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "tether/tether.h"

namespace tether {

// This PE's GPU, as found at start-up (present == false: no GPU or a host-only build).
struct GpuRecord {
  bool present = false;
  int device = -1;          // CUDA ordinal in this process
  std::string busId;        // PCI bus id "0000:19:00.0" (how PEs name each other's GPUs)
  std::string name;         // "NVIDIA H200"
  int numaNode = -1;        // from sysfs, -1 unknown
  bool vmm = false;         // cuMem VMM with POSIX file-descriptor handles
};

struct PeRecord {
  std::string host;         // host identity (hostname/boot id)
  int localIndex = 0;       // index among the PEs of that host
  int cpuNumaNode = -1;     // NUMA node this PE runs on (-1 unknown)
  GpuRecord gpu;
};

enum class LinkType { None, Pcie, NvLink, SameGpu };
const char* linkTypeName(LinkType t);

// Between the GPUs of two same-host PEs (from the first PE's point of view).
struct PairRecord {
  bool p2pAccess = false;      // cudaDeviceCanAccessPeer
  bool nativeAtomics = false;  // cudaDevP2PAttrNativeAtomicSupported
  LinkType link = LinkType::None;
  int nvlinkCount = 0;         // NVLink links joining the two GPUs (NVML), 0 if PCIe
};

struct Topology {
  std::vector<PeRecord> pes;
  // pairs[i * n + j]: GPU pair (PE i's GPU -> PE j's GPU); meaningful only when both are on one host with GPUs.
  std::vector<PairRecord> pairs;

  int size() const { return static_cast<int>(pes.size()); }
  const PairRecord& pair(int i, int j) const { return pairs[static_cast<size_t>(i * size() + j)]; }
  bool sameHost(int i, int j) const { return pes[static_cast<size_t>(i)].host == pes[static_cast<size_t>(j)].host; }
  // Whether some GPU is used by two or more PEs (same host, same bus id): a function of the whole record, so every PE
  // of a job gets the same answer.
  bool someGpuShared() const;

  // Line-oriented text, stable across versions (unknown keys ignored on parse); parse(serialize(t)) == t.
  std::string serialize() const;
  static Status parse(const std::string& text, Topology* out);
};

enum class PathKind { Self, Shm, P2p, Staged, Proxy, None, Net };
const char* pathKindName(PathKind k);

// Segment kind served by a path. Host and Device are the two heaps (the C API's tether_seg_kind_t without DEFAULT);
// Static is a range of the program's own memory made symmetric after the fact (tether_register_static: global and
// static variables). Static is host memory and behaves as Host everywhere but in address translation.
enum class SegKind { Host = 0, Device = 1, Static = 2 };
constexpr int kSegKinds = 3;
inline bool isHostMemory(SegKind k) { return k != SegKind::Device; }
const char* segKindName(SegKind k);  // "HOST", "DEVICE", "STATIC"

struct PathChoice {
  PathKind kind = PathKind::None;
  std::string reason;  // one line for TETHER_LOG=info: why this path
};

// Overrides from TETHER_PATHS: "auto" or a comma list of kind=path, e.g. "device=staged", "host=shm" (a bare "shm",
// the older spelling, means host=shm), "host=ucx" (HOST/STATIC segments of same-host PEs over the network path, how
// the UCX provider is tested on one host). They apply to same-host peers only.
struct PathOverrides {
  std::string host = "auto";
  std::string device = "auto";
  static Status parse(const std::string& spec, PathOverrides* out);  // names the bad token on error
};

// Pure path choice. Rules: same PE -> Self. Other host: HOST/STATIC segments -> Net (the network path: the UCX
// provider serves it), DEVICE segments -> None (they need a CUDA-aware network transport; the reason says so).
// HOST segments on the same host -> Shm (Net with TETHER_PATHS host=ucx). DEVICE segments on the same host: both GPUs present and p2pAccess -> P2p
// (reason names the link, e.g. "NVLink x18", and native atomics yes/no); no peer access -> Staged (through host
// memory). A PE without a GPU has no DEVICE segment -> None for DEVICE. An override that is impossible (p2p
// without peer access) fails with TETHER_ERR_INVALID_ARG naming it.
Status choosePath(const Topology& topo, int me, int pe, SegKind kind, const PathOverrides& ov, PathChoice* out);

// Discovery. The GPU facts come through GpuQuery so tests can fake a machine.
class GpuQuery {
 public:
  virtual ~GpuQuery() = default;
  virtual int deviceCount() = 0;
  virtual std::string busId(int dev) = 0;
  virtual std::string name(int dev) = 0;
  virtual bool vmmSupported(int dev) = 0;
  virtual bool canAccessPeer(int dev, int peerDev) = 0;
  virtual bool nativeAtomics(int dev, int peerDev) = 0;
  virtual int nvlinkCount(int dev, int peerDev) = 0;  // 0 when unknown or PCIe
  virtual int deviceByBusId(const std::string& busId) = 0;  // -1 if not visible here
};

// CUDA runtime + NVML (dlopen'ed; absent NVML -> nvlinkCount 0 and link from canAccessPeer alone) when built with
// CUDA, else a query that reports no devices.
std::unique_ptr<GpuQuery> createSystemGpuQuery();

// This host's identity: hostname + "/" + boot id, so containers or VMs that share a hostname but not a kernel differ.
Status hostIdentity(std::string* out);

// Fills the record of this PE: host identity, CPU NUMA node, its GPU (device = chosen ordinal, -1 for none).
Status discoverLocalPe(GpuQuery& q, int device, PeRecord* out);
// Fills pairs (resized to n*n, reset) for every pair i != j of PEs with GPUs on PE me's host, from this process's
// view: all GPUs of the host visible here; a peer GPU not visible gives p2pAccess false. Pairs of other hosts stay
// default (their bus ids may repeat here on identical machines, so they are never looked up).
Status discoverPairs(GpuQuery& q, int me, Topology* topo);

}  // namespace tether
