// GpuQuery of a CUDA build: the CUDA runtime for devices and peer attributes, the driver (through cudart's entry-point
// lookup, so nothing links libcuda) for VMM attributes, and NVML loaded with dlopen for NVLink counts.
//
// Contract: never fails and never aborts. No driver or no device -> 0 devices; a failed query answers "no"/0/"";
// NVML absent or failing -> nvlinkCount 0 (discoverPairs then records PCIe from peer access alone). No call here
// creates a CUDA context. One object serves one thread at a time (start-up); it owns the NVML library handle.
#include <cuda.h>  // driver types only (CUdevice, CUdevice_attribute, CUresult); not linked
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <map>

#include "base/log.h"
#include "topology/pci.h"
#include "topology/topology.h"

namespace tether {

namespace {

// The few NVML declarations used here (ABI of nvml.h; the library is reached only through dlsym).
namespace nvml {
using Return = int;  // nvmlReturn_t
constexpr Return kSuccess = 0;
struct DeviceSt;
using Device = DeviceSt*;  // nvmlDevice_t
struct PciInfo {           // nvmlPciInfo_t (the v2+ layout used by the *_v2 / *_v3 calls)
  char busIdLegacy[16];
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned pciDeviceId;
  unsigned pciSubSystemId;
  char busId[32];
};
constexpr int kFeatureEnabled = 1;   // NVML_FEATURE_ENABLED (nvmlEnableState_t)
constexpr int kRemoteSwitch = 2;     // NVML_NVLINK_DEVICE_TYPE_SWITCH (nvmlIntNvLinkDeviceType_t)
constexpr unsigned kMaxLinks = 18;   // NVML_NVLINK_MAX_LINKS (Hopper, Blackwell)

using InitFn = Return (*)();
using ShutdownFn = Return (*)();
using HandleByBusIdFn = Return (*)(const char*, Device*);
using LinkStateFn = Return (*)(Device, unsigned, int*);
using RemotePciFn = Return (*)(Device, unsigned, PciInfo*);
using RemoteTypeFn = Return (*)(Device, unsigned, int*);
}  // namespace nvml

template <typename Fn>
Fn symbol(void* lib, const char* name) {
  return reinterpret_cast<Fn>(dlsym(lib, name));
}

class CudaGpuQuery final : public GpuQuery {
 public:
  CudaGpuQuery() {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      (void)cudaGetLastError();  // no driver, no device, or a broken install: a machine with no GPU
      n = 0;
    }
    for (int d = 0; d < n; ++d) {
      char buf[64] = {};
      if (cudaDeviceGetPCIBusId(buf, static_cast<int>(sizeof buf), d) == cudaSuccess) {
        busIds_.push_back(canonicalPciBusId(buf));
      } else {
        (void)cudaGetLastError();
        busIds_.push_back("");
      }
    }
  }
  ~CudaGpuQuery() override {
    if (nvmlInitialized_ && nvmlShutdown_) nvmlShutdown_();
    if (nvmlLib_) dlclose(nvmlLib_);
  }
  CudaGpuQuery(const CudaGpuQuery&) = delete;
  CudaGpuQuery& operator=(const CudaGpuQuery&) = delete;

  int deviceCount() override { return static_cast<int>(busIds_.size()); }

  std::string busId(int dev) override { return valid(dev) ? busIds_[static_cast<size_t>(dev)] : std::string(); }

  std::string name(int dev) override {
    if (!valid(dev)) return "";
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
      (void)cudaGetLastError();
      return "";
    }
    return prop.name;
  }

  bool vmmSupported(int dev) override {
    return driverAttribute(dev, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) > 0 &&
           driverAttribute(dev, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED) > 0;
  }

  bool canAccessPeer(int dev, int peerDev) override {
    if (!valid(dev) || !valid(peerDev) || dev == peerDev) return false;
    int v = 0;
    if (cudaDeviceCanAccessPeer(&v, dev, peerDev) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    return v != 0;
  }

  bool nativeAtomics(int dev, int peerDev) override {
    if (!valid(dev) || !valid(peerDev) || dev == peerDev) return false;
    int v = 0;
    if (cudaDeviceGetP2PAttribute(&v, cudaDevP2PAttrNativeAtomicSupported, dev, peerDev) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    return v != 0;
  }

  // Links whose remote end is the peer GPU; when both GPUs reach NVSwitches instead (HGX boards), the smaller of
  // their switch link counts (all GPUs behind the switches are taken to share one NVLink fabric).
  int nvlinkCount(int dev, int peerDev) override {
    if (!valid(dev) || !valid(peerDev) || dev == peerDev || !loadNvml()) return 0;
    const LinkScan& a = scan(dev);
    const LinkScan& b = scan(peerDev);
    auto it = a.toGpu.find(busIds_[static_cast<size_t>(peerDev)]);
    if (it != a.toGpu.end()) return it->second;
    if (a.toSwitch > 0 && b.toSwitch > 0) return std::min(a.toSwitch, b.toSwitch);
    return 0;
  }

  int deviceByBusId(const std::string& busId) override {
    const std::string want = canonicalPciBusId(busId);
    for (size_t d = 0; d < busIds_.size(); ++d) {
      if (!want.empty() && busIds_[d] == want) return static_cast<int>(d);
    }
    return -1;
  }

 private:
  struct LinkScan {
    std::map<std::string, int> toGpu;  // canonical remote bus id -> active links
    int toSwitch = 0;
  };

  bool valid(int dev) const { return dev >= 0 && dev < static_cast<int>(busIds_.size()); }

  // A CUdevice attribute through the driver entry point cudart resolves; -1 when unavailable.
  int driverAttribute(int dev, CUdevice_attribute attr) {
    if (!valid(dev)) return -1;
    using GetFn = CUresult (*)(CUdevice*, int);
    using AttrFn = CUresult (*)(int*, CUdevice_attribute, CUdevice);
    void* getFn = nullptr;
    void* attrFn = nullptr;
    cudaDriverEntryPointQueryResult q1 = cudaDriverEntryPointSymbolNotFound, q2 = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuDeviceGet", &getFn, 12000, cudaEnableDefault, &q1) != cudaSuccess ||
        cudaGetDriverEntryPointByVersion("cuDeviceGetAttribute", &attrFn, 12000, cudaEnableDefault, &q2) !=
            cudaSuccess ||
        q1 != cudaDriverEntryPointSuccess || q2 != cudaDriverEntryPointSuccess || !getFn || !attrFn) {
      (void)cudaGetLastError();
      return -1;
    }
    CUdevice cuDev = 0;
    int v = -1;
    if (reinterpret_cast<GetFn>(getFn)(&cuDev, dev) != CUDA_SUCCESS) return -1;
    if (reinterpret_cast<AttrFn>(attrFn)(&v, attr, cuDev) != CUDA_SUCCESS) return -1;
    return v;
  }

  bool loadNvml() {
    if (nvmlTried_) return nvmlInitialized_;
    nvmlTried_ = true;
    nvmlLib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!nvmlLib_) {
      TETHER_LOG_INFO(LogSys::Topology, "NVML not loadable (%s): NVLink counts unknown, links taken from peer access",
                      dlerror());
      return false;
    }
    auto init = symbol<nvml::InitFn>(nvmlLib_, "nvmlInit_v2");
    nvmlShutdown_ = symbol<nvml::ShutdownFn>(nvmlLib_, "nvmlShutdown");
    handleByBusId_ = symbol<nvml::HandleByBusIdFn>(nvmlLib_, "nvmlDeviceGetHandleByPciBusId_v2");
    linkState_ = symbol<nvml::LinkStateFn>(nvmlLib_, "nvmlDeviceGetNvLinkState");
    remotePci_ = symbol<nvml::RemotePciFn>(nvmlLib_, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    remoteType_ = symbol<nvml::RemoteTypeFn>(nvmlLib_, "nvmlDeviceGetNvLinkRemoteDeviceType");  // optional
    if (!init || !nvmlShutdown_ || !handleByBusId_ || !linkState_ || !remotePci_) {
      TETHER_LOG_INFO(LogSys::Topology, "NVML lacks an NVLink query: NVLink counts unknown");
      return false;
    }
    nvml::Return r = init();
    if (r != nvml::kSuccess) {
      TETHER_LOG_INFO(LogSys::Topology, "nvmlInit_v2 failed (NVML error %d): NVLink counts unknown", r);
      return false;
    }
    nvmlInitialized_ = true;
    return true;
  }

  // Active links of one GPU by remote end; stops at the first NVML error (past the last link of the GPU).
  const LinkScan& scan(int dev) {
    auto it = scans_.find(dev);
    if (it != scans_.end()) return it->second;
    LinkScan& s = scans_[dev];
    nvml::Device h = nullptr;
    const std::string& bus = busIds_[static_cast<size_t>(dev)];
    if (handleByBusId_(bus.c_str(), &h) != nvml::kSuccess) {
      TETHER_LOG_DEBUG(LogSys::Topology, "NVML does not know GPU %s: no NVLink count", bus.c_str());
      return s;
    }
    for (unsigned link = 0; link < nvml::kMaxLinks; ++link) {
      int state = 0;
      if (linkState_(h, link, &state) != nvml::kSuccess) break;
      if (state != nvml::kFeatureEnabled) continue;
      int type = -1;
      if (remoteType_ && remoteType_(h, link, &type) == nvml::kSuccess && type == nvml::kRemoteSwitch) {
        ++s.toSwitch;
        continue;
      }
      nvml::PciInfo pci{};
      if (remotePci_(h, link, &pci) != nvml::kSuccess) break;
      pci.busId[sizeof pci.busId - 1] = '\0';
      ++s.toGpu[canonicalPciBusId(pci.busId)];
    }
    TETHER_LOG_DEBUG(LogSys::Topology, "GPU %s: %d NVLink(s) to NVSwitches, links to %zu GPU(s)", bus.c_str(),
                     s.toSwitch, s.toGpu.size());
    return s;
  }

  std::vector<std::string> busIds_;  // canonical, by CUDA ordinal
  void* nvmlLib_ = nullptr;
  bool nvmlTried_ = false;
  bool nvmlInitialized_ = false;
  nvml::ShutdownFn nvmlShutdown_ = nullptr;
  nvml::HandleByBusIdFn handleByBusId_ = nullptr;
  nvml::LinkStateFn linkState_ = nullptr;
  nvml::RemotePciFn remotePci_ = nullptr;
  nvml::RemoteTypeFn remoteType_ = nullptr;
  std::map<int, LinkScan> scans_;
};

}  // namespace

std::unique_ptr<GpuQuery> createSystemGpuQuery() { return std::make_unique<CudaGpuQuery>(); }

}  // namespace tether
